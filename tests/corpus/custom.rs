//! The custom-function corpus (`custom.jsonl.gz`, written by `gen_custom.py`): programs around
//! calls of a fixed table of custom autograd functions, each written in the generator as a
//! `torch.autograd.Function` and here, under the same name, as a `#[differentiable]` +
//! `#[backward]` pair whose node takes PyTorch's name (`<Class>Backward`). A `custom` step calls
//! one (`fn`, its tensor arguments `a`, the attribute `s` of `scaled_square`), under
//! saved-tensor hooks when `hk` says so (`count`: identity pack and unpack, each counted;
//! `copy`: pack `t * 1`); its outputs carry `is_leaf` (`leaf`) and the `grad_fn` name (`gf`) as
//! well as values and `requires_grad`, the step the number of packs (`packs`), and the program's
//! `backward` / `grad` steps the number of unpacks so far (`unpacks`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::graph::InputMetadata;
use autograd::{Result, SavedTensorsHooksGuard, Tensor, backward, differentiable};
use serde_json::Value;

use super::{Category, Failure, Replay, StepResult, fail, float, ids, run_corpus};

const CUSTOM_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/custom.jsonl.gz");

// ----- the shapes (the generator's `SHAPES`, in its order) -------------------------------------

/// PyTorch `Ident`: returns its input as it is.
#[differentiable(name = "IdentBackward")]
fn ident(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

#[backward(ident)]
fn ident_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

/// PyTorch `PassSecond`: returns its second input as it is; no gradient for the first.
#[differentiable(name = "PassSecondBackward")]
fn pass_second(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let _ = x;
    Ok(y.clone())
}

#[backward(pass_second)]
fn pass_second_backward(grad: &Tensor) -> (Option<Tensor>, Tensor) {
    (None, grad.clone())
}

/// PyTorch `IdentAndDouble`: the input as it is and `2 x`.
#[differentiable(name = "IdentAndDoubleBackward")]
fn ident_and_double(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.clone(), x.mul_scalar(2.0)?))
}

#[backward(ident_and_double)]
fn ident_and_double_backward(grad_0: &Tensor, grad_1: &Tensor) -> Result<Tensor> {
    grad_0.add(&grad_1.mul_scalar(2.0)?)
}

/// PyTorch `Flatten`: `x.reshape(-1)`, a view where the input's strides allow one, else a copy.
#[differentiable(name = "FlattenBackward")]
fn flatten(x: &Tensor) -> Result<Tensor> {
    x.reshape(&[x.numel()])
}

#[backward(flatten)]
fn flatten_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

/// PyTorch `Transpose`: `x.transpose(0, 1)`.
#[differentiable(name = "TransposeBackward")]
fn transpose(x: &Tensor) -> Result<Tensor> {
    x.transpose(0, 1)
}

#[backward(transpose)]
fn transpose_backward(grad: &Tensor) -> Result<Tensor> {
    grad.transpose(0, 1)
}

/// PyTorch `First`: `x[0]`; the gradient is `grad` in row 0 and zeros below.
#[differentiable(name = "FirstBackward")]
fn first(x: &Tensor) -> Result<Tensor> {
    x.select(0, 0)
}

#[backward(first)]
fn first_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    let n = x.shape()[0];
    let mut shape = vec![1];
    shape.extend_from_slice(grad.shape());
    let head = grad.reshape(&shape)?;
    if n == 1 {
        return Ok(head);
    }
    let rest = x.zeros()?.narrow(0, 1, n - 1)?;
    Tensor::cat(&[head, rest], 0)
}

/// PyTorch `ScaledSquare`: `x * x * s`, saving the input.
#[differentiable(name = "ScaledSquareBackward")]
fn scaled_square(x: &Tensor, s: f64) -> Result<Tensor> {
    x.mul(x)?.mul_scalar(s)
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, s: f64) -> Result<Tensor> {
    grad.mul(x)?.mul_scalar(2.0 * s)
}

/// PyTorch `ExpOut`: `exp`, saving its output.
#[differentiable(name = "ExpOutBackward")]
fn exp_out(x: &Tensor) -> Result<Tensor> {
    x.exp()
}

#[backward(exp_out)]
fn exp_out_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(result)
}

/// PyTorch `TanhOut`: `tanh`, saving its output; the backward is differentiable through it.
#[differentiable(name = "TanhOutBackward")]
fn tanh_out(x: &Tensor) -> Result<Tensor> {
    x.tanh()
}

#[backward(tanh_out)]
fn tanh_out_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
}

/// PyTorch `SinMid`: `sin`, saving the intermediate `cos x` (PyTorch's
/// `save_for_backward(intermediate)` is a `save(..)` residual).
#[differentiable(name = "SinMidBackward", save(c))]
fn sin_mid(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.sin()?, x.cos()?))
}

#[backward(sin_mid)]
fn sin_mid_backward(grad: &Tensor, c: &Tensor) -> Result<Tensor> {
    grad.mul(c)
}

/// PyTorch `SquareView`: `x * x`, saving `x.reshape(-1)`, a view of the input made in the
/// forward (a copy where the input's strides allow no view).
#[differentiable(name = "SquareViewBackward", save(r))]
fn square_view(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let r = x.reshape(&[x.numel()])?;
    Ok((x.mul(x)?, r))
}

#[backward(square_view)]
fn square_view_backward(grad: &Tensor, r: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.mul_scalar(2.0)?.mul(&r.reshape(x.shape())?)
}

/// PyTorch `ProdSum`: `(x * y, x + y)`, saving both inputs.
#[differentiable(name = "ProdSumBackward")]
fn prod_sum(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul(y)?, x.add(y)?))
}

#[backward(prod_sum)]
fn prod_sum_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    Ok((grad_0.mul(y)?.add(grad_1)?, grad_0.mul(x)?.add(grad_1)?))
}

/// PyTorch `MulTwo_`: `x.mul_(2)`, marked dirty, returning `x`.
#[differentiable(name = "MulTwo_Backward", dirty(x))]
fn mul_two_(x: &Tensor) -> Result<Tensor> {
    x.mul_(&Tensor::scalar(2.0f64).to(x.device())?)?;
    Ok(x.clone())
}

#[backward(mul_two_)]
fn mul_two_backward(grad: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(2.0)
}

/// PyTorch `AddInto_`: `x.add_(y)`, marked dirty, returning `x`; `y` may broadcast to `x`, and
/// its gradient (`grad`, of `x`'s shape) is then reduced by the engine.
#[differentiable(name = "AddInto_Backward", dirty(x))]
fn add_into_(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add_(y)?;
    Ok(x.clone())
}

#[backward(add_into_)]
fn add_into_backward(grad: &Tensor) -> (Tensor, Tensor) {
    (grad.clone(), grad.clone())
}

/// PyTorch `NonDiff`: `(2 x, 3 x)`, the first marked non-differentiable.
#[differentiable(name = "NonDiffBackward", non_differentiable(result_0))]
fn non_diff(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul_scalar(2.0)?, x.mul_scalar(3.0)?))
}

#[backward(non_diff)]
fn non_diff_backward(grad_0: &Tensor, grad_1: &Tensor) -> Result<Tensor> {
    let _ = grad_0;
    grad_1.mul_scalar(3.0)
}

/// PyTorch `NoMat`: `(2 x, x * x)` with `set_materialize_grads(False)`.
#[differentiable(name = "NoMatBackward", materialize_grads = false)]
fn no_mat(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul_scalar(2.0)?, x.mul(x)?))
}

#[backward(no_mat)]
fn no_mat_backward(
    grad_0: Option<&Tensor>,
    grad_1: Option<&Tensor>,
    x: &Tensor,
) -> Result<Option<Tensor>> {
    let mut gx = grad_0.map(|g| g.mul_scalar(2.0)).transpose()?;
    if let Some(g1) = grad_1 {
        let t = g1.mul_scalar(2.0)?.mul(x)?;
        gx = Some(match gx {
            None => t,
            Some(g) => g.add(&t)?,
        });
    }
    Ok(gx)
}

/// PyTorch `CubeOnce`: `x³`, saving `x`, its backward `@once_differentiable`.
#[differentiable(name = "CubeOnceBackward", once_differentiable)]
fn cube_once(x: &Tensor) -> Result<Tensor> {
    x.mul(x)?.mul(x)
}

#[backward(cube_once)]
fn cube_once_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(x)?.mul(x)?.mul_scalar(3.0)
}

/// PyTorch `BadGrad`: `2 x` whose backward returns a 0-dim gradient.
#[differentiable(name = "BadGradBackward")]
fn bad_grad(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(bad_grad)]
fn bad_grad_backward(grad: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(2.0)?.sum()
}

// ----- the replay of a `custom` step --------------------------------------------------------

/// The saved-tensor hook counters of one replay.
#[derive(Default)]
pub(super) struct HookCounts {
    packs: Arc<AtomicUsize>,
    unpacks: Arc<AtomicUsize>,
    /// The packs of the last `custom` step.
    last_packs: usize,
}

impl HookCounts {
    /// The hooks `kind` names (`count` or `copy`), counting into these counters.
    fn install(&self, kind: &str) -> SavedTensorsHooksGuard {
        let (packs, unpacks) = (self.packs.clone(), self.unpacks.clone());
        let copy = match kind {
            "count" => false,
            "copy" => true,
            other => panic!("unknown hooks {other:?}"),
        };
        autograd::saved_tensors_hooks(
            move |t: &Tensor| {
                packs.fetch_add(1, Ordering::Relaxed);
                if copy {
                    t.mul_scalar(1.0).expect("t * 1 in a pack hook")
                } else {
                    t.clone()
                }
            },
            move |t: &Tensor| {
                unpacks.fetch_add(1, Ordering::Relaxed);
                t.clone()
            },
        )
    }
}

impl Replay<'_> {
    /// A `custom` step: the call of the shape `s["fn"]`, its outputs in order.
    pub(super) fn custom(&mut self, s: &Value) -> StepResult {
        let a: Vec<Tensor> = ids(&s["a"]).iter().map(|&i| self.var(i)).collect();
        let name = s["fn"].as_str().expect("fn");
        let before = self.hooks.packs.load(Ordering::Relaxed);
        let outs = {
            let _hooks = s["hk"].as_str().map(|k| self.hooks.install(k));
            call(name, &a, s)?
        };
        self.hooks.last_packs = self.hooks.packs.load(Ordering::Relaxed) - before;
        Ok(outs.into_iter().map(Some).collect())
    }

    /// What the custom corpus records beside values and `requires_grad`: a call's outputs'
    /// `is_leaf` and `grad_fn` name, its number of packs, and the unpacks so far.
    pub(super) fn compare_custom(
        &mut self,
        k: usize,
        op: &str,
        step: &Value,
        outs: &[Option<Tensor>],
    ) -> Result<(), Failure> {
        if let Some(n) = step["unpacks"].as_u64() {
            let ours = self.hooks.unpacks.load(Ordering::Relaxed);
            if ours as u64 != n {
                return Err(fail(
                    Category::WrongMetadata,
                    k,
                    format!("{n} unpacks so far"),
                    format!("{ours} unpacks so far"),
                ));
            }
        }
        if op != "custom" {
            return Ok(());
        }
        if let Some(n) = step["packs"].as_u64()
            && self.hooks.last_packs as u64 != n
        {
            return Err(fail(
                Category::WrongMetadata,
                k,
                format!("{n} packs"),
                format!("{} packs", self.hooks.last_packs),
            ));
        }
        let recorded = step["r"].as_array().expect("r");
        for (j, (rec, out)) in recorded.iter().zip(outs).enumerate() {
            let t = out.as_ref().expect("a custom function's output");
            let leaf = rec["leaf"].as_bool().expect("leaf");
            let gf = rec["gf"].as_str();
            let ours = t.grad_fn().map(|n| n.name().to_string());
            if leaf != t.is_leaf() || gf != ours.as_deref() {
                return Err(fail(
                    Category::WrongMetadata,
                    k,
                    format!("output {j}: is_leaf={leaf}, grad_fn={gf:?}"),
                    format!("output {j}: is_leaf={}, grad_fn={ours:?}", t.is_leaf()),
                ));
            }
        }
        Ok(())
    }
}

/// Calls the shape `name` on `a`.
fn call(name: &str, a: &[Tensor], s: &Value) -> Result<Vec<Tensor>> {
    let pair = |(p, q): (Tensor, Tensor)| vec![p, q];
    Ok(match name {
        "ident" => vec![ident(&a[0])?],
        "pass_second" => vec![pass_second(&a[0], &a[1])?],
        "ident_and_double" => pair(ident_and_double(&a[0])?),
        "flatten" => vec![flatten(&a[0])?],
        "transpose" => vec![transpose(&a[0])?],
        "first" => vec![first(&a[0])?],
        "scaled_square" => vec![scaled_square(&a[0], float(s, "s"))?],
        "exp_out" => vec![exp_out(&a[0])?],
        "tanh_out" => vec![tanh_out(&a[0])?],
        "sin_mid" => vec![sin_mid(&a[0])?],
        "square_view" => vec![square_view(&a[0])?],
        "prod_sum" => pair(prod_sum(&a[0], &a[1])?),
        "mul_two_" => vec![mul_two_(&a[0])?],
        "add_into_" => vec![add_into_(&a[0], &a[1])?],
        "non_diff" => pair(non_diff(&a[0])?),
        "no_mat" => pair(no_mat(&a[0])?),
        "cube_once" => vec![cube_once(&a[0])?],
        "bad_grad" => vec![bad_grad(&a[0])?],
        other => panic!("custom function {other:?} is not in tests/corpus/custom.rs"),
    })
}

/// A `custom` step as pseudo-code.
pub(super) fn describe(s: &Value) -> String {
    let args: Vec<String> = ids(&s["a"]).iter().map(|i| format!("v{i}")).collect();
    let mut args = args.join(", ");
    if let Some(x) = s["s"].as_f64() {
        args.push_str(&format!(", {x}"));
    }
    let hooks = match s["hk"].as_str() {
        Some(k) => format!(" [under {k} hooks]"),
        None => String::new(),
    };
    format!("{}({args}){hooks}", s["fn"].as_str().unwrap_or("?"))
}

// ----- the test ----------------------------------------------------------------------------------

// When the corpus was recorded, 551 programs disagreed with PyTorch: 263 for custom-function
// views, 150 for `no_grad` returning the input handle, 97 for `save(..)` residuals, then
// `mark_dirty`'s version bump (F1), `reshape` copying strided inputs PyTorch views (F2), an
// element-wise result's layout (F3: `x.t().exp()` is transposed in PyTorch, so a later `reshape`
// copies), a custom call on a stale view (F4), a dirty no_grad view of a leaf (F5) and hooked
// residuals' requires_grad (F6). All are fixed: every program must agree.

#[test]
fn custom_corpus_matches_pytorch() {
    run_corpus("custom-function corpus", CUSTOM_CORPUS, 3000, &[]);
}
