//! Unit tests of the helpers beside the expansion: how attributes are kept, the forward's
//! `# Autograd` doc section and the signature macro's alias.

use syn::{Type, parse_quote};

use super::forward::doc_section;
use super::names::{aliasable, signature_alias};
use super::slots::{attr_by_ref, borrowed_target};

#[test]
fn attributes_by_value_or_through_a_reference() {
    let vec: Type = parse_quote!(Vec<usize>);
    assert!(attr_by_ref(&vec, &parse_quote!(&[usize])));
    assert!(attr_by_ref(&vec, &parse_quote!(&Vec<usize>)));
    assert!(!attr_by_ref(&vec, &parse_quote!(std::vec::Vec<usize>)));
    let name: Type = parse_quote!(&'static str);
    assert!(!attr_by_ref(&name, &parse_quote!(&'static str)));
    assert!(attr_by_ref(&parse_quote!(String), &parse_quote!(&str)));
    assert!(!attr_by_ref(&parse_quote!(f64), &parse_quote!(f32)));
}

#[test]
fn the_doc_section_names_the_node_inputs_and_what_is_kept() {
    use crate::attr::DiffArgs;
    use crate::ctxt::Ctxt;
    use crate::ir::DiffFn;

    let sig: syn::Signature = parse_quote!(
        fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, k: f64) -> Result<(Tensor, usize)>
    );
    let args: DiffArgs = parse_quote!(save(argmax), once_differentiable);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &sig, args.save());
    cx.check().expect("valid forward");
    let doc = doc_section(&args, &fwd).join("\n");
    for part in [
        "# Autograd",
        "records one `LinearBackward0` node",
        "Differentiable inputs: `x`, `w`, `bias` (optional: a `None` edge when absent).",
        "what `#[backward(linear)]` names",
        "an attribute (`k`) by value",
        "Kept from the forward (`save`): `argmax`",
        "Twice differentiable: no (`once_differentiable`)",
    ] {
        assert!(doc.contains(part), "{part:?} not in:\n{doc}");
    }
    let args: DiffArgs = parse_quote!(name = "MulBackward0");
    let sig: syn::Signature = parse_quote!(fn mul(a: &Tensor, b: &Tensor) -> Tensor);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &sig, &[]);
    cx.check().expect("valid forward");
    let doc = doc_section(&args, &fwd).join("\n");
    assert!(doc.contains("`MulBackward0`") && doc.contains("Twice differentiable: yes"));
    assert!(!doc.contains("attribute (") && !doc.contains("Kept from the forward"));
}

#[test]
fn the_signature_macro_takes_the_forwards_name_unless_reserved() {
    let ident = |name: &str| syn::parse_str::<syn::Ident>(name).expect("an identifier");
    for name in ["double", "r#mul", "r#match", "scaled_square", "max_dim"] {
        assert!(aliasable(&ident(name)), "{name}");
    }
    for name in [
        "vec", "format", "println", "test", "inline", "derive", "r#cfg",
    ] {
        assert!(!aliasable(&ident(name)), "{name}");
    }
    let alias = signature_alias(&ident("r#mul"), &ident("__autograd_mul_signature"), &[]);
    assert_eq!(
        alias.to_string(),
        "# [doc (hidden)] # [allow (unused_imports)] pub (crate) use __autograd_mul_signature as r#mul ;"
    );
    assert!(signature_alias(&ident("vec"), &ident("__autograd_vec_signature"), &[]).is_empty());
}

#[test]
fn borrowed_attributes_are_saved_owned() {
    let owned = |ty: Type| borrowed_target(&ty).map(|t| quote::quote!(#t).to_string());
    assert_eq!(owned(parse_quote!(&[usize])).as_deref(), Some("[usize]"));
    assert_eq!(owned(parse_quote!(&'_ str)).as_deref(), Some("str"));
    assert_eq!(owned(parse_quote!(&'static str)), None);
    assert_eq!(owned(parse_quote!(&mut Vec<usize>)), None);
    assert_eq!(owned(parse_quote!(Vec<usize>)), None);
}
