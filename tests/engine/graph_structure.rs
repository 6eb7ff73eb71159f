//! The recorded graph: grad_fn names, next_functions, AccumulateGrad for leaves, sequence and
//! topological numbers, is_leaf/requires_grad propagation, grad modes (reference B04, B09, B31,
//! B32), and graphs deep enough that any recursion would overflow the stack.

use std::time::Instant;

use autograd::*;

// ----- helpers ---------------------------------------------------------------------------------

fn tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    tensor(v, shape).requires_grad_(true).unwrap()
}

fn name(t: &Tensor) -> String {
    t.grad_fn().expect("expected a grad_fn").name().to_string()
}

/// `(name, input_nr)` of each next edge, `None` for inputs that do not require grad.
fn next(t: &Tensor) -> Vec<Option<(String, usize)>> {
    t.grad_fn()
        .unwrap()
        .next_functions()
        .into_iter()
        .map(|e| e.map(|e| (e.node.name().to_string(), e.input_nr)))
        .collect()
}

fn edge(name: &str, nr: usize) -> Option<(String, usize)> {
    Some((name.to_string(), nr))
}

fn accumulate_grad_of(t: &Tensor) -> NodeRef {
    t.mul_scalar(1.0)
        .unwrap()
        .grad_fn()
        .unwrap()
        .next_functions()[0]
        .clone()
        .unwrap()
        .node
}

/// Runs `f` on a thread with a 256 KiB stack: recursion proportional to graph depth would
/// overflow it (and abort the test binary).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the small-stack thread panicked");
}

const DEEP: usize = 1_000_000;
/// Still far deeper than a 256 KiB stack allows recursing, but cheaper in debug builds.
const DEEP_SMALL: usize = 200_000;

// ----- names ------------------------------------------------------------------------------------

#[test]
fn grad_fn_names_match_pytorch() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = leaf(&[0.5, 1.5, 2.5, 3.5], &[2, 2]);
    let cases = [
        (x.mul(&y).unwrap(), "MulBackward0"),
        (x.mul_scalar(2.0).unwrap(), "MulBackward0"),
        (x.add(&y).unwrap(), "AddBackward0"),
        (x.add_scalar(2.0).unwrap(), "AddBackward0"),
        (x.sub(&y).unwrap(), "SubBackward0"),
        (x.div(&y).unwrap(), "DivBackward0"),
        (x.neg().unwrap(), "NegBackward0"),
        (x.pow(2.0).unwrap(), "PowBackward0"),
        (x.exp().unwrap(), "ExpBackward0"),
        (x.log().unwrap(), "LogBackward0"),
        (x.sin().unwrap(), "SinBackward0"),
        (x.cos().unwrap(), "CosBackward0"),
        (x.tanh().unwrap(), "TanhBackward0"),
        (x.sigmoid().unwrap(), "SigmoidBackward0"),
        (x.relu().unwrap(), "ReluBackward0"),
        (x.sqrt().unwrap(), "SqrtBackward0"),
        (x.abs().unwrap(), "AbsBackward0"),
        (x.sum().unwrap(), "SumBackward0"),
        (x.mean().unwrap(), "MeanBackward0"),
        (x.sum_dims(&[1], false).unwrap(), "SumBackward1"),
        (x.matmul(&y).unwrap(), "MmBackward0"),
        (x.transpose(0, 1).unwrap(), "TransposeBackward0"),
        (x.reshape(&[4]).unwrap(), "ViewBackward0"),
        (x.copy().unwrap(), "CloneBackward0"),
        (x.to_dtype(DType::F32).unwrap(), "ToCopyBackward0"),
        (
            x.sum_dims(&[0], true).unwrap().expand(&[2, 2]).unwrap(),
            "ExpandBackward0",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(t, expected)| name(t) != *expected)
        .map(|(t, expected)| format!("got {} expected {expected}", name(t)))
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
    assert_eq!(accumulate_grad_of(&x).name(), "AccumulateGrad");
}

#[test]
fn inplace_ops_take_the_name_of_their_out_of_place_op() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let b = x.mul_scalar(1.0).unwrap();
    b.add_(&tensor(&[1.0, 1.0], &[2])).unwrap();
    assert_eq!(name(&b), "AddBackward0");
    let c = x.mul_scalar(1.0).unwrap();
    c.mul_(&tensor(&[2.0, 2.0], &[2])).unwrap();
    assert_eq!(name(&c), "MulBackward0");
    assert_eq!(next(&c)[0], edge("MulBackward0", 0));
}

// ----- next_functions ---------------------------------------------------------------------------

#[test]
fn next_functions_point_to_accumulate_grad_and_none() {
    let a = leaf(&[1.0], &[]);
    let b = tensor(&[2.0], &[]); // does not require grad
    let c = a.mul(&b).unwrap();
    assert_eq!(next(&c), vec![edge("AccumulateGrad", 0), None]);
    let d = c.add(&a).unwrap();
    assert_eq!(
        next(&d),
        vec![edge("MulBackward0", 0), edge("AccumulateGrad", 0)]
    );
    // the edge to c's node is c's grad_fn itself, and both edges to `a` reach one AccumulateGrad
    let nf = d.grad_fn().unwrap().next_functions();
    assert!(nf[0].as_ref().unwrap().node.ptr_eq(&c.grad_fn().unwrap()));
    let acc_via_c = c.grad_fn().unwrap().next_functions()[0]
        .clone()
        .unwrap()
        .node;
    assert!(nf[1].as_ref().unwrap().node.ptr_eq(&acc_via_c));
    assert!(acc_via_c.next_functions().is_empty());
    assert_eq!(acc_via_c.meta().sequence_nr(), u64::MAX);
}

#[test]
fn multi_output_ops_have_output_nr() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let parts = x.chunk(2, 0).unwrap();
    assert_eq!(name(&parts[0]), "SplitBackward0");
    assert!(
        parts[0]
            .grad_fn()
            .unwrap()
            .ptr_eq(&parts[1].grad_fn().unwrap())
    );
    assert_eq!((parts[0].output_nr(), parts[1].output_nr()), (0, 1));
    let y = parts[1].exp().unwrap();
    assert_eq!(next(&y), vec![edge("SplitBackward0", 1)]);
    y.sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(g, vec![0.0, 0.0, 3f64.exp(), 4f64.exp()]);
}

#[test]
fn sequence_and_topological_numbers() {
    let x = leaf(&[1.0], &[]);
    let a = x.exp().unwrap();
    let b = a.mul(&x).unwrap();
    let c = b.add(&a).unwrap();
    let [fa, fb, fc] = [&a, &b, &c].map(|t| t.grad_fn().unwrap());
    assert!(fa.meta().sequence_nr() < fb.meta().sequence_nr());
    assert!(fb.meta().sequence_nr() < fc.meta().sequence_nr());
    assert_eq!(accumulate_grad_of(&x).meta().topological_nr(), 0);
    assert_eq!(fa.meta().topological_nr(), 1);
    assert_eq!(fb.meta().topological_nr(), 2);
    assert_eq!(fc.meta().topological_nr(), 3);
}

/// B08: a pass with several roots creates a `GraphRoot`, which takes a sequence number from the
/// same per-thread counter as every other node; a single-root pass creates none. PyTorch 2.15
/// numbers the program below 1, 3 | 5 | 7 | 13 (`b`'s and `c`'s SumBackward0, then the first
/// node after each pass).
#[test]
fn b08_graph_root_takes_a_sequence_number() {
    let seq = |t: &Tensor| t.grad_fn().unwrap().meta().sequence_nr();
    // Numbers are per thread: a fresh thread starts at 0, as a fresh PyTorch process does.
    let numbers = std::thread::spawn(move || -> Result<Vec<u64>> {
        let a = leaf(&[1.0, 1.0], &[2]);
        let b = a.mul_scalar(2.0)?.sum()?;
        let c = a.mul_scalar(3.0)?.sum()?;
        let mut numbers = vec![seq(&b), seq(&c)];
        backward(&[b, c], &[], BackwardOptions::new())?; // GraphRoot: 4
        let d = a.mul_scalar(4.0)?;
        numbers.push(seq(&d));
        d.sum()?.backward()?; // one root: no GraphRoot
        let e = a.mul_scalar(5.0)?;
        numbers.push(seq(&e));
        let (g1, g2) = (a.mul_scalar(6.0)?.sum()?, a.mul_scalar(7.0)?.sum()?);
        grad(&[g1, g2], &[a.clone()], GradOptions::new())?; // GraphRoot: 12
        numbers.push(seq(&a.mul_scalar(8.0)?));
        Ok(numbers)
    })
    .join()
    .unwrap()
    .unwrap();
    assert_eq!(numbers, [1, 3, 5, 7, 13]);
}

// ----- leaves and requires_grad -----------------------------------------------------------------

#[test]
fn is_leaf_and_requires_grad_propagation() {
    let plain = tensor(&[1.0], &[]);
    assert!(plain.is_leaf() && !plain.requires_grad());
    let p2 = plain.exp().unwrap();
    assert!(p2.is_leaf() && !p2.requires_grad() && p2.grad_fn().is_none());
    let x = leaf(&[1.0], &[]);
    assert!(x.is_leaf() && x.requires_grad() && x.grad_fn().is_none());
    let mixed = x.mul(&plain).unwrap();
    assert!(!mixed.is_leaf() && mixed.requires_grad());
    assert_eq!(
        mixed.set_requires_grad(false).unwrap_err().to_string(),
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    );
    let d = mixed.detach();
    assert!(d.is_leaf() && !d.requires_grad() && d.grad_fn().is_none());
}

#[test]
fn b31_no_grad_set_grad_enabled_enable_grad() {
    let x = leaf(&[2.0], &[]);
    {
        let _g = no_grad();
        assert!(!is_grad_enabled());
        let y = x.mul(&x).unwrap();
        assert!(!y.requires_grad() && y.grad_fn().is_none() && y.is_leaf());
        {
            let _e = enable_grad();
            let z = x.mul(&x).unwrap();
            assert_eq!(name(&z), "MulBackward0");
        }
        assert!(!is_grad_enabled());
    }
    assert!(is_grad_enabled());
    {
        let _g = set_grad_enabled(false);
        assert!(!x.exp().unwrap().requires_grad());
        let _h = set_grad_enabled(true);
        assert!(x.exp().unwrap().requires_grad());
    }
    let w = x.mul(&x).unwrap();
    w.backward().unwrap();
    assert_eq!(x.grad().unwrap().item::<f64>().unwrap(), 4.0);
}

#[test]
fn b32_detach_blocks_gradient_flow() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let z = x.add(&x.mul_scalar(2.0).unwrap().detach()).unwrap();
    assert_eq!(next(&z), vec![edge("AccumulateGrad", 0), None]);
    z.sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![1.0, 1.0, 1.0]
    );
}

// ----- deep graphs -------------------------------------------------------------------------------

#[test]
fn deep_chain_build_backward_and_drop_without_recursion() {
    on_small_stack(|| {
        let start = Instant::now();
        let x = Tensor::scalar(1.0f64).requires_grad_(true).unwrap();
        let mut y = x.clone();
        for _ in 0..DEEP {
            y = y.mul_scalar(1.0).unwrap();
        }
        assert_eq!(y.grad_fn().unwrap().meta().topological_nr(), DEEP as u64);
        y.backward().unwrap();
        assert_eq!(x.grad().unwrap().item::<f64>().unwrap(), 1.0);
        drop(y);
        eprintln!("deep chain of {DEEP}: {:?}", start.elapsed());
    });
}

#[test]
fn deep_chain_dropped_without_backward_and_grad_over_deep_chain() {
    on_small_stack(|| {
        let x = Tensor::scalar(1.0f64).requires_grad_(true).unwrap();
        let mut y = x.clone();
        for _ in 0..DEEP_SMALL {
            y = y.mul_scalar(1.0).unwrap();
        }
        drop(y); // frees the whole chain, never having run backward
        // a grad() over a deep chain also walks it (exec_info) without recursion
        let mut y = x.clone();
        for _ in 0..DEEP_SMALL {
            y = y.add_scalar(1.0).unwrap();
        }
        let g = grad(&[y], &[x], GradOptions::new()).unwrap();
        assert_eq!(g[0].as_ref().unwrap().item::<f64>().unwrap(), 1.0);
    });
}
