//! Unit tests of the derived pair: its `# Autograd` doc section, and what a missing rule says.

use crate::ctxt::Ctxt;
use crate::ir::DiffFn;
use crate::ir::body::Body;

#[test]
fn the_doc_section_names_the_node_ops_and_values() {
    let func: syn::ItemFn = syn::parse_quote! {
        fn f(x: &Tensor, s: f64) -> Result<Tensor> {
            let t = x.tanh()?;
            let unused = x.exp()?;
            Ok(&t * s + x.sin()?)
        }
    };
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &func.sig);
    let body = Body::from_syn(&cx, &fwd, &func.block);
    cx.check().expect("a valid body");
    let body = body.expect("lowered");
    let doc = super::doc::doc_section("FBackward0", &fwd, &body).join("\n");
    for part in [
        "# Autograd",
        "records one `FBackward0` node",
        "from the body's 4 differentiable ops (`tanh`, `mul_scalar`, `sin`, `add`)",
        "* Differentiable inputs: `x`.",
        "Kept for the backward: what the derivative rules read of `x`, `t`, the result and 2 unnamed intermediate values: the value itself",
        "* Attributes (`s`): copied into the node",
        "* Used by the forward only, and dropped after its last use: `unused`.",
        "* Twice differentiable: yes",
    ] {
        assert!(doc.contains(part), "{part:?} not in:\n{doc}");
    }
}

/// The message of a missing rule names the call by its form (a method, an operator with the op
/// it stands for, a function), says why, and what to write instead; one check per rule name.
#[test]
fn a_missing_rule_names_the_call_and_what_to_write() {
    let func: syn::ItemFn = syn::parse_quote! {
        fn g(x: &Tensor, s: f64) -> Result<Tensor> {
            let a = x.clamp(Some(0.0), None)?;
            let b = s - &a;
            let c = helper(&b)?;
            let d = -&c;
            let e = d.clamp(None, Some(1.0))?;
            Ok(e)
        }
    };
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &func.sig);
    let body = Body::from_syn(&cx, &fwd, &func.block);
    cx.check().expect("a valid body");
    let body = body.expect("lowered");
    let ops: Vec<_> = body.ops().collect();
    let said = |i: usize| super::values::missing_rule_message(fwd.ident, ops[i]);
    let backward = "or remove `derive` and write the gradient in a `#[backward(g)]` function";

    let (message, label, notes) = said(0);
    assert_eq!(
        message,
        "`#[differentiable(derive)]` cannot differentiate `clamp`: the tensor method has no derivative rule"
    );
    assert_eq!(label, "`clamp` has no derivative rule");
    assert!(notes[0].ends_with(backward), "{notes:?}");
    assert!(notes[1].contains("`DerivativeRules::clamp`"), "{notes:?}");

    let (message, label, _) = said(1);
    assert_eq!(
        message,
        "`#[differentiable(derive)]` cannot differentiate the operator `-` here: its tensor op `rsub_scalar` has no derivative rule"
    );
    assert_eq!(label, "`rsub_scalar` has no derivative rule");

    let (message, label, notes) = said(2);
    assert_eq!(
        message,
        "`#[differentiable(derive)]` cannot differentiate the call of `helper`: it is a plain function, with no derivative rule"
    );
    assert_eq!(label, "`helper` has no derivative rule");
    assert!(
        notes[0].starts_with("make `helper` `#[differentiable(derive)]`")
            && notes[0].ends_with(backward),
        "{notes:?}"
    );

    let (message, _, _) = said(3);
    assert!(
        message.contains("the operator `-` here: its tensor op `neg`"),
        "{message}"
    );

    // `clamp` twice, `rsub_scalar`, `helper`, `neg`: four checks, named by function and rule.
    let krate: syn::Path = syn::parse_quote!(::autograd);
    let checks = super::values::rule_checks(&krate, fwd.ident, &body).to_string();
    assert_eq!(checks.matches("on_unimplemented").count(), 4, "{checks}");
    for name in [
        "__autograd_g_clamp_has_rule",
        "__autograd_g_rsub_scalar_has_rule",
        "__autograd_g_helper_has_rule",
        "__autograd_g_neg_has_rule",
    ] {
        assert!(checks.contains(name), "{name} not in {checks}");
    }
}
