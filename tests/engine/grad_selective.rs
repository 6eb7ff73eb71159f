//! Selective execution for `grad()` and `backward(inputs=..)` (reference B09, B10, B11), gradients
//! w.r.t. non-leaves (B39) and higher-order gradients through `create_graph` (B40). Expected
//! numbers are PyTorch's (`test_grad`, `test_hessian_vector`, `test_grad_nonleaf`, ...).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::*;

// ----- helpers ---------------------------------------------------------------------------------

fn tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    tensor(v, shape).requires_grad_(true).unwrap()
}

fn randn_leaf(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn_seeded(shape, DType::F64, seed)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F64).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    vals(&t.grad().expect("expected .grad to be set"))
}

fn some(g: &Option<Tensor>) -> Vec<f64> {
    vals(g.as_ref().expect("expected a gradient"))
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "length: {actual:?} vs {expected:?}"
    );
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            (a - e).abs() <= 1e-9 * (1.0 + e.abs()),
            "{actual:?} != {expected:?}"
        );
    }
}

/// `a·p + b·q` element-wise.
fn lin(a: f64, p: &Tensor, b: f64, q: &Tensor) -> Vec<f64> {
    vals(p)
        .iter()
        .zip(vals(q))
        .map(|(p, q)| a * p + b * q)
        .collect()
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn count_tensor_hook(t: &Tensor, n: &Arc<AtomicUsize>) {
    let n = n.clone();
    let _h = t
        .register_hook(move |_g| {
            n.fetch_add(1, Ordering::SeqCst);
            None
        })
        .unwrap();
}

fn count_prehook(node: &NodeRef, n: &Arc<AtomicUsize>) {
    let n = n.clone();
    let _h = node.register_prehook(move |_g| {
        n.fetch_add(1, Ordering::SeqCst);
        None
    });
}

fn calls(n: &Arc<AtomicUsize>) -> usize {
    n.load(Ordering::SeqCst)
}

/// `x² + y·x + y²`
fn quad(x: &Tensor, y: &Tensor) -> Tensor {
    x.pow(2.0)
        .unwrap()
        .add(&y.mul(x).unwrap())
        .unwrap()
        .add(&y.pow(2.0).unwrap())
        .unwrap()
}

// ----- B10 selective execution ---------------------------------------------------------------------

#[test]
fn b10_b39_grad_wrt_nonleaf_does_not_run_nodes_below() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let h = x.mul_scalar(3.0).unwrap();
    let out = h.mul(&h).unwrap().sum().unwrap();
    let (h_hook, h_node, x_hook, x_acc) = (counter(), counter(), counter(), counter());
    count_tensor_hook(&h, &h_hook);
    count_prehook(&h.grad_fn().unwrap(), &h_node);
    count_tensor_hook(&x, &x_hook);
    count_prehook(
        &h.grad_fn().unwrap().next_functions()[0]
            .as_ref()
            .unwrap()
            .node,
        &x_acc,
    );

    let g = grad(&[out], &[h.clone()], GradOptions::new()).unwrap();
    assert_close(&some(&g[0]), &[6.0, 12.0]); // dL/dh = 2h
    assert_eq!(calls(&h_hook), 1, "h's tensor hook fires once");
    assert_eq!(calls(&h_node), 0, "h's grad_fn must not run");
    assert_eq!(
        (calls(&x_hook), calls(&x_acc)),
        (0, 0),
        "nothing below h runs"
    );
    assert!(x.grad().is_none());
}

#[test]
fn b10_branch_that_cannot_reach_inputs_is_not_executed() {
    let x = leaf(&[0.5], &[]);
    let y = leaf(&[0.25], &[]);
    let s = y.sin().unwrap();
    let out = x.exp().unwrap().add(&s).unwrap();
    let sin_runs = counter();
    count_prehook(&s.grad_fn().unwrap(), &sin_runs);
    let g = grad(&[out], &[x.clone()], GradOptions::new()).unwrap();
    assert_close(&some(&g[0]), &[0.5f64.exp()]);
    assert_eq!(calls(&sin_runs), 0);
    assert!(x.grad().is_none() && y.grad().is_none());
}

#[test]
fn b10_backward_with_inputs_leaves_other_leaves_untouched() {
    let x = randn_leaf(&[2, 2], 1);
    let y = randn_leaf(&[2, 2], 2);
    let x_expected = lin(2.0, &x, 1.0, &y);
    let y_expected = lin(1.0, &x, 2.0, &y);
    let reset = || {
        let _g = no_grad();
        x.grad().unwrap().zero_().unwrap();
        y.grad().unwrap().zero_().unwrap();
    };
    let run = |inputs: &[Tensor]| {
        quad(&x, &y)
            .backward_with(
                BackwardOptions::new()
                    .gradient(ones(&[2, 2]))
                    .inputs(inputs),
            )
            .unwrap();
    };
    run(&[x.clone(), y.clone()]);
    assert_close(&grad_vals(&x), &x_expected);
    assert_close(&grad_vals(&y), &y_expected);
    reset();
    run(&[x.clone()]);
    assert_close(&grad_vals(&x), &x_expected);
    assert_close(&grad_vals(&y), &[0.0; 4]);
    reset();
    run(&[y.clone()]);
    assert_close(&grad_vals(&y), &y_expected);
    assert_close(&grad_vals(&x), &[0.0; 4]);
}

#[test]
fn b10_backward_with_inputs_none_grad_for_untouched_leaf() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = leaf(&[3.0, 4.0], &[2]);
    x.mul(&y)
        .unwrap()
        .sum()
        .unwrap()
        .backward_with(BackwardOptions::new().inputs(&[x.clone()]))
        .unwrap();
    assert_close(&grad_vals(&x), &[3.0, 4.0]);
    assert!(y.grad().is_none(), "y.grad must stay undefined");
}

#[test]
fn b10_backward_with_nonleaf_inputs() {
    let x = randn_leaf(&[2, 2], 3);
    let x_nonleaf = x.mul_scalar(1.0).unwrap();
    let y = randn_leaf(&[2, 2], 4);
    let z = randn_leaf(&[2, 2], 5);
    let out = quad(&x_nonleaf, &y);
    let opts = || {
        BackwardOptions::new()
            .gradient(ones(&[2, 2]))
            .create_graph(true)
    };
    out.backward_with(opts().inputs(&[x.clone(), y.clone(), x_nonleaf.clone()]))
        .unwrap();
    assert_close(&grad_vals(&y), &lin(1.0, &x, 2.0, &y));
    assert_close(&grad_vals(&x), &lin(2.0, &x, 1.0, &y));
    assert_close(&grad_vals(&x_nonleaf), &lin(2.0, &x_nonleaf, 1.0, &y));
    // backward behaves as allow_unused=True: an unreachable input keeps .grad None
    out.backward_with(opts().inputs(&[z.clone()])).unwrap();
    assert!(z.grad().is_none());
}

// ----- B09 topological pruning -------------------------------------------------------------------

#[test]
fn b09_pruning_skips_deep_branches_without_changing_results() {
    let x = leaf(&[1.0], &[]);
    let w = leaf(&[2.0], &[]);
    let mut deep = x.clone();
    for _ in 0..20 {
        deep = deep.mul_scalar(1.5).unwrap();
    }
    let mid_runs = counter();
    count_prehook(&deep.grad_fn().unwrap(), &mid_runs);
    let out = deep.mul(&w).unwrap();
    let g = grad(
        &[out.clone()],
        &[w.clone()],
        GradOptions::new().retain_graph(true),
    )
    .unwrap();
    let deep_val = 1.5f64.powi(20);
    assert_close(&some(&g[0]), &[deep_val]);
    assert_eq!(calls(&mid_runs), 0);
    let g = grad(&[out], &[w, x], GradOptions::new()).unwrap();
    assert_close(&some(&g[0]), &[deep_val]);
    assert_close(&some(&g[1]), &[2.0 * deep_val]);
    assert_eq!(calls(&mid_runs), 1);
}

// ----- B11 unused inputs ----------------------------------------------------------------------------

#[test]
fn b11_grad_unreachable_allow_unused() {
    let x = leaf(&[1.0], &[1]);
    let y = leaf(&[1.0], &[1]);
    // make sure x and y have grad accumulators allocated
    let _z = x.mul_scalar(2.0).unwrap();
    let _w = y.mul_scalar(2.0).unwrap();
    let g = grad(
        &[x.mul_scalar(2.0).unwrap()],
        &[x.clone(), y],
        GradOptions::new().allow_unused(true),
    )
    .unwrap();
    assert_close(&some(&g[0]), &[2.0]);
    assert!(g[1].is_none());
    // z has no grad accumulator at all
    let z = leaf(&[1.0], &[1]);
    let g = grad(
        &[x.mul_scalar(2.0).unwrap()],
        &[x, z],
        GradOptions::new().allow_unused(true),
    )
    .unwrap();
    assert_close(&some(&g[0]), &[2.0]);
    assert!(g[1].is_none());
}

#[test]
fn b11_grad_materialize_grads() {
    let x = leaf(&[0.5], &[]);
    let a = leaf(&[1.0], &[]);
    let y = x.mul(&a).unwrap();
    let dydx = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true)).unwrap()[0]
        .clone()
        .unwrap();
    let none = grad(
        &[dydx.clone()],
        &[x.clone()],
        GradOptions::new().create_graph(true).allow_unused(true),
    )
    .unwrap();
    assert!(none[0].is_none());
    let opts = GradOptions::new()
        .create_graph(true)
        .allow_unused(true)
        .materialize_grads(true);
    let d2 = grad(&[dydx], &[x.clone()], opts).unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(d2.item::<f64>().unwrap(), 0.0);
    // materialized zeros require grad (zeros_like(input, requires_grad=True)), so they can be
    // differentiated again; allow_unused is implied by materialize_grads
    let d3 = grad(&[d2], &[x], GradOptions::new().materialize_grads(true)).unwrap();
    assert_eq!(d3[0].as_ref().unwrap().item::<f64>().unwrap(), 0.0);
}

// ----- B39 / B40 higher order ---------------------------------------------------------------------

#[test]
fn b40_grad_of_grad_of_cube() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap().mul(&x).unwrap();
    let opts = GradOptions::new()
        .grad_outputs(vec![Some(ones(&[3]))])
        .create_graph(true);
    let dy = grad(&[y], &[x.clone()], opts).unwrap()[0].clone().unwrap();
    assert_close(&vals(&dy), &[3.0, 12.0, 27.0]);
    assert!(dy.requires_grad() && dy.grad_fn().is_some());
    let d2 = grad(&[dy.sum().unwrap()], &[x.clone()], GradOptions::new()).unwrap();
    assert_close(&some(&d2[0]), &[6.0, 12.0, 18.0]);
    assert!(x.grad().is_none());
}

#[test]
fn b40_test_grad_hessian_vector_via_grad() {
    let x = randn_leaf(&[2, 2], 6);
    let y = randn_leaf(&[2, 2], 7);
    quad(&x, &y)
        .backward_with(
            BackwardOptions::new()
                .gradient(ones(&[2, 2]))
                .create_graph(true),
        )
        .unwrap();
    let (x_grad, y_grad) = (lin(2.0, &x, 1.0, &y), lin(1.0, &x, 2.0, &y));
    assert_close(&grad_vals(&x), &x_grad);
    assert_close(&grad_vals(&y), &y_grad);
    let grad_sum = x
        .grad()
        .unwrap()
        .mul_scalar(2.0)
        .unwrap()
        .add(&y.grad().unwrap())
        .unwrap();
    let opts = GradOptions::new()
        .grad_outputs(vec![Some(ones(&[2, 2]))])
        .create_graph(true);
    let x_hv = grad(&[grad_sum], &[x.clone()], opts).unwrap();
    assert_close(&some(&x_hv[0]), &[5.0; 4]);
    assert_close(&grad_vals(&x), &x_grad);
    assert_close(&grad_vals(&y), &y_grad);
}

#[test]
fn b40_hessian_vector_via_backward() {
    let x = randn_leaf(&[2, 2], 8);
    let y = randn_leaf(&[2, 2], 9);
    quad(&x, &y)
        .backward_with(
            BackwardOptions::new()
                .gradient(ones(&[2, 2]))
                .create_graph(true),
        )
        .unwrap();
    let (x_grad, y_grad) = (lin(2.0, &x, 1.0, &y), lin(1.0, &x, 2.0, &y));
    assert_close(&grad_vals(&x), &x_grad);
    assert_close(&grad_vals(&y), &y_grad);
    let grad_sum = x
        .grad()
        .unwrap()
        .mul_scalar(2.0)
        .unwrap()
        .add(&y.grad().unwrap())
        .unwrap();
    grad_sum
        .backward_with(BackwardOptions::new().gradient(ones(&[2, 2])))
        .unwrap();
    // x_hv = 5, y_hv = 4
    assert_close(
        &grad_vals(&x),
        &x_grad.iter().map(|g| g + 5.0).collect::<Vec<_>>(),
    );
    assert_close(
        &grad_vals(&y),
        &y_grad.iter().map(|g| g + 4.0).collect::<Vec<_>>(),
    );
}

#[test]
fn b39_b40_grad_nonleaf_loop() {
    let x_init = randn_leaf(&[2, 2], 10);
    let y = randn_leaf(&[2, 2], 11);
    let mut x = x_init.clone();
    for _ in 0..5 {
        let opts = GradOptions::new()
            .grad_outputs(vec![Some(ones(&[2, 2]))])
            .create_graph(true);
        let grad_x = grad(&[quad(&x, &y)], &[x.clone()], opts).unwrap()[0]
            .clone()
            .unwrap();
        assert!(y.grad().is_none());
        assert!(x_init.grad().is_none());
        assert_close(&vals(&grad_x), &lin(2.0, &x, 1.0, &y));
        x = x.add(&grad_x.mul_scalar(0.05).unwrap()).unwrap();
    }
    let val = |x: &Tensor| quad(x, &y).sum().unwrap().item::<f64>().unwrap();
    assert!(val(&x) > val(&x_init));
    x.backward_with(BackwardOptions::new().gradient(ones(&[2, 2])))
        .unwrap();
    assert!(y.grad().is_some());
    assert!(x_init.grad().is_some());
}

#[test]
fn b39_grad_wrt_leaf_and_nonleaf_together() {
    let x = leaf(&[2.0], &[]);
    let h = x.exp().unwrap();
    let out = h.mul(&x).unwrap(); // x·eˣ
    let g = grad(&[out], &[h.clone(), x.clone()], GradOptions::new()).unwrap();
    let e = 2f64.exp();
    assert_close(&some(&g[0]), &[2.0]); // d(out)/dh = x
    assert_close(&some(&g[1]), &[e + 2.0 * e]); // total derivative: eˣ + x·eˣ
    assert!(x.grad().is_none() && h.grad().is_none());
}

// ----- task_should_compute_output ------------------------------------------------------------

/// Records, each time it runs, which of its outputs the running pass wants
/// (`NodeMeta::should_compute_output`), and passes the gradient on to every input.
struct Wants(Arc<std::sync::Mutex<Vec<Vec<bool>>>>);

impl autograd::graph::Backward for Wants {
    const NAME: &'static str = "WantsBackward";
    fn backward(
        &self,
        meta: &autograd::graph::NodeMeta,
        grads: autograd::graph::GradVec,
    ) -> Result<autograd::graph::GradVec> {
        let wanted = (0..meta.num_outputs())
            .map(|i| meta.should_compute_output(i))
            .collect();
        self.0.lock().unwrap().push(wanted);
        let g = grads[0].clone();
        Ok((0..meta.num_outputs()).map(|_| g.clone()).collect())
    }
}

/// `a + b + c` as one `WantsBackward` node over the three.
fn wants_node(inputs: &[&Tensor], seen: &Arc<std::sync::Mutex<Vec<Vec<bool>>>>) -> Tensor {
    let out = {
        let _g = no_grad();
        inputs[0].add(inputs[1]).unwrap().add(inputs[2]).unwrap()
    };
    let edges = autograd::__private::next_edges(inputs).unwrap();
    autograd::__private::record_node(edges, &[&out], |_| Wants(seen.clone()));
    out
}

#[test]
fn a_selective_pass_tells_nodes_which_outputs_it_wants() -> Result<()> {
    // PyTorch's generated nodes skip the gradients `exec_info` trims
    // (`task_should_compute_output`): in `grad(y, [b])` only b's slot is wanted; in
    // `backward()` (not selective) every input's that requires grad.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (a, b) = (leaf(&[1.0], &[1]), leaf(&[2.0], &[1]));
    let c = tensor(&[3.0], &[1]); // requires no grad: no edge
    let y = wants_node(&[&a, &b, &c], &seen).sum()?;
    let g = grad(
        &[y.clone()],
        std::slice::from_ref(&b),
        GradOptions::new().retain_graph(true),
    )?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, [1.0]);
    y.backward_with(
        BackwardOptions::new()
            .inputs(std::slice::from_ref(&a))
            .retain_graph(true),
    )?;
    y.backward()?;
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [
            vec![false, true, false],
            vec![true, false, false],
            vec![true, true, false]
        ]
    );
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, [2.0]);

    // Built-in nodes read it: `grad` of a product w.r.t. one factor is that factor's only.
    let (p, q) = (leaf(&[2.0, 3.0], &[2]), leaf(&[5.0, 7.0], &[2]));
    let g = grad(&[p.mul(&q)?.sum()?], &[q.clone()], GradOptions::new())?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, [2.0, 3.0]);
    Ok(())
}

#[test]
fn a_reentrant_pass_inside_a_selective_one_is_not_bound_by_it() -> Result<()> {
    // The node of the outer `grad()` runs a plain backward inside its own backward: the inner
    // pass's nodes want every output, whatever the outer pass wants of its own node's.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let inner_seen = seen.clone();
    let (a, b) = (leaf(&[1.0], &[1]), leaf(&[2.0], &[1]));
    let c = tensor(&[3.0], &[1]);
    let x = leaf(&[4.0], &[1]);
    let outer = {
        let _g = no_grad();
        x.mul_scalar(2.0)?
    };
    let (a2, b2, c2) = (a.clone(), b.clone(), c.clone());
    crate::common::custom(&[&x], outer.clone(), move |grads| {
        let _g = enable_grad();
        let inner = wants_node(&[&a2, &b2, &c2], &inner_seen).sum()?;
        inner.backward()?;
        Ok(grads
            .into_iter()
            .map(|g| g.map(|g| g.mul_scalar(2.0).unwrap()))
            .collect())
    });
    let g = grad(
        &[outer.sum()?],
        std::slice::from_ref(&x),
        GradOptions::new(),
    )?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, [2.0]);
    assert_eq!(seen.lock().unwrap().as_slice(), [vec![true, true, false]]);
    assert_eq!(b.grad().unwrap().to_vec::<f64>()?, [1.0]);
    Ok(())
}
