//! `autograd::amp::GradScaler` against PyTorch's `torch.amp.GradScaler`: 30-step training
//! trajectories with overflowing steps (scales, skipped steps, parameters), the scale's update
//! arithmetic, the error texts and the state dict (`tests/amp/record_grad_scaler.py` wrote
//! `tests/amp/data/grad_scaler.json`), and the pass-through of a disabled scaler.

mod autocast;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use autograd::amp::{GradScaler, GradScalerOptions};
use autograd::optim::{Adam, AdamOptions, Optimizer, Sgd, SgdOptions, clip_grad_norm_};
use autograd::{DType, Device, Error, Result, Tensor};
use serde_json::{Map, Value};

/// Relative tolerance of the f32 trajectories, and the absolute one for values near zero.
const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-7;

/// Held by the tests that install the process-wide warning handler, which would otherwise see
/// each other's warnings or remove each other's handler.
static WARNING_HANDLER: Mutex<()> = Mutex::new(());

fn recorded() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/amp/data/grad_scaler.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn assert_close(ours: &[f32], theirs: &[f32], (rtol, atol): (f64, f64), what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        let (a, b) = (f64::from(a), f64::from(b));
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "{what}: element {i}: ours {a:e}, PyTorch {b:e}"
        );
    }
}

/// A scaler on the CPU (PyTorch's `GradScaler("cpu", ..)`).
fn cpu() -> GradScalerOptions {
    GradScalerOptions::default().device("cpu")
}

/// The recorded MLP: `w1` [4, 3], `b1` [3], `w2` [3, 1], `b2` [1], as fresh leaves on `device`.
fn model_params(data: &Value, device: Device) -> Vec<Tensor> {
    let shapes: [&[usize]; 4] = [&[4, 3], &[3], &[3, 1], &[1]];
    shapes
        .iter()
        .zip(data["init"].as_array().unwrap())
        .map(|(shape, v)| {
            Tensor::from_vec(f32s(v), shape)
                .unwrap()
                .to(device)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

/// `mean((tanh(x w1 + b1) w2 + b2 - target)²)`, as the recording computes it.
fn loss_of(params: &[Tensor], x: &Tensor, target: &Tensor) -> Result<Tensor> {
    let h = x.matmul(&params[0])?.add(&params[1])?.tanh()?;
    let d = h.matmul(&params[2])?.add(&params[3])?.sub(target)?;
    d.mul(&d)?.mean()
}

/// Replays the recorded run `kind` (see the recording script) on the CPU and compares every
/// step.
fn replay(kind: &str) -> Result<()> {
    replay_on(kind, Device::Cpu, cpu(), (RTOL, ATOL))
}

/// Replays the run `kind` with the model on `device` and a scaler made from `options`: scales,
/// skips and state dict exactly, the loss and the parameters within `tol` (relative, absolute).
fn replay_on(
    kind: &str,
    device: Device,
    options: GradScalerOptions,
    tol: (f64, f64),
) -> Result<()> {
    let data = recorded();
    let x = Tensor::from_vec(f32s(&data["x"]), &[8, 4])?.to(device)?;
    let target = Tensor::from_vec(f32s(&data["target"]), &[8, 1])?.to(device)?;
    let params = model_params(&data, device);
    let sgd_lr = data["sgd_lr"].as_f64().unwrap();
    let sgd = || SgdOptions::default().lr(sgd_lr).momentum(0.9);
    let adam = || AdamOptions::default().lr(0.05);
    let mut opts: Vec<Box<dyn Optimizer>> = match kind {
        "sgd" => vec![Box::new(Sgd::new(params.clone(), sgd())?)],
        "adam" => vec![Box::new(Adam::new(params.clone(), adam())?)],
        _ => vec![
            Box::new(Sgd::new(params[..2].to_vec(), sgd())?),
            Box::new(Adam::new(params[2..].to_vec(), adam())?),
        ],
    };
    let init_scale = data["init_scale"].as_f64().unwrap();
    let interval = data["growth_interval"].as_i64().unwrap();
    let mut scaler = GradScaler::new(options.init_scale(init_scale).growth_interval(interval))?;
    let run = &data["runs"][kind];
    for (t, want) in run["steps"].as_array().unwrap().iter().enumerate() {
        for o in &opts {
            o.zero_grad();
        }
        let loss = loss_of(&params, &x, &target)?;
        scaler.scale(&loss)?.backward()?;
        if kind == "adam" {
            scaler.unscale_(opts[0].as_mut())?;
            clip_grad_norm_(&params, 5.0, 2.0)?;
        }
        let mut skipped = Vec::new();
        for o in &mut opts {
            skipped.push(Value::Bool(!scaler.step(o.as_mut())?));
        }
        scaler.update(None)?;
        let what = format!("{kind} step {t}");
        let want_loss = want["loss"].as_f64().unwrap() as f32;
        assert_close(&[loss.item::<f32>()?], &[want_loss], tol, &what);
        assert_eq!(Value::Array(skipped), want["skipped"], "{what}: skipped");
        assert_eq!(
            scaler.get_scale(),
            want["scale"].as_f64().unwrap(),
            "{what}: scale"
        );
        assert_eq!(
            scaler.state_dict()["_growth_tracker"],
            want["growth_tracker"],
            "{what}: tracker"
        );
        for (i, (p, w)) in params
            .iter()
            .zip(want["params"].as_array().unwrap())
            .enumerate()
        {
            let ours = p.to(Device::Cpu)?.to_vec::<f32>()?;
            assert_close(&ours, &f32s(w), tol, &format!("{what}: param {i}"));
        }
    }
    assert_eq!(Value::Object(scaler.state_dict()), run["state_dict"]);
    Ok(())
}

#[test]
fn sgd_trajectory_under_overflow_is_pytorchs() -> Result<()> {
    replay("sgd")
}

#[test]
fn adam_with_unscale_and_clipping_is_pytorchs() -> Result<()> {
    replay("adam")
}

/// Two optimizers, one scaler: each optimizer skips on its own gradients (some steps skip only
/// the second), and one overflow anywhere backs the scale off.
#[test]
fn two_optimizers_skip_separately_as_pytorch() -> Result<()> {
    replay("two")
}

/// The recorded runs on `cuda:0` with PyTorch's default `"cuda"` scaler: the checks and the
/// unscaling run on the device, the same steps are skipped and the scales are the same; the
/// parameters within 1e-4 (CUDA's `tanh` and products round differently from the CPU's). Without
/// a GPU this prints `skipped` and passes.
#[test]
fn runs_on_cuda_skip_the_same_steps() -> Result<()> {
    if !autograd::cuda::is_available() {
        println!("skipped runs_on_cuda_skip_the_same_steps: no CUDA device");
        return Ok(());
    }
    for kind in ["sgd", "adam", "two"] {
        replay_on(
            kind,
            Device::Cuda(0),
            GradScalerOptions::default(),
            (1e-4, 1e-5),
        )?;
    }
    Ok(())
}

/// `_amp_update_scale_`'s arithmetic with factors that are not powers of two: f64 products
/// rounded to the f32 scale, growth every `growth_interval` good steps, reset on overflow.
#[test]
fn scale_updates_round_as_pytorchs() -> Result<()> {
    let data = recorded();
    let p = Tensor::zeros(&[2], DType::F32)?.requires_grad_(true)?;
    let mut opt = Sgd::new([p.clone()], SgdOptions::default().lr(0.1))?;
    let options = cpu()
        .init_scale(1000.0)
        .growth_factor(1.7)
        .backoff_factor(0.3)
        .growth_interval(2);
    let mut scaler = GradScaler::new(options)?;
    scaler.scale(&p.sum()?)?;
    let pattern = data["factors"]["pattern"].as_array().unwrap();
    let mut scales = Vec::new();
    for inf in pattern {
        let second = if inf.as_bool().unwrap() {
            f32::INFINITY
        } else {
            2.0
        };
        p.set_grad(Some(Tensor::from_vec(vec![1.0f32, second], &[2])?))?;
        scaler.step(&mut opt)?;
        scaler.update(None)?;
        scales.push(Value::from(scaler.get_scale()));
    }
    assert_eq!(Value::Array(scales), data["factors"]["scales"]);
    Ok(())
}

/// One parameter, its scaled gradient computed: PyTorch's `fresh()` in the recording.
fn fresh() -> Result<(Tensor, Sgd, GradScaler)> {
    let p = Tensor::ones(&[2], DType::F32)?.requires_grad_(true)?;
    let opt = Sgd::new([p.clone()], SgdOptions::default().lr(0.1))?;
    let mut scaler = GradScaler::new(cpu())?;
    scaler.scale(&p.sum()?)?.backward()?;
    Ok((p, opt, scaler))
}

fn message(r: Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn misuse_errors_are_pytorchs() -> Result<()> {
    let data = recorded();
    let want = |k: &str| data["errors"][k].as_str().unwrap().to_string();

    let (p, mut opt, mut s) = fresh()?;
    s.unscale_(&mut opt)?;
    assert_eq!(p.grad().unwrap().to_vec::<f32>()?, [1.0, 1.0]);
    assert_eq!(message(s.unscale_(&mut opt)), want("unscale_twice"));
    assert_eq!(p.grad().unwrap().to_vec::<f32>()?, [1.0, 1.0]); // not unscaled twice

    let (_, mut opt, mut s) = fresh()?;
    s.step(&mut opt)?;
    assert_eq!(message(s.unscale_(&mut opt)), want("unscale_after_step"));
    assert_eq!(message(s.step(&mut opt)), want("step_twice"));

    let (_, _, mut s) = fresh()?;
    assert_eq!(message(s.update(None)), want("update_without_checks"));

    let (p, mut opt, mut s) = fresh()?;
    p.set_grad(None)?;
    assert_eq!(message(s.step(&mut opt)), want("step_without_grads"));

    let p = Tensor::ones(&[2], DType::F32)?.requires_grad_(true)?;
    let mut opt = Sgd::new([p], SgdOptions::default().lr(0.1))?;
    let mut s = GradScaler::new(cpu())?;
    assert_eq!(message(s.step(&mut opt)), want("step_before_scale"));
    assert!(message(s.unscale_(&mut opt)).starts_with("Attempted unscale_ but _scale is None."));
    assert!(message(s.update(None)).starts_with("Attempted update but _scale is None."));

    let err = GradScaler::new(cpu())?
        .load_state_dict(&Map::new())
        .unwrap_err();
    assert!(matches!(err, Error::Message(_)));
    assert_eq!(err.to_string(), want("load_empty"));

    let h = Tensor::ones(&[2], DType::F16)?.requires_grad_(true)?;
    let mut s = GradScaler::new(cpu())?;
    s.scale(&h.to_dtype(DType::F32)?.sum()?)?.backward()?;
    let mut opt = Sgd::new([h.clone()], SgdOptions::default().lr(0.1))?;
    let err = s.unscale_(&mut opt).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    assert_eq!(err.to_string(), want("fp16"));

    let err = GradScaler::new(cpu().growth_factor(1.0)).unwrap_err();
    assert_eq!(err.to_string(), want("growth_factor"));
    let err = GradScaler::new(cpu().backoff_factor(1.0)).unwrap_err();
    assert_eq!(err.to_string(), want("backoff_factor"));
    Ok(())
}

/// The state dict has PyTorch's keys and values, loads into a fresh scaler (whose first `scale`
/// starts from it) and into one already in use, and a bad state changes nothing.
#[test]
fn state_dict_round_trips() -> Result<()> {
    let data = recorded();
    let saved = data["runs"]["sgd"]["state_dict"]
        .as_object()
        .unwrap()
        .clone();
    let mut fresh_scaler = GradScaler::new(cpu())?;
    fresh_scaler.load_state_dict(&saved)?;
    assert_eq!(fresh_scaler.state_dict(), saved);
    let tracker = saved["_growth_tracker"].as_i64().unwrap();

    // Continues the sequence: the first `scale` starts from the loaded scale and tracker.
    let (p, mut opt, _) = fresh()?;
    p.set_grad(None)?;
    let scale = fresh_scaler.get_scale();
    let out = fresh_scaler.scale(&p.sum()?)?;
    assert_eq!(f64::from(out.item::<f32>()?), 2.0 * scale);
    out.backward()?;
    fresh_scaler.step(&mut opt)?;
    fresh_scaler.update(None)?;
    let state = fresh_scaler.state_dict();
    assert_eq!(
        state["_growth_tracker"].as_i64().unwrap(),
        (tracker + 1) % 3
    );

    // Into a scaler in use: its scale and tracker change at once.
    let (_, _, mut live) = fresh()?;
    live.load_state_dict(&saved)?;
    assert_eq!(live.state_dict(), saved);

    // Missing keys and wrong types: an error, nothing changed.
    let mut missing = saved.clone();
    missing.remove("growth_interval");
    let err = live.load_state_dict(&missing).unwrap_err();
    assert!(matches!(err, Error::StateDict { .. }), "{err}");
    let mut wrong = saved.clone();
    wrong.insert("_growth_tracker".into(), Value::from("x"));
    wrong.insert("scale".into(), Value::from(8.0));
    assert!(live.load_state_dict(&wrong).is_err());
    assert_eq!(live.state_dict(), saved);
    Ok(())
}

/// `enabled: false`: `scale` returns its input, `step` always steps, the rest does nothing.
#[test]
fn disabled_scaler_is_a_pass_through() -> Result<()> {
    let mut s = GradScaler::new(cpu().enabled(false).growth_factor(0.5))?; // unchecked
    assert!(!s.is_enabled());
    let w = Tensor::scalar(1.0f32).requires_grad_(true)?;
    let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(0.5))?;
    let loss = w.mul_scalar(2.0)?;
    let scaled = s.scale(&loss)?;
    assert!(scaled.is_same(&loss));
    scaled.backward()?;
    s.unscale_(&mut opt)?;
    assert_eq!(w.grad().unwrap().item::<f32>()?, 2.0);
    assert!(s.step(&mut opt)?);
    assert!(s.step(&mut opt)?); // no bookkeeping: twice is fine
    assert_eq!(w.item::<f32>()?, -1.0);
    s.update(None)?;
    s.update(Some(3.0))?;
    assert_eq!(s.get_scale(), 1.0);
    assert!(s.state_dict().is_empty());
    s.load_state_dict(&Map::new())?;
    Ok(())
}

/// PyTorch's default `device="cuda"` disables the scaler, with a warning, where CUDA is missing.
#[test]
fn cuda_scaler_without_cuda_is_disabled() -> Result<()> {
    let _handler = WARNING_HANDLER.lock().unwrap_or_else(|e| e.into_inner());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    autograd::set_warning_handler(Some(Box::new(move |w: &str| {
        sink.lock().unwrap().push(w.to_string())
    })));
    let s = GradScaler::new(GradScalerOptions::default());
    autograd::set_warning_handler(None);
    let s = s?;
    if autograd::cuda::is_available() {
        assert!(s.is_enabled());
    } else {
        assert!(!s.is_enabled());
        let want = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.";
        assert!(seen.lock().unwrap().iter().any(|w| w == want), "{seen:?}");
        // Disabled first, so its factors are not checked.
        assert!(!GradScaler::new(GradScalerOptions::default().growth_factor(0.0))?.is_enabled());
    }
    Ok(())
}

/// Gradients on two devices: one check per device, an overflow on either skips the step; the
/// scale lives on the first scaled tensor's device and follows the loss to others.
#[test]
fn gradients_on_two_devices() -> Result<()> {
    let a = Tensor::ones(&[2], DType::F32)?.requires_grad_(true)?;
    let b = Tensor::ones(&[2], DType::F32)?
        .to(Device::Virtual(0))?
        .detach()
        .requires_grad_(true)?;
    let mut opt = Sgd::new([a.clone(), b.clone()], SgdOptions::default().lr(1.0))?;
    let mut s = GradScaler::new(cpu().init_scale(4.0))?;
    let on_b = s.scale(&b.sum()?)?;
    assert_eq!(on_b.device(), Device::Virtual(0));
    on_b.backward()?;
    s.scale(&a.sum()?)?.backward()?;
    assert!(s.step(&mut opt)?);
    assert_eq!(a.to_vec::<f32>()?, [0.0, 0.0]);
    assert_eq!(b.to(Device::Cpu)?.to_vec::<f32>()?, [0.0, 0.0]);
    s.update(None)?;

    opt.zero_grad();
    s.scale(&a.sum()?)?.backward()?;
    let inf = Tensor::from_vec(vec![f32::INFINITY, 1.0], &[2])?.to(Device::Virtual(0))?;
    b.set_grad(Some(inf))?;
    assert!(!s.step(&mut opt)?);
    assert_eq!(a.to_vec::<f32>()?, [0.0, 0.0]);
    s.update(None)?;
    assert_eq!(s.get_scale(), 2.0);
    Ok(())
}

/// `bf16` gradients are unscaled (in f32, rounded back), `f16` ones refused as PyTorch does.
#[test]
fn bf16_gradients_are_unscaled() -> Result<()> {
    let w = Tensor::ones(&[3], DType::BF16)?.requires_grad_(true)?;
    // The default (`fused: None`) steps half parameters op by op.
    let options = SgdOptions::default().lr(0.25);
    let mut opt = Sgd::new([w.clone()], options)?;
    let mut s = GradScaler::new(cpu().init_scale(256.0))?;
    let loss = w.to_dtype(DType::F32)?.sum()?;
    s.scale(&loss)?.backward()?;
    assert_eq!(
        w.grad().unwrap().to_dtype(DType::F32)?.to_vec::<f32>()?,
        [256.0; 3]
    );
    assert!(s.step(&mut opt)?);
    assert_eq!(w.to_dtype(DType::F32)?.to_vec::<f32>()?, [0.75; 3]);
    Ok(())
}
