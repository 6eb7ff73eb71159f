//! Forward mode against PyTorch's recorded gradients. For each program of the float64 ops
//! corpus that ends in a `backward` of a scalar loss, with no error, no `no_grad` step and no
//! earlier backward pass, the inputs that require grad are replayed as dual tensors with a fixed
//! tangent `vᵢ`; the loss's tangent must be `Σᵢ ⟨∇ᵢ, vᵢ⟩` with `∇ᵢ` PyTorch's recorded gradient of
//! input `i`: forward mode (the ops' `#[jvp]` rules, or their backwards run twice) against
//! PyTorch's reverse mode, on every op family of the corpus.

use std::fmt::Write as _;

use autograd::{DType, Device, Tensor, forward_ad, no_grad};

use super::{OPS_CORPUS, Program, Recorded, Replay, load_corpus};

/// The tangent of input `i`: a fixed, irregular pattern.
fn tangent(i: usize, input: &Recorded) -> Vec<f64> {
    (0..input.data.len())
        .map(|j| ((i * 31 + j * 7 + 3) as f64 * 0.37).sin())
        .collect()
}

/// Whether `p` fits the check, and the index of its backward step.
fn backward_step(p: &Program) -> Option<usize> {
    if p.error.is_some() || p.dtype != DType::F64 || p.has_f32_part {
        return None;
    }
    let k = p.steps.iter().position(|s| s["op"] == "backward")?;
    let before = &p.steps[..k];
    // Reverse mode does not see what runs under `no_grad`, forward mode does (in PyTorch too):
    // a `no_grad` step, or an embedding with a padding index (its layer zeroes that row of the
    // weight in place under `no_grad`), makes the two differ on purpose.
    let plain = before.iter().all(|s| {
        s.get("ng").is_none_or(|v| v.as_u64() != Some(1))
            && s["op"] != "grad"
            && s["op"] != "to_dtype"
            && !(s["op"] == "embedding" && s.get("padding").is_some_and(|v| !v.is_null()))
    });
    (plain && p.steps[k].get("inputs").is_none()).then_some(k)
}

/// The loss's tangent against `Σᵢ ⟨∇ᵢ, vᵢ⟩`; `Err` describes a mismatch.
fn check(p: &Program, k: usize) -> Result<(), String> {
    let mut replay = Replay::new(p, Device::Cpu, false);
    let mut expected = 0.0;
    let mut scale = 0.0;
    let grads = p.steps[k]["gr"].as_object().cloned().unwrap_or_default();
    for (i, input) in p.inputs.iter().enumerate() {
        let t = replay.tensor(&input.shape, &input.data, input.requires_grad);
        if input.requires_grad {
            let v = tangent(i, input);
            if let Some(g) = grads.get(&i.to_string()) {
                let g = Recorded::parse(g);
                for (a, b) in g.data.iter().zip(&v) {
                    expected += a * b;
                    scale += (a * b).abs();
                }
            }
            let v = Tensor::from_vec(v, &input.shape).map_err(|e| e.to_string())?;
            let dual = forward_ad::make_dual(&t, &v).map_err(|e| e.to_string())?;
            replay.set(i, Some(dual));
        } else {
            replay.set(i, Some(t));
        }
    }
    for step in &p.steps[..k] {
        let op = step["op"].as_str().expect("op");
        replay
            .step(op, step)
            .map_err(|e| format!("step {op}: {e}"))?;
    }
    let loss = p.steps[k]["a"][0].as_u64().expect("the loss") as usize;
    let loss = replay.var(loss);
    let got = match forward_ad::unpack_dual(&loss)
        .map_err(|e| e.to_string())?
        .tangent
    {
        Some(t) => {
            let _g = no_grad();
            t.sum()
                .and_then(|s| s.item::<f64>())
                .map_err(|e| e.to_string())?
        }
        None => 0.0,
    };
    if (got - expected).abs() <= 1e-9 * (1.0 + scale) {
        Ok(())
    } else {
        Err(format!(
            "tangent {got}, PyTorch's gradients give {expected}"
        ))
    }
}

#[test]
fn ops_corpus_forward_mode_agrees_with_pytorchs_gradients() {
    let programs = load_corpus(OPS_CORPUS);
    let _lock = super::DUAL_LEVEL_LOCK
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let _level = forward_ad::dual_level().expect("no other test holds a level: the lock");
    let (mut checked, mut failures, mut report) = (0, 0, String::new());
    for p in &programs {
        let Some(k) = backward_step(p) else { continue };
        checked += 1;
        if let Err(e) = check(p, k) {
            failures += 1;
            if failures <= 15 {
                let _ = writeln!(report, "  program {} ({}): {e}", p.id, p.family);
            }
        }
    }
    println!("forward mode on the ops corpus: {checked} programs, {failures} disagree");
    assert!(checked >= 2000, "only {checked} programs fit the check");
    assert_eq!(
        failures, 0,
        "forward mode disagrees with PyTorch's gradients:\n{report}"
    );
}
