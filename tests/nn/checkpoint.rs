//! Module checkpoints against PyTorch: `benches/record_checkpoint.py` saved an
//! `nn.Sequential(Linear(4, 8), Tanh(), Linear(8, 3))` with `safetensors.torch.save_file` and
//! recorded its output and gradients for a fixed input. Loading that file here must give
//! PyTorch's numbers, and saving the loaded model must give the same bytes PyTorch wrote (so
//! PyTorch loads what we save).

use std::path::PathBuf;

use autograd::nn::{Forward, Linear, Module};
use autograd::{DType, Error, Result, StateDict, Tensor};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nn/data")
        .join(name)
}

/// PyTorch's `Sequential(Linear(4, 8), Tanh(), Linear(8, 3))`, written as a user would write a
/// model of their own: two layers under PyTorch's names (the Sequential's positions), derived.
#[derive(Debug, Module)]
struct Mlp {
    #[module(rename = "0")]
    first: Linear,
    #[module(rename = "2")]
    last: Linear,
}

impl Mlp {
    fn new(dtype: DType) -> Mlp {
        let _rng = crate::common::global_rng(0);
        let mut mlp = Mlp {
            first: Linear::new(4, 8).unwrap(),
            last: Linear::new(8, 3).unwrap(),
        };
        mlp.to_dtype(dtype).unwrap();
        mlp
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.last.forward(&self.first.forward(x)?.tanh()?)
    }
}

fn recorded(dtype: &str) -> Value {
    let text = std::fs::read_to_string(data("checkpoint_mlp.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()[dtype].clone()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn assert_close(name: &str, got: &[f64], want: &[f64], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{name}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rtol * w.abs().max(1e-3),
            "{name}[{i}]: {g} vs PyTorch's {w}"
        );
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn a_pytorch_checkpoint_gives_pytorchs_outputs_and_gradients() {
    for (name, dtype, rtol) in [("f32", DType::F32, 1e-6), ("f64", DType::F64, 1e-12)] {
        let want = recorded(name);
        let mut mlp = Mlp::new(dtype);
        let dict = StateDict::load(data(&format!("checkpoint_mlp_{name}.safetensors"))).unwrap();
        mlp.load_state_dict(&dict).unwrap();

        let x = Tensor::from_vec(floats(&want["x"]), &[2, 4])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let y = mlp.forward(&x).unwrap();
        assert_eq!(y.dtype(), dtype);
        assert_close(name, &values(&y), &floats(&want["y"]), rtol);
        y.sum().unwrap().backward().unwrap();
        for (key, p) in mlp.named_parameters() {
            let grad = p.grad().unwrap_or_else(|| panic!("{key} has no gradient"));
            assert_close(&key, &values(&grad), &floats(&want["grads"][&key]), rtol);
        }
    }
}

#[test]
fn saving_a_loaded_model_writes_the_bytes_pytorch_wrote() {
    for name in ["f32", "f64"] {
        let path = data(&format!("checkpoint_mlp_{name}.safetensors"));
        let dtype = if name == "f32" {
            DType::F32
        } else {
            DType::F64
        };
        let mut mlp = Mlp::new(dtype);
        mlp.load_state_dict(&StateDict::load(&path).unwrap())
            .unwrap();
        let ours = mlp.state_dict().to_bytes().unwrap();
        assert_eq!(ours, std::fs::read(&path).unwrap(), "{name}");

        // And through a file: save, load, same values.
        let dir = std::env::temp_dir().join(format!("autograd-ckpt-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mlp.safetensors");
        mlp.state_dict().save(&file).unwrap();
        let mut again = Mlp::new(dtype);
        again
            .load_state_dict(&StateDict::load(&file).unwrap())
            .unwrap();
        for ((k, a), (_, b)) in mlp.named_parameters().iter().zip(again.named_parameters()) {
            assert_eq!(values(a), values(&b), "{k}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn loading_copies_in_place_so_optimizers_keep_their_parameters() {
    let mut mlp = Mlp::new(DType::F32);
    let before = mlp.parameters();
    let versions: Vec<u64> = before.iter().map(Tensor::version).collect();
    let dict = StateDict::load(data("checkpoint_mlp_f64.safetensors")).unwrap();
    // f64 values into f32 parameters: converted, as PyTorch's `copy_` converts.
    mlp.load_state_dict(&dict).unwrap();
    for ((p, q), v) in before.iter().zip(mlp.parameters()).zip(versions) {
        assert!(p.is_same(&q), "the parameter was replaced, not written");
        assert!(p.version() > v, "the write was not counted");
        assert!(p.is_leaf() && p.requires_grad() && p.grad_fn().is_none());
        assert_eq!(p.dtype(), DType::F32);
    }
    let want = values(dict.get("2.bias").unwrap());
    let got = values(&mlp.named_parameters()[3].1);
    assert_close("2.bias", &got, &want, 1e-6);
}

#[test]
fn missing_unexpected_and_misshapen_keys_are_reported_in_pytorchs_words() {
    let mut dict = StateDict::load(data("checkpoint_mlp_f32.safetensors")).unwrap();
    dict.remove("2.bias");
    dict.insert("extra", Tensor::zeros(&[1], DType::F32).unwrap());
    dict.insert("0.weight", Tensor::zeros(&[8, 5], DType::F32).unwrap());
    let mut mlp = Mlp::new(DType::F32);
    let before = values(&mlp.parameters()[1]);
    let err = mlp.load_state_dict(&dict).unwrap_err();
    assert!(matches!(err, Error::StateDict { .. }), "{err:?}");
    // PyTorch 2.11's text for the same dictionary loaded into its Sequential.
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict for Mlp:\n\tMissing key(s) in state_dict: \"2.bias\". \
         \n\tUnexpected key(s) in state_dict: \"extra\". \n\tsize mismatch for 0.weight: copying \
         a param with shape torch.Size([8, 5]) from checkpoint, the shape in current model is \
         torch.Size([8, 4])."
    );
    // Nothing was copied.
    assert_eq!(values(&mlp.parameters()[1]), before);

    let mut layer = {
        let _rng = crate::common::global_rng(0);
        Linear::new(4, 8).unwrap()
    };
    let mut only_weight = StateDict::new();
    only_weight.insert("weight", Tensor::zeros(&[8, 4], DType::F32).unwrap());
    assert_eq!(
        layer.load_state_dict(&only_weight).unwrap_err().to_string(),
        "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". "
    );
}

#[test]
fn bad_files_are_clear_errors() {
    let path = data("checkpoint_mlp_f32.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let err = StateDict::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(matches!(err, Error::Checkpoint { .. }), "{err:?}");
    assert!(err.to_string().contains("not a safetensors file"), "{err}");

    let missing = data("no_such_checkpoint.safetensors");
    let err = StateDict::load(&missing).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("checkpoint {}: ", missing.display())),
        "{err}"
    );
}
