//! Unit tests of the body's lowering.

use quote::quote;

use super::*;
use crate::ctxt::Ctxt;
use crate::ir::DiffFn;

fn lower(func: syn::ItemFn) -> (Option<Body>, Vec<String>) {
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &func.sig);
    let body = Body::from_syn(&cx, &fwd, &func.block);
    let errors = match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    };
    (body, errors)
}

fn rules(body: &Body) -> Vec<String> {
    body.ops().map(|op| op.rule.to_string()).collect()
}

#[test]
fn operators_map_to_their_methods() {
    let (body, errors) = lower(syn::parse_quote! {
        fn f(x: &Tensor, y: &Tensor, s: f64) -> Result<Tensor> {
            let c = s * 2.0;
            let a = x * y;
            let b = &a * c - 1.0;
            let d = 2.0 - &b;
            let e = 3.0 / -&d;
            Ok(e.exp()? + x)
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let body = body.expect("lowered");
    assert_eq!(
        rules(&body),
        [
            "mul",
            "mul_scalar",
            "sub_scalar",
            "rsub_scalar",
            "neg",
            "rdiv_scalar",
            "exp",
            "add"
        ]
    );
    assert!(matches!(body.stmts[0], Step::Scalar(_)));
    assert_eq!(body.outputs, [body.vars.len() - 1]);
}

#[test]
fn only_values_the_result_depends_on_are_live() {
    let (body, _) = lower(syn::parse_quote! {
        fn f(x: &Tensor, unused: &Tensor) -> Result<Tensor> {
            let dead = x.log()?;
            let y = x.exp()?;
            y.sum()
        }
    });
    let body = body.expect("lowered");
    let live = body.live();
    // x, unused, dead, y, result
    assert_eq!(live, [true, false, false, true, true]);
}

#[test]
fn rejected_constructs_are_all_reported_once() {
    let (body, errors) = lower(syn::parse_quote! {
        fn f(x: &Tensor) -> Result<Tensor> {
            let mut y = x.exp()?;
            let z = if true { x.exp()? } else { x.log()? };
            x.add_(&z)?;
            Ok(y.mul(&z)?)
        }
    });
    assert!(body.is_none());
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("a mutable binding"));
    assert!(errors[1].contains("a branch (`if`)"));
    assert!(errors[2].contains("the in-place method `add_`"));
    assert!(errors[2].contains("`#[backward(f)]`"));
}

#[test]
fn calls_with_a_tensor_argument_are_ops() {
    let (body, errors) = lower(syn::parse_quote! {
        fn f(x: &Tensor, s: f64) -> Result<Tensor> {
            let n = max(s, 1.0);
            let y = layers::gelu(&x.exp()?, n)?;
            Ok(y * n)
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let body = body.expect("lowered");
    assert_eq!(rules(&body), ["exp", "gelu", "mul_scalar"]);
    let call = body.ops().nth(1).expect("the call");
    let callee = call.callee.as_ref().expect("a callee");
    assert_eq!(quote!(#callee).to_string(), "layers :: gelu");
    assert_eq!((call.tensors.len(), call.scalars.len()), (1, 1));
    assert!(
        body.ops().all(|op| op.rule != "max"),
        "a scalar call is a scalar step"
    );
}

#[test]
fn a_scalar_result_is_rejected() {
    let (_, errors) = lower(syn::parse_quote! {
        fn f(x: &Tensor, s: f64) -> Result<Tensor> {
            let _ = x.exp()?;
            Ok(s * 2.0)
        }
    });
    assert_eq!(
        errors,
        [
            "the result of a `#[differentiable(derive)]` body must be a tensor computed from its inputs"
        ]
    );
}
