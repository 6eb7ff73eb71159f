//! Core scheduling behaviours of the backward engine (reference B01–B08, B33): backward vs grad,
//! retain_graph defaults, dependency counting, ready-queue ordering, input buffers,
//! validate_outputs and multiple roots. Expected numbers are PyTorch's.

use std::sync::{Arc, Mutex};

use autograd::*;

use crate::common;
use common::custom;

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

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    vals(&t.grad().expect("expected .grad to be set"))
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

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn entries(l: &Log) -> Vec<String> {
    l.lock().unwrap().clone()
}

/// A tensor hook that records `name` and leaves the gradient unchanged.
fn record_hook(t: &Tensor, l: &Log, name: &str) {
    let (l, name) = (l.clone(), name.to_string());
    let _handle = t
        .register_hook(move |_g| {
            l.lock().unwrap().push(name.clone());
            None
        })
        .unwrap();
}

/// A node pre-hook that records the node's name.
fn record_node_name(node: &NodeRef, l: &Log) {
    let (l, name) = (l.clone(), node.name().to_string());
    let _handle = node.register_prehook(move |_g| {
        l.lock().unwrap().push(name.clone());
        None
    });
}

// ----- B01 / B02 ---------------------------------------------------------------------------------

#[test]
fn b01_backward_accumulates_grad_returns_without_touching_grad() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = leaf(&[4.0, 5.0, 6.0], &[3]);
    let g = grad(
        &[x.mul(&y).unwrap().sum().unwrap()],
        &[y.clone(), x.clone()],
        GradOptions::new(),
    )
    .unwrap();
    // results come back in the order of `inputs`
    assert_close(&vals(g[0].as_ref().unwrap()), &[1.0, 2.0, 3.0]);
    assert_close(&vals(g[1].as_ref().unwrap()), &[4.0, 5.0, 6.0]);
    assert!(x.grad().is_none() && y.grad().is_none());

    x.mul(&y).unwrap().sum().unwrap().backward().unwrap();
    assert_close(&grad_vals(&x), &[4.0, 5.0, 6.0]);
    assert_close(&grad_vals(&y), &[1.0, 2.0, 3.0]);
}

#[test]
fn b01_b02_create_graph_warns_for_backward_only_and_retains_graph() {
    // The warning comes once per process: other tests of this binary would trigger it first.
    if !common::in_own_process(
        "backward_basic::b01_b02_create_graph_warns_for_backward_only_and_retains_graph",
    ) {
        return;
    }
    const WARNING: &str = "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters to None after use to break the cycle and avoid the leak.";
    let seen = log();
    let s = seen.clone();
    set_warning_handler(Some(Box::new(move |w: &str| {
        s.lock().unwrap().push(w.to_string())
    })));
    let count = || {
        entries(&seen)
            .iter()
            .filter(|w| w.starts_with("Using backward() with create_graph"))
            .count()
    };

    let x = leaf(&[2.0], &[]);
    let y = x.mul(&x).unwrap().mul(&x).unwrap(); // x³, saves tensors
    grad(
        &[y.clone()],
        &[x.clone()],
        GradOptions::new().create_graph(true),
    )
    .unwrap();
    assert_eq!(count(), 0, "grad(create_graph=True) must not warn");

    // retain_graph defaults to create_graph: a second backward works
    y.backward_with(BackwardOptions::new().create_graph(true))
        .unwrap();
    y.backward().unwrap();
    set_warning_handler(None);
    assert_eq!(count(), 1);
    assert!(entries(&seen).iter().any(|w| w == WARNING));
    assert_close(&grad_vals(&x), &[24.0]); // 3x² twice
}

// ----- B03 dependency counting -------------------------------------------------------------------

#[test]
fn b03_backward_copy_counts_edges() {
    let x = Tensor::ones(&[5, 5], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = Tensor::ones(&[5, 5], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let mut a = x.add_scalar(2.0).unwrap();
    let mut b = y.add_scalar(2.0).unwrap();
    let mut c = x.add_scalar(2.0).unwrap();
    let add1 = a.add(&b).unwrap();
    let add2 = add1.add(&c).unwrap();
    for _ in 0..4 {
        a = a.mul_scalar(2.0).unwrap();
        b = b.mul_scalar(2.0).unwrap();
        c = c.mul_scalar(2.0).unwrap();
    }
    let branch = a.add(&b).unwrap().add(&c).unwrap();
    let out = add2.add(&branch).unwrap();
    out.backward_with(BackwardOptions::new().gradient(Tensor::ones(&[5, 5], DType::F64).unwrap()))
        .unwrap();
    assert_close(&grad_vals(&x), &[34.0; 25]);
    assert_close(&grad_vals(&y), &[17.0; 25]);
}

#[test]
fn b03_node_reached_twice_from_same_parent_runs_once_with_summed_grad() {
    let x = leaf(&[0.5], &[]);
    let a = x.exp().unwrap();
    let y = a.mul(&a).unwrap(); // two edges into ExpBackward0
    let calls = log();
    let c = calls.clone();
    let _h = a.grad_fn().unwrap().register_prehook(move |g| {
        c.lock().unwrap().push(format!(
            "{:.12}",
            g[0].as_ref().unwrap().item::<f64>().unwrap()
        ));
        None
    });
    y.backward().unwrap();
    let e = 0.5f64.exp();
    assert_eq!(entries(&calls), vec![format!("{:.12}", 2.0 * e)]);
    assert_close(&grad_vals(&x), &[2.0 * e * e]);
}

#[test]
fn b03_b08_dependent_backward() {
    let x = randn_leaf(&[10], 1);
    let y = x.pow(2.0).unwrap();
    let z = y.pow(3.0).unwrap();
    let go_y = Tensor::randn_seeded(&[10], DType::F64, 2).unwrap();
    let go_z = Tensor::randn_seeded(&[10], DType::F64, 3).unwrap();
    backward(
        &[y, z],
        &[Some(go_y.clone()), Some(go_z.clone())],
        BackwardOptions::new(),
    )
    .unwrap();
    let expected: Vec<f64> = vals(&x)
        .iter()
        .zip(vals(&go_y).iter().zip(vals(&go_z)))
        .map(|(x, (gy, gz))| 2.0 * x * gy + 6.0 * x.powi(5) * gz)
        .collect();
    assert_close(&grad_vals(&x), &expected);
}

#[test]
fn b03_b08_duplicate_backward_root_sums() {
    let a = randn_leaf(&[5, 5], 4);
    let b = randn_leaf(&[5, 5], 5);
    let x = a.mul(&b).unwrap();
    let go = Tensor::randn_seeded(&[5, 5], DType::F64, 6).unwrap();
    backward(
        &[x.clone(), x],
        &[Some(go.clone()), Some(go.clone())],
        BackwardOptions::new(),
    )
    .unwrap();
    let prod = |p: &Tensor| -> Vec<f64> {
        vals(p)
            .iter()
            .zip(vals(&go))
            .map(|(p, g)| 2.0 * p * g)
            .collect()
    };
    assert_close(&grad_vals(&a), &prod(&b));
    assert_close(&grad_vals(&b), &prod(&a));
}

// ----- B04 ordering ------------------------------------------------------------------------------

fn abc_graph() -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    let x = randn_leaf(&[10], 7);
    let y = randn_leaf(&[10], 8);
    let z = randn_leaf(&[10], 9);
    let a = x.add(&y).unwrap();
    let b = y.add(&z).unwrap();
    let c = a.add(&b).unwrap();
    (x, y, z, a, b, c)
}

#[test]
fn b04_later_forward_ops_run_first() {
    let (x, y, z, a, b, c) = abc_graph();
    let order = log();
    record_hook(&a, &order, "a");
    record_hook(&b, &order, "b");
    record_hook(&c, &order, "c");
    c.sum().unwrap().backward().unwrap();
    assert_eq!(entries(&order), ["c", "b", "a"]);
    assert_close(&grad_vals(&x), &[1.0; 10]);
    assert_close(&grad_vals(&y), &[2.0; 10]);
    assert_close(&grad_vals(&z), &[1.0; 10]);
}

#[test]
fn b04_set_sequence_nr_changes_order() {
    let (x, y, z, a, b, c) = abc_graph();
    a.grad_fn().unwrap().meta().set_sequence_nr(100);
    b.grad_fn().unwrap().meta().set_sequence_nr(99);
    c.grad_fn().unwrap().meta().set_sequence_nr(98);
    assert_eq!(a.grad_fn().unwrap().meta().sequence_nr(), 100);
    assert_eq!(b.grad_fn().unwrap().meta().sequence_nr(), 99);
    assert_eq!(c.grad_fn().unwrap().meta().sequence_nr(), 98);
    let order = log();
    record_hook(&a, &order, "a");
    record_hook(&b, &order, "b");
    record_hook(&c, &order, "c");
    c.sum().unwrap().backward().unwrap();
    assert_eq!(entries(&order), ["c", "a", "b"]);
    assert_close(&grad_vals(&x), &[1.0; 10]);
    assert_close(&grad_vals(&y), &[2.0; 10]);
    assert_close(&grad_vals(&z), &[1.0; 10]);
}

#[test]
fn b04_chain_execution_order_ends_with_accumulate_grad() {
    let t = leaf(&[1.0], &[]);
    let out = t.copy().unwrap().sin().unwrap().exp().unwrap();
    let order = log();
    let mut node = out.grad_fn();
    while let Some(n) = node {
        record_node_name(&n, &order);
        node = n
            .next_functions()
            .first()
            .cloned()
            .flatten()
            .map(|e| e.node);
    }
    out.backward().unwrap();
    assert_eq!(
        entries(&order),
        [
            "ExpBackward0",
            "SinBackward0",
            "CloneBackward0",
            "AccumulateGrad"
        ]
    );
    assert_close(&grad_vals(&t), &[1f64.sin().exp() * 1f64.cos()]);
}

#[test]
fn b04_multiple_roots_run_latest_first() {
    let a = leaf(&[0.3], &[]);
    let b = a.mul_scalar(2.0).unwrap();
    let out = b.sin().unwrap();
    let out2 = b.cos().unwrap();
    let out3 = b.cos().unwrap();
    let order = log();
    for (t, tag) in [(&out, "out"), (&out2, "out2"), (&out3, "out3"), (&b, "b")] {
        let (o, tag, name) = (
            order.clone(),
            tag.to_string(),
            t.grad_fn().unwrap().name().to_string(),
        );
        let _h = t.grad_fn().unwrap().register_prehook(move |_g| {
            o.lock().unwrap().push(format!("{name}:{tag}"));
            None
        });
    }
    let g = grad(&[out, out3, out2], &[a], GradOptions::new()).unwrap();
    assert_eq!(
        entries(&order),
        [
            "CosBackward0:out3",
            "CosBackward0:out2",
            "SinBackward0:out",
            "MulBackward0:b"
        ]
    );
    let bv = 0.6f64;
    assert_close(
        &vals(g[0].as_ref().unwrap()),
        &[2.0 * (bv.cos() - 2.0 * bv.sin())],
    );
}

// ----- B05 input buffers -------------------------------------------------------------------------

#[test]
fn b05_input_buffer_does_not_mutate_given_gradients() {
    let leaf_t = randn_leaf(&[2, 2], 10);
    let mid = leaf_t.mul_scalar(1.0).unwrap();
    let out1 = mid.copy().unwrap();
    let out2 = mid.copy().unwrap();
    let g1 = Tensor::randn_seeded(&[2, 2], DType::F64, 11).unwrap();
    let g2 = Tensor::randn_seeded(&[2, 2], DType::F64, 12).unwrap();
    let (g1_orig, g2_orig) = (vals(&g1), vals(&g2));
    backward(
        &[out1, out2],
        &[Some(g1.clone()), Some(g2.clone())],
        BackwardOptions::new(),
    )
    .unwrap();
    assert_eq!(vals(&g1), g1_orig);
    assert_eq!(vals(&g2), g2_orig);
    let sum: Vec<f64> = g1_orig.iter().zip(&g2_orig).map(|(a, b)| a + b).collect();
    assert_close(&grad_vals(&leaf_t), &sum);
}

#[test]
fn b05_accumulate_grad_does_not_steal_given_gradient() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let g = tensor(&[1.0, 1.0], &[2]);
    x.copy()
        .unwrap()
        .backward_with(BackwardOptions::new().gradient(g.clone()))
        .unwrap();
    x.copy()
        .unwrap()
        .backward_with(BackwardOptions::new().gradient(tensor(&[5.0, 5.0], &[2])))
        .unwrap();
    assert_eq!(
        vals(&g),
        [1.0, 1.0],
        "the caller's gradient tensor was mutated"
    );
    assert_close(&grad_vals(&x), &[6.0, 6.0]);
}

/// `mul_scalar`'s backward writes over the incoming gradient when nothing else holds it. A
/// gradient someone else can see (the caller's, one a hook kept, a retained `.grad`) must keep
/// its values, on scalar (inline) and wide tensors alike, and `create_graph` still records.
#[test]
fn b05_gradient_reused_in_place_only_when_nobody_else_holds_it() {
    for shape in [&[][..], &[3][..], &[4096][..]] {
        let n: usize = shape.iter().product();
        let x = leaf(&vec![1.0; n], shape);
        let mid = x.mul_scalar(2.0).unwrap();
        mid.retain_grad().unwrap();
        let kept = Arc::new(Mutex::new(Vec::new()));
        let k = kept.clone();
        mid.register_hook(move |g| {
            k.lock().unwrap().push(g.clone());
            None
        })
        .unwrap();
        let y = mid.mul_scalar(3.0).unwrap().mul_scalar(5.0).unwrap();
        let g = tensor(&vec![1.0; n], shape);
        y.backward_with(BackwardOptions::new().gradient(g.clone()))
            .unwrap();
        assert_eq!(vals(&g), vec![1.0; n], "the caller's gradient was mutated");
        let hooked = kept.lock().unwrap();
        assert_eq!(vals(&hooked[0]), vec![15.0; n], "a hook's gradient changed");
        assert_eq!(grad_vals(&mid), vec![15.0; n], "retained grad of {shape:?}");
        assert_eq!(grad_vals(&x), vec![30.0; n], "leaf grad of {shape:?}");
    }
    // Under create_graph the formula is recorded, so the gradient is differentiable.
    let x = leaf(&[1.5], &[]);
    let y = x.mul(&x).unwrap().mul_scalar(4.0).unwrap();
    let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true)).unwrap();
    let g = g[0].clone().unwrap();
    assert_eq!(vals(&g), [12.0]);
    let gg = grad(&[g], &[x], GradOptions::new()).unwrap();
    assert_eq!(vals(gg[0].as_ref().unwrap()), [8.0]);
}

// ----- B07 validate_outputs ----------------------------------------------------------------------

#[test]
fn b07_broadcast_gradient_is_sum_reduced() {
    let a = leaf(&[1.0, 2.0, 3.0], &[3]);
    let b = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let s = leaf(&[10.0], &[]);
    let out = a.add(&b).unwrap().mul(&s).unwrap();
    assert_eq!(out.shape(), &[2, 3]);
    out.sum().unwrap().backward().unwrap();
    assert_eq!(a.grad().unwrap().shape(), &[3]);
    assert_close(&grad_vals(&a), &[20.0; 3]);
    assert_close(&grad_vals(&b), &[10.0; 6]);
    assert_eq!(s.grad().unwrap().shape(), &[] as &[usize]);
    assert_close(&grad_vals(&s), &[33.0]); // Σ (a + b)
}

#[test]
fn b07_gradient_dtype_is_cast_and_shape_reduced() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let out = custom(&[&x], Tensor::zeros(&[3], DType::F32).unwrap(), |_g| {
        Ok(std::iter::once(Some(Tensor::ones(&[2, 3], DType::F64)?)).collect())
    });
    out.sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    assert_eq!(g.shape(), &[3]);
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![2.0, 2.0, 2.0]);
}

// ----- B08 multiple roots ------------------------------------------------------------------------

#[test]
fn b08_multi_backward() {
    let [x, y, q, a, b] = [13, 14, 15, 16, 17].map(|s| randn_leaf(&[5, 5], s));
    let q2 = q.mul_scalar(2.0).unwrap();
    let z = x.add(&y).unwrap().add(&q2).unwrap();
    let c = a.mul(&b).unwrap().add(&q2).unwrap();
    let gz = Tensor::randn_seeded(&[5, 5], DType::F64, 18).unwrap();
    let gc = Tensor::randn_seeded(&[5, 5], DType::F64, 19).unwrap();
    backward(
        &[z, c],
        &[Some(gz.clone()), Some(gc.clone())],
        BackwardOptions::new(),
    )
    .unwrap();
    let mulv = |p: &Tensor, g: &Tensor| -> Vec<f64> {
        vals(p).iter().zip(vals(g)).map(|(p, g)| p * g).collect()
    };
    assert_close(&grad_vals(&x), &vals(&gz));
    assert_close(&grad_vals(&y), &vals(&gz));
    assert_close(&grad_vals(&a), &mulv(&b, &gc));
    assert_close(&grad_vals(&b), &mulv(&a, &gc));
    let qg: Vec<f64> = vals(&gc)
        .iter()
        .zip(vals(&gz))
        .map(|(c, z)| 2.0 * (c + z))
        .collect();
    assert_close(&grad_vals(&q), &qg);
}

// ----- B33 undefined gradients -------------------------------------------------------------------

#[test]
fn b33_undefined_gradient_propagates_as_none() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = leaf(&[3.0, 4.0], &[2]);
    let out = custom(&[&x, &y], Tensor::zeros(&[2], DType::F64).unwrap(), |g| {
        Ok([None, g[0].clone()].into_iter().collect())
    });
    out.sum().unwrap().backward().unwrap();
    assert!(
        x.grad().is_none(),
        "an undefined gradient must not be materialised as zeros"
    );
    assert_close(&grad_vals(&y), &[1.0, 1.0]);
}
