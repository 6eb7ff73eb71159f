//! `#[derive(Module)]` and the `nn.Module` surface against PyTorch 2.15. The same structure in
//! PyTorch (its output pasted below each assertion):
//!
//! ```python
//! class Block(nn.Module):
//!     def __init__(self, head):
//!         super().__init__()
//!         self.scale = nn.Parameter(torch.ones(3))
//!         self.register_parameter('shift', None)
//!         self.register_buffer('running_mean', torch.zeros(3))
//!         self.register_buffer('num_batches_tracked', torch.tensor(0, dtype=torch.long))
//!         self.register_buffer('cache', torch.zeros(2), persistent=False)
//!         self.fc = nn.Linear(3, 4)
//!         self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 2)])
//!         self.drop = nn.Dropout(0.1)
//!         self.head = nn.Linear(2, 1) if head else None
//!         self.hidden = 4
//!
//! class Net(nn.Module):
//!     def __init__(self):
//!         super().__init__()
//!         self.blocks = nn.ModuleList([Block(True), Block(False)])
//!         self.out = nn.Linear(1, 1)
//! ```

use autograd::nn::{Dropout, Forward, IncompatibleKeys, Linear, Module, Sequential};
use autograd::{DType, Error, Result, StateDict, Tensor};

#[derive(Debug, Module)]
struct Block {
    scale: Tensor,
    shift: Option<Tensor>,
    #[buffer]
    running_mean: Tensor,
    #[buffer]
    num_batches_tracked: Tensor,
    #[buffer(persistent = false)]
    cache: Tensor,
    fc: Linear,
    layers: Vec<Linear>,
    drop: Dropout,
    head: Option<Linear>,
    #[module(skip)]
    hidden: usize,
    #[module(training)]
    training: bool,
}

impl Block {
    fn new(head: bool) -> Result<Block> {
        Ok(Block {
            scale: Tensor::ones(&[3], DType::F32)?.requires_grad_(true)?,
            shift: None,
            running_mean: Tensor::zeros(&[3], DType::F32)?,
            num_batches_tracked: Tensor::zeros(&[], DType::I64)?,
            cache: Tensor::zeros(&[2], DType::F32)?,
            fc: Linear::new(3, 4)?,
            layers: vec![Linear::new(4, 4)?, Linear::new(4, 4)?, Linear::new(4, 2)?],
            drop: Dropout::new(0.1)?,
            head: if head { Some(Linear::new(2, 1)?) } else { None },
            hidden: 4,
            training: true,
        })
    }
}

impl Forward for Block {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = self.fc.forward(&x.mul(&self.scale)?)?;
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        h = self.drop.forward(&h)?;
        match &self.head {
            Some(head) => head.forward(&h),
            None => h.sum_dims(&[1], true),
        }
    }
}

#[derive(Debug, Module)]
struct Net {
    blocks: Vec<Block>,
    out: Linear,
}

fn net() -> Net {
    let _rng = crate::common::global_rng(0);
    Net {
        blocks: vec![Block::new(true).unwrap(), Block::new(false).unwrap()],
        out: Linear::new(1, 1).unwrap(),
    }
}

fn names(list: Vec<(String, Tensor)>) -> Vec<String> {
    list.into_iter().map(|(n, _)| n).collect()
}

#[test]
fn names_and_orders_are_pytorchs() {
    let net = net();
    let keys: Vec<String> = net.state_dict().keys().map(String::from).collect();
    assert_eq!(
        keys,
        [
            "blocks.0.scale",
            "blocks.0.running_mean",
            "blocks.0.num_batches_tracked",
            "blocks.0.fc.weight",
            "blocks.0.fc.bias",
            "blocks.0.layers.0.weight",
            "blocks.0.layers.0.bias",
            "blocks.0.layers.1.weight",
            "blocks.0.layers.1.bias",
            "blocks.0.layers.2.weight",
            "blocks.0.layers.2.bias",
            "blocks.0.head.weight",
            "blocks.0.head.bias",
            "blocks.1.scale",
            "blocks.1.running_mean",
            "blocks.1.num_batches_tracked",
            "blocks.1.fc.weight",
            "blocks.1.fc.bias",
            "blocks.1.layers.0.weight",
            "blocks.1.layers.0.bias",
            "blocks.1.layers.1.weight",
            "blocks.1.layers.1.bias",
            "blocks.1.layers.2.weight",
            "blocks.1.layers.2.bias",
            "out.weight",
            "out.bias",
        ]
    );
    assert_eq!(
        names(net.named_parameters()),
        [
            "blocks.0.scale",
            "blocks.0.fc.weight",
            "blocks.0.fc.bias",
            "blocks.0.layers.0.weight",
            "blocks.0.layers.0.bias",
            "blocks.0.layers.1.weight",
            "blocks.0.layers.1.bias",
            "blocks.0.layers.2.weight",
            "blocks.0.layers.2.bias",
            "blocks.0.head.weight",
            "blocks.0.head.bias",
            "blocks.1.scale",
            "blocks.1.fc.weight",
            "blocks.1.fc.bias",
            "blocks.1.layers.0.weight",
            "blocks.1.layers.0.bias",
            "blocks.1.layers.1.weight",
            "blocks.1.layers.1.bias",
            "blocks.1.layers.2.weight",
            "blocks.1.layers.2.bias",
            "out.weight",
            "out.bias",
        ]
    );
    assert_eq!(
        names(net.named_buffers()),
        [
            "blocks.0.running_mean",
            "blocks.0.num_batches_tracked",
            "blocks.0.cache",
            "blocks.1.running_mean",
            "blocks.1.num_batches_tracked",
            "blocks.1.cache",
        ]
    );
    assert_eq!(
        net.non_persistent_buffers(),
        ["blocks.0.cache", "blocks.1.cache"]
    );
    let modules: Vec<String> = net.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        modules,
        [
            "",
            "blocks",
            "blocks.0",
            "blocks.0.fc",
            "blocks.0.layers",
            "blocks.0.layers.0",
            "blocks.0.layers.1",
            "blocks.0.layers.2",
            "blocks.0.drop",
            "blocks.0.head",
            "blocks.1",
            "blocks.1.fc",
            "blocks.1.layers",
            "blocks.1.layers.0",
            "blocks.1.layers.1",
            "blocks.1.layers.2",
            "blocks.1.drop",
            "out",
        ]
    );
    let children: Vec<String> = net.named_children().into_iter().map(|(n, _)| n).collect();
    assert_eq!(children, ["blocks", "out"]);
    assert_eq!(net.modules().len(), 18);
    assert_eq!(net.parameters().len(), 22);
    assert_eq!(net.buffers().len(), 6);
    assert_eq!(net.blocks[0].hidden, 4);
}

#[test]
fn repr_is_pytorchs() {
    let want = "Net(\n  (blocks): ModuleList(\n    (0): Block(\n      (fc): Linear(in_features=3, \
                out_features=4, bias=True)\n      (layers): ModuleList(\n        (0-1): 2 x \
                Linear(in_features=4, out_features=4, bias=True)\n        (2): \
                Linear(in_features=4, out_features=2, bias=True)\n      )\n      (drop): \
                Dropout(p=0.1, inplace=False)\n      (head): Linear(in_features=2, \
                out_features=1, bias=True)\n    )\n    (1): Block(\n      (fc): \
                Linear(in_features=3, out_features=4, bias=True)\n      (layers): ModuleList(\n  \
                \x20     (0-1): 2 x Linear(in_features=4, out_features=4, bias=True)\n        \
                (2): Linear(in_features=4, out_features=2, bias=True)\n      )\n      (drop): \
                Dropout(p=0.1, inplace=False)\n    )\n  )\n  (out): Linear(in_features=1, \
                out_features=1, bias=True)\n)";
    assert_eq!(net().to_string(), want);

    /// `class E(nn.Module): pass; repr(E())` is `E()`.
    #[derive(Debug, Module)]
    struct E;
    assert_eq!(E.to_string(), "E()");

    /// `name` and `extra_repr`: a layer of one's own prints as a built-in one.
    #[derive(Debug, Module)]
    #[module(name = "Scale", extra_repr = Scaled::extra)]
    struct Scaled {
        factor: Tensor,
        #[module(skip)]
        size: usize,
    }
    impl Scaled {
        fn extra(&self) -> String {
            format!("size={}", self.size)
        }
    }
    let s = Scaled {
        factor: Tensor::ones(&[2], DType::F32).unwrap(),
        size: 2,
    };
    assert_eq!(s.to_string(), "Scale(size=2)");
}

#[test]
fn apply_visits_children_first_then_self() -> Result<()> {
    let mut net = net();
    let mut order = Vec::new();
    net.apply(&mut |m| {
        let repr = m.repr();
        order.push(repr.split('(').next().unwrap_or_default().to_string());
        Ok(())
    })?;
    assert_eq!(
        order,
        [
            "Linear",
            "Linear",
            "Linear",
            "Linear",
            "ModuleList",
            "Dropout",
            "Linear",
            "Block",
            "Linear",
            "Linear",
            "Linear",
            "Linear",
            "ModuleList",
            "Dropout",
            "Block",
            "ModuleList",
            "Linear",
            "Net",
        ]
    );
    // An error stops the walk and reaches the caller.
    let mut seen = 0;
    let err = net
        .apply(&mut |_| {
            seen += 1;
            if seen == 3 {
                return Err(Error::msg("stop"));
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "stop");
    assert_eq!(seen, 3);
    Ok(())
}

#[test]
fn train_and_eval_reach_every_child() -> Result<()> {
    let mut net = net();
    let x = Tensor::ones(&[2, 3], DType::F32)?;
    net.eval();
    // `Net` and the `ModuleList` keep no flag of their own: they answer their first child's.
    assert!(!net.is_training());
    assert!(!net.blocks.is_training());
    for block in &net.blocks {
        assert!(!block.training && !block.drop.is_training());
    }
    // Evaluation: dropout passes through, so two calls agree.
    let a = net.blocks[0].forward(&x)?.to_vec::<f32>()?;
    let b = net.blocks[0].forward(&x)?.to_vec::<f32>()?;
    assert_eq!(a, b);
    net.train();
    assert!(net.named_modules().iter().all(|(_, m)| m.is_training()));
    assert!(net.blocks[1].training && net.blocks[1].drop.is_training());
    Ok(())
}

#[test]
fn to_dtype_converts_floats_and_keeps_integer_buffers() -> Result<()> {
    let mut net = net();
    net.to_dtype(DType::F64)?;
    let block = &net.blocks[0];
    // PyTorch: num_batches_tracked torch.int64, running_mean torch.float64, scale torch.float64.
    assert_eq!(block.num_batches_tracked.dtype(), DType::I64);
    assert_eq!(block.running_mean.dtype(), DType::F64);
    assert_eq!(block.cache.dtype(), DType::F64);
    assert!(
        net.parameters()
            .iter()
            .all(|p| p.dtype() == DType::F64 && p.is_leaf())
    );
    assert!(net.parameters().iter().all(Tensor::requires_grad));
    assert!(!block.running_mean.requires_grad());
    let err = net.to_dtype(DType::I64).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nn.Module.to only accepts floating point or complex dtypes, but got desired \
         dtype=torch.int64"
    );
    Ok(())
}

/// The dictionary of the PyTorch script: two keys dropped, four added.
fn edited_dict(net: &Net) -> StateDict {
    let mut dict = StateDict::new();
    for (key, t) in net.state_dict().iter() {
        if key != "blocks.0.running_mean" && key != "out.bias" {
            dict.insert(key, t.copy().unwrap().add_scalar(1.0).unwrap());
        }
    }
    for key in [
        "blocks.0.extra",
        "blocks.5.fc.weight",
        "zzz",
        "blocks.1.head.weight",
    ] {
        dict.insert(key, Tensor::zeros(&[1], DType::F32).unwrap());
    }
    dict
}

#[test]
fn load_state_dict_with_returns_pytorchs_missing_and_unexpected_keys() -> Result<()> {
    let mut net = net();
    let dict = edited_dict(&net);
    let before_mean = net.blocks[0].running_mean.to_vec::<f32>()?;
    let keys = net.load_state_dict_with(&dict, false)?;
    assert_eq!(
        keys,
        IncompatibleKeys {
            missing_keys: vec!["blocks.0.running_mean".into(), "out.bias".into()],
            unexpected_keys: vec![
                "zzz".into(),
                "blocks.5.fc.weight".into(),
                "blocks.0.extra".into(),
                "blocks.1.head.weight".into(),
            ],
        }
    );
    assert_eq!(
        keys.to_string(),
        "_IncompatibleKeys(missing_keys=['blocks.0.running_mean', 'out.bias'], \
         unexpected_keys=['zzz', 'blocks.5.fc.weight', 'blocks.0.extra', \
         'blocks.1.head.weight'])"
    );
    // What matched was copied (the buffers too), in place; the rest is as it was.
    assert_eq!(net.blocks[0].scale.to_vec::<f32>()?, [2.0, 2.0, 2.0]);
    assert_eq!(net.blocks[1].num_batches_tracked.to_vec::<i64>()?, [1]);
    assert_eq!(net.blocks[0].running_mean.to_vec::<f32>()?, before_mean);
    assert!(net.blocks[0].scale.is_leaf() && net.blocks[0].scale.requires_grad());
    Ok(())
}

#[test]
fn strict_load_reports_buffers_too() {
    let mut net = net();
    let dict = edited_dict(&net);
    let scale = net.blocks[0].scale.to_vec::<f32>().unwrap();
    let err = net.load_state_dict(&dict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \
         \"blocks.0.running_mean\", \"out.bias\". \n\tUnexpected key(s) in state_dict: \"zzz\", \
         \"blocks.5.fc.weight\", \"blocks.0.extra\", \"blocks.1.head.weight\". "
    );
    // Nothing was copied.
    assert_eq!(net.blocks[0].scale.to_vec::<f32>().unwrap(), scale);

    // A shape mismatch is an error without `strict` too, naming the buffer.
    let mut dict = net.state_dict();
    dict.insert(
        "blocks.1.running_mean",
        Tensor::zeros(&[4], DType::F32).unwrap(),
    );
    let err = net.load_state_dict_with(&dict, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict for Net:\n\tsize mismatch for blocks.1.running_mean: \
         copying a param with shape torch.Size([4]) from checkpoint, the shape in current model \
         is torch.Size([3])."
    );
}

#[test]
fn a_round_trip_restores_parameters_and_buffers() -> Result<()> {
    let source = net();
    source.blocks[0]
        .num_batches_tracked
        .copy_(&Tensor::scalar(7i64))?;
    let mut target = net();
    target.load_state_dict(&source.state_dict())?;
    assert_eq!(target.blocks[0].num_batches_tracked.to_vec::<i64>()?, [7]);
    for ((n, a), (_, b)) in source
        .named_parameters()
        .iter()
        .zip(target.named_parameters())
    {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?, "{n}");
    }
    Ok(())
}

/// Generic children get a `Module` bound; `Box<dyn Forward>` and `Option` children work;
/// `transparent` is its field; tied weights are listed once but saved under both names.
#[test]
fn generics_boxes_transparent_and_tied_weights() -> Result<()> {
    #[derive(Debug, Module)]
    struct Wrap<M> {
        inner: M,
        extra: Option<Box<dyn Forward>>,
    }
    let _rng = crate::common::global_rng(0);
    let w = Wrap {
        inner: Linear::new(2, 2)?,
        extra: Some(Box::new(Sequential::new().add(Linear::new(2, 1)?))),
    };
    assert_eq!(
        names(w.named_parameters()),
        [
            "inner.weight",
            "inner.bias",
            "extra.0.weight",
            "extra.0.bias"
        ]
    );

    #[derive(Debug, Module)]
    #[module(transparent)]
    struct Model {
        net: Sequential,
        #[module(skip)]
        _label: &'static str,
    }
    let mut m = Model {
        net: Sequential::new()
            .add(Linear::new(2, 2)?)
            .add(Dropout::new(0.5)?),
        _label: "mlp",
    };
    assert_eq!(names(m.named_parameters()), ["0.weight", "0.bias"]);
    assert_eq!(m.to_string(), m.net.to_string());
    m.eval();
    assert!(!m.net[1].is_training());

    /// Weight tying (a language model's embedding and output layer share one matrix).
    #[derive(Debug, Module)]
    struct Tied {
        embed: Linear,
        head: Linear,
    }
    let weight = Tensor::ones(&[3, 2], DType::F32)?.requires_grad_(true)?;
    let mut tied = Tied {
        embed: Linear::from_parts(weight.clone(), None)?,
        head: Linear::from_parts(weight, None)?,
    };
    // PyTorch: named_parameters() drops the duplicate, state_dict() keeps both keys.
    assert_eq!(names(tied.named_parameters()), ["embed.weight"]);
    let keys: Vec<String> = tied.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, ["embed.weight", "head.weight"]);
    // Converting keeps the two one tensor.
    tied.to_dtype(DType::F64)?;
    assert!(tied.embed.weight().is_same(tied.head.weight()));
    assert_eq!(tied.head.weight().dtype(), DType::F64);
    Ok(())
}
