//! What the functions do to their arguments and results, as PyTorch's: the caller's tensors
//! are left alone, results are detached unless `create_graph`, unused inputs get zeros, grad
//! mode is enabled inside, `v` may be omitted for one-element tensors.

use autograd::functional::{JacobianOptions, Options, hessian, hvp, jacobian, jvp, vhp, vjp};
use autograd::{DType, GradOptions, Result, Tensor, grad, is_grad_enabled, no_grad};

fn vec3(values: [f64; 3]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[3]).unwrap()
}

fn cube_sum(i: &[Tensor]) -> Result<Tensor> {
    i[0].pow(3.0)?.sum()
}

/// Every function, once, with `create_graph` as given: all result tensors.
fn run_all(x: &Tensor, create_graph: bool) -> Vec<Tensor> {
    let o = Options::new().create_graph(create_graph);
    let j = JacobianOptions::new().create_graph(create_graph);
    let v = [vec3([1.0, -1.0, 0.5])];
    let mut all = Vec::new();
    let (a, b) = vjp(|i: &[Tensor]| i[0].sin(), x, Some(&v), o).unwrap();
    all.extend(a.into_iter().chain(b));
    let (a, b) = jvp(|i: &[Tensor]| i[0].sin(), x, Some(&v), o).unwrap();
    all.extend(a.into_iter().chain(b));
    all.extend(
        jacobian(|i: &[Tensor]| i[0].sin(), x, j)
            .unwrap()
            .into_iter()
            .flatten(),
    );
    all.extend(hessian(cube_sum, x, j).unwrap().into_iter().flatten());
    let (a, b) = hvp(cube_sum, x, Some(&v), o).unwrap();
    all.extend(std::iter::once(a).chain(b));
    let (a, b) = vhp(cube_sum, x, Some(&v), o).unwrap();
    all.extend(std::iter::once(a).chain(b));
    all
}

#[test]
fn the_callers_tensors_are_left_alone_and_results_are_detached() {
    let plain = vec3([0.1, 0.2, 0.3]);
    let leaf = vec3([0.4, -0.5, 0.6]).requires_grad_(true).unwrap();
    for x in [&plain, &leaf] {
        let (requires_grad, version) = (x.requires_grad(), x.version());
        let results = run_all(x, false);
        assert_eq!(results.len(), 10);
        for r in &results {
            assert!(
                !r.requires_grad() && r.grad_fn().is_none(),
                "detached without create_graph"
            );
        }
        assert_eq!(x.requires_grad(), requires_grad);
        assert!(x.is_leaf() && x.grad().is_none());
        assert_eq!(x.version(), version);
    }
    assert_eq!(plain.to_vec::<f64>().unwrap(), [0.1, 0.2, 0.3]);
    assert_eq!(leaf.to_vec::<f64>().unwrap(), [0.4, -0.5, 0.6]);
}

#[test]
fn create_graph_records_results_that_reach_inputs_requiring_grad() {
    // A leaf: the results depend on it, through the view the functions take of it.
    let x = vec3([1.0, 2.0, 3.0]).requires_grad_(true).unwrap();
    let h = hessian(cube_sum, &x, JacobianOptions::new().create_graph(true)).unwrap();
    let h = &h[0][0];
    assert_eq!(
        h.to_vec::<f64>().unwrap(),
        [6.0, 0.0, 0.0, 0.0, 12.0, 0.0, 0.0, 0.0, 18.0]
    );
    assert!(h.requires_grad());
    // d/dx Σ H = d/dx Σ 6xᵢ = 6: a gradient through a Hessian.
    let g = grad(&[h.sum().unwrap()], &[x.clone()], GradOptions::new()).unwrap();
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>().unwrap(),
        [6.0, 6.0, 6.0]
    );
    assert!(x.grad().is_none());

    // An input that does not require grad: the results are recorded over the function's own
    // copy, which the caller cannot reach.
    let plain = vec3([1.0, 2.0, 3.0]);
    for r in run_all(&plain, true) {
        assert!(r.requires_grad(), "recorded with create_graph");
    }
    assert!(!plain.requires_grad() && plain.grad().is_none());
}

#[test]
fn unused_inputs_and_constant_outputs_get_zeros() {
    let (a, b) = (
        vec3([1.0, 2.0, 3.0]),
        Tensor::from_vec(vec![4.0f64, 5.0], &[2]).unwrap(),
    );
    let ab = [a.clone(), b.clone()];
    let first = |i: &[Tensor]| i[0].pow(2.0)?.sum();
    let (_, g) = vjp(first, &ab, None, Options::new()).unwrap();
    assert_eq!(g[0].to_vec::<f64>().unwrap(), [2.0, 4.0, 6.0]);
    assert_eq!(
        (g[1].shape(), g[1].to_vec::<f64>().unwrap()),
        (&[2][..], vec![0.0, 0.0])
    );

    // An output that does not require grad: a zero Jacobian, in both ways of computing it.
    let constant = |_: &[Tensor]| Tensor::ones(&[2], DType::F64);
    for vectorize in [false, true] {
        let jac = jacobian(constant, &a, JacobianOptions::new().vectorize(vectorize)).unwrap();
        assert_eq!(jac[0][0].shape(), &[2, 3]);
        assert_eq!(jac[0][0].to_vec::<f64>().unwrap(), [0.0; 6]);
    }
    let (_, jv) = jvp(constant, &a, Some(&[a.clone()]), Options::new()).unwrap();
    assert_eq!(jv[0].to_vec::<f64>().unwrap(), [0.0, 0.0]);
    let (_, hv) = hvp(first, &ab, Some(&ab), Options::new()).unwrap();
    assert_eq!(hv[0].to_vec::<f64>().unwrap(), [2.0, 4.0, 6.0]);
    assert_eq!(hv[1].to_vec::<f64>().unwrap(), [0.0, 0.0]);
}

#[test]
fn v_may_be_omitted_for_one_element_tensors() {
    let x = vec3([1.0, 2.0, 3.0]);
    // vjp: a one-element output.
    let (out, g) = vjp(cube_sum, &x, None, Options::new()).unwrap();
    assert_eq!(out[0].item::<f64>().unwrap(), 36.0);
    assert_eq!(g[0].to_vec::<f64>().unwrap(), [3.0, 12.0, 27.0]);
    // jvp, hvp, vhp: a one-element input.
    let s = Tensor::scalar(2.0f64);
    let (_, jv) = jvp(|i: &[Tensor]| i[0].pow(3.0), &s, None, Options::new()).unwrap();
    assert_eq!(jv[0].item::<f64>().unwrap(), 12.0);
    let (_, hv) = hvp(|i: &[Tensor]| i[0].pow(3.0), &s, None, Options::new()).unwrap();
    assert_eq!(hv[0].item::<f64>().unwrap(), 12.0);
    let (_, vh) = vhp(|i: &[Tensor]| i[0].pow(3.0), &s, None, Options::new()).unwrap();
    assert_eq!(vh[0].item::<f64>().unwrap(), 12.0);
}

#[test]
fn grad_mode_is_enabled_inside_even_under_no_grad() {
    let x = vec3([1.0, 2.0, 3.0]);
    let _off = no_grad();
    let seen = std::cell::Cell::new(false);
    let (_, g) = vjp(
        |i: &[Tensor]| {
            seen.set(is_grad_enabled());
            cube_sum(i)
        },
        &x,
        None,
        Options::new(),
    )
    .unwrap();
    assert!(seen.get());
    assert_eq!(g[0].to_vec::<f64>().unwrap(), [3.0, 12.0, 27.0]);
    // With create_graph, the results are recorded under no_grad too (PyTorch enables grad mode
    // for the backward pass when create_graph).
    let h = hessian(cube_sum, &x, JacobianOptions::new().create_graph(true)).unwrap();
    assert!(h[0][0].requires_grad());
    assert!(!is_grad_enabled());
}

#[test]
fn jacobian_shapes_are_output_shape_then_input_shape() {
    let m = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let s = Tensor::scalar(0.5f64);
    let f = |i: &[Tensor]| Ok((i[0].mul(&i[1])?, i[0].sum()?.mul(&i[1])?));
    for vectorize in [false, true] {
        let jac = jacobian(
            f,
            &[m.clone(), s.clone()],
            JacobianOptions::new().vectorize(vectorize),
        )
        .unwrap();
        assert_eq!(jac[0][0].shape(), &[2, 3, 2, 3]);
        assert_eq!(jac[0][1].shape(), &[2, 3]);
        assert_eq!(jac[1][0].shape(), &[2, 3]);
        assert_eq!(jac[1][1].shape(), &[] as &[usize]);
        assert_eq!(
            jac[0][1].to_vec::<f64>().unwrap(),
            m.to_vec::<f64>().unwrap()
        );
        assert_eq!(jac[1][1].item::<f64>().unwrap(), 21.0);
        // d(m·s)/dm = s·I over the 6 elements
        let d = jac[0][0].reshape(&[6, 6]).unwrap().to_vec::<f64>().unwrap();
        for (k, v) in d.iter().enumerate() {
            assert_eq!(*v, if k / 6 == k % 6 { 0.5 } else { 0.0 });
        }
    }
    // An empty output beside another: vectorized, its Jacobian is empty (row by row, PyTorch
    // fails to stack no rows: errors.rs).
    let x = vec3([1.0, 2.0, 3.0]);
    let f = |i: &[Tensor]| Ok((i[0].narrow(0, 0, 0)?, i[0].mul_scalar(2.0)?));
    let jac = jacobian(f, &x, JacobianOptions::new().vectorize(true)).unwrap();
    assert_eq!(jac[0][0].shape(), &[0, 3]);
    assert_eq!(
        jac[1][0].to_vec::<f64>().unwrap(),
        [2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0]
    );
    // A one-element output of shape [1] keeps its dimension in the Jacobian; the Hessian of it
    // is over the input's shape only (PyTorch squeezes the output).
    let one = |i: &[Tensor]| i[0].sum()?.reshape(&[1]);
    assert_eq!(
        jacobian(one, &m, JacobianOptions::new()).unwrap()[0][0].shape(),
        &[1, 2, 3]
    );
    assert_eq!(
        hessian(one, &m, JacobianOptions::new()).unwrap()[0][0].shape(),
        &[2, 3, 2, 3]
    );
}

#[test]
fn strict_mode_accepts_functions_that_depend_on_every_input() {
    let x = vec3([0.5, 1.0, 1.5]);
    let s = Options::new().strict(true);
    let v = [vec3([1.0, 1.0, 1.0])];
    assert!(vjp(cube_sum, &x, None, s.create_graph(true)).is_ok());
    assert!(
        jvp(
            |i: &[Tensor]| i[0].exp(),
            &x,
            Some(&v),
            s.create_graph(true)
        )
        .is_ok()
    );
    assert!(
        jacobian(
            |i: &[Tensor]| i[0].exp(),
            &x,
            JacobianOptions::new().strict(true)
        )
        .is_ok()
    );
    assert!(hessian(cube_sum, &x, JacobianOptions::new().strict(true)).is_ok());
    assert!(hvp(cube_sum, &x, Some(&v), s).is_ok());
    assert!(vhp(cube_sum, &x, Some(&v), s).is_ok());
}

#[test]
fn a_single_tensor_and_a_one_tensor_slice_give_the_same_results() {
    let x = vec3([0.3, -0.2, 0.9]);
    let by_tensor = jacobian(|i: &[Tensor]| i[0].tanh(), &x, JacobianOptions::new()).unwrap();
    let by_slice = jacobian(
        |i: &[Tensor]| Ok(vec![i[0].tanh()?]),
        &[x.clone()],
        JacobianOptions::new(),
    )
    .unwrap();
    assert_eq!(
        by_tensor[0][0].to_vec::<f64>().unwrap(),
        by_slice[0][0].to_vec::<f64>().unwrap()
    );
}
