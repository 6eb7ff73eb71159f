//! Snapshot tests of the expansion: what `#[differentiable]`, `#[backward]` and the
//! `__check_backward!` they meet through emit for a few representative pairs, pretty-printed and
//! compared with the files under `tests/snapshots/`. After an intended change, regenerate them
//! with `UPDATE_SNAPSHOTS=1 cargo test -p autograd-macros snapshots` and review the diff.

use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::quote;

fn pretty(tokens: TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as items");
    prettyplease::unparse(&file)
}

/// Everything a forward and its backward expand to, in the order rustc sees it.
fn expand_pair(
    args: TokenStream,
    forward: TokenStream,
    path: TokenStream,
    backward: TokenStream,
) -> String {
    let fwd_item: syn::ItemFn = syn::parse2(forward.clone()).expect("forward parses");
    let bwd_item: syn::ItemFn = syn::parse2(backward.clone()).expect("backward parses");
    let (fsig, bsig) = (&fwd_item.sig, &bwd_item.sig);
    let bident = &bsig.ident;
    let check = crate::backward::check(quote!({ #args } { #fsig } { #path } { #bident } { #bsig }));
    format!(
        "// #[differentiable({args})]\n{}\n// #[backward({path})]\n{}\n// __check_backward! (through the signature macro)\n{}",
        pretty(crate::differentiable::expand(args.clone(), forward)),
        pretty(crate::backward::expand(path.clone(), backward, None)),
        pretty(check),
    )
}

fn check_snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.rs"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "the expansion of `{name}` differs from {} from line {}:\n  expected: {:?}\n  actual:   {:?}\nif the change is intended, run `UPDATE_SNAPSHOTS=1 cargo test -p autograd-macros snapshots` and review the diff",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line),
        );
    }
}

#[test]
fn attribute_and_saved_input() {
    let out = expand_pair(
        quote!(),
        quote! {
            fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
                x * x * scale
            }
        },
        quote!(scaled_square),
        quote! {
            fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
                grad * x * (2.0 * scale)
            }
        },
    );
    check_snapshot("scaled_square", &out);
}

#[test]
fn optional_input_and_needs_input_grad() {
    let out = expand_pair(
        quote!(),
        quote! {
            fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
                let y = x.matmul(&w.transpose(0, 1)?)?;
                match bias { Some(b) => y.add(b), None => Ok(y) }
            }
        },
        quote!(linear),
        quote! {
            fn linear_backward(
                grad: &Tensor,
                needs_input_grad: [bool; 3],
                #[needed_for(w)] x: Option<&Tensor>,
                #[needed_for(x)] w: Option<&Tensor>,
                bias: Option<&Tensor>,
            ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
                todo_backward(grad, needs_input_grad, x, w, bias)
            }
        },
    );
    check_snapshot("linear", &out);
}

#[test]
fn residual_and_borrowed_attribute() {
    let out = expand_pair(
        quote!(name = "MaxBackward0", save(argmax)),
        quote! {
            fn max_along(x: &Tensor, dims: &[usize]) -> Result<(Tensor, Vec<usize>)> {
                kernel(x, dims)
            }
        },
        quote!(max_along),
        quote! {
            fn max_along_backward(
                grad: &Tensor,
                x: &InputMetadata,
                dims: &[usize],
                argmax: &[usize],
            ) -> Result<Tensor> {
                scatter(grad, x, dims, argmax)
            }
        },
    );
    check_snapshot("max_along", &out);
}

#[test]
fn builtin_dirty_multi_output() {
    let out = expand_pair(
        quote!(
            builtin,
            dirty(x),
            non_differentiable(result_1),
            crate = "crate"
        ),
        quote! {
            fn add_and_mask_(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
                kernel(x, y)
            }
        },
        quote!(add_and_mask_),
        quote! {
            fn add_and_mask__backward(grad_0: &Tensor, _grad_1: &Tensor) -> (Tensor, Tensor) {
                (grad_0.clone(), grad_0.clone())
            }
        },
    );
    check_snapshot("add_and_mask_", &out);
}

#[test]
fn two_outputs_and_saved_results() {
    let out = expand_pair(
        quote!(),
        quote! {
            fn sin_cos(x: &Tensor) -> Result<(Tensor, Tensor)> {
                Ok((x.sin()?, x.cos()?))
            }
        },
        quote!(sin_cos),
        quote! {
            fn sin_cos_backward(
                grad_0: &Tensor,
                grad_1: &Tensor,
                result_0: &Tensor,
                result_1: &Tensor,
            ) -> Result<Tensor> {
                grad_0.mul(result_1)?.sub(&grad_1.mul(result_0)?)
            }
        },
    );
    check_snapshot("sin_cos", &out);
}
