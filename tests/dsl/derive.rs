//! `#[differentiable(derive)]`: the macro derives the backward of a straight-line body. For each
//! derived function: gradcheck and gradgradcheck, gradients equal to the same body recorded op
//! by op, one graph node per call, and version-checked saved tensors.

use autograd::{
    DType, Error, GradOptions, Result, Tensor, backward, differentiable, gradcheck, gradgradcheck,
};

// ----- the derived functions, each with its op-by-op twin ---------------------------------------

/// GELU, tanh approximation: `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
#[differentiable(derive)]
fn gelu_tanh(x: &Tensor) -> Result<Tensor> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

fn gelu_tanh_recorded(x: &Tensor) -> Result<Tensor> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

/// log Σ exp(x), stabilised by a shift: the shift is an input, so it gets a gradient too.
#[differentiable(derive)]
fn log_sum_exp(x: &Tensor, shift: &Tensor) -> Result<Tensor> {
    let z = x.sub(shift)?;
    let s = z.exp()?.sum()?;
    s.log()?.add(shift)
}

fn log_sum_exp_recorded(x: &Tensor, shift: &Tensor) -> Result<Tensor> {
    let z = x.sub(shift)?;
    let s = z.exp()?.sum()?;
    s.log()?.add(shift)
}

/// A dense layer: `tanh(x @ w + b)`, `b` broadcast over the rows.
#[differentiable(derive)]
fn dense_tanh(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = x.matmul(w)? + b;
    h.tanh()
}

fn dense_tanh_recorded(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = x.matmul(w)? + b;
    h.tanh()
}

/// Mean softmax cross-entropy of `logits` `[n, k]` against one-hot `targets`.
#[differentiable(derive)]
fn softmax_cross_entropy(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let lse = logits.exp()?.sum_dims(&[1], true)?.log()?;
    let log_p = logits - &lse;
    let picked = (log_p * targets).sum()?;
    Ok(-picked / n)
}

fn softmax_cross_entropy_recorded(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let lse = logits.exp()?.sum_dims(&[1], true)?.log()?;
    let log_p = logits - &lse;
    let picked = (log_p * targets).sum()?;
    Ok(-picked / n)
}

/// The main job's loss (`examples/train_mlp/src/loss.rs`), body for body.
#[differentiable(derive)]
fn mean_cross_entropy(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let picked = (logits.log_softmax(1)? * targets).sum()?;
    picked.mul_scalar(-1.0 / n)
}

fn mean_cross_entropy_recorded(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let picked = (logits.log_softmax(1)? * targets).sum()?;
    picked.mul_scalar(-1.0 / n)
}

/// A value used several times, scalar operators on both sides, and every unary rule.
#[differentiable(derive)]
fn many_uses(x: &Tensor, scale: f64) -> Result<Tensor> {
    let y = x.sigmoid()? * x;
    let z = (1.0 - &y) / (y.exp()? + 2.0);
    let w = z.sin()? * z.cos()? + x.abs()?.sqrt()?.mul_scalar(scale)?;
    let v = (x * x).add_scalar(1.0)?.log()?.relu()?;
    let u = 3.0 / (v.add_scalar(1.0)?) - w.neg()?.div_scalar(2.0)?.sub_scalar(0.5)?;
    Ok(u.mean()? * scale)
}

fn many_uses_recorded(x: &Tensor, scale: f64) -> Result<Tensor> {
    let y = x.sigmoid()? * x;
    let z = (1.0 - &y) / (y.exp()? + 2.0);
    let w = z.sin()? * z.cos()? + x.abs()?.sqrt()?.mul_scalar(scale)?;
    let v = (x * x).add_scalar(1.0)?.log()?.relu()?;
    let u = 3.0 / (v.add_scalar(1.0)?) - w.neg()?.div_scalar(2.0)?.sub_scalar(0.5)?;
    Ok(u.mean()? * scale)
}

/// One value used by both operands of an op and again after: the rules' contributions share
/// buffers, which the summation must not write over.
#[differentiable(derive)]
fn shared(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    let z = &y + &y;
    let w = z.mul(&y)?;
    Ok(&w * &w + &y)
}

fn shared_recorded(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    let z = &y + &y;
    let w = z.mul(&y)?;
    Ok(&w * &w + &y)
}

/// Views in the body: `transpose`, `reshape`, `narrow`, `expand`, `permute`, `contiguous`.
#[differentiable(derive)]
fn attention_slice(q: &Tensor, k: &Tensor, bias: &Tensor, scale: f64) -> Result<Tensor> {
    let scores = q.matmul(&k.transpose(0, 1)?)? * scale + bias.expand(&[2, 3])?;
    let p = scores.softmax(1)?.permute(&[1, 0])?.contiguous()?;
    p.reshape(&[6])?.narrow(0, 1, 4)
}

fn attention_slice_recorded(q: &Tensor, k: &Tensor, bias: &Tensor, scale: f64) -> Result<Tensor> {
    let scores = q.matmul(&k.transpose(0, 1)?)? * scale + bias.expand(&[2, 3])?;
    let p = scores.softmax(1)?.permute(&[1, 0])?.contiguous()?;
    p.reshape(&[6])?.narrow(0, 1, 4)
}

/// A hand-written pair with an attribute, called from a derived body below.
#[differentiable]
fn scaled_square(x: &Tensor, scale: f64) -> Result<Tensor> {
    Ok(x * x * scale)
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Result<Tensor> {
    Ok(grad * x * (2.0 * scale))
}

/// Calls of a derived function (`gelu_tanh`, `log_sum_exp`) and of a hand-written pair
/// (`scaled_square`): each is one op of this body, differentiated by its own backward.
#[differentiable(derive)]
fn composed(x: &Tensor, shift: &Tensor, scale: f64) -> Result<Tensor> {
    let g = gelu_tanh(x)?;
    let s = scaled_square(&g, scale)?;
    let l = log_sum_exp(&(&s + x), shift)?;
    Ok(l * 2.0)
}

fn composed_recorded(x: &Tensor, shift: &Tensor, scale: f64) -> Result<Tensor> {
    let g = gelu_tanh_recorded(x)?;
    let s = scaled_square(&g, scale)?;
    let l = log_sum_exp_recorded(&(&s + x), shift)?;
    Ok(l * 2.0)
}

/// `detach()` makes a constant: no gradient flows through it (the stop-gradient of a
/// normalisation), while the value it has is read by `mul`'s rule.
#[differentiable(derive)]
fn scaled_by_detached_norm(x: &Tensor) -> Result<Tensor> {
    let sq = x * x;
    let norm = sq.sum()?.sqrt()?.detach();
    let y = x.sin()?;
    Ok(&y / &norm + &sq * &norm)
}

fn scaled_by_detached_norm_recorded(x: &Tensor) -> Result<Tensor> {
    let sq = x * x;
    let norm = sq.sum()?.sqrt()?.detach();
    let y = x.sin()?;
    Ok(&y / &norm + &sq * &norm)
}

/// Two results from one node; `h` feeds both.
#[differentiable(derive)]
fn tanh_and_square(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let h = x * w;
    let t = h.tanh()?;
    Ok((t, &h * &h))
}

fn tanh_and_square_recorded(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let h = x * w;
    let t = h.tanh()?;
    Ok((t, &h * &h))
}

/// Log-sum-exp over rows, shifted by the row maximum: `max_dim`'s indices are ignored, and its
/// rule finds the maxima again in the backward.
#[differentiable(derive)]
fn row_logsumexp(x: &Tensor) -> Result<Tensor> {
    let (m, _indices) = x.max_dim(1, true)?;
    let s = (x - &m).exp()?.sum_dims(&[1], true)?;
    Ok(s.log()? + m)
}

fn row_logsumexp_recorded(x: &Tensor) -> Result<Tensor> {
    let (m, _indices) = x.max_dim(1, true)?;
    let s = (x - &m).exp()?.sum_dims(&[1], true)?;
    Ok(s.log()? + m)
}

/// Panicking operators only: a forward that returns `Tensor`; `b` is never used.
#[differentiable(derive)]
fn infallible(a: &Tensor, b: &Tensor) -> Tensor {
    let _ = b;
    let sq = a * a;
    &sq * 3.0 - a
}

/// The everyday math ops' rules (`log1p expm1 exp2 rsqrt silu mish floor minimum maximum
/// atan2 fmod_scalar`).
#[differentiable(derive)]
fn everyday_math(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let p = x.exp()?.log1p()?;
    let m = p.minimum(y)?.maximum(&x.expm1()?)?;
    let r = m.atan2(&y.exp2()?)?;
    let s = x.silu()?.add(&y.mish()?)?.mul(&y.exp()?.rsqrt()?)?;
    r.add(&s)?
        .add(&x.fmod_scalar(0.7)?)?
        .add(&x.floor()?.mul(y)?)
}

fn everyday_math_recorded(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let p = x.exp()?.log1p()?;
    let m = p.minimum(y)?.maximum(&x.expm1()?)?;
    let r = m.atan2(&y.exp2()?)?;
    let s = x.silu()?.add(&y.mish()?)?.mul(&y.exp()?.rsqrt()?)?;
    r.add(&s)?
        .add(&x.fmod_scalar(0.7)?)?
        .add(&x.floor()?.mul(y)?)
}

// ----- helpers ----------------------------------------------------------------------------------

fn input(shape: &[usize], seed: u64) -> Tensor {
    let t = Tensor::randn_seeded(shape, DType::F64, seed).expect("randn");
    t.set_requires_grad(true).expect("leaf");
    t
}

fn grads(y: &Tensor, inputs: &[Tensor]) -> Vec<Option<Tensor>> {
    autograd::grad(
        std::slice::from_ref(y),
        inputs,
        GradOptions::new().allow_unused(true),
    )
    .expect("grad")
}

fn assert_close(a: &Tensor, b: &Tensor) {
    let (a, b) = (a.to_vec::<f64>().expect("a"), b.to_vec::<f64>().expect("b"));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-12 * (1.0 + x.abs().max(y.abs())),
            "{x} vs {y}"
        );
    }
}

/// The elements the saved tensors of `y`'s graph keep alive: each distinct saved tensor counts
/// the elements it addresses (a broadcast dimension, stride 0, counts once). The stand-ins a
/// derived node keeps for values whose shape alone is read count 0: they all alias one
/// process-wide zero and keep nothing of the graph's alive (the op-by-op graph keeps shape
/// metadata for those, also 0).
fn saved_elements(y: &Tensor) -> usize {
    let mut seen: Vec<autograd::NodeRef> = Vec::new();
    let mut stack: Vec<autograd::NodeRef> = y.grad_fn().into_iter().collect();
    let mut saved: Vec<Tensor> = Vec::new();
    let stand_in =
        autograd::__private::keep_ref(y, autograd::__private::Read::Shape).expect("stand-in");
    while let Some(node) = stack.pop() {
        if seen.iter().any(|n| n.ptr_eq(&node)) {
            continue;
        }
        node.visit_saved_tensors(&mut |_, s| {
            let t = s.get().expect("saved tensor");
            if !saved.iter().any(|u| u.is_same(&t)) {
                saved.push(t);
            }
        });
        stack.extend(node.next_functions().into_iter().flatten().map(|e| e.node));
        seen.push(node);
    }
    saved
        .iter()
        .filter(|t| !(t.dtype() == stand_in.dtype() && t.shares_storage(&stand_in)))
        .map(|t| {
            t.shape()
                .iter()
                .zip(t.strides())
                .filter(|&(_, &stride)| stride != 0)
                .map(|(&n, _)| n)
                .product::<usize>()
                * usize::from(t.numel() > 0)
        })
        .sum()
}

/// Same value, same gradients (to rounding) as the op-by-op twin; one node named `name` whose
/// next functions are the inputs' `AccumulateGrad`s; no more saved elements than the twin.
fn check_against_recorded(
    derived: impl Fn(&[Tensor]) -> Result<Tensor>,
    recorded: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    name: &str,
) {
    check_against_recorded_keeping(derived, recorded, inputs, name, 0);
}

/// [`check_against_recorded`], allowing the derived node to keep `extra` more elements.
fn check_against_recorded_keeping(
    derived: impl Fn(&[Tensor]) -> Result<Tensor>,
    recorded: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    name: &str,
    extra: usize,
) {
    let y = derived(inputs).expect("derived");
    let r = recorded(inputs).expect("recorded");
    assert_close(&y, &r);
    let node = y.grad_fn().expect("derived output has a grad_fn");
    assert_eq!(node.name(), name);
    let next = node.next_functions();
    assert_eq!(next.len(), inputs.len(), "one next edge per tensor input");
    for (edge, x) in next.iter().zip(inputs) {
        let edge = edge.as_ref().expect("every input requires grad");
        assert_eq!(edge.node.name(), "AccumulateGrad");
        assert!(x.is_leaf());
    }
    let (saved_derived, saved_recorded) = (saved_elements(&y), saved_elements(&r));
    assert!(
        saved_derived <= saved_recorded + extra,
        "{name}: the derived node keeps {saved_derived} elements, the op-by-op graph {saved_recorded}"
    );
    eprintln!("{name}: saved elements derived {saved_derived}, recorded {saved_recorded}");
    let ys = y.sum().expect("sum");
    let rs = r.sum().expect("sum");
    for (gd, gr) in grads(&ys, inputs).iter().zip(grads(&rs, inputs)) {
        match (gd, gr) {
            (Some(gd), Some(gr)) => assert_close(gd, &gr),
            (None, None) => {}
            (gd, gr) => panic!(
                "gradient presence differs: {:?} vs {:?}",
                gd.is_some(),
                gr.is_some()
            ),
        }
    }
}

// ----- the tests --------------------------------------------------------------------------------

#[test]
fn gelu_tanh_matches_recorded_and_passes_gradchecks() -> Result<()> {
    let x = input(&[3, 4], 1);
    check_against_recorded(
        |t| gelu_tanh(&t[0]),
        |t| gelu_tanh_recorded(&t[0]),
        std::slice::from_ref(&x),
        "GeluTanhBackward0",
    );
    gradcheck(|t| gelu_tanh(&t[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|t| gelu_tanh(&t[0]), std::slice::from_ref(&x))
}

#[test]
fn log_sum_exp_matches_recorded_and_passes_gradchecks() -> Result<()> {
    let inputs = [input(&[5], 2), input(&[], 3)];
    check_against_recorded(
        |t| log_sum_exp(&t[0], &t[1]),
        |t| log_sum_exp_recorded(&t[0], &t[1]),
        &inputs,
        "LogSumExpBackward0",
    );
    gradcheck(|t| log_sum_exp(&t[0], &t[1]), &inputs)?;
    gradgradcheck(|t| log_sum_exp(&t[0], &t[1]), &inputs)
}

#[test]
fn dense_layer_matches_recorded_and_passes_gradchecks() -> Result<()> {
    let inputs = [input(&[4, 3], 4), input(&[3, 2], 5), input(&[2], 6)];
    check_against_recorded(
        |t| dense_tanh(&t[0], &t[1], &t[2]),
        |t| dense_tanh_recorded(&t[0], &t[1], &t[2]),
        &inputs,
        "DenseTanhBackward0",
    );
    // The bias gradient is reduced to the bias's shape.
    let y = dense_tanh(&inputs[0], &inputs[1], &inputs[2])?;
    y.sum()?.backward()?;
    assert_eq!(inputs[2].grad().expect("bias grad").shape(), &[2]);
    gradcheck(|t| dense_tanh(&t[0], &t[1], &t[2]), &inputs)?;
    gradgradcheck(|t| dense_tanh(&t[0], &t[1], &t[2]), &inputs)
}

#[test]
fn softmax_cross_entropy_matches_recorded_and_passes_gradchecks() -> Result<()> {
    let logits = input(&[3, 4], 7);
    let targets = Tensor::from_vec(
        vec![1.0f64, 0., 0., 0., 0., 0., 1., 0., 0., 1., 0., 0.],
        &[3, 4],
    )?;
    targets.set_requires_grad(true)?;
    let inputs = [logits, targets];
    check_against_recorded(
        |t| softmax_cross_entropy(&t[0], &t[1], 3.0),
        |t| softmax_cross_entropy_recorded(&t[0], &t[1], 3.0),
        &inputs,
        "SoftmaxCrossEntropyBackward0",
    );
    gradcheck(|t| softmax_cross_entropy(&t[0], &t[1], 3.0), &inputs)?;
    gradgradcheck(|t| softmax_cross_entropy(&t[0], &t[1], 3.0), &inputs)
}

#[test]
fn every_rule_and_repeated_uses_match_recorded() -> Result<()> {
    let x = input(&[6], 8);
    check_against_recorded(
        |t| many_uses(&t[0], 1.5),
        |t| many_uses_recorded(&t[0], 1.5),
        std::slice::from_ref(&x),
        "ManyUsesBackward0",
    );
    gradcheck(|t| many_uses(&t[0], 1.5), std::slice::from_ref(&x))?;
    gradgradcheck(|t| many_uses(&t[0], 1.5), std::slice::from_ref(&x))
}

#[test]
fn contributions_that_share_a_buffer_are_summed_correctly() -> Result<()> {
    let x = input(&[2, 3], 17);
    check_against_recorded(
        |t| shared(&t[0]),
        |t| shared_recorded(&t[0]),
        std::slice::from_ref(&x),
        "SharedBackward0",
    );
    gradcheck(|t| shared(&t[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|t| shared(&t[0]), std::slice::from_ref(&x))
}

#[test]
fn an_unused_input_gets_no_gradient() -> Result<()> {
    let (a, b) = (input(&[3], 9), input(&[3], 10));
    let y = infallible(&a, &b);
    assert_eq!(y.grad_fn().expect("node").name(), "InfallibleBackward0");
    let g = grads(&y.sum()?, &[a.clone(), b.clone()]);
    assert!(g[1].is_none(), "`b` is not used");
    let expected = (&a * 6.0).add_scalar(-1.0)?;
    assert_close(g[0].as_ref().expect("grad of a"), &expected);
    gradcheck(|t| Ok(infallible(&t[0], &b)), &[a])
}

#[test]
fn only_inputs_that_need_grad_get_one() -> Result<()> {
    let x = input(&[4, 3], 11);
    let w = Tensor::randn_seeded(&[3, 2], DType::F64, 12)?;
    let b = Tensor::randn_seeded(&[2], DType::F64, 13)?;
    let y = dense_tanh(&x, &w, &b)?;
    let next = y.grad_fn().expect("node").next_functions();
    assert!(next[0].is_some() && next[1].is_none() && next[2].is_none());
    y.sum()?.backward()?;
    assert!(x.grad().is_some() && w.grad().is_none() && b.grad().is_none());
    // Nothing requires grad: nothing is recorded.
    let y = dense_tanh(&x.detach(), &w, &b)?;
    assert!(y.grad_fn().is_none());
    Ok(())
}

#[test]
fn views_match_recorded_and_pass_gradchecks() -> Result<()> {
    let inputs = [input(&[2, 4], 21), input(&[3, 4], 22), input(&[1, 3], 23)];
    let derived = |t: &[Tensor]| attention_slice(&t[0], &t[1], &t[2], 0.5);
    check_against_recorded(
        derived,
        |t| attention_slice_recorded(&t[0], &t[1], &t[2], 0.5),
        &inputs,
        "AttentionSliceBackward0",
    );
    gradcheck(derived, &inputs)?;
    gradgradcheck(derived, &inputs)
}

#[test]
fn calls_of_differentiable_functions_match_recorded_and_pass_gradchecks() -> Result<()> {
    let inputs = [input(&[2, 3], 31), input(&[], 32)];
    let derived = |t: &[Tensor]| composed(&t[0], &t[1], 0.7);
    check_against_recorded(
        derived,
        |t| composed_recorded(&t[0], &t[1], 0.7),
        &inputs,
        "ComposedBackward0",
    );
    gradcheck(derived, &inputs)?;
    gradgradcheck(derived, &inputs)?;
    // Only `x` needs a gradient: the callees' rules are asked for that one alone.
    let x = input(&[4], 33);
    let shift = Tensor::randn_seeded(&[], DType::F64, 34)?;
    let g = grads(&composed(&x, &shift, 1.5)?, std::slice::from_ref(&x));
    let r = grads(
        &composed_recorded(&x, &shift, 1.5)?,
        std::slice::from_ref(&x),
    );
    assert_close(g[0].as_ref().expect("grad"), r[0].as_ref().expect("grad"));
    Ok(())
}

#[test]
fn detach_stops_the_gradient() -> Result<()> {
    let x = input(&[5], 41);
    check_against_recorded(
        |t| scaled_by_detached_norm(&t[0]),
        |t| scaled_by_detached_norm_recorded(&t[0]),
        std::slice::from_ref(&x),
        "ScaledByDetachedNormBackward0",
    );
    // d/dx [sin(x)/n + x² n] with n held constant: cos(x)/n + 2 x n.
    let xs = x.to_vec::<f64>()?;
    let n = xs.iter().map(|v| v * v).sum::<f64>().sqrt();
    let g = grads(
        &scaled_by_detached_norm(&x)?.sum()?,
        std::slice::from_ref(&x),
    );
    let g = g[0].as_ref().expect("grad").to_vec::<f64>()?;
    for (gi, xi) in g.iter().zip(&xs) {
        let expected = xi.cos() / n + 2.0 * xi * n;
        assert!((gi - expected).abs() < 1e-12, "{gi} vs {expected}");
    }
    Ok(())
}

#[test]
fn what_is_kept_follows_which_inputs_need_a_gradient() -> Result<()> {
    // Data `x` needs no gradient: `matmul` keeps `x` for `w`'s gradient but only `w`'s shape,
    // as the op-by-op `MmBackward0` saves `x` alone (`#[needed_for]`).
    let x = Tensor::randn_seeded(&[4, 3], DType::F64, 35)?;
    let w = input(&[3, 2], 36);
    let b = input(&[2], 37);
    let (derived, recorded) = (dense_tanh(&x, &w, &b)?, dense_tanh_recorded(&x, &w, &b)?);
    let (d, r) = (saved_elements(&derived), saved_elements(&recorded));
    assert_eq!(
        (d, r),
        (12 + 8, 12 + 8),
        "x [4, 3] and the tanh result [4, 2]"
    );
    let g = grads(&derived.sum()?, &[w.clone(), b.clone()]);
    let h = grads(&recorded.sum()?, &[w.clone(), b.clone()]);
    for (g, h) in g.iter().zip(&h) {
        assert_close(g.as_ref().expect("grad"), h.as_ref().expect("grad"));
    }
    Ok(())
}

#[test]
fn several_results_share_one_node() -> Result<()> {
    let inputs = [input(&[2, 3], 61), input(&[3], 62)];
    let (t, sq) = tanh_and_square(&inputs[0], &inputs[1])?;
    let node = t.grad_fn().expect("node");
    assert_eq!(node.name(), "TanhAndSquareBackward0");
    assert!(sq.grad_fn().expect("node").ptr_eq(&node));
    let (rt, rsq) = tanh_and_square_recorded(&inputs[0], &inputs[1])?;
    assert_close(&t, &rt);
    assert_close(&sq, &rsq);
    // Both results, and each alone (the other's gradient never arrives).
    let combine =
        |a: &Tensor, b: &Tensor| -> Result<Tensor> { a.sum()?.mul_scalar(2.0)?.add(&b.sum()?) };
    for loss in [
        |t: &Tensor, sq: &Tensor, c: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>| c(t, sq),
        |t: &Tensor, _: &Tensor, _: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>| t.sum(),
        |_: &Tensor, sq: &Tensor, _: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>| sq.sum(),
    ] {
        let (t, sq) = tanh_and_square(&inputs[0], &inputs[1])?;
        let (rt, rsq) = tanh_and_square_recorded(&inputs[0], &inputs[1])?;
        let g = grads(&loss(&t, &sq, &combine)?, &inputs);
        let r = grads(&loss(&rt, &rsq, &combine)?, &inputs);
        for (g, r) in g.iter().zip(&r) {
            assert_close(g.as_ref().expect("grad"), r.as_ref().expect("grad"));
        }
    }
    let both = |t: &[Tensor]| {
        let (a, b) = tanh_and_square(&t[0], &t[1])?;
        combine(&a, &b)
    };
    gradcheck(both, &inputs)?;
    gradgradcheck(both, &inputs)
}

#[test]
fn integer_results_are_ignored_and_max_dim_is_differentiated() -> Result<()> {
    // The one case where the derived node keeps more: `max_dim`'s rule reads its input (12
    // elements) to find the maxima again, where `MaxBackward0` keeps the 3 indices, which are not
    // a tensor (a derived node keeps tensors only).
    let x = input(&[3, 4], 71);
    check_against_recorded_keeping(
        |t| row_logsumexp(&t[0]),
        |t| row_logsumexp_recorded(&t[0]),
        std::slice::from_ref(&x),
        "RowLogsumexpBackward0",
        12,
    );
    // Stable where the naive formula overflows, and its gradient is the row softmax.
    let big =
        Tensor::from_vec(vec![1000.0f64, 1000.0, 999.0, 0.0], &[2, 2])?.requires_grad_(true)?;
    let y = row_logsumexp(&big)?;
    let v = y.to_vec::<f64>()?;
    assert!((v[0] - (1000.0 + 2f64.ln())).abs() < 1e-9 && v[1].is_finite());
    y.sum()?.backward()?;
    let g = big.grad().expect("grad").to_vec::<f64>()?;
    let e = (-999f64).exp();
    assert!((g[0] - 0.5).abs() < 1e-12 && (g[1] - 0.5).abs() < 1e-12);
    assert!((g[2] - 1.0 / (1.0 + e)).abs() < 1e-12 && (g[3] - e / (1.0 + e)).abs() < 1e-12);
    gradcheck(|t| row_logsumexp(&t[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|t| row_logsumexp(&t[0]), std::slice::from_ref(&x))
}

#[test]
fn the_main_jobs_loss_matches_recorded_and_keeps_no_more() -> Result<()> {
    // The targets require grad too here, so that both inputs have an edge to compare.
    let logits = input(&[4, 3], 81);
    let targets = Tensor::from_vec(
        vec![
            1.0f64, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0,
        ],
        &[4, 3],
    )?
    .requires_grad_(true)?;
    let inputs = [logits, targets];
    let derived = |t: &[Tensor]| mean_cross_entropy(&t[0], &t[1], 4.0);
    check_against_recorded(
        derived,
        |t| mean_cross_entropy_recorded(&t[0], &t[1], 4.0),
        &inputs,
        "MeanCrossEntropyBackward0",
    );
    gradcheck(derived, &inputs)?;
    gradgradcheck(derived, &inputs)
}

#[test]
fn modifying_a_saved_input_in_place_is_reported() -> Result<()> {
    // `matmul`'s rule reads both operands: `w` is kept, and its version is checked.
    let x = input(&[4, 3], 14);
    let w = Tensor::randn_seeded(&[3, 2], DType::F64, 15)?;
    let b = Tensor::randn_seeded(&[2], DType::F64, 16)?;
    let y = dense_tanh(&x, &w, &b)?;
    w.add_(&Tensor::scalar(1.0f64))?;
    match y.sum()?.backward() {
        Err(Error::SavedTensorModified {
            saved_version,
            current_version,
            ..
        }) => assert!(current_version > saved_version),
        other => panic!("expected SavedTensorModified, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_value_read_only_for_its_shape_is_not_kept() -> Result<()> {
    // `sub` and `add` read only `shift`'s shape (to undo broadcasting), so `shift` is not kept:
    // changing it in place after the forward is no error, as for the op-by-op recording.
    let x = input(&[3], 17);
    let shift = Tensor::randn_seeded(&[], DType::F64, 18)?;
    shift.set_requires_grad(true)?;
    let y = log_sum_exp(&x, &shift)?;
    let y_recorded = log_sum_exp_recorded(&x, &shift)?;
    shift.detach().add_(&Tensor::scalar(1.0f64))?;
    let derived = autograd::grad(&[y], &[x.clone(), shift.clone()], GradOptions::new())?;
    let recorded = autograd::grad(
        &[y_recorded],
        &[x.clone(), shift.clone()],
        GradOptions::new(),
    )?;
    for (d, r) in derived.iter().zip(&recorded) {
        let (d, r) = (d.as_ref().expect("grad"), r.as_ref().expect("grad"));
        assert_eq!(d.to_vec::<f64>()?, r.to_vec::<f64>()?);
    }
    // d/d shift of log Σ exp(x - s) + s is 0.
    let gs: f64 = derived[1].as_ref().expect("grad").item()?;
    assert!(gs.abs() < 1e-12, "{gs}");
    Ok(())
}

#[test]
fn backward_twice_without_retain_graph_fails() -> Result<()> {
    let x = input(&[3], 16);
    let y = gelu_tanh(&x)?.sum()?;
    y.backward()?;
    assert!(matches!(y.backward(), Err(Error::BackwardTwice)));
    Ok(())
}

#[test]
fn everyday_math_ops_derive_and_match_recorded() -> Result<()> {
    let inputs = [input(&[3, 4], 21), input(&[4], 22)];
    check_against_recorded(
        |t| everyday_math(&t[0], &t[1]),
        |t| everyday_math_recorded(&t[0], &t[1]),
        &inputs,
        "EverydayMathBackward0",
    );
    gradcheck(|t| everyday_math(&t[0], &t[1]), &inputs)?;
    gradgradcheck(|t| everyday_math(&t[0], &t[1]), &inputs)
}

// ----- clamp's derive rule ----------------------------------------------------------------------

/// A clamped square: the gradient passes where `lo < x < hi` only, as PyTorch's `clamp`.
#[differentiable(derive)]
fn clamped_square(x: &Tensor) -> Result<Tensor> {
    let c = x.clamp(Some(-0.5), None)?;
    let d = c.clamp(None, Some(0.8))?;
    d.mul(x)
}

#[test]
fn clamp_has_a_derive_rule_with_pytorchs_gradient() -> Result<()> {
    let values = vec![-2.0f64, -0.3, 0.1, 0.45, 0.9, 1.6];
    let x = Tensor::from_vec(values.clone(), &[2, 3])?.requires_grad_(true)?;
    gradcheck(|i| clamped_square(&i[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|i| clamped_square(&i[0]), std::slice::from_ref(&x))?;
    clamped_square(&x)?.sum()?.backward()?;
    // d/dx [clamp(x) * x] = clamp(x) + x * 1[lo < x < hi]: recorded op by op for comparison.
    let y = Tensor::from_vec(values, &[2, 3])?.requires_grad_(true)?;
    y.clamp(Some(-0.5), None)?
        .clamp(None, Some(0.8))?
        .mul(&y)?
        .sum()?
        .backward()?;
    assert_eq!(
        x.grad().expect("grad").to_vec::<f64>()?,
        y.grad().expect("grad").to_vec::<f64>()?
    );
    Ok(())
}

// ----- masks: comparisons, `where` and `masked_fill` ---------------------------------------------

/// A leaky step built from a mask the body makes: `where(x > 0, x², 0.1 x)`, then the entries
/// below -1 filled with 0 (PyTorch: `torch.where(x > 0, x * x, 0.1 * x).masked_fill(x < -1, 0)`).
#[differentiable(derive)]
fn masked_square(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let pos = x.gt_scalar(0.0)?;
    let sq = x.mul(x)?;
    let lin = y.mul_scalar(0.1)?;
    let w = Tensor::where_(&pos, &sq, &lin)?;
    let low = x.lt_scalar(-1.0)?;
    w.masked_fill(&low, 0.0)
}

#[test]
fn comparisons_where_and_masked_fill_have_derive_rules() -> Result<()> {
    let values = vec![-2.0f64, -0.5, 0.3, 1.5, -1.2, 0.7];
    let x = Tensor::from_vec(values.clone(), &[2, 3])?.requires_grad_(true)?;
    // `y` broadcasts along the rows: its gradient is reduced to its own shape.
    let y = Tensor::from_vec(vec![1.0f64, -3.0, 2.0], &[3])?.requires_grad_(true)?;
    let out = masked_square(&x, &y)?;
    assert_eq!(out.grad_fn().expect("node").name(), "MaskedSquareBackward0");
    out.sum()?.backward()?;
    // Recorded in PyTorch 2.15 with the expression above (x.grad, y.grad):
    // x: 2x where x > 0 and x >= -1, else 0; y: 0.1 per row where x <= 0 and x >= -1.
    assert_eq!(
        x.grad().expect("x grad").to_vec::<f64>()?,
        vec![0.0, 0.0, 0.6, 3.0, 0.0, 1.4]
    );
    let gy = y.grad().expect("y grad").to_vec::<f64>()?;
    for (g, want) in gy.iter().zip([0.0, 0.1, 0.0]) {
        assert!((g - want).abs() < 1e-15, "{gy:?}");
    }
    let inputs = [
        x.detach().requires_grad_(true)?,
        y.detach().requires_grad_(true)?,
    ];
    gradcheck(|t| masked_square(&t[0], &t[1]), &inputs)?;
    gradgradcheck(|t| masked_square(&t[0], &t[1]), &inputs)
}

// ----- the selecting ops: gather, sort, topk, min_dim --------------------------------------------

/// Every selecting op once, each weighted differently so that a gradient routed to the wrong
/// position shows.
#[differentiable(derive)]
fn selections(x: &Tensor, index: &Tensor) -> Result<Tensor> {
    let g = x.gather(1, index)?;
    let (s, _order) = x.sort(1, true, true)?;
    let (t, _picked) = x.topk(2, -1, false, true)?;
    let (m, _at) = x.min_dim(0, false)?;
    let a = g.mul_scalar(2.0)?.sum()?;
    let b = s.mul(&s)?.sum()?;
    let c = t.mul_scalar(3.0)?.sum()?;
    let d = m.mul_scalar(5.0)?.sum()?;
    let ab = a.add(&b)?;
    let cd = c.add(&d)?;
    ab.add(&cd)
}

#[test]
fn gather_sort_topk_and_min_dim_have_derive_rules() -> Result<()> {
    let values = vec![
        0.3f64, -1.2, 2.5, 0.7, 1.1, -0.4, 3.3, 0.05, -2.0, 1.6, 0.9, -0.8,
    ];
    let index = Tensor::from_vec(vec![0i64, 0, 3, 2, 1, 1], &[3, 2])?;
    let x = Tensor::from_vec(values.clone(), &[3, 4])?.requires_grad_(true)?;
    selections(&x, &index)?.backward()?;
    // The same program recorded op by op.
    let y = Tensor::from_vec(values, &[3, 4])?.requires_grad_(true)?;
    let a = y.gather(1, &index)?.mul_scalar(2.0)?.sum()?;
    let s = y.sort(1, true, true)?.0;
    let b = s.mul(&s)?.sum()?;
    let c = y.topk(2, -1, false, true)?.0.mul_scalar(3.0)?.sum()?;
    let d = y.min_dim(0, false)?.0.mul_scalar(5.0)?.sum()?;
    a.add(&b)?.add(&c.add(&d)?)?.backward()?;
    assert_eq!(
        x.grad().expect("x grad").to_vec::<f64>()?,
        y.grad().expect("y grad").to_vec::<f64>()?
    );
    let inputs = [x.detach().requires_grad_(true)?];
    gradcheck(|t| selections(&t[0], &index), &inputs)?;
    gradgradcheck(|t| selections(&t[0], &index), &inputs)
}

#[test]
fn division_by_a_scalar_records_div_backward0_as_pytorch() -> Result<()> {
    // PyTorch: `(x / 4).grad_fn` is `DivBackward0` for every float dtype and for an integer
    // tensor (true division to float32); the values are `x * (1 / 4)` on the CPU.
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let x = Tensor::from_vec(vec![1.0f64, -3.0, 6.0], &[3])?
            .to_dtype(dtype)?
            .requires_grad_(true)?;
        let y = x.div_scalar(4)?;
        assert_eq!(y.grad_fn().expect("node").name(), "DivBackward0");
        assert_eq!(
            y.to_dtype(DType::F64)?.to_vec::<f64>()?,
            vec![0.25, -0.75, 1.5]
        );
        y.sum()?.backward()?;
        let g = x.grad().expect("grad");
        assert_eq!(g.dtype(), dtype);
        assert_eq!(g.to_dtype(DType::F64)?.to_vec::<f64>()?, vec![0.25; 3]);
    }
    let i = Tensor::from_vec(vec![1i64, 2, 3], &[3])?.div_scalar(2)?;
    assert_eq!(
        (i.dtype(), i.to_vec::<f32>()?),
        (DType::F32, vec![0.5, 1.0, 1.5])
    );
    Ok(())
}
