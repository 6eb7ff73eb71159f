//! Unit tests of the derived pair: its `# Autograd` doc section.

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
