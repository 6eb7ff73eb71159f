#[test]
fn a_grad_formula_backward_runs_its_kernel_unless_recorded() {
    let func: syn::ItemFn = syn::parse_quote! {
        fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
            grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
        }
    };
    let kernel: syn::Expr = syn::parse_quote!(GradFormula::Tanh);
    let block =
        super::hand_over::formula_block(&kernel, &func).expect("one gradient, one saved tensor");
    let tight = |t: proc_macro2::TokenStream| t.to_string().replace(' ', "");
    assert_eq!(
        tight(quote::quote!(#block)),
        tight(quote::quote!({
            grad.grad_formula_or(GradFormula::Tanh, result, || -> Result<Tensor> {
                grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
            })
        }))
    );
    let two: syn::ItemFn = syn::parse_quote! {
        fn div_backward(grad: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> { grad.div(b) }
    };
    let err = super::hand_over::formula_block(&kernel, &two).expect_err("two saved tensors");
    assert!(
        err.to_string()
            .contains("one gradient and one saved tensor"),
        "{err}"
    );
}

#[test]
fn a_backwards_doc_lists_what_its_node_saves() {
    let func: syn::ItemFn = syn::parse_quote! {
        fn linear_backward(
            grad: &Tensor,
            needs_input_grad: [bool; 3],
            x: &Tensor,
            w: &InputMetadata,
            #[needed_for(x)] weight: Option<&Tensor>,
            bias: Option<&Tensor>,
            result: &Tensor,
            k: f64,
        ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
            Ok((None, None, None))
        }
    };
    let path: syn::Path = syn::parse_quote!(super::linear);
    let doc = super::hand_over::saved_doc(&path, &func).join("\n");
    for part in [
        "# Autograd",
        "The backward of `super::linear`. What its node saves",
        "* `x`: a saved tensor (version-checked).",
        "* `w`: shape, dtype and device only (no data).",
        "* `weight`: a saved tensor, kept only when `x`'s gradient is wanted (`#[needed_for]`).",
        "* `bias`: a saved tensor when the optional input is given.",
        "* `result`: the output, a saved tensor",
        "* `k`: by value",
    ] {
        assert!(doc.contains(part), "{part:?} not in:\n{doc}");
    }
    assert!(!doc.contains("`grad`") && !doc.contains("needs_input_grad"));
    let func: syn::ItemFn = syn::parse_quote! {
        fn double_backward(grad: &Tensor) -> Tensor { grad * 2.0 }
    };
    let doc = super::hand_over::saved_doc(&syn::parse_quote!(double), &func).join("\n");
    assert!(doc.contains("Its node saves nothing"), "{doc}");
}
