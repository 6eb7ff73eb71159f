//! Layers against PyTorch's numbers: activations, `Linear`, `LayerNorm`, `Embedding`,
//! `Sequential` (keys, indexing, modes) and `Dropout` (masks, modes, threads).

use super::*;

// ----- activations and Linear -------------------------------------------------------------------

#[test]
fn activations_match_pytorch() -> Result<()> {
    let modules: Vec<(&str, Box<dyn Forward>)> = vec![
        ("relu", Box::new(Relu::new())),
        ("tanh", Box::new(Tanh::new())),
        ("sigmoid", Box::new(Sigmoid::new())),
        ("gelu", Box::new(Gelu::new())),
        (
            "gelu_tanh",
            Box::new(Gelu::with_approximate(GeluApproximate::Tanh)),
        ),
        ("leaky_relu", Box::new(LeakyRelu::default())),
        ("leaky_relu_02", Box::new(LeakyRelu::new(0.2))),
        ("softmax_1", Box::new(Softmax::new(1))),
        ("softmax_0", Box::new(Softmax::new(0))),
        ("log_softmax_m1", Box::new(LogSoftmax::new(-1))),
        ("identity", Box::new(Identity::new())),
    ];
    for (name, m) in modules {
        let x = input("act_x");
        check_forward_and_backward(name, &m.forward(&x)?)?;
        check_grad(name, "x", &x)?;
        assert!(names(&*m).is_empty(), "{name} has no parameters");
    }
    Ok(())
}

#[test]
fn linear_matches_pytorch() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let c = case("linear");
    let weight = f64_tensor(floats(&c["weight"]), &[3, 4]).requires_grad_(true)?;
    let bias = f64_tensor(floats(&c["bias"]), &[3]).requires_grad_(true)?;
    let layer = Linear::from_parts(weight.clone(), Some(bias.clone()))?;
    let x = input("act_x");
    check_forward_and_backward("linear", &layer.forward(&x)?)?;
    check_grad("linear", "x", &x)?;
    check_grad("linear", "weight", &weight)?;
    check_grad("linear", "bias", &bias)?;
    assert_eq!(names(&layer), ["weight", "bias"]);
    assert_eq!(names(&Linear::no_bias(4, 3)?), ["weight"]);
    assert!(Linear::from_parts(weight.clone(), Some(f64_tensor(vec![0.0; 4], &[4]))).is_err());
    assert!(Linear::from_parts(f64_tensor(vec![0.0; 4], &[4]), None).is_err());
    Ok(())
}

// ----- LayerNorm ---------------------------------------------------------------------------------

#[test]
fn layer_norm_matches_pytorch() -> Result<()> {
    let c = case("layer_norm");
    let mut ln = LayerNorm::new(&[3, 4])?;
    assert_eq!(names(&ln), ["weight", "bias"]);
    assert_eq!(ln.weight().unwrap().to_vec::<f32>()?, vec![1.0; 12]);
    assert_eq!(ln.bias().unwrap().to_vec::<f32>()?, vec![0.0; 12]);
    ln.to_dtype(DType::F64)?;
    let mut dict = StateDict::new();
    dict.insert("weight", f64_tensor(floats(&c["weight"]), &[3, 4]));
    dict.insert("bias", f64_tensor(floats(&c["bias"]), &[3, 4]));
    ln.load_state_dict(&dict)?;
    let x = input("ln_x");
    check_forward_and_backward("layer_norm", &ln.forward(&x)?)?;
    check_grad("layer_norm", "x", &x)?;
    check_grad("layer_norm", "weight", ln.weight().unwrap())?;
    check_grad("layer_norm", "bias", ln.bias().unwrap())?;

    let plain = LayerNorm::with_options(&[4], 1e-3, false)?;
    assert!(names(&plain).is_empty());
    let x = input("ln_x");
    check_forward_and_backward("layer_norm_plain", &plain.forward(&x)?)?;
    check_grad("layer_norm_plain", "x", &x)?;

    let err =
        F::layer_norm(&Tensor::zeros(&[2, 3], DType::F64)?, &[4], None, None, 1e-5).unwrap_err();
    assert_eq!(err.to_string(), error_text("layer_norm_shape"));
    Ok(())
}

// ----- Embedding ---------------------------------------------------------------------------------

#[test]
fn embedding_matches_pytorch_with_and_without_padding() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let c = case("embedding_pad0");
    let idx = &data()["inputs"]["emb_idx"];
    let indices = f64_tensor(floats(&idx["values"]), &usizes(&idx["shape"]));
    for (name, padding) in [("embedding_pad0", true), ("embedding", false)] {
        let weight = Tensor::zeros(&[6, 3], DType::F64)?.requires_grad_(true)?;
        let mut emb = Embedding::from_weight(weight)?;
        if padding {
            emb = emb.with_padding_idx(0)?;
        }
        assert_eq!(names(&emb), ["weight"]);
        let mut dict = StateDict::new();
        dict.insert("weight", f64_tensor(floats(&c["weight"]), &[6, 3]));
        emb.load_state_dict(&dict)?;
        check_forward_and_backward(name, &emb.forward(&indices)?)?;
        check_grad(name, "weight", emb.weight())?;
    }
    // A new table: N(0, 1) rows, the padding row zeroed.
    let emb = Embedding::new(1000, 10)?.with_padding_idx(2)?;
    let w = emb.weight().to_vec::<f32>()?;
    assert_eq!(&w[20..30], &[0.0; 10]);
    let mean = w.iter().map(|&v| f64::from(v)).sum::<f64>() / w.len() as f64;
    let var = w
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / w.len() as f64;
    assert!(
        mean.abs() < 0.03 && (var.sqrt() - 1.0).abs() < 0.03,
        "{mean} {var}"
    );
    Ok(())
}

#[test]
fn embedding_errors_are_pytorchs() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let emb = Embedding::new(6, 3)?;
    let err = emb
        .forward(&Tensor::from_vec(vec![6.0f32], &[1])?)
        .unwrap_err();
    assert_eq!(err.to_string(), error_text("embedding_oob"));
    let err = emb
        .forward(&Tensor::from_vec(vec![-1.0f32], &[1])?)
        .unwrap_err();
    assert_eq!(err.to_string(), error_text("embedding_oob"));
    assert!(emb.forward(&Tensor::from_vec(vec![1.5f32], &[1])?).is_err());
    let err = Embedding::new(6, 3)?.with_padding_idx(6).unwrap_err();
    assert_eq!(err.to_string(), error_text("padding_idx"));
    Ok(())
}

#[test]
fn embedding_takes_int64_indices_as_pytorch() -> Result<()> {
    // nn.Embedding(3, 2) with weight [[1, 2], [3, 4], [5, 6]] on [[2, 0], [2, 2]]:
    // [5, 6, 1, 2, 5, 6, 5, 6]; weight.grad after .sum().backward(): [1, 1, 0, 0, 3, 3]
    let weight =
        Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?.requires_grad_(true)?;
    let emb = Embedding::from_weight(weight)?;
    let y = emb.forward(&Tensor::from_vec(vec![2i64, 0, 2, 2], &[2, 2])?)?;
    assert_eq!(y.shape(), &[2, 2, 2]);
    assert_eq!(
        y.to_vec::<f64>()?,
        vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0, 5.0, 6.0]
    );
    y.sum()?.backward()?;
    assert_eq!(
        emb.weight().grad().unwrap().to_vec::<f64>()?,
        vec![1.0, 1.0, 0.0, 0.0, 3.0, 3.0]
    );
    let i32_rows = emb.forward(&Tensor::from_vec(vec![1i32], &[1])?)?;
    assert_eq!(i32_rows.to_vec::<f64>()?, vec![3.0, 4.0]);
    for bad in [3i64, -1] {
        let err = emb
            .forward(&Tensor::from_vec(vec![bad], &[1])?)
            .unwrap_err();
        assert_eq!(err.to_string(), "index out of range in self");
    }
    let err = emb
        .forward(&Tensor::from_vec(vec![1u8], &[1])?)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: \
         Long, Int; but got torch.ByteTensor instead (while checking arguments for embedding)"
    );
    Ok(())
}

// ----- Sequential ------------------------------------------------------------------------------------

fn mlp() -> Result<Sequential> {
    Ok(Sequential::new()
        .add(Linear::new(4, 8)?)
        .add(Relu::new())
        .add(Dropout::new(0.1)?)
        .add(Linear::new(8, 3)?)
        .add(Tanh::new())
        .add(LayerNorm::new(&[3])?)
        .add(Linear::no_bias(3, 2)?))
}

#[test]
fn sequential_keys_and_forward_match_pytorch() -> Result<()> {
    let recorded = &data()["sequential"];
    let mut model = mlp()?;
    let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
    let want: Vec<String> = recorded["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, want);
    let shapes: Vec<Vec<usize>> = model
        .parameters()
        .iter()
        .map(|p| p.shape().to_vec())
        .collect();
    let want_shapes: Vec<Vec<usize>> = recorded["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(usizes)
        .collect();
    assert_eq!(shapes, want_shapes);

    model.to_dtype(DType::F64)?;
    let mut dict = StateDict::new();
    for ((key, shape), values) in want
        .iter()
        .zip(&want_shapes)
        .zip(recorded["values"].as_array().unwrap())
    {
        dict.insert(key.clone(), f64_tensor(floats(values), shape));
    }
    model.load_state_dict(&dict)?;
    model.eval();
    let out = model.forward(&input("act_x"))?;
    assert_close(
        "sequential",
        &out.to_vec::<f64>()?,
        &floats(&recorded["out"]),
    );
    Ok(())
}

#[test]
fn sequential_indexing_and_modes_reach_children() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let mut model = mlp()?;
    assert_eq!(model.len(), 7);
    assert!(!model.is_empty() && Sequential::new().is_empty());
    assert_eq!(names(&model[0]), ["weight", "bias"]);
    assert!(model.get(7).is_none());
    assert!(model.is_training() && model[2].is_training());
    model.eval();
    assert!(!model.is_training() && !model[2].is_training());
    let x = Tensor::ones(&[5, 4], DType::F32)?;
    let a = model.forward(&x)?.to_vec::<f32>()?;
    assert_eq!(a, model.forward(&x)?.to_vec::<f32>()?, "no dropout in eval");
    model.train();
    assert!(model.get(2).unwrap().is_training());
    // A layer appended to a container in eval mode keeps its own mode, as in PyTorch.
    let mut frozen = Sequential::new();
    frozen.eval();
    frozen.push(Box::new(Dropout::new(0.5)?));
    assert!(!frozen.is_training() && frozen[0].is_training());
    frozen.eval();
    assert!(!frozen[0].is_training());
    // The empty container is the identity.
    assert!(Sequential::new().forward(&x)?.is_same(&x));
    Ok(())
}

// ----- Dropout ---------------------------------------------------------------------------------------

#[test]
fn dropout_zeroes_with_probability_p_and_scales_the_rest() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let p = 0.3;
    let drop = Dropout::new(p)?;
    let x = Tensor::ones(&[100_000], DType::F64)?.requires_grad_(true)?;
    let y = drop.forward(&x)?;
    let values = y.to_vec::<f64>()?;
    let scale = 1.0 / (1.0 - p);
    assert!(values.iter().all(|&v| v == 0.0 || v == scale));
    let zeroed = values.iter().filter(|&&v| v == 0.0).count() as f64 / values.len() as f64;
    assert!((zeroed - p).abs() < 0.01, "zeroed {zeroed}");
    // The gradient is the mask.
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, values);
    // A new mask each call; the same sequence after the same `manual_seed`.
    let second = drop.forward(&x)?.to_vec::<f64>()?;
    assert_ne!(values, second);
    autograd::manual_seed(0);
    let again = Dropout::new(p)?;
    assert_eq!(again.forward(&x)?.to_vec::<f64>()?, values);
    assert_eq!(again.forward(&x)?.to_vec::<f64>()?, second);
    Ok(())
}

#[test]
fn dropout_is_the_identity_in_eval_and_for_p_0_and_zeros_for_p_1() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3])?.requires_grad_(true)?;
    let mut drop = Dropout::new(0.5)?;
    drop.eval();
    assert!(drop.forward(&x)?.is_same(&x));
    assert!(Dropout::new(0.0)?.forward(&x)?.is_same(&x));
    let y = Dropout::new(1.0)?.forward(&x)?;
    assert_eq!(y.to_vec::<f32>()?, vec![0.0; 3]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![0.0; 3]);
    assert!(F::dropout(&x, 0.7, false)?.is_same(&x));
    let err = Dropout::new(1.5).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p"));
    let err = F::dropout(&x, -0.25, true).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_neg"));
    // Python's spelling of the float.
    let err = Dropout::new(2.0).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_2"));
    let err = F::dropout(&x, -1e-5, true).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_tiny"));
    assert!(names(&drop).is_empty());
    Ok(())
}

#[test]
fn dropout_shared_between_threads_draws_distinct_masks() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let drop = Dropout::new(0.5)?;
    let x = Tensor::ones(&[256], DType::F32)?;
    let masks: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| drop.forward(&x).unwrap().to_vec::<f32>().unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for i in 0..masks.len() {
        for j in i + 1..masks.len() {
            assert_ne!(masks[i], masks[j], "masks {i} and {j}");
        }
    }
    Ok(())
}
