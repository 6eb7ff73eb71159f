//! `autograd::checkpoint`, both variants: the same gradients (bit for bit, dropout included) and
//! the same trained weights as without checkpointing; the reentrant variant's refusal inside
//! `grad()`; the non-reentrant variant under `grad()`, `backward(inputs=..)` and `create_graph`;
//! the determinism check.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::nn::{Dropout, Forward, Linear, Module, Relu, Tanh};
use autograd::optim::{Adam, AdamOptions, Optimizer};
use autograd::*;

type R = Result<()>;

/// PyTorch's error of the reentrant variant inside `grad()` / `backward(inputs=..)`.
const NOT_VALID: &str = "When use_reentrant=True, torch.utils.checkpoint is incompatible with \
     .grad() or passing an `inputs` parameter to .backward(). To resolve this error, you can \
     either set use_reentrant=False, or call .backward() without passing the `inputs` argument.";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Plain,
    Reentrant,
    NonReentrant,
}

fn options(reentrant: bool) -> CheckpointOptions {
    CheckpointOptions::new().use_reentrant(reentrant)
}

/// A block: Linear → activation → Dropout (in training mode, so its masks are random draws).
type Block = Vec<Arc<dyn Forward>>;

/// An MLP of `autograd::nn` layers in three blocks, built after `manual_seed(seed)`: the same
/// weights, and the same dropout masks after it, for every `seed` (the caller holds
/// [`global_rng`](crate::common::global_rng)).
fn mlp(seed: u64) -> Result<Vec<Block>> {
    autograd::manual_seed(seed);
    let block = |i: usize, o: usize, act: Arc<dyn Forward>| -> Result<Block> {
        Ok(vec![
            Arc::new(Linear::new(i, o)?),
            act,
            Arc::new(Dropout::new(0.25)?),
        ])
    };
    Ok(vec![
        block(6, 16, Arc::new(Relu::new()))?,
        block(16, 16, Arc::new(Tanh::new()))?,
        vec![Arc::new(Linear::new(16, 3)?)],
    ])
}

fn parameters(blocks: &[Block]) -> Vec<Tensor> {
    blocks
        .iter()
        .flatten()
        .flat_map(|m| m.parameters())
        .collect()
}

fn run_block(block: &[Arc<dyn Forward>], x: &Tensor) -> Result<Tensor> {
    block.iter().try_fold(x.clone(), |h, m| m.forward(&h))
}

/// The MLP's output, each block checkpointed as `mode` says.
fn forward(blocks: &[Block], x: &Tensor, mode: Mode) -> Result<Tensor> {
    let mut h = x.clone();
    for block in blocks {
        h = match mode {
            Mode::Plain => run_block(block, &h)?,
            Mode::Reentrant | Mode::NonReentrant => {
                let b = block.clone();
                let out = checkpoint(
                    move |xs: &[Tensor]| Ok(vec![run_block(&b, &xs[0])?]),
                    &[h],
                    options(mode == Mode::Reentrant),
                )?;
                out.into_iter().next().unwrap()
            }
        };
    }
    Ok(h)
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

fn grads(params: &[Tensor]) -> Vec<Vec<u32>> {
    params
        .iter()
        .map(|p| bits(&p.grad().expect("every parameter receives a gradient")))
        .collect()
}

/// Every parameter's gradient, and the input's, for one forward+backward of a fresh MLP.
fn mlp_gradients(mode: Mode) -> Result<(Vec<Vec<u32>>, Vec<u32>)> {
    let blocks = mlp(7)?;
    // The reentrant variant records its node only if the block's input requires grad.
    let x = Tensor::randn_seeded(&[5, 6], DType::F32, 3)?.requires_grad_(true)?;
    // Two steps: the second draws the dropout layers' next masks.
    for _ in 0..2 {
        forward(&blocks, &x, mode)?.pow(2.0)?.mean()?.backward()?;
    }
    Ok((grads(&parameters(&blocks)), bits(&x.grad().unwrap())))
}

#[test]
fn both_variants_give_the_gradients_of_no_checkpointing_bit_for_bit() -> R {
    let _rng = crate::common::global_rng(0);
    let plain = mlp_gradients(Mode::Plain)?;
    for mode in [Mode::Reentrant, Mode::NonReentrant] {
        assert_eq!(mlp_gradients(mode)?, plain, "{mode:?}");
    }
    Ok(())
}

/// Without the forward's random draws the recomputation draws other dropout masks: the
/// gradients are not those of the forward that ran (what `preserve_rng_state` is for).
#[test]
fn without_preserve_rng_state_dropout_masks_differ() -> R {
    let _rng = crate::common::global_rng(0);
    let reference = mlp_gradients(Mode::Plain)?.0;
    for reentrant in [true, false] {
        let blocks = mlp(7)?;
        let x = Tensor::randn_seeded(&[5, 6], DType::F32, 3)?.requires_grad_(true)?;
        let mut h = x.clone();
        for block in &blocks {
            let b = block.clone();
            h = checkpoint(
                move |xs: &[Tensor]| Ok(vec![run_block(&b, &xs[0])?]),
                &[h],
                options(reentrant).preserve_rng_state(false),
            )?
            .remove(0);
        }
        h.pow(2.0)?.mean()?.backward()?;
        let once = grads(&parameters(&blocks));
        assert_ne!(
            once,
            reference[..once.len()].to_vec(),
            "reentrant {reentrant}"
        );
    }
    Ok(())
}

/// The done-when of the issue: Adam trains the same weights with and without checkpointing.
#[test]
fn adam_trains_the_same_weights_with_either_variant() -> R {
    let _rng = crate::common::global_rng(0);
    let train = |mode: Mode| -> Result<Vec<Vec<u32>>> {
        let blocks = mlp(11)?;
        let params = parameters(&blocks);
        let mut opt = Adam::new(params.clone(), AdamOptions::default().lr(1e-2))?;
        for step in 0..5 {
            let x = Tensor::randn_seeded(&[8, 6], DType::F32, 50 + step)?.requires_grad_(true)?;
            let target = Tensor::randn_seeded(&[8, 3], DType::F32, 80 + step)?;
            let loss = forward(&blocks, &x, mode)?.sub(&target)?.pow(2.0)?.mean()?;
            loss.backward()?;
            opt.step()?;
            opt.zero_grad();
        }
        Ok(params.iter().map(bits).collect())
    };
    let plain = train(Mode::Plain)?;
    for mode in [Mode::Reentrant, Mode::NonReentrant] {
        assert_eq!(train(mode)?, plain, "{mode:?}");
    }
    Ok(())
}

#[test]
fn reentrant_checkpoint_refuses_grad_and_backward_with_inputs() -> R {
    // Dropout draws from the global generator: hold it, so no other test's draws interleave.
    let _rng = crate::common::global_rng(0);
    let blocks = mlp(3)?;
    let x = Tensor::randn_seeded(&[2, 6], DType::F32, 1)?.requires_grad_(true)?;
    let loss = forward(&blocks, &x, Mode::Reentrant)?.sum()?;
    let err = grad(
        &[loss.clone()],
        &[x.clone()],
        GradOptions::new().retain_graph(true),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), NOT_VALID);
    let err = loss
        .backward_with(BackwardOptions::new().inputs(&[x.clone()]))
        .unwrap_err();
    assert_eq!(err.to_string(), NOT_VALID);
    Ok(())
}

/// The non-reentrant variant runs under `grad()` and `backward(inputs=..)`, with the gradients
/// of the plain network, and leaves `.grad` alone under `grad()`.
#[test]
fn non_reentrant_checkpoint_works_under_grad_and_backward_with_inputs() -> R {
    // Dropout draws from the global generator: hold it, so no other test's draws interleave.
    let _rng = crate::common::global_rng(0);
    let x = Tensor::randn_seeded(&[4, 6], DType::F32, 2)?.requires_grad_(true)?;
    let gradients = |mode: Mode| -> Result<Vec<Vec<u32>>> {
        let blocks = mlp(5)?;
        let params = parameters(&blocks);
        let loss = forward(&blocks, &x, mode)?.pow(2.0)?.sum()?;
        let mut wrt = vec![x.clone()];
        wrt.extend(params.iter().cloned());
        let g = grad(&[loss], &wrt, GradOptions::new())?;
        assert!(params.iter().all(|p| p.grad().is_none()));
        Ok(g.iter().map(|g| bits(g.as_ref().unwrap())).collect())
    };
    assert_eq!(gradients(Mode::NonReentrant)?, gradients(Mode::Plain)?);

    let with_inputs = |mode: Mode| -> Result<(Vec<u32>, bool)> {
        let blocks = mlp(5)?;
        let params = parameters(&blocks);
        let loss = forward(&blocks, &x, mode)?.sum()?;
        loss.backward_with(BackwardOptions::new().inputs(&[params[0].clone()]))?;
        Ok((bits(&params[0].grad().unwrap()), params[1].grad().is_none()))
    };
    assert_eq!(with_inputs(Mode::NonReentrant)?, with_inputs(Mode::Plain)?);
    assert!(
        with_inputs(Mode::NonReentrant)?.1,
        "only the requested input"
    );
    Ok(())
}

/// Double backward through a non-reentrant checkpoint: the recomputed tensors take the original
/// graph's history, so the first gradient is differentiable.
#[test]
fn non_reentrant_checkpoint_supports_create_graph() -> R {
    let x = Tensor::from_vec(vec![0.5f64, -1.5, 2.0], &[3])?.requires_grad_(true)?;
    let y = checkpoint(
        |xs: &[Tensor]| Ok(vec![xs[0].mul(&xs[0])?.mul(&xs[0])?.sin()?]),
        &[x.clone()],
        options(false),
    )?
    .remove(0)
    .sum()?;
    let dy = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?;
    let dy = dy[0].clone().unwrap();
    let d2y = grad(&[dy.sum()?], &[x.clone()], GradOptions::new())?;
    for (i, &v) in x.to_vec::<f64>()?.iter().enumerate() {
        // y = sin(x³): y' = 3x² cos(x³), y'' = 6x cos(x³) - 9x⁴ sin(x³)
        let (first, second) = (
            3.0 * v * v * (v * v * v).cos(),
            6.0 * v * (v * v * v).cos() - 9.0 * v.powi(4) * (v * v * v).sin(),
        );
        assert!((dy.to_vec::<f64>()?[i] - first).abs() < 1e-12);
        assert!((d2y[0].as_ref().unwrap().to_vec::<f64>()?[i] - second).abs() < 1e-9);
    }
    Ok(())
}

/// A region that computes something else when recomputed is caught (the default determinism
/// check), in PyTorch's words; `determinism_check("none")` lets it through.
#[test]
fn non_reentrant_determinism_check() -> R {
    let run = |check: &str| -> Result<()> {
        let calls = Arc::new(AtomicUsize::new(0));
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
        let y = checkpoint(
            move |xs: &[Tensor]| {
                // The recomputation saves a tensor of another shape.
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                let h = if first {
                    xs[0].clone()
                } else {
                    xs[0].narrow(0, 0, 2)?
                };
                Ok(vec![h.exp()?.sum()?])
            },
            &[x],
            options(false).determinism_check(check),
        )?;
        y[0].backward()
    };
    let err = run("default").unwrap_err().to_string();
    assert_eq!(
        err,
        "torch.utils.checkpoint: Recomputed values for the following tensors have different \
         metadata than during the forward pass.\ntensor at position 0:\nsaved metadata: \
         {'shape': [4], 'dtype': f64, 'device': cpu}\nrecomputed metadata: {'shape': [2], \
         'dtype': f64, 'device': cpu}\n."
    );
    // Unchecked, the recomputed tensor is used as it is: ExpBackward0 then fails on the shapes.
    assert!(run("none").is_err());
    let err = checkpoint(
        |xs: &[Tensor]| Ok(xs.to_vec()),
        &[],
        options(false).determinism_check("strict"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "determinism_check should be one of ['default', 'none'], but got strict"
    );
    Ok(())
}

/// A region whose inputs do not require grad: the reentrant variant records nothing (and warns);
/// the non-reentrant one still gives the parameters their gradients.
#[test]
fn inputs_without_requires_grad() -> R {
    let _rng = crate::common::global_rng(0);
    let layer = Arc::new(Linear::new(3, 2)?);
    let x = Tensor::ones(&[1, 3], DType::F32)?;
    for reentrant in [true, false] {
        layer.zero_grad();
        let l = layer.clone();
        let y = checkpoint(
            move |xs: &[Tensor]| Ok(vec![l.forward(&xs[0])?]),
            &[x.clone()],
            options(reentrant),
        )?;
        assert_eq!(y[0].requires_grad(), !reentrant);
        if !reentrant {
            y[0].sum()?.backward()?;
            assert_eq!(
                layer.parameters()[1].grad().unwrap().to_vec::<f32>()?,
                [1.0, 1.0]
            );
        }
    }
    Ok(())
}

/// `exp(x)`, recorded as a node that saves its output and holds `token` (a clone of it lives as
/// long as the node).
fn exp_holding(x: &Tensor, token: &Arc<()>) -> Result<Tensor> {
    struct ExpHolding {
        out: SavedTensor,
        _token: Arc<()>,
    }
    impl autograd::__private::Backward for ExpHolding {
        const NAME: &'static str = "ExpHoldingBackward";
        fn backward(
            &self,
            _meta: &NodeMeta,
            grads: autograd::__private::GradVec,
        ) -> Result<autograd::__private::GradVec> {
            let g = grads[0].as_ref().unwrap().mul(&self.out.get()?)?;
            Ok(autograd::__private::smallvec::smallvec![Some(g)])
        }
        fn release(&self) {
            self.out.release();
        }
    }
    let out = {
        let _g = no_grad();
        x.exp()?
    };
    if let Some(edges) = autograd::__private::next_edges(&[x]) {
        autograd::__private::record_node(edges, &[&out], |save| ExpHolding {
            out: save.output(&out, 0),
            _token: token.clone(),
        });
    }
    Ok(out)
}

/// Once the graph is gone, nothing of a region is left, for both variants, after a backward and
/// without one: not its function (and what it captures), not the nodes its recomputation
/// recorded. (A recomputed node that saves its output once kept itself alive through the
/// recomputed tensor it saved.)
#[test]
fn regions_are_freed_with_their_graph() -> R {
    for reentrant in [true, false] {
        for run_backward in [true, false] {
            let token = Arc::new(());
            let x = Tensor::randn_seeded(&[3, 4], DType::F64, 0)?.requires_grad_(true)?;
            let w = Tensor::randn_seeded(&[4, 4], DType::F64, 1)?.requires_grad_(true)?;
            let (t, w2) = (token.clone(), w.clone());
            let h = checkpoint(
                move |xs: &[Tensor]| {
                    let h = exp_holding(&xs[0].matmul(&w2)?.tanh()?, &t)?;
                    Ok(vec![h.matmul(&w2)?.tanh()?])
                },
                &[x.clone()],
                options(reentrant),
            )?
            .remove(0);
            // A second region after the first, as in a network.
            let w3 = w.clone();
            let h = checkpoint(
                move |xs: &[Tensor]| Ok(vec![xs[0].matmul(&w3)?.tanh()?]),
                &[h],
                options(reentrant),
            )?
            .remove(0);
            let loss = h.pow(2.0)?.sum()?;
            if run_backward {
                loss.backward()?;
                assert!(w.grad().is_some());
            }
            drop((loss, h));
            assert_eq!(
                Arc::strong_count(&token),
                1,
                "reentrant {reentrant}, backward {run_backward}"
            );
        }
    }
    Ok(())
}
