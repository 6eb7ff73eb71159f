//! Unit tests of the optimizers: the fused path against the op-by-op path in f64, state dicts
//! that round-trip, version counters, the locking adapter's refusals.

use super::lr_scheduler::{LrScheduler, StepLR};
use super::{
    Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, Optimizer, RmsProp, RmsPropOptions, Sgd,
    SgdOptions,
};
use crate::backend::{SgdCoeffs, Update};
use crate::tensor::kernels::{self, StepTensors};
use crate::{DType, StateDict, Tensor};

fn params(dtype: DType, seed: u64) -> Vec<Tensor> {
    [vec![40_000], vec![7, 5], vec![1]]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Tensor::randn_seeded(s, dtype, seed + i as u64)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

fn set_grads(params: &[Tensor], t: u64) {
    for (i, p) in params.iter().enumerate() {
        let g = Tensor::randn_seeded(p.shape(), p.dtype(), 1000 + 10 * t + i as u64).unwrap();
        p.set_grad(Some(g)).unwrap();
    }
}

type Make = fn(Vec<Tensor>, Option<bool>) -> Box<dyn Optimizer>;

fn makes() -> Vec<(&'static str, Make)> {
    vec![
        ("sgd", |p, f| {
            let o = SgdOptions::default()
                .lr(0.1)
                .momentum(0.9)
                .dampening(0.2)
                .weight_decay(0.1);
            Box::new(Sgd::new(p, o.fused(f)).unwrap())
        }),
        ("adam", |p, f| {
            let o = AdamOptions::default().lr(0.01).amsgrad(true).maximize(true);
            Box::new(Adam::new(p, o.fused(f)).unwrap())
        }),
        ("adamw", |p, f| {
            let o = AdamOptions::adamw().lr(0.01).betas(0.6, 0.9);
            Box::new(AdamW::new(p, o.fused(f)).unwrap())
        }),
        ("rmsprop", |p, f| {
            let o = RmsPropOptions::default()
                .centered(true)
                .momentum(0.9)
                .weight_decay(0.1);
            Box::new(RmsProp::new(p, o.fused(f)).unwrap())
        }),
        ("adagrad", |p, f| {
            let o = AdagradOptions::default()
                .initial_accumulator_value(0.5)
                .lr_decay(0.1);
            Box::new(Adagrad::new(p, o.fused(f)).unwrap())
        }),
    ]
}

fn values(params: &[Tensor]) -> Vec<f64> {
    params
        .iter()
        .flat_map(|p| p.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap())
        .collect()
}

#[test]
fn fused_and_op_by_op_agree_in_f64() {
    for (name, make) in makes() {
        let run = |fused| {
            let ps = params(DType::F64, 3);
            let mut opt = make(ps.clone(), Some(fused));
            for t in 0..4 {
                set_grads(&ps, t);
                opt.step().unwrap();
            }
            values(&ps)
        };
        let (a, b) = (run(true), run(false));
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-12 * y.abs().max(1.0),
                "{name}: {x} vs {y}"
            );
        }
    }
}

#[test]
fn state_dicts_round_trip_and_continue_identically() {
    for (name, make) in makes() {
        let ps = params(DType::F32, 5);
        let mut opt = make(ps.clone(), None);
        for t in 0..3 {
            set_grads(&ps, t);
            opt.step().unwrap();
        }
        let bytes = opt.state_dict().unwrap().to_bytes().unwrap();
        let copies: Vec<Tensor> = ps
            .iter()
            .map(|p| p.detach().copy().unwrap().requires_grad_(true).unwrap())
            .collect();
        let mut twin = make(copies.clone(), None);
        twin.load_state_dict(&StateDict::from_bytes(&bytes).unwrap())
            .unwrap();
        for t in 3..5 {
            set_grads(&ps, t);
            set_grads(&copies, t);
            opt.step().unwrap();
            twin.step().unwrap();
        }
        assert_eq!(values(&ps), values(&copies), "{name}");
    }
}

#[test]
fn a_fused_step_bumps_each_parameter_and_state_version_once() {
    let ps = params(DType::F32, 9);
    let mut opt = Adam::new(ps.clone(), AdamOptions::default()).unwrap();
    set_grads(&ps, 0);
    opt.step().unwrap();
    opt.step().unwrap();
    for p in &ps {
        assert_eq!(p.version(), 2);
        assert!(p.is_leaf() && p.requires_grad() && p.grad_fn().is_none());
    }
    let dict = opt.state_dict().unwrap();
    assert_eq!(dict.get("state.0.exp_avg").unwrap().version(), 2);
    assert_eq!(
        dict.get("state.0.step").unwrap().item::<f32>().unwrap(),
        2.0
    );
}

/// The door's checks before a fused step runs: written tensors in storages of their own,
/// contiguous, one dtype; reads may share a storage, and only the writes' versions move.
#[test]
fn the_fused_step_door_refuses_shared_or_strided_tensors() {
    let sgd = Update::Sgd(SgdCoeffs {
        lr: 0.5,
        momentum: 0.0,
        dampening: 0.0,
        weight_decay: 0.0,
        nesterov: false,
        maximize: false,
        first: true,
    });
    let set = |param, grad: &Tensor, state| StepTensors {
        param,
        grad: grad.clone(),
        state,
        update: sgd,
    };
    let step = |sets: &[StepTensors<'_>]| kernels::of_tensor(sets[0].param)?.fused_step(sets);
    let a = Tensor::zeros(&[4], DType::F32).unwrap();
    let ones = Tensor::ones(&[4], DType::F32).unwrap();
    let view = a.narrow(0, 0, 2).unwrap();
    let err = step(&[set(&a, &ones, vec![&view])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "fused optimizer step: a written tensor shares its storage"
    );
    assert!(step(&[set(&a, &a, vec![])]).is_err());
    let t = Tensor::zeros(&[2, 3], DType::F32)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let t_grad = Tensor::ones(&[3, 2], DType::F32).unwrap();
    assert!(step(&[set(&t, &t_grad, vec![])]).is_err());
    let b = Tensor::ones(&[4], DType::F64).unwrap();
    assert!(step(&[set(&a, &b, vec![])]).is_err());
    assert_eq!(a.version(), 0, "a refused step changes nothing");
    // Reads may share a storage; only the writes' versions move.
    let c = Tensor::zeros(&[4], DType::F32).unwrap();
    let ones_alias = ones.detach();
    step(&[set(&a, &ones, vec![]), set(&c, &ones_alias, vec![])]).unwrap();
    assert_eq!((a.version(), c.version(), ones.version()), (1, 1, 0));
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![-0.5; 4]);
}

#[test]
fn a_scheduler_records_initial_lr_in_param_groups() {
    let ps = params(DType::F32, 1);
    let mut opt = Sgd::new(ps, SgdOptions::default().lr(0.5)).unwrap();
    let mut s = StepLR::new(&mut opt, 1, 0.5).unwrap();
    s.step(&mut opt).unwrap();
    assert_eq!(opt.lrs(), vec![0.25]);
    let dict = opt.state_dict().unwrap();
    let groups: serde_json::Value =
        serde_json::from_str(dict.metadata("param_groups").unwrap()).unwrap();
    assert_eq!(groups[0]["initial_lr"], 0.5);
    assert_eq!(groups[0]["lr"], 0.25);
    assert_eq!(groups[0]["params"], serde_json::json!([0, 1, 2]));
}

#[test]
fn aliased_parameters_step_op_by_op() {
    // Two parameters over one storage (PyTorch steps each; so do we, without the fused pass).
    let base = Tensor::zeros(&[4], DType::F32).unwrap();
    let a = base.detach().requires_grad_(true).unwrap();
    let b = base.detach().requires_grad_(true).unwrap();
    a.set_grad(Some(Tensor::ones(&[4], DType::F32).unwrap()))
        .unwrap();
    b.set_grad(Some(Tensor::ones(&[4], DType::F32).unwrap()))
        .unwrap();
    let mut opt = Sgd::new(vec![a.clone(), b], SgdOptions::default().lr(0.5)).unwrap();
    opt.step().unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![-1.0; 4]);
}

#[test]
fn groups_take_the_fused_kernel_by_default_wherever_it_applies() {
    use super::base::{Path, choose};
    assert_eq!(choose(None, true), Path::Fused);
    assert_eq!(choose(None, false), Path::Ops);
    assert_eq!(choose(Some(true), true), Path::Fused);
    assert_eq!(choose(Some(true), false), Path::Refuse);
    assert_eq!(choose(Some(false), true), Path::Ops);
}
