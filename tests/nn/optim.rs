//! `autograd::optim` against PyTorch: 100-step trajectories of every optimizer (fused and op
//! by op), gradient clipping, and Adam checkpoints converted by `python/autograd_convert.py` in
//! both directions (`benches/record_optim.py` wrote `tests/nn/data/optim*`). Schedulers are in
//! `optim_schedulers.rs`.

use std::path::PathBuf;

use autograd::optim::{
    Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, GroupOptions, Optimizer, ParamGroup,
    RmsProp, RmsPropOptions, Sgd, SgdOptions, clip_grad_norm_, clip_grad_value_,
};
use autograd::{DType, Error, Result, StateDict, Tensor};
use serde_json::{Map, Value};

/// Relative tolerance of the f32 trajectories (the 1e-6), and the absolute one for
/// values near zero.
const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-7;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nn/data")
        .join(name)
}

fn trajectories() -> StateDict {
    StateDict::load(data("optim_trajectories.safetensors")).unwrap()
}

/// The three recorded parameters, as fresh leaves.
fn init_params(dict: &StateDict, prefix: &str) -> Vec<Tensor> {
    (0..3)
        .map(|i| {
            dict.get(&format!("{prefix}.{i}"))
                .unwrap()
                .copy()
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

/// `0.5 p + noise[t]` for each parameter, as the recording computes it.
fn set_grads(params: &[Tensor], noise: &Tensor, t: usize) {
    let row = noise.select(0, t).unwrap();
    let mut k = 0;
    for p in params {
        let n = p.numel();
        let g = p
            .detach()
            .mul_scalar(0.5)
            .unwrap()
            .add(&row.narrow(0, k, n).unwrap().reshape(p.shape()).unwrap())
            .unwrap();
        p.set_grad(Some(g)).unwrap();
        k += n;
    }
}

fn flat(params: &[Tensor]) -> Vec<f32> {
    params
        .iter()
        .flat_map(|p| p.to_vec::<f32>().unwrap())
        .collect()
}

#[track_caller]
fn assert_close(ours: &[f32], theirs: &[f32], what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        let (a, b) = (f64::from(a), f64::from(b));
        assert!(
            (a - b).abs() <= ATOL + RTOL * b.abs(),
            "{what}: element {i}: ours {a:e}, PyTorch {b:e}"
        );
    }
}

/// The options of one recorded group (PyTorch's JSON), with `fused` set.
fn options<O: GroupOptions>(defaults: O, group: &Value) -> O {
    defaults.with_json(group.as_object().unwrap()).unwrap()
}

fn group_params(indices: &Value, params: &[Tensor]) -> Vec<Tensor> {
    indices
        .as_array()
        .unwrap()
        .iter()
        .map(|i| params[i.as_u64().unwrap() as usize].clone())
        .collect()
}

/// The optimizer a recorded configuration describes, on `params`.
fn build(config: &Value, params: &[Tensor], fused: bool) -> Box<dyn Optimizer> {
    let groups = config["param_groups"].as_array().unwrap();
    let indices = config["param_indices"].as_array().unwrap();
    let f = Some(fused);
    macro_rules! groups {
        ($defaults:expr) => {
            groups
                .iter()
                .zip(indices)
                .map(|(g, i)| {
                    ParamGroup::new(group_params(i, params), options($defaults, g).fused(f))
                })
                .collect()
        };
    }
    match config["optimizer"].as_str().unwrap() {
        "SGD" => Box::new(Sgd::with_groups(groups!(SgdOptions::default())).unwrap()),
        "Adam" => Box::new(Adam::with_groups(groups!(AdamOptions::default())).unwrap()),
        "AdamW" => Box::new(AdamW::with_groups(groups!(AdamOptions::adamw())).unwrap()),
        "RMSprop" => Box::new(RmsProp::with_groups(groups!(RmsPropOptions::default())).unwrap()),
        "Adagrad" => Box::new(Adagrad::with_groups(groups!(AdagradOptions::default())).unwrap()),
        other => panic!("unknown optimizer {other}"),
    }
}

fn configs(dict: &StateDict) -> Map<String, Value> {
    let v: Value = serde_json::from_str(dict.metadata("configs").unwrap()).unwrap();
    v.as_object().unwrap().clone()
}

#[test]
fn every_optimizer_follows_pytorchs_trajectory_for_100_steps() {
    let dict = trajectories();
    let noise = dict.get("noise").unwrap().clone();
    let configs = configs(&dict);
    assert_eq!(configs.len(), 13);
    for (name, config) in &configs {
        let expected = dict.get(&format!("traj.{name}")).unwrap();
        for fused in [true, false] {
            let params = init_params(&dict, "init");
            let mut opt = build(config, &params, fused);
            for t in 0..100 {
                set_grads(&params, &noise, t);
                opt.step().unwrap();
                let want = expected.select(0, t).unwrap().to_vec::<f32>().unwrap();
                assert_close(
                    &flat(&params),
                    &want,
                    &format!("{name} (fused: {fused}) step {}", t + 1),
                );
            }
            assert!(params.iter().all(|p| p.is_leaf() && p.requires_grad()));
        }
    }
}

/// Parameters large enough for several chunks of the fused kernel, some non-contiguous.
fn big_params(seed: u64) -> Vec<Tensor> {
    [vec![300, 257], vec![70_001], vec![3]]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Tensor::randn_seeded(s, DType::F32, seed + i as u64)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

fn run_big(make: &dyn Fn(Vec<Tensor>, bool) -> Box<dyn Optimizer>, fused: bool) -> Vec<f32> {
    let params = big_params(10);
    let mut opt = make(params.clone(), fused);
    for t in 0..5u64 {
        for (i, p) in params.iter().enumerate() {
            let g = Tensor::randn_seeded(p.shape(), DType::F32, 100 + 7 * t + i as u64).unwrap();
            p.set_grad(Some(g)).unwrap();
        }
        let before: Vec<u64> = params.iter().map(Tensor::version).collect();
        opt.step().unwrap();
        for (p, v) in params.iter().zip(before) {
            assert!(p.version() > v, "a step bumps the parameter's version");
        }
    }
    flat(&params)
}

#[test]
fn fused_and_op_by_op_steps_agree_on_large_parameters() {
    type Make = Box<dyn Fn(Vec<Tensor>, bool) -> Box<dyn Optimizer>>;
    let makes: Vec<(&str, Make)> = vec![
        (
            "sgd",
            Box::new(|p, f| {
                let o = SgdOptions::default()
                    .lr(0.1)
                    .momentum(0.9)
                    .nesterov(true)
                    .weight_decay(0.01);
                Box::new(Sgd::new(p, o.fused(Some(f))).unwrap())
            }),
        ),
        (
            "adam",
            Box::new(|p, f| {
                let o = AdamOptions::default()
                    .lr(0.01)
                    .amsgrad(true)
                    .weight_decay(0.1);
                Box::new(Adam::new(p, o.fused(Some(f))).unwrap())
            }),
        ),
        (
            "adamw",
            Box::new(|p, f| {
                Box::new(AdamW::new(p, AdamOptions::adamw().lr(0.01).fused(Some(f))).unwrap())
            }),
        ),
        (
            "rmsprop",
            Box::new(|p, f| {
                let o = RmsPropOptions::default()
                    .centered(true)
                    .momentum(0.5)
                    .maximize(true);
                Box::new(RmsProp::new(p, o.fused(Some(f))).unwrap())
            }),
        ),
        (
            "adagrad",
            Box::new(|p, f| {
                let o = AdagradOptions::default().lr_decay(0.1).weight_decay(0.1);
                Box::new(Adagrad::new(p, o.fused(Some(f))).unwrap())
            }),
        ),
    ];
    for (name, make) in &makes {
        let fused = run_big(make.as_ref(), true);
        let ops = run_big(make.as_ref(), false);
        assert_close(&fused, &ops, name);
    }
}

#[test]
fn fused_true_refuses_what_it_cannot_fuse_and_the_default_falls_back() {
    let base = Tensor::randn_seeded(&[3, 4], DType::F32, 0).unwrap();
    let p = base.transpose(0, 1).unwrap().requires_grad_(true).unwrap();
    p.set_grad(Some(Tensor::ones(&[4, 3], DType::F32).unwrap()))
        .unwrap();
    let mut opt = Sgd::new(vec![p.clone()], SgdOptions::default().fused(Some(true))).unwrap();
    let err = opt.step().unwrap_err();
    assert!(err.to_string().contains("`fused=True` requires"), "{err}");
    let before = p.to_vec::<f32>().unwrap();
    let mut opt = Sgd::new(vec![p.clone()], SgdOptions::default().lr(0.5)).unwrap();
    opt.step().unwrap();
    let after = p.to_vec::<f32>().unwrap();
    for (a, b) in after.iter().zip(before) {
        assert_eq!(*a, b - 0.5);
    }
}

#[test]
fn step_skips_parameters_without_gradients_and_zero_grad_drops_them() {
    let a = Tensor::ones(&[2], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::ones(&[2], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let mut opt = Adam::new(vec![a.clone(), b.clone()], AdamOptions::default()).unwrap();
    a.set_grad(Some(Tensor::ones(&[2], DType::F32).unwrap()))
        .unwrap();
    opt.step().unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    assert_eq!(b.version(), 0);
    assert!(a.to_vec::<f32>().unwrap()[0] < 1.0);
    let dict = opt.state_dict().unwrap();
    assert!(dict.contains_key("state.0.exp_avg") && !dict.contains_key("state.1.exp_avg"));
    opt.zero_grad();
    assert!(a.grad().is_none() && b.grad().is_none());
}

#[test]
fn invalid_options_give_pytorchs_value_errors() {
    let p = || {
        vec![
            Tensor::ones(&[1], DType::F32)
                .unwrap()
                .requires_grad_(true)
                .unwrap(),
        ]
    };
    let msg = |r: Result<()>| match r.unwrap_err() {
        Error::InvalidArgument(m) => m,
        e => panic!("not InvalidArgument: {e:?}"),
    };
    let cases: Vec<(Result<()>, &str)> = vec![
        (
            Sgd::new(p(), SgdOptions::default().lr(-0.1)).map(drop),
            "Invalid learning rate: -0.1",
        ),
        (
            Sgd::new(p(), SgdOptions::default().momentum(-1.0)).map(drop),
            "Invalid momentum value: -1.0",
        ),
        (
            Sgd::new(p(), SgdOptions::default().nesterov(true)).map(drop),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (
            Adam::new(p(), AdamOptions::default().betas(1.0, 0.9)).map(drop),
            "Invalid beta parameter at index 0: 1.0",
        ),
        (
            Adam::new(p(), AdamOptions::default().betas(0.9, -0.5)).map(drop),
            "Invalid beta parameter at index 1: -0.5",
        ),
        (
            Adam::new(p(), AdamOptions::default().eps(-1e-8)).map(drop),
            "Invalid epsilon value: -1e-08",
        ),
        (
            AdamW::new(p(), AdamOptions::adamw().weight_decay(-0.01)).map(drop),
            "Invalid weight_decay value: -0.01",
        ),
        (
            RmsProp::new(p(), RmsPropOptions::default().alpha(-1.0)).map(drop),
            "Invalid alpha value: -1.0",
        ),
        (
            Adagrad::new(p(), AdagradOptions::default().lr_decay(-1.0)).map(drop),
            "Invalid lr_decay value: -1.0",
        ),
        (
            Adagrad::new(
                p(),
                AdagradOptions::default().initial_accumulator_value(-1.0),
            )
            .map(drop),
            "Invalid initial_accumulator_value value: -1.0",
        ),
        (
            Adam::new(vec![], AdamOptions::default()).map(drop),
            "optimizer got an empty parameter list",
        ),
    ];
    for (r, want) in cases {
        assert_eq!(msg(r), want);
    }
    let leaf = Tensor::ones(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let non_leaf = leaf.mul_scalar(2.0).unwrap();
    assert_eq!(
        msg(Adam::new(vec![non_leaf], AdamOptions::default()).map(drop)),
        "can't optimize a non-leaf Tensor"
    );
    let d = SgdOptions::default();
    let twice = Sgd::with_groups(vec![
        ParamGroup::new(vec![leaf.clone()], d.clone()),
        ParamGroup::new(vec![leaf], d),
    ]);
    assert_eq!(
        msg(twice.map(drop)),
        "some parameters appear in more than one parameter group"
    );
}

// ----- clipping ---------------------------------------------------------------------------------

fn clipping() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("optim_clipping.json")).unwrap()).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn clip_params(rec: &Value) -> Vec<Tensor> {
    let shapes = rec["shapes"].as_array().unwrap();
    rec["grads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(shapes)
        .map(|(g, s)| {
            let shape: Vec<usize> = s
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            let p = Tensor::zeros(&shape, DType::F32)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            p.set_grad(Some(Tensor::from_vec(f32s(g), &shape).unwrap()))
                .unwrap();
            p
        })
        .collect()
}

#[test]
fn clip_grad_norm_and_value_match_pytorch() {
    let rec = clipping();
    for case in rec["norm"].as_array().unwrap() {
        let params = clip_params(&rec);
        let norm_type = match &case["norm_type"] {
            Value::String(_) => f64::INFINITY,
            v => v.as_f64().unwrap(),
        };
        let max_norm = case["max_norm"].as_f64().unwrap();
        let total = clip_grad_norm_(&params, max_norm, norm_type).unwrap();
        let want = case["total"].as_f64().unwrap() as f32;
        assert_close(
            &[total.item::<f32>().unwrap()],
            &[want],
            &format!("total {norm_type}"),
        );
        for (p, g) in params.iter().zip(case["grads"].as_array().unwrap()) {
            assert_close(
                &p.grad().unwrap().to_vec::<f32>().unwrap(),
                &f32s(g),
                "clipped",
            );
        }
    }
    let params = clip_params(&rec);
    clip_grad_value_(&params, 0.5).unwrap();
    for (p, g) in params.iter().zip(rec["value"]["grads"].as_array().unwrap()) {
        assert_eq!(p.grad().unwrap().to_vec::<f32>().unwrap(), f32s(g));
    }
    let none = vec![
        Tensor::ones(&[1], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap(),
    ];
    assert_eq!(
        clip_grad_norm_(&none, 1.0, 2.0)
            .unwrap()
            .item::<f32>()
            .unwrap(),
        0.0
    );
}

/// Non-finite gradients clip as in PyTorch 2.15 (`clip_grad_norm_` over `[1, nan, 2]` and
/// `[3, 4]` gives a NaN total and NaN everywhere; with `inf` in place of the NaN, an infinite
/// total, the infinite entry NaN (inf · 0) and every other entry 0).
#[test]
fn clip_grad_norm_with_non_finite_gradients_follows_pytorch() {
    let run = |bad: f32| {
        let a = Tensor::zeros(&[3], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let b = Tensor::zeros(&[2], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        a.set_grad(Some(
            Tensor::from_vec(vec![1.0f32, bad, 2.0], &[3]).unwrap(),
        ))
        .unwrap();
        b.set_grad(Some(Tensor::from_vec(vec![3.0f32, 4.0], &[2]).unwrap()))
            .unwrap();
        let total = clip_grad_norm_(&[a.clone(), b.clone()], 1.0, 2.0).unwrap();
        let grads = [a, b].map(|p| p.grad().unwrap().to_vec::<f32>().unwrap());
        (total.item::<f32>().unwrap(), grads)
    };
    let (total, [ga, gb]) = run(f32::NAN);
    assert!(total.is_nan());
    assert!(ga.iter().chain(&gb).all(|g| g.is_nan()), "{ga:?} {gb:?}");
    let (total, [ga, gb]) = run(f32::INFINITY);
    assert_eq!(total, f32::INFINITY);
    assert!(ga[1].is_nan(), "{ga:?}");
    assert_eq!([ga[0], ga[2], gb[0], gb[1]], [0.0; 4]);
}

// ----- checkpoints ------------------------------------------------------------------------------

fn adam_config() -> Value {
    configs(&trajectories())["adam_amsgrad_wd"].clone()
}

#[test]
fn torch_to_ours_converted_adam_state_continues_pytorchs_trajectory() {
    let cont = StateDict::load(data("optim_adam_torch_continuation.safetensors")).unwrap();
    let noise = trajectories().get("noise").unwrap().clone();
    let state = StateDict::load(data("optim_adam_torch.safetensors")).unwrap();
    for fused in [true, false] {
        let params = init_params(&cont, "param");
        let mut opt = build(&adam_config(), &params, fused);
        opt.load_state_dict(&state).unwrap();
        let expected = cont.get("continuation").unwrap();
        for t in 0..3 {
            set_grads(&params, &noise, 3 + t);
            opt.step().unwrap();
            let want = expected.select(0, t).unwrap().to_vec::<f32>().unwrap();
            assert_close(
                &flat(&params),
                &want,
                &format!("continuation step {}", 4 + t),
            );
        }
        // The state round-trips: what we save now has PyTorch's 6-step layout.
        let ours = opt.state_dict().unwrap();
        assert_eq!(
            ours.get("state.2.step").unwrap().item::<f32>().unwrap(),
            6.0
        );
        assert_eq!(ours.get("state.2.step").unwrap().dtype(), DType::F32);
        assert_eq!(ours.get("state.2.step").unwrap().ndim(), 0);
    }
}

/// Three steps of the recorded Adam configuration from the recorded start.
fn three_steps() -> (Vec<Tensor>, Box<dyn Optimizer>) {
    let dict = trajectories();
    let noise = dict.get("noise").unwrap().clone();
    let params = init_params(&dict, "init");
    let mut opt = build(&adam_config(), &params, true);
    for t in 0..3 {
        set_grads(&params, &noise, t);
        opt.step().unwrap();
    }
    (params, opt)
}

/// PyTorch's `param_groups` and ours have the same keys and values (numbers compared as
/// floats; `fused` is `true` here, `None` in the recording).
fn same_groups(ours: &Value, theirs: &Value) {
    let (ours, theirs) = (ours.as_array().unwrap(), theirs.as_array().unwrap());
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(theirs) {
        let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
        let mut ka: Vec<&String> = a.keys().collect();
        let mut kb: Vec<&String> = b.keys().collect();
        ka.sort();
        kb.sort();
        assert_eq!(ka, kb);
        for (k, va) in a {
            let vb = &b[k];
            match (va, vb) {
                (Value::Number(x), Value::Number(y)) => assert_eq!(x.as_f64(), y.as_f64(), "{k}"),
                _ if k == "fused" => {}
                (Value::Array(x), Value::Array(y)) => {
                    let x: Vec<f64> = x.iter().map(|v| v.as_f64().unwrap()).collect();
                    let y: Vec<f64> = y.iter().map(|v| v.as_f64().unwrap()).collect();
                    assert_eq!(x, y, "{k}");
                }
                _ => assert_eq!(va, vb, "{k}"),
            }
        }
    }
}

#[test]
fn ours_converted_to_torch_adam_state_continues_as_here() {
    let (params, opt) = three_steps();
    let state = opt.state_dict().unwrap();
    let mut param_dict = StateDict::new();
    for (i, p) in params.iter().enumerate() {
        param_dict.insert(format!("param.{i}"), p.detach());
    }
    if std::env::var_os("AUTOGRAD_WRITE_OPTIM_CKPT").is_some() {
        state.save(data("optim_adam_ours.safetensors")).unwrap();
        param_dict
            .save(data("optim_adam_ours_params.safetensors"))
            .unwrap();
    }
    // The committed file is what this code writes.
    let committed = StateDict::load(data("optim_adam_ours.safetensors")).unwrap();
    let sorted = |d: &StateDict| {
        let mut k: Vec<String> = d.keys().map(String::from).collect();
        k.sort();
        k
    };
    assert_eq!(sorted(&committed), sorted(&state));
    for (k, t) in state.iter() {
        let c = committed.get(k).unwrap();
        assert_eq!(c.shape(), t.shape(), "{k}");
        assert_close(&t.to_vec::<f32>().unwrap(), &c.to_vec::<f32>().unwrap(), k);
    }
    let groups: Value = serde_json::from_str(state.metadata("param_groups").unwrap()).unwrap();
    let torch_groups = &adam_config()["param_groups"];
    same_groups(&groups, torch_groups);

    // PyTorch loaded that file (python/autograd_convert.py's optimizer_state_from_file) and took 3 more steps:
    // so do we, from a copy of our state loaded into a fresh optimizer.
    let bytes = state.to_bytes().unwrap();
    let noise = trajectories().get("noise").unwrap().clone();
    let cont = StateDict::load(data("optim_adam_ours_continuation.safetensors")).unwrap();
    let expected = cont.get("continuation").unwrap();
    for fused in [true, false] {
        let fresh: Vec<Tensor> = params
            .iter()
            .map(|p| p.detach().copy().unwrap().requires_grad_(true).unwrap())
            .collect();
        let mut opt2 = build(&adam_config(), &fresh, fused);
        opt2.load_state_dict(&StateDict::from_bytes(&bytes).unwrap())
            .unwrap();
        for t in 0..3 {
            set_grads(&fresh, &noise, 3 + t);
            opt2.step().unwrap();
            let want = expected.select(0, t).unwrap().to_vec::<f32>().unwrap();
            assert_close(
                &flat(&fresh),
                &want,
                &format!("PyTorch from our state, step {}", 4 + t),
            );
        }
    }
}

#[test]
fn bad_optimizer_states_give_clear_errors() {
    let good = StateDict::load(data("optim_adam_torch.safetensors")).unwrap();
    let params = init_params(&trajectories(), "init");
    let mut opt = build(&adam_config(), &params, true);
    let err = |dict: &StateDict, opt: &mut Box<dyn Optimizer>| match opt.load_state_dict(dict) {
        Err(Error::StateDict { module, message }) => {
            assert_eq!(module, "Adam");
            message
        }
        other => panic!("expected Error::StateDict, got {other:?}"),
    };
    let mut missing = good.clone();
    missing.remove("state.1.exp_avg_sq");
    assert!(err(&missing, &mut opt).contains("state of parameter 1: missing key \"exp_avg_sq\""));

    let mut shape = good.clone();
    shape.insert(
        "state.0.exp_avg",
        Tensor::zeros(&[3, 2], DType::F32).unwrap(),
    );
    let m = err(&shape, &mut opt);
    assert!(m.contains("size mismatch for \"exp_avg\""), "{m}");

    let mut extra = good.clone();
    extra.insert("state.7.exp_avg", Tensor::zeros(&[1], DType::F32).unwrap());
    assert!(err(&extra, &mut opt).contains("Unexpected key(s) in state_dict: \"state.7.exp_avg\""));

    let fewer = vec![params[0].clone(), params[1].clone()];
    let mut opt2 = build(&adam_config(), &params, true);
    let _ = &mut opt2;
    let mut small: Box<dyn Optimizer> = Box::new(Adam::new(fewer, AdamOptions::default()).unwrap());
    assert_eq!(
        err(&good, &mut small),
        "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
    );

    let mut no_meta = StateDict::new();
    for (k, t) in good.iter() {
        no_meta.insert(k, t.clone());
    }
    assert!(err(&no_meta, &mut opt).contains("missing metadata key \"param_groups\""));

    // Nothing changed: the good state still loads and steps.
    opt.load_state_dict(&good).unwrap();
    opt.step().unwrap();
}

// ----- CUDA -------------------------------------------------------------------------------------

/// On `cuda:0`, op by op and fused (the default there): each recorded configuration follows
/// PyTorch's CPU trajectory there too, for 20 steps. Without a GPU this prints `skipped` and
/// passes.
#[test]
fn optimizers_on_cuda_follow_pytorchs_trajectory() {
    use autograd::{Device, cuda};
    if !cuda::is_available() {
        println!(
            "skipped optimizers_on_cuda_follow_pytorchs_trajectory: no CUDA device ({})",
            cuda::unavailable_reason(0).unwrap_or_default()
        );
        return;
    }
    let gpu = Device::Cuda(0);
    let dict = trajectories();
    let noise = dict.get("noise").unwrap().to(gpu).unwrap();
    for fused in [false, true] {
        for (name, config) in &configs(&dict) {
            let expected = dict.get(&format!("traj.{name}")).unwrap();
            let params: Vec<Tensor> = init_params(&dict, "init")
                .iter()
                .map(|p| p.detach().to(gpu).unwrap().requires_grad_(true).unwrap())
                .collect();
            let mut opt = build(config, &params, fused);
            for t in 0..20 {
                set_grads(&params, &noise, t);
                opt.step().unwrap();
                let want = expected.select(0, t).unwrap().to_vec::<f32>().unwrap();
                assert_close(
                    &flat(&params),
                    &want,
                    &format!("{name} on cuda:0 (fused {fused}) step {}", t + 1),
                );
            }
            assert!(params.iter().all(|p| p.device() == gpu && p.is_leaf()));
        }
    }
    // The fused CUDA kernel is compared with the CPU's bit for bit in
    // `fused_cuda_steps_match_the_fused_cpu_steps`; clipping works there.
    let p = Tensor::ones(&[3], DType::F32)
        .unwrap()
        .to(gpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    p.set_grad(Some(
        Tensor::from_vec(vec![3.0f32, 4.0, 0.0], &[3])
            .unwrap()
            .to(gpu)
            .unwrap(),
    ))
    .unwrap();
    let mut opt = Adam::new(vec![p.clone()], AdamOptions::default().fused(Some(true))).unwrap();
    opt.step().unwrap();
    // Adam's first step moves each element with a nonzero gradient by lr (1e-3) against it.
    assert_close(
        &p.to_vec::<f32>().unwrap(),
        &[0.999, 0.999, 1.0],
        "fused adam on cuda:0",
    );
    let total = clip_grad_norm_(&[p.clone()], 1.0, 2.0).unwrap();
    assert_close(&[total.item::<f32>().unwrap()], &[5.0], "cuda total norm");
    clip_grad_value_(&[p.clone()], 0.5).unwrap();
    assert_close(
        &p.grad().unwrap().to_vec::<f32>().unwrap(),
        &[0.5, 0.5, 0.0],
        "cuda clip value",
    );
}

/// The parameters of `dict`'s recorded `init` as fresh leaves of `dtype` on `device`.
fn init_on(dict: &StateDict, dtype: DType, device: autograd::Device) -> Vec<Tensor> {
    (0..3)
        .map(|i| {
            dict.get(&format!("init.{i}"))
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .copy()
                .unwrap()
                .to(device)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

/// Every element of `params` as `f64`, in order.
fn flat_f64(params: &[Tensor]) -> Vec<f64> {
    params
        .iter()
        .flat_map(|p| p.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap())
        .collect()
}

#[track_caller]
fn assert_close_rtol(ours: &[f64], theirs: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "{what}: element {i}: cuda {a:e}, cpu {b:e}"
        );
    }
}

/// The fused CUDA kernels (`fused: Some(true)` on `cuda:0`, one launch per group) against the
/// fused CPU kernels: every recorded configuration (SGD with momentum, dampening, Nesterov,
/// weight decay, maximize; Adam and AdamW with amsgrad; RMSprop; Adagrad; several groups) for
/// 100 steps, in f32 to rtol 1e-6 and in f64 to rtol 1e-12, each step bumping every parameter's
/// version; then parameters of several chunks each. Without a GPU no CUDA tensor can be made
/// (`Error::DeviceUnavailable`, no panic) and this prints `skipped`.
#[test]
fn fused_cuda_steps_match_the_fused_cpu_steps() {
    use autograd::{Device, cuda};
    let gpu = Device::Cuda(0);
    if !cuda::is_available() {
        let err = Tensor::ones(&[3], DType::F32).unwrap().to(gpu).unwrap_err();
        assert!(matches!(err, Error::DeviceUnavailable { .. }), "{err:?}");
        println!(
            "skipped fused_cuda_steps_match_the_fused_cpu_steps: no CUDA device ({})",
            cuda::unavailable_reason(0).unwrap_or_default()
        );
        return;
    }
    let dict = trajectories();
    for (dtype, rtol, atol) in [(DType::F32, RTOL, ATOL), (DType::F64, 1e-12, 1e-14)] {
        let noise = dict.get("noise").unwrap().to_dtype(dtype).unwrap();
        let noise_gpu = noise.to(gpu).unwrap();
        for (name, config) in &configs(&dict) {
            let on_cpu = init_on(&dict, dtype, Device::Cpu);
            let on_gpu = init_on(&dict, dtype, gpu);
            let mut cpu_opt = build(config, &on_cpu, true);
            let mut gpu_opt = build(config, &on_gpu, true);
            for t in 0..100 {
                set_grads(&on_cpu, &noise, t);
                set_grads(&on_gpu, &noise_gpu, t);
                let before: Vec<u64> = on_gpu.iter().map(Tensor::version).collect();
                cpu_opt.step().unwrap();
                gpu_opt.step().unwrap();
                for (p, v) in on_gpu.iter().zip(before) {
                    assert!(
                        p.version() > v,
                        "{name}: a fused CUDA step bumps the version"
                    );
                }
                assert_close_rtol(
                    &flat_f64(&on_gpu),
                    &flat_f64(&on_cpu),
                    rtol,
                    atol,
                    &format!("{name} ({dtype:?}) fused on cuda:0, step {}", t + 1),
                );
            }
            assert!(on_gpu.iter().all(|p| p.device() == gpu && p.is_leaf()));
        }
    }

    // Large parameters: 77_100 and 70_001 elements (chunks of 4096, the last one partial) and a
    // tiny one, in one launch.
    type Make = fn(Vec<Tensor>) -> Box<dyn Optimizer>;
    let makes: [(&str, Make); 5] = [
        ("sgd", |p| {
            let o = SgdOptions::default()
                .lr(0.1)
                .momentum(0.9)
                .dampening(0.1)
                .weight_decay(0.01)
                .maximize(true);
            Box::new(Sgd::new(p, o.fused(Some(true))).unwrap())
        }),
        ("adam", |p| {
            let o = AdamOptions::default()
                .lr(0.01)
                .amsgrad(true)
                .weight_decay(0.1);
            Box::new(Adam::new(p, o.fused(Some(true))).unwrap())
        }),
        ("adamw", |p| {
            let o = AdamOptions::adamw().lr(0.01).maximize(true);
            Box::new(AdamW::new(p, o.fused(Some(true))).unwrap())
        }),
        ("rmsprop", |p| {
            let o = RmsPropOptions::default().centered(true).momentum(0.5);
            Box::new(RmsProp::new(p, o.fused(Some(true))).unwrap())
        }),
        ("adagrad", |p| {
            let o = AdagradOptions::default().lr_decay(0.1).weight_decay(0.1);
            Box::new(Adagrad::new(p, o.fused(Some(true))).unwrap())
        }),
    ];
    for (name, make) in makes {
        let run = |device: Device| {
            let params: Vec<Tensor> = big_params(10)
                .iter()
                .map(|p| p.detach().to(device).unwrap().requires_grad_(true).unwrap())
                .collect();
            let mut opt = make(params.clone());
            for t in 0..5u64 {
                for (i, p) in params.iter().enumerate() {
                    let g = Tensor::randn_seeded(p.shape(), DType::F32, 100 + 7 * t + i as u64)
                        .unwrap();
                    p.set_grad(Some(g.to(device).unwrap())).unwrap();
                }
                opt.step().unwrap();
            }
            flat(&params)
        };
        assert_close(
            &run(gpu),
            &run(Device::Cpu),
            &format!("{name} large, cuda:0"),
        );
    }
}
