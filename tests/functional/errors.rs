//! Every error PyTorch's `torch.autograd.functional` raises for misuse, replayed: the same call
//! here must fail with PyTorch's message, word for word.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::Mutex;

use autograd::functional::{
    JacobianOptions, Options, Strategy, hessian, hvp, jacobian, jvp, vhp, vjp,
};
use autograd::{DType, Result, Tensor};

use crate::recorded::data;

/// The names checked so far, to prove at the end that every recorded error was replayed.
static CHECKED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

#[track_caller]
fn expect<T: Debug>(name: &str, result: Result<T>) {
    let expected = data()["errors"][name]
        .as_str()
        .unwrap_or_else(|| panic!("no recorded error {name}"));
    let err = result.expect_err(name);
    assert_eq!(err.to_string(), expected, "{name}");
    CHECKED.lock().unwrap().insert(name.to_string());
}

fn x() -> Tensor {
    Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap()
}

fn y() -> Tensor {
    Tensor::from_vec(vec![0.5f64, -1.0], &[2]).unwrap()
}

/// From outside the function, and requires grad.
fn w() -> Tensor {
    Tensor::from_vec(vec![2.0f64, -1.0, 0.5], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn strict() -> Options {
    Options::new().strict(true)
}

fn vjp_errors() {
    let (x, y) = (x(), y());
    let exp = |a: &[Tensor]| a[0].exp();
    expect("vjp_v_none_nonscalar", vjp(exp, &x, None, Options::new()));
    expect(
        "vjp_v_len_single",
        vjp(exp, &x, Some(&[x.clone(), x.clone()]), Options::new()),
    );
    let tuple = |a: &[Tensor]| Ok(vec![a[0].exp()?]);
    expect(
        "vjp_v_len_tuple",
        vjp(
            tuple,
            &[x.clone()],
            Some(&[x.clone(), x.clone()]),
            Options::new(),
        ),
    );
    expect(
        "vjp_v_size_single",
        vjp(exp, &x, Some(&[y.clone()]), Options::new()),
    );
    let two = |a: &[Tensor]| Ok((a[0].exp()?, a[1].mul_scalar(2.0)?));
    expect(
        "vjp_v_size_tuple",
        vjp(
            two,
            &[x.clone(), y.clone()],
            Some(&[x.clone(), x.clone()]),
            Options::new(),
        ),
    );
    let constant = |_: &[Tensor]| Tensor::ones(&[1], DType::F64);
    expect(
        "vjp_strict_output_no_grad",
        vjp(constant, &x, None, strict()),
    );
    let first = |a: &[Tensor]| a[0].exp()?.sum();
    expect(
        "vjp_strict_unused",
        vjp(first, &[x.clone(), y.clone()], None, strict()),
    );
    let linear = |a: &[Tensor]| a[0].sum();
    expect(
        "vjp_strict_create_graph_linear",
        vjp(linear, &x, None, strict().create_graph(true)),
    );
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    expect(
        "vjp_integer_input",
        vjp(|a: &[Tensor]| a[0].sum(), &ints, None, Options::new()),
    );
}

/// `a`, with a hook that replaces its gradient by ones: a gradient that ignores the
/// `grad_outputs` of `jvp`'s trick.
fn with_constant_grad_hook(a: &[Tensor]) -> Result<Tensor> {
    a[0].register_hook(|g| Some(g.ones_like().unwrap()))?;
    a[0].mul_scalar(2.0)
}

fn jvp_errors() {
    let (x, y) = (x(), y());
    let double = |a: &[Tensor]| a[0].mul_scalar(2.0);
    expect(
        "jvp_v_none_nonscalar",
        jvp(double, &x, None, Options::new()),
    );
    expect(
        "jvp_v_len_single",
        jvp(double, &x, Some(&[x.clone(), x.clone()]), Options::new()),
    );
    let xy = [x.clone(), y.clone()];
    expect(
        "jvp_v_size_tuple",
        jvp(double, &xy, Some(&[x.clone(), x.clone()]), Options::new()),
    );
    expect("jvp_strict_unused", jvp(double, &xy, Some(&xy), strict()));
    expect(
        "jvp_strict_create_graph_linear",
        jvp(double, &x, Some(&[x.clone()]), strict().create_graph(true)),
    );
    let constant = |_: &[Tensor]| Tensor::ones(&[1], DType::F64);
    expect(
        "jvp_strict_output_no_grad",
        jvp(constant, &x, Some(&[x.clone()]), strict()),
    );
    let w = w();
    let independent = |a: &[Tensor]| Ok((a[0].mul_scalar(2.0)?, w.mul_scalar(3.0)?));
    expect(
        "jvp_strict_output_independent",
        jvp(independent, &x, Some(&[x.clone()]), strict()),
    );
    expect(
        "jvp_strict_gradient_constant",
        jvp(with_constant_grad_hook, &x, Some(&[x.clone()]), strict()),
    );
}

fn jacobian_errors() {
    let (x, y) = (x(), y());
    let strict = JacobianOptions::new().strict(true);
    let double = |a: &[Tensor]| a[0].mul_scalar(2.0);
    let xy = [x.clone(), y.clone()];
    expect("jacobian_strict_unused", jacobian(double, &xy, strict));
    let square = |a: &[Tensor]| a[0].mul(&a[0]);
    expect(
        "jacobian_strict_vectorize",
        jacobian(square, &xy, strict.vectorize(true)),
    );
    expect(
        "jacobian_strict_create_graph_linear",
        jacobian(double, &x, strict.create_graph(true)),
    );
    let constant = |_: &[Tensor]| Tensor::ones(&[2], DType::F64);
    expect(
        "jacobian_strict_output_no_grad",
        jacobian(constant, &x, strict),
    );
    let empty = |a: &[Tensor]| a[0].narrow(0, 0, 0);
    expect(
        "jacobian_empty_output",
        jacobian(empty, &x, JacobianOptions::new()),
    );
    let vectorize = JacobianOptions::new().vectorize(true);
    expect(
        "jacobian_empty_output_vectorized",
        jacobian(empty, &x, vectorize),
    );
    let identity = |a: &[Tensor]| Ok(a[0].clone());
    let forward = JacobianOptions::new().strategy(Strategy::ForwardMode);
    expect(
        "jacobian_forward_create_graph",
        jacobian(identity, &x, forward.create_graph(true)),
    );
    expect(
        "jacobian_forward_strict",
        jacobian(identity, &x, forward.strict(true)),
    );
    expect(
        "jacobian_forward_not_vectorized",
        jacobian(identity, &x, forward),
    );
}

fn hessian_errors() {
    let (x, y) = (x(), y());
    let strict = JacobianOptions::new().strict(true);
    let square = |a: &[Tensor]| a[0].mul(&a[0]);
    expect(
        "hessian_not_single_element",
        hessian(square, &x, JacobianOptions::new()),
    );
    let tuple = |a: &[Tensor]| Ok((a[0].sum()?,));
    expect("hessian_tuple", hessian(tuple, &x, JacobianOptions::new()));
    let linear = |a: &[Tensor]| a[0].sum();
    expect("hessian_strict_linear", hessian(linear, &x, strict));
    let quadratic = |a: &[Tensor]| a[0].mul(&a[0])?.sum();
    expect(
        "hessian_strict_unused",
        hessian(quadratic, &[x.clone(), y], strict),
    );
    let constant = |_: &[Tensor]| Ok(Tensor::scalar(1.0f64));
    expect(
        "hessian_strict_output_no_grad",
        hessian(constant, &x, strict),
    );
    expect(
        "hessian_strict_create_graph_quadratic",
        hessian(quadratic, &x, strict.create_graph(true)),
    );
}

fn hvp_and_vhp_errors() {
    let (x, y) = (x(), y());
    let vx = [x.clone()];
    let square = |a: &[Tensor]| a[0].mul(&a[0]);
    let tuple = |a: &[Tensor]| Ok((a[0].sum()?,));
    let quadratic = |a: &[Tensor]| a[0].mul(&a[0])?.sum();
    let linear = |a: &[Tensor]| a[0].sum();
    let constant = |_: &[Tensor]| Ok(Tensor::scalar(1.0f64));
    let w = w();
    let times_w = |a: &[Tensor]| a[0].mul(&w)?.sum();
    let xy = [x.clone(), y.clone()];
    let plus_linear = |a: &[Tensor]| a[0].mul(&a[0])?.sum()?.add(&a[1].sum()?);
    let cg = strict().create_graph(true);

    expect(
        "hvp_not_single_element",
        hvp(square, &x, Some(&vx), Options::new()),
    );
    expect("hvp_tuple", hvp(tuple, &x, Some(&vx), Options::new()));
    expect("hvp_v_none", hvp(quadratic, &x, None, Options::new()));
    expect("hvp_strict_linear", hvp(linear, &x, Some(&vx), strict()));
    expect(
        "hvp_strict_unused",
        hvp(plus_linear, &xy, Some(&xy), strict()),
    );
    expect(
        "hvp_strict_create_graph_quadratic",
        hvp(quadratic, &x, Some(&vx), cg),
    );
    expect(
        "hvp_strict_hessian_independent",
        hvp(times_w, &x, Some(&vx), strict()),
    );

    expect(
        "vhp_not_single_element",
        vhp(square, &x, Some(&vx), Options::new()),
    );
    expect("vhp_tuple", vhp(tuple, &x, Some(&vx), Options::new()));
    expect("vhp_v_none", vhp(quadratic, &x, None, Options::new()));
    expect(
        "vhp_v_size_single",
        vhp(quadratic, &x, Some(&[y.clone()]), Options::new()),
    );
    expect(
        "vhp_v_len_tuple",
        vhp(quadratic, &xy, Some(&vx), Options::new()),
    );
    expect(
        "vhp_strict_create_graph_quadratic",
        vhp(quadratic, &x, Some(&vx), cg),
    );
    expect(
        "vhp_strict_jacobian_independent",
        vhp(times_w, &x, Some(&vx), strict()),
    );
    expect(
        "vhp_strict_output_no_grad",
        vhp(constant, &x, Some(&vx), strict()),
    );
}

/// One test, so that it can check at the end that no recorded error was left out.
#[test]
fn every_recorded_error_matches_pytorch() {
    vjp_errors();
    jvp_errors();
    jacobian_errors();
    hessian_errors();
    hvp_and_vhp_errors();
    let recorded: BTreeSet<String> = data()["errors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(*CHECKED.lock().unwrap(), recorded);
}

/// Past PyTorch's argument checks, forward mode says it is not available.
#[test]
fn forward_mode_jacobians_and_hessians_are_reverse_modes() -> autograd::Result<()> {
    let _serial = crate::serial();
    let forward = JacobianOptions::new()
        .strategy(Strategy::ForwardMode)
        .vectorize(true);
    let two = |a: &[Tensor]| -> autograd::Result<(Tensor, Tensor)> {
        Ok((a[0].exp()?.mul(&a[1])?, a[0].pow(3.0)?.sum()?))
    };
    let inputs = [x(), x().sin()?];
    let by_forward = jacobian(two, &inputs, forward)?;
    let by_reverse = jacobian(two, &inputs, JacobianOptions::new())?;
    let scalar = |a: &[Tensor]| a[0].pow(3.0)?.mul(&a[1])?.sum();
    let h_forward = hessian(scalar, &inputs, forward)?;
    let h_reverse = hessian(scalar, &inputs, JacobianOptions::new())?;
    for (f, r) in by_forward
        .iter()
        .flatten()
        .chain(h_forward.iter().flatten())
        .zip(
            by_reverse
                .iter()
                .flatten()
                .chain(h_reverse.iter().flatten()),
        )
    {
        assert_eq!(f.shape(), r.shape());
        let (f, r) = (f.to_vec::<f64>()?, r.to_vec::<f64>()?);
        for (a, b) in f.iter().zip(&r) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
    Ok(())
}
