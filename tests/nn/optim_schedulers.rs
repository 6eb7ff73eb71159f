//! `autograd::optim::lr_scheduler` against PyTorch 2.15: each scheduler's learning rates (and
//! momentum) step by step, its `state_dict` after step 12 (same keys, same values), resuming
//! from PyTorch's state and from ours, `ReduceLROnPlateau` on a recorded metric, PyTorch's
//! error texts, and an optimizer + scheduler checkpoint converted by
//! `python/autograd_convert.py` in both directions. `benches/record_optim.py` wrote the data.

use std::path::PathBuf;

use autograd::optim::lr_scheduler::{
    Anneal, ChainedScheduler, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LrScheduler,
    MultiStepLR, OneCycleLR, OneCycleOptions, PlateauMode, ReduceLROnPlateau,
    ReduceLROnPlateauOptions, SequentialLR, StepLR, ThresholdMode,
};
use autograd::optim::{
    Adagrad, AdagradOptions, Adam, AdamOptions, Optimizer, ParamGroup, Sgd, SgdOptions,
};
use autograd::{DType, Error, StateDict, Tensor};
use serde_json::{Map, Value};

/// The step after which the recording saved each scheduler's state (`STATE_AT`).
const STATE_AT: usize = 12;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nn/data")
        .join(name)
}

fn json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data(name)).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[track_caller]
fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-12 * b.abs().max(1e-3),
        "{what}: ours {a} vs PyTorch {b}"
    );
}

#[track_caller]
fn close_all(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (x, y) in a.iter().zip(b) {
        close(*x, *y, what);
    }
}

/// Two state dicts are the same: the same keys at every level, numbers equal to 1e-12
/// (PyTorch's `9` and our `9.0` alike), everything else equal.
#[track_caller]
fn same_state(ours: &Value, theirs: &Value, path: &str) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let mut ka: Vec<&String> = a.keys().collect();
            let mut kb: Vec<&String> = b.keys().collect();
            ka.sort();
            kb.sort();
            assert_eq!(ka, kb, "{path}: keys");
            for (k, v) in a {
                same_state(v, &b[k], &format!("{path}.{k}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: lengths");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_state(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            close(a.as_f64().unwrap(), b.as_f64().unwrap(), path)
        }
        _ => assert_eq!(ours, theirs, "{path}"),
    }
}

fn leaf() -> Tensor {
    Tensor::zeros(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// SGD with momentum 0.9, one group (of one parameter) per learning rate: the recording's.
fn sgd(lrs: &[f64]) -> Box<dyn Optimizer> {
    let groups = lrs
        .iter()
        .map(|&lr| ParamGroup::new(vec![leaf()], SgdOptions::default().lr(lr).momentum(0.9)))
        .collect();
    Box::new(Sgd::with_groups(groups).unwrap())
}

fn adam(lrs: &[f64]) -> Box<dyn Optimizer> {
    let groups = lrs
        .iter()
        .map(|&lr| ParamGroup::new(vec![leaf()], AdamOptions::default().lr(lr)))
        .collect();
    Box::new(Adam::with_groups(groups).unwrap())
}

type MakeSched<'a> = dyn Fn(&mut dyn Optimizer) -> Box<dyn LrScheduler> + 'a;

/// Steps `sched` from `from` to 30, comparing learning rates (and momentum) with the record.
#[track_caller]
fn replay(
    name: &str,
    rec: &Value,
    opt: &mut dyn Optimizer,
    sched: &mut dyn LrScheduler,
    from: usize,
    momentum: bool,
    mut at_state: impl FnMut(&dyn Optimizer, &dyn LrScheduler),
) {
    let steps = rec["lrs"].as_array().unwrap().len();
    assert_eq!(steps, 31);
    for i in from..steps {
        if i > from {
            opt.step().unwrap();
            sched.step(opt).unwrap();
        }
        let what = format!("{name} step {i}");
        close_all(sched.get_last_lr(), &f64s(&rec["lrs"][i]), &what);
        assert_eq!(opt.lrs(), sched.get_last_lr(), "{what}");
        if momentum {
            let ours: Vec<f64> = opt
                .param_groups()
                .iter()
                .map(|g| g.momentum().unwrap())
                .collect();
            close_all(
                &ours,
                &f64s(&rec["momentum"][i]),
                &format!("{what} momentum"),
            );
        }
        if i == STATE_AT {
            at_state(opt, sched);
        }
    }
}

/// The recorded schedule `name`: the sequence from the start; at step 12 our state dict is
/// PyTorch's; a scheduler built afresh and given PyTorch's state (and the optimizer's state)
/// continues PyTorch's sequence, and so does one given our state.
#[track_caller]
fn check_schedule(
    name: &str,
    make_opt: &dyn Fn() -> Box<dyn Optimizer>,
    make_sched: &MakeSched<'_>,
    momentum: bool,
) -> (Box<dyn Optimizer>, Box<dyn LrScheduler>) {
    let all = json("optim_schedules.json");
    let rec = &all[name];
    let mut opt = make_opt();
    let mut sched = make_sched(opt.as_mut());
    let mut saved = None;
    replay(
        name,
        rec,
        opt.as_mut(),
        sched.as_mut(),
        0,
        momentum,
        |o, s| {
            let ours = Value::Object(s.state_dict());
            same_state(&ours, &rec["state"], &format!("{name}.state_dict()"));
            saved = Some((o.state_dict().unwrap(), s.state_dict()));
        },
    );
    let (opt_state, ours) = saved.unwrap();
    let theirs = rec["state"].as_object().unwrap();
    for (whose, state) in [("PyTorch's", theirs), ("our", &ours)] {
        let mut opt2 = make_opt();
        let mut sched2 = make_sched(opt2.as_mut());
        opt2.load_state_dict(&opt_state).unwrap();
        sched2.load_state_dict(state).unwrap();
        let what = format!("{name} resumed from {whose} state");
        replay(
            &what,
            rec,
            opt2.as_mut(),
            sched2.as_mut(),
            STATE_AT,
            momentum,
            |_, _| {},
        );
    }
    (opt, sched)
}

#[test]
fn optim_schedulers_give_pytorchs_learning_rates_and_state_dicts() {
    let s01_003 = || sgd(&[0.1, 0.03]);
    check_schedule(
        "step_lr",
        &s01_003,
        &|o| Box::new(StepLR::new(o, 7, 0.5).unwrap()),
        false,
    );
    check_schedule(
        "cosine",
        &|| sgd(&[0.1, 0.05]),
        &|o| Box::new(CosineAnnealingLR::new(o, 10, 0.001).unwrap()),
        false,
    );
    check_schedule(
        "linear",
        &|| sgd(&[0.1]),
        &|o| Box::new(LinearLR::new(o, 0.1, 1.0, 5).unwrap()),
        false,
    );
    check_schedule(
        "linear_down",
        &|| sgd(&[0.1]),
        &|o| Box::new(LinearLR::new(o, 1.0, 0.2, 12).unwrap()),
        false,
    );
    check_schedule(
        "one_cycle",
        &|| adam(&[0.1, 0.01]),
        &|o| Box::new(OneCycleLR::new(o, 0.1, 30, OneCycleOptions::default()).unwrap()),
        true,
    );
    let three = OneCycleOptions {
        anneal: Anneal::Linear,
        three_phase: true,
        pct_start: 0.25,
        ..OneCycleOptions::default()
    };
    let (mut o, mut s) = check_schedule(
        "one_cycle_linear_three_phase",
        &|| sgd(&[0.1]),
        &|o| Box::new(OneCycleLR::new(o, 0.5, 30, three.clone()).unwrap()),
        true,
    );
    let err = s.step(o.as_mut()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Tried to step 31 times. The specified number of total steps is 30"
    );
    check_schedule(
        "warmup_cosine",
        &|| sgd(&[0.1, 0.02]),
        &|o| {
            let warmup = LinearLR::new(o, 0.1, 1.0, 5).unwrap();
            let cosine = CosineAnnealingLR::new(o, 25, 0.0).unwrap();
            Box::new(
                SequentialLR::new(o, vec![Box::new(warmup), Box::new(cosine)], vec![5]).unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "warmup_step",
        &|| sgd(&[0.2]),
        &|o| {
            let warmup = LinearLR::new(o, 0.25, 1.0, 4).unwrap();
            let step = StepLR::new(o, 3, 0.7).unwrap();
            Box::new(SequentialLR::new(o, vec![Box::new(warmup), Box::new(step)], vec![6]).unwrap())
        },
        false,
    );
}

#[test]
fn optim_new_schedulers_give_pytorchs_learning_rates_and_state_dicts() {
    check_schedule(
        "multi_step",
        &|| sgd(&[0.1, 0.03]),
        &|o| Box::new(MultiStepLR::new(o, &[3, 7, 7, 15], 0.5).unwrap()),
        false,
    );
    check_schedule(
        "multi_step_unsorted",
        &|| sgd(&[0.2]),
        &|o| Box::new(MultiStepLR::new(o, &[20, 4], 0.1).unwrap()),
        false,
    );
    check_schedule(
        "exponential",
        &|| sgd(&[0.1, 0.05]),
        &|o| Box::new(ExponentialLR::new(o, 0.9).unwrap()),
        false,
    );
    check_schedule(
        "lambda_one",
        &|| sgd(&[0.1, 0.02]),
        &|o| {
            Box::new(
                LambdaLR::new(o, |e| 0.95f64.powf(e as f64) * (1 + e.rem_euclid(3)) as f64)
                    .unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "lambda_per_group",
        &|| sgd(&[0.1, 0.3]),
        &|o| {
            Box::new(
                LambdaLR::with_lambdas(
                    o,
                    vec![
                        Box::new(|e| 1.0 / (e + 1) as f64),
                        Box::new(|e| f64::min(1.0, (e + 1) as f64 / 5.0)),
                    ],
                )
                .unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "lambda_warmup_cosine",
        &|| adam(&[0.1]),
        &|o| {
            Box::new(
                LambdaLR::new(o, |e| {
                    if e < 10 {
                        (e + 1) as f64 / 10.0
                    } else {
                        0.5 * (1.0 + (std::f64::consts::PI * (e - 10) as f64 / 20.0).cos())
                    }
                })
                .unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "chained",
        &|| sgd(&[0.1, 0.02]),
        &|o| {
            let warmup = LinearLR::new(o, 0.2, 1.0, 5).unwrap();
            let decay = ExponentialLR::new(o, 0.95).unwrap();
            Box::new(ChainedScheduler::new(o, vec![Box::new(warmup), Box::new(decay)]).unwrap())
        },
        false,
    );
    check_schedule(
        "chained_cosine_multi_step",
        &|| sgd(&[0.1]),
        &|o| {
            let cosine = CosineAnnealingLR::new(o, 10, 0.001).unwrap();
            let steps = MultiStepLR::new(o, &[8, 16], 0.5).unwrap();
            Box::new(ChainedScheduler::new(o, vec![Box::new(cosine), Box::new(steps)]).unwrap())
        },
        false,
    );
    check_schedule(
        "warmup_cosine_eta_min",
        &|| adam(&[0.1, 0.05]),
        &|o| {
            let warmup = LinearLR::new(o, 0.01, 1.0, 8).unwrap();
            let cosine = CosineAnnealingLR::new(o, 22, 1e-4).unwrap();
            Box::new(
                SequentialLR::new(o, vec![Box::new(warmup), Box::new(cosine)], vec![8]).unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "warmup_exponential",
        &|| sgd(&[0.1]),
        &|o| {
            let warmup = LinearLR::new(o, 0.5, 1.0, 5).unwrap();
            let decay = ExponentialLR::new(o, 0.9).unwrap();
            Box::new(
                SequentialLR::new(o, vec![Box::new(warmup), Box::new(decay)], vec![5]).unwrap(),
            )
        },
        false,
    );
    check_schedule(
        "warmup_multi_step_three",
        &|| sgd(&[0.1, 0.01]),
        &|o| {
            let warmup = LinearLR::new(o, 0.25, 1.0, 3).unwrap();
            let decay = ExponentialLR::new(o, 0.8).unwrap();
            let steps = MultiStepLR::new(o, &[5, 10], 0.3).unwrap();
            let list: Vec<Box<dyn LrScheduler>> =
                vec![Box::new(warmup), Box::new(decay), Box::new(steps)];
            Box::new(SequentialLR::new(o, list, vec![3, 9]).unwrap())
        },
        false,
    );
}

// ----- ReduceLROnPlateau ------------------------------------------------------------------------

fn plateau_options(o: &Map<String, Value>) -> (ReduceLROnPlateauOptions, Option<Vec<f64>>) {
    let mut out = ReduceLROnPlateauOptions::default();
    let mut min_lrs = None;
    for (k, v) in o {
        match k.as_str() {
            "mode" => {
                out.mode = match v.as_str().unwrap() {
                    "min" => PlateauMode::Min,
                    _ => PlateauMode::Max,
                }
            }
            "threshold_mode" => {
                out.threshold_mode = match v.as_str().unwrap() {
                    "rel" => ThresholdMode::Rel,
                    _ => ThresholdMode::Abs,
                }
            }
            "factor" => out.factor = v.as_f64().unwrap(),
            "patience" => out.patience = v.as_u64().unwrap(),
            "cooldown" => out.cooldown = v.as_u64().unwrap(),
            "threshold" => out.threshold = v.as_f64().unwrap(),
            "eps" => out.eps = v.as_f64().unwrap(),
            "min_lr" if v.is_array() => min_lrs = Some(f64s(v)),
            "min_lr" => out.min_lr = v.as_f64().unwrap(),
            other => panic!("unknown option {other}"),
        }
    }
    (out, min_lrs)
}

fn plateau(opt: &mut dyn Optimizer, config: &Value) -> ReduceLROnPlateau {
    let (options, min_lrs) = plateau_options(config["options"].as_object().unwrap());
    match min_lrs {
        Some(m) => ReduceLROnPlateau::with_min_lrs(opt, &m, options).unwrap(),
        None => ReduceLROnPlateau::new(opt, options).unwrap(),
    }
}

/// Each recorded configuration (mode min and max, thresholds relative and absolute, patience,
/// cooldown, one `min_lr` and one per group, an `eps` that stops the cuts) on the recorded
/// metric: the learning rates and counters after each of 60 steps, the state dict after 24,
/// and resuming there from PyTorch's state.
#[test]
fn optim_reduce_lr_on_plateau_follows_pytorch() {
    let rec = json("optim_plateau.json");
    let metrics = f64s(&rec["metrics"]);
    let state_at = rec["state_at"].as_u64().unwrap() as usize;
    let mut cuts = 0;
    for (name, config) in rec["configs"].as_object().unwrap() {
        let max = config["options"]["mode"] == "max";
        let seq: Vec<f64> = metrics
            .iter()
            .map(|m| if max { 2.0 - m } else { *m })
            .collect();
        let groups = f64s(&config["groups_lr"]);
        let run =
            |opt: &mut dyn Optimizer, sched: &mut ReduceLROnPlateau, from: usize, whose: &str| {
                let mut opt_state = None;
                for (t, &m) in seq.iter().enumerate().skip(from) {
                    sched.step(m, opt).unwrap();
                    let what = format!("{name} {whose} step {t}");
                    close_all(sched.get_last_lr(), &f64s(&config["lrs"][t]), &what);
                    assert_eq!(opt.lrs(), sched.get_last_lr());
                    let counters = [
                        sched.num_bad_epochs(),
                        sched.state_dict()["cooldown_counter"].as_i64().unwrap(),
                    ];
                    let want = config["counters"][t].as_array().unwrap();
                    assert_eq!(
                        counters.map(Value::from).to_vec(),
                        *want,
                        "{what}: counters"
                    );
                    if t + 1 == state_at {
                        same_state(&Value::Object(sched.state_dict()), &config["state"], &what);
                        opt_state = Some(opt.state_dict().unwrap());
                    }
                }
                opt_state
            };
        let mut opt = sgd(&groups);
        let mut sched = plateau(opt.as_mut(), config);
        let opt_state = run(opt.as_mut(), &mut sched, 0, "").unwrap();
        let first = f64s(&config["lrs"][0]);
        let last = f64s(&config["lrs"][seq.len() - 1]);
        cuts += usize::from(last[0] < first[0]);

        let mut opt2 = sgd(&groups);
        let mut sched2 = plateau(opt2.as_mut(), config);
        opt2.load_state_dict(&opt_state).unwrap();
        sched2
            .load_state_dict(config["state"].as_object().unwrap())
            .unwrap();
        run(
            opt2.as_mut(),
            &mut sched2,
            state_at,
            "resumed from PyTorch's state",
        );
    }
    // The recording exercises cuts (and one configuration whose eps stops them).
    assert!(cuts >= 4, "{cuts}");
}

#[test]
fn optim_scheduler_errors_use_pytorchs_words() {
    let msg = |e: Error| e.to_string();
    let mut o = sgd(&[0.1]);
    let e = LinearLR::new(o.as_mut(), 0.0, 1.0, 5).unwrap_err();
    assert_eq!(
        msg(e),
        "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
    );
    let mut a = Adagrad::new(vec![leaf()], AdagradOptions::default()).unwrap();
    let e = OneCycleLR::new(&mut a, 0.1, 10, OneCycleOptions::default()).unwrap_err();
    assert_eq!(
        msg(e),
        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    );
    let e = SequentialLR::new(o.as_mut(), vec![], vec![]).unwrap_err();
    assert_eq!(
        msg(e),
        "SequentialLR expects at least one scheduler, but got no scheduler."
    );
    let e = ChainedScheduler::new(o.as_mut(), vec![]).unwrap_err();
    assert_eq!(
        msg(e),
        "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."
    );
    let factor = ReduceLROnPlateauOptions {
        factor: 1.0,
        ..Default::default()
    };
    let e = ReduceLROnPlateau::new(o.as_mut(), factor).unwrap_err();
    assert_eq!(msg(e), "Factor should be < 1.0.");
    let mut two = sgd(&[0.1, 0.2]);
    let e = ReduceLROnPlateau::with_min_lrs(two.as_mut(), &[0.0], Default::default()).unwrap_err();
    assert_eq!(msg(e), "expected 2 min_lrs, got 1");
    let e = LambdaLR::with_lambdas(two.as_mut(), vec![Box::new(|_| 1.0)]).unwrap_err();
    assert_eq!(msg(e), "Expected 2 lr_lambdas, but got 1");
}

/// A state that does not fit is refused with a clear error and changes nothing.
#[test]
fn optim_bad_scheduler_states_give_clear_errors_and_change_nothing() {
    let mut o = sgd(&[0.1, 0.2]);
    let mut s = StepLR::new(o.as_mut(), 2, 0.5).unwrap();
    s.step(o.as_mut()).unwrap();
    let good = s.state_dict();
    let err = |s: &mut dyn LrScheduler, state: &Map<String, Value>| match s.load_state_dict(state) {
        Err(Error::StateDict { module, message }) => format!("{module}: {message}"),
        other => panic!("expected Error::StateDict, got {other:?}"),
    };
    let mut bad = good.clone();
    bad.insert("last_epoch".into(), Value::from(7));
    bad.insert("gamma".into(), Value::from("half"));
    assert_eq!(
        err(&mut s, &bad),
        "StepLR: \"gamma\" is not a number: \"half\""
    );
    let mut bad = good.clone();
    bad.insert("base_lrs".into(), Value::from(vec![0.1]));
    assert_eq!(
        err(&mut s, &bad),
        "StepLR: \"base_lrs\" has 1 values, the scheduler has 2 parameter groups"
    );
    let mut bad = good.clone();
    bad.insert("T_max".into(), Value::from(3));
    assert_eq!(
        err(&mut s, &bad),
        "StepLR: Unexpected key(s) in state_dict: \"T_max\"."
    );
    assert_eq!(Value::Object(s.state_dict()), Value::Object(good.clone()));

    // In a SequentialLR, a bad nested state leaves the schedulers loaded before it as they were.
    let warmup = LinearLR::new(o.as_mut(), 0.5, 1.0, 2).unwrap();
    let decay = ExponentialLR::new(o.as_mut(), 0.9).unwrap();
    let mut seq =
        SequentialLR::new(o.as_mut(), vec![Box::new(warmup), Box::new(decay)], vec![2]).unwrap();
    seq.step(o.as_mut()).unwrap();
    let before = seq.state_dict();
    let mut bad = before.clone();
    let nested = bad["_schedulers"].as_array_mut().unwrap();
    nested[0]["last_epoch"] = Value::from(40);
    nested[1]["gamma"] = Value::Null;
    assert_eq!(
        err(&mut seq, &bad),
        "ExponentialLR: \"gamma\" is not a number: null"
    );
    assert_eq!(Value::Object(seq.state_dict()), Value::Object(before));

    let mut p = ReduceLROnPlateau::new(o.as_mut(), Default::default()).unwrap();
    let mut bad = p.state_dict();
    bad.insert("mode".into(), Value::from("up"));
    match p.load_state_dict(&bad) {
        Err(Error::StateDict { message, .. }) => assert_eq!(message, "mode up is unknown!"),
        other => panic!("{other:?}"),
    }
    let mut lambda = LambdaLR::new(o.as_mut(), |_| 1.0).unwrap();
    let mut bad = lambda.state_dict();
    assert_eq!(
        bad["lr_lambdas"],
        Value::from(vec![Value::Null, Value::Null])
    );
    bad.insert("lr_lambdas".into(), serde_json::json!([{"k": 1}, null]));
    assert!(
        err(&mut lambda, &bad).starts_with("LambdaLR: \"lr_lambdas\" must be a list of 2 nulls")
    );
}

// ----- checkpoints through python/autograd_convert.py --------------------------------------------

/// What the recording's checkpoint run builds: SGD (momentum 0.9) on two groups, and a LinearLR
/// warm-up then cosine annealing.
fn ckpt_setup(values: &Value) -> (Vec<Tensor>, Box<dyn Optimizer>, Box<dyn LrScheduler>) {
    let ps: Vec<Tensor> = values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let x: Vec<f32> = f64s(v).into_iter().map(|x| x as f32).collect();
            let n = x.len();
            Tensor::from_vec(x, &[n])
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect();
    let o = SgdOptions::default().momentum(0.9);
    let mut opt: Box<dyn Optimizer> = Box::new(
        Sgd::with_groups(vec![
            ParamGroup::new(vec![ps[0].clone()], o.clone().lr(0.1)),
            ParamGroup::new(vec![ps[1].clone()], o.lr(0.02)),
        ])
        .unwrap(),
    );
    let warmup = LinearLR::new(opt.as_mut(), 0.1, 1.0, 5).unwrap();
    let cosine = CosineAnnealingLR::new(opt.as_mut(), 25, 0.0).unwrap();
    let sched = SequentialLR::new(
        opt.as_mut(),
        vec![Box::new(warmup), Box::new(cosine)],
        vec![5],
    )
    .unwrap();
    (ps, opt, Box::new(sched))
}

/// Steps `start..stop` with the recording's gradient `p + 0.1 t`; checks each step's learning
/// rates (1e-12) and parameters (f32, 1e-6) against `want`'s, indexed from `start`.
fn ckpt_steps(
    ps: &[Tensor],
    opt: &mut dyn Optimizer,
    sched: &mut dyn LrScheduler,
    start: usize,
    stop: usize,
    want: Option<&Value>,
) {
    for t in start..stop {
        for p in ps {
            let g = p
                .detach()
                .add_scalar((0.1 * t as f64) as f32 as f64)
                .unwrap();
            p.set_grad(Some(g)).unwrap();
        }
        opt.step().unwrap();
        sched.step(opt).unwrap();
        if let Some(want) = want {
            let i = t - start;
            close_all(
                sched.get_last_lr(),
                &f64s(&want["lrs"][i]),
                &format!("lrs at step {t}"),
            );
            let ours: Vec<f64> = ps
                .iter()
                .flat_map(|p| p.to_vec::<f32>().unwrap())
                .map(f64::from)
                .collect();
            for (a, b) in ours.iter().zip(f64s(&want["params"][i])) {
                assert!(
                    (a - b).abs() <= 1e-7 + 1e-6 * b.abs(),
                    "params at step {t}: {a} vs {b}"
                );
            }
        }
    }
}

/// PyTorch's SGD + SequentialLR state after 12 steps, written by `save_checkpoint`, loads here
/// (the optimizer from the tensors and `param_groups`, the scheduler from the `lr_scheduler`
/// metadata) and continues PyTorch's run: the same learning rates and parameters to step 30.
#[test]
fn optim_torch_to_ours_converted_sgd_and_sequential_lr_checkpoint_continues_pytorchs_run() {
    let rec = json("optim_sched_torch_continuation.json");
    let file = StateDict::load(data("optim_sched_torch.safetensors")).unwrap();
    let (ps, mut opt, mut sched) = ckpt_setup(&rec["params_at_12"]);
    opt.load_state_dict(&file).unwrap();
    let state: Map<String, Value> =
        serde_json::from_str(file.metadata("lr_scheduler").unwrap()).unwrap();
    sched.load_state_dict(&state).unwrap();
    assert_eq!(sched.last_epoch(), 12);
    ckpt_steps(&ps, opt.as_mut(), sched.as_mut(), 12, 30, Some(&rec));
}

/// Our SGD + SequentialLR checkpoint after 12 steps (the optimizer's state dict with the
/// scheduler's state as `lr_scheduler` metadata) is the committed file; PyTorch loaded that
/// file with `load_checkpoint` and continued; we continue from a reloaded copy to the same
/// learning rates and parameters. `AUTOGRAD_WRITE_OPTIM_CKPT=1` rewrites the committed files
/// (then `record_optim.py --ours`).
#[test]
fn optim_ours_converted_to_torch_sgd_and_sequential_lr_checkpoint_continues_as_here() {
    let rec = json("optim_sched_torch_continuation.json");
    let (ps, mut opt, mut sched) = ckpt_setup(&rec["init"]);
    ckpt_steps(&ps, opt.as_mut(), sched.as_mut(), 0, 12, None);
    let mut ckpt = opt.state_dict().unwrap();
    ckpt.set_metadata(
        "lr_scheduler",
        Value::Object(sched.state_dict()).to_string(),
    );
    let params: Vec<Vec<f32>> = ps.iter().map(|p| p.to_vec::<f32>().unwrap()).collect();
    if std::env::var_os("AUTOGRAD_WRITE_OPTIM_CKPT").is_some() {
        ckpt.save(data("optim_sched_ours.safetensors")).unwrap();
        let text = serde_json::json!({ "params": params }).to_string();
        std::fs::write(data("optim_sched_ours_params.json"), text).unwrap();
    }
    // The committed files are what this code writes.
    let committed = StateDict::load(data("optim_sched_ours.safetensors")).unwrap();
    let mut keys: Vec<&str> = committed.keys().collect();
    keys.sort_unstable();
    let mut ours_keys: Vec<&str> = ckpt.keys().collect();
    ours_keys.sort_unstable();
    assert_eq!(keys, ours_keys);
    for (k, t) in ckpt.iter() {
        let c = committed.get(k).unwrap().to_vec::<f32>().unwrap();
        let t = t.to_vec::<f32>().unwrap();
        for (a, b) in t.iter().zip(&c) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{k}: {a} vs {b}");
        }
    }
    for key in ["param_groups", "lr_scheduler"] {
        let a: Value = serde_json::from_str(ckpt.metadata(key).unwrap()).unwrap();
        let b: Value = serde_json::from_str(committed.metadata(key).unwrap()).unwrap();
        if key == "lr_scheduler" {
            same_state(&a, &b, key);
        } else {
            assert_eq!(a.as_array().unwrap().len(), b.as_array().unwrap().len());
        }
    }
    let saved = json("optim_sched_ours_params.json");
    let saved: Vec<f64> = saved["params"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(f64s)
        .collect();
    let flat: Vec<f64> = params.iter().flatten().map(|&x| f64::from(x)).collect();
    for (a, b) in flat.iter().zip(&saved) {
        assert!((a - b).abs() <= 1e-7 + 1e-6 * b.abs());
    }

    // PyTorch continued from that file; so does a fresh optimizer and scheduler loaded from it.
    let cont = json("optim_sched_ours_continuation.json");
    let bytes = ckpt.to_bytes().unwrap();
    let file = StateDict::from_bytes(&bytes).unwrap();
    let values = Value::from(
        params
            .iter()
            .map(|p| Value::from(p.clone()))
            .collect::<Vec<_>>(),
    );
    let (ps2, mut opt2, mut sched2) = ckpt_setup(&values);
    opt2.load_state_dict(&file).unwrap();
    let state: Map<String, Value> =
        serde_json::from_str(file.metadata("lr_scheduler").unwrap()).unwrap();
    sched2.load_state_dict(&state).unwrap();
    ckpt_steps(&ps2, opt2.as_mut(), sched2.as_mut(), 12, 30, Some(&cont));
    // ... and the run that never stopped agrees.
    ckpt_steps(&ps, opt.as_mut(), sched.as_mut(), 12, 30, Some(&cont));
}
