//! `train()` / `eval()` reach every module and `is_training()` answers as PyTorch's
//! `m.training` does, on every module of a model that holds every built-in layer:
//! `training_modes.py` (beside this file) recorded `[m.training for _, m in
//! model.named_modules()]` for the same model after each step of the same sequence of calls
//! (`data/training_modes.json`).

use autograd::nn::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, Celu, Conv1d, Conv2d,
    ConvTranspose2d, Dropout, Elu, Embedding, Flatten, Forward, Gelu, GroupNorm, Gru, GruCell,
    Hardtanh, Identity, LayerNorm, LeakyRelu, Linear, LogSoftmax, Lstm, LstmCell, MaxPool2d, Mish,
    Module, MultiheadAttention, Relu, Relu6, RmsNorm, Rnn, RnnCell, Selu, Sequential, Sigmoid,
    Silu, Softmax, Softplus, Tanh, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer, Upsample,
};
use autograd::{Error, Result};
use serde_json::Value;

/// `training_modes.py`'s `Net`, field for field. Its own flag is PyTorch's attribute: a field
/// `training: bool`, which the derive takes as the module's mode without an attribute.
#[derive(Debug, Module)]
struct Net {
    features: Sequential,
    head: Sequential,
    acts: Vec<Box<dyn Forward>>,
    attn: MultiheadAttention,
    encoder: TransformerEncoder,
    decoder: TransformerDecoder,
    lstm: Lstm,
    gru: Gru,
    rnn: Rnn,
    lstm_cell: LstmCell,
    gru_cell: GruCell,
    rnn_cell: RnnCell,
    training: bool,
}

fn net() -> Result<Net> {
    let features = Sequential::new()
        .add(Conv2d::new(1, 2, 3)?)
        .add(BatchNorm2d::new(2)?)
        .add(Relu::new())
        .add(MaxPool2d::new(2))
        .add(AvgPool2d::new(1))
        .add(AdaptiveAvgPool2d::new(1))
        .add(Upsample::new(None, Some(2.0.into())))
        .add(ConvTranspose2d::new(2, 2, 1)?)
        .add(GroupNorm::new(1, 2)?)
        .add(Flatten::new());
    let head = Sequential::new()
        .add(Linear::new(2, 4)?)
        .add(BatchNorm1d::new(4)?)
        .add(Dropout::new(0.5)?)
        .add(LayerNorm::new(&[4])?)
        .add(RmsNorm::new(&[4])?)
        .add(Conv1d::new(4, 4, 1)?)
        .add(BatchNorm3d::new(4)?)
        .add(Embedding::new(5, 4)?)
        .add(Identity::new());
    let acts: Vec<Box<dyn Forward>> = vec![
        Box::new(Tanh::new()),
        Box::new(Sigmoid::new()),
        Box::new(Gelu::new()),
        Box::new(LeakyRelu::default()),
        Box::new(Softmax::new(-1)),
        Box::new(LogSoftmax::new(-1)),
        Box::new(Silu::new()),
        Box::new(Mish::new()),
        Box::new(Softplus::new()),
        Box::new(Hardtanh::new()),
        Box::new(Relu6::new()),
        Box::new(Elu::default()),
        Box::new(Selu::new()),
        Box::new(Celu::default()),
    ];
    Ok(Net {
        features,
        head,
        acts,
        attn: MultiheadAttention::new(4, 2)?,
        encoder: TransformerEncoder::new(TransformerEncoderLayer::new(4, 2)?, 1, None)?,
        decoder: TransformerDecoder::new(TransformerDecoderLayer::new(4, 2)?, 1, None)?,
        lstm: Lstm::new(2, 3)?,
        gru: Gru::new(2, 3)?,
        rnn: Rnn::new(2, 3)?,
        lstm_cell: LstmCell::new(2, 3)?,
        gru_cell: GruCell::new(2, 3)?,
        rnn_cell: RnnCell::new(2, 3)?,
        training: true,
    })
}

/// PyTorch's `model.get_submodule(path).train(training)`.
fn set_mode(module: &mut dyn Module, path: &str, training: bool) -> Result<()> {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let mut found = false;
    module.visit_children_mut(&mut |name, child| {
        if name == head {
            found = true;
            if rest.is_empty() {
                child.set_training(training);
            } else {
                set_mode(child, rest, training)?;
            }
        }
        Ok(())
    })?;
    if found {
        Ok(())
    } else {
        Err(Error::msg(format!("no submodule {head}")))
    }
}

/// `1`/`0` per module of `named_modules()`, as the script writes them.
fn flags(net: &Net) -> String {
    net.named_modules()
        .iter()
        .map(|(_, m)| if m.is_training() { '1' } else { '0' })
        .collect()
}

#[test]
fn every_module_follows_train_and_eval_as_pytorchs() -> Result<()> {
    let recorded: Value = serde_json::from_str(include_str!("data/training_modes.json"))
        .expect("tests/nn/data/training_modes.json parses");
    let step = |name: &str| recorded["steps"][name].as_str().expect("a step").to_owned();
    let mut net = net()?;
    let names: Vec<String> = net.named_modules().into_iter().map(|(n, _)| n).collect();
    let torch_names: Vec<&str> = recorded["names"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n.as_str().expect("a name"))
        .collect();
    assert_eq!(names, torch_names);

    assert_eq!(flags(&net), step("new"));
    net.eval();
    assert_eq!(flags(&net), step("eval"));
    net.train();
    assert_eq!(flags(&net), step("train"));
    for part in ["features", "attn", "encoder.layers.0.self_attn"] {
        set_mode(&mut net, part, false)?;
    }
    assert_eq!(flags(&net), step("train, then parts eval"));
    net.eval();
    for part in ["head", "acts.1", "lstm"] {
        set_mode(&mut net, part, true)?;
    }
    assert_eq!(flags(&net), step("eval, then parts train"));
    Ok(())
}

/// A leaf layer holds its own mode: `eval()` on it is seen on it, whatever its neighbours do.
#[test]
fn a_leaf_layer_keeps_its_own_mode() -> Result<()> {
    let mut relu = Relu::new();
    assert!(relu.is_training());
    relu.eval();
    assert!(!relu.is_training());
    let mut model = Sequential::new()
        .add(Linear::new(2, 2)?)
        .add(relu)
        .add(Flatten::new());
    assert_eq!(
        model
            .modules()
            .iter()
            .map(|m| m.is_training())
            .collect::<Vec<_>>(),
        [true, true, false, true]
    );
    model.eval();
    assert!(model.modules().iter().all(|m| !m.is_training()));
    model.train();
    assert!(model.modules().iter().all(|m| m.is_training()));
    Ok(())
}
