//! `autograd::amp::autocast` against PyTorch 2.15's `torch.autocast`
//! (`tests/amp/autocast_dtypes.py` wrote `tests/amp/data/autocast.json`): the output dtypes and
//! values of the crate's ops in a CPU bf16 region (and a few in an f16 region), a small MLP's
//! forward under autocast and backward after it, value for value; nested and disabled regions;
//! the weight cache; the CUDA lists without a device; warnings and errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use autograd::amp::{
    AutocastOptions, CastPolicy, autocast, autocast_policy, autocast_with, get_autocast_dtype,
    is_autocast_cache_enabled, is_autocast_enabled,
};
use autograd::nn::functional::{
    self as f, BceWithLogitsOptions, CrossEntropyOptions, MultiHeadAttentionOptions,
    NllLossOptions, Reduction,
};
use autograd::nn::{GeluApproximate, InterpolateMode};
use autograd::{DType, Device, Error, Result, Tensor, einsum};
use serde_json::Value;

fn recorded() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/amp/data/autocast.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The script's `det`: `((i * 7 + seed * 13) % 17 - 8) / 8`, exact in every float dtype.
fn det(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i * 7 + seed * 13) % 17) as f32 / 8.0 - 1.0)
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn torch_dtype(d: DType) -> &'static str {
    match d {
        DType::F32 => "torch.float32",
        DType::F64 => "torch.float64",
        DType::F16 => "torch.float16",
        DType::BF16 => "torch.bfloat16",
        DType::I64 => "torch.int64",
        _ => "other",
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.detach()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

type OpFn = Box<dyn Fn() -> Result<Vec<Tensor>>>;

/// The ops of `cpu_ops()` in the script, on the same inputs.
fn cpu_ops() -> BTreeMap<&'static str, OpFn> {
    let mut ops: BTreeMap<&'static str, OpFn> = BTreeMap::new();
    macro_rules! op {
        ($name:literal, $body:expr) => {
            ops.insert($name, Box::new(move || Ok(vec![$body])));
        };
    }
    let m = || det(&[4, 4], 1);
    let v = || det(&[4], 2);
    let x = || det(&[2, 3, 4], 3);
    let tgt = || Tensor::from_vec(vec![0i64, 1, 2, 3], &[4]).unwrap();
    let h = |t: Tensor, d| t.to_dtype(d).unwrap();
    op!("matmul", m().matmul(&m())?);
    op!("matmul_vv", v().matmul(&v())?);
    op!(
        "matmul_f64",
        h(m(), DType::F64).matmul(&h(m(), DType::F64))?
    );
    op!(
        "matmul_bf16",
        h(m(), DType::BF16).matmul(&h(m(), DType::BF16))?
    );
    op!(
        "matmul_f16",
        h(m(), DType::F16).matmul(&h(m(), DType::F16))?
    );
    op!("bmm", x().bmm(&x().transpose(1, 2)?)?);
    op!(
        "baddbmm",
        det(&[2, 3, 3], 5).baddbmm(&x(), &x().transpose(1, 2)?, 0.5, 2.0)?
    );
    op!("einsum_contract", einsum("ij,jk->ik", &[&m(), &m()])?);
    op!("einsum_elementwise", einsum("ij,ij->ij", &[&m(), &m()])?);
    op!("outer", v().outer(&v())?);
    op!("linear", f::linear(&x(), &m(), Some(&v()))?);
    op!("linear_no_bias", f::linear(&x(), &m(), None)?);
    op!(
        "conv1d",
        f::conv1d(
            &det(&[1, 2, 5], 4),
            &det(&[3, 2, 2], 5),
            Some(&det(&[3], 6)),
            1,
            0,
            1,
            1
        )?
    );
    op!(
        "conv2d",
        f::conv2d(
            &det(&[1, 2, 4, 4], 4),
            &det(&[3, 2, 2, 2], 5),
            Some(&det(&[3], 6)),
            1,
            0,
            1,
            1
        )?
    );
    op!(
        "conv_transpose2d",
        f::conv_transpose2d(
            &det(&[1, 2, 3, 3], 4),
            &det(&[2, 3, 2, 2], 5),
            Some(&det(&[3], 6)),
            1,
            0,
            0,
            1,
            1
        )?
    );
    op!(
        "sdpa",
        f::scaled_dot_product_attention(&x(), &x(), &x(), None, 0.0, false, None)?
    );
    op!(
        "sdpa_causal",
        f::scaled_dot_product_attention(&x(), &x(), &x(), None, 0.0, true, None)?
    );
    let mha = |need: bool| -> Result<(Tensor, Option<Tensor>)> {
        let q = det(&[3, 2, 4], 11);
        let (in_w, in_b, out_w, out_b) = (
            det(&[12, 4], 12),
            det(&[12], 13),
            det(&[4, 4], 14),
            det(&[4], 15),
        );
        let opts = MultiHeadAttentionOptions {
            in_proj_bias: Some(&in_b),
            out_proj_bias: Some(&out_b),
            training: false,
            need_weights: need,
            ..MultiHeadAttentionOptions::new(2, &in_w, &out_w)
        };
        f::multi_head_attention_forward(&q, &q, &q, &opts)
    };
    op!("mha", mha(false)?.0);
    op!("mha_weights", mha(true)?.1.unwrap());
    ops.insert(
        "lstm_cell",
        Box::new(|| {
            let (hy, cy) = f::lstm_cell(
                &det(&[2, 3], 4),
                (&det(&[2, 4], 5), &det(&[2, 4], 6)),
                &det(&[16, 3], 7),
                &det(&[16, 4], 8),
                Some(&det(&[16], 9)),
                Some(&det(&[16], 10)),
            )?;
            Ok(vec![hy, cy])
        }),
    );
    type Cell =
        fn(&Tensor, &Tensor, &Tensor, &Tensor, Option<&Tensor>, Option<&Tensor>) -> Result<Tensor>;
    for (name, gates, cell) in [
        ("gru_cell", 3, f::gru_cell as Cell),
        ("rnn_tanh_cell", 1, f::rnn_tanh_cell as Cell),
        ("rnn_relu_cell", 1, f::rnn_relu_cell as Cell),
    ] {
        ops.insert(
            name,
            Box::new(move || {
                let g = gates * 4;
                Ok(vec![cell(
                    &det(&[2, 3], 4),
                    &det(&[2, 4], 5),
                    &det(&[g, 3], 7),
                    &det(&[g, 4], 8),
                    Some(&det(&[g], 9)),
                    Some(&det(&[g], 10)),
                )?])
            }),
        );
    }
    op!("softmax", m().softmax(0)?);
    op!("log_softmax", m().log_softmax(1)?);
    op!(
        "layer_norm",
        f::layer_norm(&x(), &[4], Some(&det(&[4], 7)), Some(&det(&[4], 8)), 1e-5)?
    );
    op!(
        "group_norm",
        f::group_norm(
            &det(&[2, 4, 3], 4),
            2,
            Some(&det(&[4], 7)),
            Some(&det(&[4], 8)),
            1e-5
        )?
    );
    op!(
        "rms_norm",
        f::rms_norm(&x(), &[4], Some(&det(&[4], 7)), None)?
    );
    op!("exp", m().exp()?);
    op!("log", m().abs()?.add_scalar(1.0)?.log()?);
    op!("pow", m().pow(2.0)?);
    op!("sum", m().sum()?);
    op!("sum_dims", m().sum_dims(&[0], false)?);
    op!("prod", m().prod()?);
    op!("prod_dim", m().prod_dim(0, false)?);
    op!("prod_bf16", h(m(), DType::BF16).prod()?);
    op!("cumsum", m().cumsum(0)?);
    op!("logsumexp", m().logsumexp(&[0], false)?);
    op!("norm", m().norm()?);
    op!(
        "mse_loss",
        f::mse_loss(&m(), &v().expand(&[4, 4])?, Reduction::Mean)?
    );
    op!(
        "mse_loss_bf16",
        f::mse_loss(
            &h(m(), DType::BF16),
            &h(v().expand(&[4, 4])?, DType::BF16),
            Reduction::Mean
        )?
    );
    op!(
        "mse_loss_f64",
        f::mse_loss(&h(m(), DType::F64), &h(m(), DType::BF16), Reduction::Mean)?
    );
    op!(
        "nll_loss",
        f::nll_loss_tensor(&m(), &tgt(), &NllLossOptions::default())?
    );
    op!(
        "nll_loss_bf16",
        f::nll_loss_tensor(&h(m(), DType::BF16), &tgt(), &NllLossOptions::default())?
    );
    op!(
        "cross_entropy",
        f::cross_entropy_tensor(&m(), &tgt(), &CrossEntropyOptions::default())?
    );
    op!(
        "cross_entropy_bf16",
        f::cross_entropy_tensor(
            &h(m(), DType::BF16),
            &tgt(),
            &CrossEntropyOptions::default()
        )?
    );
    let bce = BceWithLogitsOptions::default;
    op!(
        "bce_with_logits",
        f::binary_cross_entropy_with_logits(&m(), &m().abs()?, &bce())?
    );
    op!(
        "bce_with_logits_bf16",
        f::binary_cross_entropy_with_logits(&h(m(), DType::BF16), &m().abs()?, &bce())?
    );
    op!("cat", Tensor::cat(&[m(), m()], 0)?);
    op!("cat_bf16_f32", Tensor::cat(&[h(m(), DType::BF16), m()], 0)?);
    op!(
        "cat_bf16_bf16",
        Tensor::cat(&[h(m(), DType::BF16), h(m(), DType::BF16)], 0)?
    );
    op!("cat_f32_f16", Tensor::cat(&[m(), h(m(), DType::F16)], 0)?);
    op!("cat_f16_f32", Tensor::cat(&[h(m(), DType::F16), m()], 0)?);
    op!("stack", Tensor::stack(&[m(), m()], 0)?);
    op!(
        "stack_bf16_f32",
        Tensor::stack(&[h(m(), DType::BF16), m()], 0)?
    );
    op!(
        "scatter_add",
        m().scatter_add(0, &Tensor::zeros(&[4, 4], DType::I64)?, &m())?
    );
    op!("atan2", m().atan2(&m().flip(&[0])?)?);
    op!(
        "interpolate",
        f::interpolate(
            &det(&[1, 1, 4], 4),
            None,
            Some(2.0.into()),
            InterpolateMode::Nearest,
            None,
            None
        )?
    );
    op!("gelu", f::gelu(&m(), GeluApproximate::None)?);
    op!("relu_of_bf16", f::relu(&m().matmul(&m())?)?);
    op!("add_bf16_f32", m().matmul(&m())?.add(&m())?);
    ops
}

/// Compares one op's outputs with PyTorch's record: dtypes exactly; values to a few units in
/// the last place of the output's dtype (the kernels may sum in another order; the inputs of
/// the cast ops are exact, so the casts themselves agree bit for bit).
fn check(name: &str, got: Result<Vec<Tensor>>, want: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    if let Some(e) = want.get("error") {
        match got {
            Err(err) if err.to_string() == e.as_str().unwrap() => {}
            other => bad.push(format!(
                "{name}: expected error {e}, got {:?}",
                other.map(|v| v.len())
            )),
        }
        return bad;
    }
    let outs = match got {
        Ok(outs) => outs,
        Err(e) => return vec![format!("{name}: error {e}")],
    };
    let dtypes: Vec<&str> = match want.get("dtypes") {
        Some(ds) => ds
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect(),
        None => vec![want["dtype"].as_str().unwrap()],
    };
    let got_dtypes: Vec<&str> = outs.iter().map(|t| torch_dtype(t.dtype())).collect();
    if got_dtypes != dtypes {
        bad.push(format!("{name}: dtypes {got_dtypes:?}, PyTorch {dtypes:?}"));
        return bad;
    }
    if let Some(want_values) = want.get("values") {
        let want_values: Vec<f64> = want_values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let got_values = values(&outs[0]);
        let eps = match outs[0].dtype() {
            DType::BF16 => 2f64.powi(-7),
            DType::F16 => 2f64.powi(-10),
            _ => 1e-5,
        };
        let close = got_values.len() == want_values.len()
            && got_values
                .iter()
                .zip(&want_values)
                .all(|(g, w)| (g - w).abs() <= 2.0 * eps * w.abs().max(1.0));
        if !close {
            bad.push(format!(
                "{name}: values {got_values:?}, PyTorch {want_values:?}"
            ));
        }
    }
    bad
}

#[test]
fn op_dtypes_in_a_cpu_bf16_region_are_pytorch_s() {
    let rec = recorded();
    let want = rec["cpu_ops"].as_object().unwrap();
    let ops = cpu_ops();
    assert_eq!(
        ops.keys().copied().collect::<Vec<_>>(),
        want.keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .tap_sort(),
        "the test runs the script's ops"
    );
    let _region = autocast(Device::Cpu, DType::BF16).unwrap();
    let bad: Vec<String> = ops
        .iter()
        .flat_map(|(name, op)| check(name, op(), &want[*name]))
        .collect();
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

trait TapSort {
    fn tap_sort(self) -> Self;
}

impl<T: Ord> TapSort for Vec<T> {
    fn tap_sort(mut self) -> Self {
        self.sort();
        self
    }
}

#[test]
fn op_dtypes_in_a_cpu_f16_region_are_pytorch_s() {
    let rec = recorded();
    let want = &rec["f16_ops"];
    let m = det(&[4, 4], 1);
    let _region = autocast(Device::Cpu, DType::F16).unwrap();
    let h = |d| m.to_dtype(d).unwrap();
    let mut bad = Vec::new();
    bad.extend(check(
        "matmul",
        m.matmul(&m).map(|t| vec![t]),
        &want["matmul"],
    ));
    bad.extend(check(
        "matmul_bf16",
        h(DType::BF16).matmul(&h(DType::BF16)).map(|t| vec![t]),
        &want["matmul_bf16"],
    ));
    bad.extend(check(
        "cat_f16_f32",
        Tensor::cat(&[h(DType::F16), m.clone()], 0).map(|t| vec![t]),
        &want["cat_f16_f32"],
    ));
    bad.extend(check(
        "mse_loss",
        f::mse_loss(&h(DType::F16), &m, Reduction::Mean).map(|t| vec![t]),
        &want["mse_loss"],
    ));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn an_mlp_under_autocast_matches_pytorch_value_for_value() -> Result<()> {
    let rec = recorded();
    let want = &rec["mlp"];
    let x = det(&[8, 3], 20);
    let t = det(&[8, 2], 21);
    let w1 = det(&[5, 3], 22).requires_grad_(true)?;
    let b1 = det(&[5], 23).requires_grad_(true)?;
    let w2 = det(&[2, 5], 24).requires_grad_(true)?;
    let b2 = det(&[2], 25).requires_grad_(true)?;
    let (h, y, loss) = {
        let _region = autocast(Device::Cpu, DType::BF16)?;
        let h = f::relu(&f::linear(&x, &w1, Some(&b1))?)?;
        let y = f::linear(&h, &w2, Some(&b2))?;
        let loss = f::mse_loss(&y, &t, Reduction::Mean)?;
        (h, y, loss)
    };
    loss.backward()?;
    assert_eq!(torch_dtype(h.dtype()), want["h_dtype"]);
    assert_eq!(torch_dtype(y.dtype()), want["y_dtype"]);
    assert_eq!(torch_dtype(loss.dtype()), want["loss_dtype"]);
    let f64s = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    // Bit for bit: the same casts of the same values, and sums the kernels make exactly.
    assert_eq!(values(&y), f64s(&want["y"]));
    assert_eq!(loss.item::<f32>()? as f64, want["loss"].as_f64().unwrap());
    for (name, p) in [("w1", &w1), ("b1", &b1), ("w2", &w2), ("b2", &b2)] {
        let g = p.grad().unwrap();
        assert_eq!(g.dtype(), DType::F32, "{name}");
        assert_eq!(values(&g), f64s(&want["grads"][name]), "{name}");
    }
    Ok(())
}

#[test]
fn defaults_and_state_are_pytorch_s() -> Result<()> {
    let rec = recorded();
    let d = &rec["messages"]["defaults"];
    assert_eq!(torch_dtype(get_autocast_dtype(Device::Cpu)?), d["cpu"]);
    assert_eq!(torch_dtype(get_autocast_dtype(Device::Cuda(0))?), d["cuda"]);
    assert_eq!(
        is_autocast_cache_enabled(),
        d["cache_enabled"].as_bool().unwrap()
    );
    assert!(!is_autocast_enabled(Device::Cpu) && !is_autocast_enabled(Device::Cuda(0)));
    {
        let _g = autocast_with(Device::Cpu, AutocastOptions::default())?;
        assert!(is_autocast_enabled(Device::Cpu) && !is_autocast_enabled(Device::Cuda(0)));
        assert_eq!(get_autocast_dtype(Device::Cpu)?, DType::BF16);
    }
    assert!(!is_autocast_enabled(Device::Cpu));
    Ok(())
}

#[test]
fn regions_nest_and_disabled_regions_turn_autocast_off() -> Result<()> {
    let a = det(&[2, 2], 1);
    let outer = autocast(Device::Cpu, DType::BF16)?;
    assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
    {
        // PyTorch's `autocast(enabled=False)` still sets the dtype it is given.
        let _off = autocast_with(
            Device::Cpu,
            AutocastOptions::default().enabled(false).dtype(DType::F16),
        )?;
        assert!(!is_autocast_enabled(Device::Cpu));
        assert_eq!(get_autocast_dtype(Device::Cpu)?, DType::F16);
        assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
        {
            let _on = autocast_with(Device::Cpu, AutocastOptions::default())?; // the current dtype
            assert_eq!(a.matmul(&a)?.dtype(), DType::F16);
        }
        assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
    }
    {
        let _f16 = autocast(Device::Cpu, DType::F16)?;
        assert_eq!(a.matmul(&a)?.dtype(), DType::F16);
    }
    assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
    assert_eq!(get_autocast_dtype(Device::Cpu)?, DType::BF16);
    drop(outer);
    assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
    // A CUDA region does not touch CPU tensors.
    {
        let _cuda = autocast_with(Device::Cuda(0), AutocastOptions::default().enabled(false))?;
        assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
    }
    Ok(())
}

#[test]
fn the_state_is_per_thread_and_reaches_backward_nodes_on_device_threads() -> Result<()> {
    let a = det(&[2, 2], 1);
    let _region = autocast(Device::Cpu, DType::BF16)?;
    let other = std::thread::spawn(move || a.matmul(&a).map(|t| t.dtype()))
        .join()
        .unwrap()?;
    assert_eq!(other, DType::F32);
    // A hook on a `Virtual(1)` tensor runs on that device's worker thread, under the caller's
    // autocast state (PyTorch's `ThreadLocalState` carries it), as the rest of the pass.
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let x = det(&[2], 2).to(Device::Virtual(1))?.requires_grad_(true)?;
    x.register_hook(move |_| {
        *s.lock().unwrap() = Some((
            is_autocast_enabled(Device::Cpu),
            get_autocast_dtype(Device::Cpu).unwrap(),
        ));
        None
    })?;
    x.mul(&x)?.sum()?.backward()?;
    assert_eq!(*seen.lock().unwrap(), Some((true, DType::BF16)));
    Ok(())
}

/// The `ToCopyBackward0` node that cast `w` for the product `y` (its second input).
fn cast_node_of(y: &Tensor) -> autograd::graph::NodeRef {
    let next = y.grad_fn().unwrap().next_functions();
    let cast = next[1].as_ref().unwrap().node.clone();
    assert_eq!(cast.name(), "ToCopyBackward0");
    cast
}

#[test]
fn a_parameter_is_cast_once_per_region() -> Result<()> {
    let x = det(&[2, 3], 1);
    let w = det(&[3, 3], 2).requires_grad_(true)?;
    let first = {
        let _region = autocast(Device::Cpu, DType::BF16)?;
        let (a, b) = (x.matmul(&w)?, x.matmul(&w)?);
        assert!(
            cast_node_of(&a).ptr_eq(&cast_node_of(&b)),
            "one cast for both products"
        );
        {
            // An inner region keeps the cache; one of another dtype casts again.
            let _inner = autocast(Device::Cpu, DType::BF16)?;
            assert!(cast_node_of(&x.matmul(&w)?).ptr_eq(&cast_node_of(&a)));
            let _f16 = autocast(Device::Cpu, DType::F16)?;
            assert_eq!(x.matmul(&w)?.dtype(), DType::F16);
        }
        assert!(
            cast_node_of(&x.matmul(&w)?).ptr_eq(&cast_node_of(&a)),
            "kept after the inner exit"
        );
        // Changed in place: cast again (PyTorch would return the stale cast).
        {
            let _g = autograd::no_grad();
            w.mul_(&Tensor::scalar(2.0f32))?;
        }
        let c = x.matmul(&w)?;
        assert!(!cast_node_of(&c).ptr_eq(&cast_node_of(&a)));
        assert_eq!(
            values(&c),
            values(&x.matmul(&w.detach().to_dtype(DType::BF16)?)?)
        );
        // Not cached: a view, a non-leaf, a cast made while grad mode is off.
        let t = w.transpose(0, 1)?;
        assert!(!cast_node_of(&x.matmul(&t)?).ptr_eq(&cast_node_of(&x.matmul(&t)?)));
        let nl = w.mul_scalar(1.0)?;
        assert!(!cast_node_of(&x.matmul(&nl)?).ptr_eq(&cast_node_of(&x.matmul(&nl)?)));
        let w2 = det(&[3, 3], 3).requires_grad_(true)?;
        {
            let _g = autograd::no_grad();
            x.matmul(&w2)?;
        }
        assert!(x.matmul(&w2)?.requires_grad());
        cast_node_of(&a)
    };
    // A new region starts with an empty cache.
    let _region = autocast(Device::Cpu, DType::BF16)?;
    assert!(!cast_node_of(&x.matmul(&w)?).ptr_eq(&first));
    Ok(())
}

#[test]
fn cache_enabled_false_casts_every_time() -> Result<()> {
    let x = det(&[2, 3], 1);
    let w = det(&[3, 3], 2).requires_grad_(true)?;
    let _outer = autocast(Device::Cpu, DType::BF16)?;
    {
        let _g = autocast_with(Device::Cpu, AutocastOptions::default().cache_enabled(false))?;
        assert!(!is_autocast_cache_enabled());
        assert!(!cast_node_of(&x.matmul(&w)?).ptr_eq(&cast_node_of(&x.matmul(&w)?)));
    }
    assert!(is_autocast_cache_enabled());
    assert!(cast_node_of(&x.matmul(&w)?).ptr_eq(&cast_node_of(&x.matmul(&w)?)));
    Ok(())
}

#[test]
fn gradients_flow_back_through_the_casts_in_each_input_s_dtype() -> Result<()> {
    let x = det(&[2, 3], 1).to_dtype(DType::F64)?.requires_grad_(true)?;
    let w = det(&[3, 2], 2).requires_grad_(true)?;
    let y = {
        let _region = autocast(Device::Cpu, DType::BF16)?;
        // f64 is not cast (PyTorch's eligibility), so the product mixes f64 and bf16 and fails
        // as PyTorch's does; an f32 copy of x is cast.
        assert!(x.matmul(&w).is_err());
        x.to_dtype(DType::F32)?.matmul(&w)?
    };
    assert_eq!(y.dtype(), DType::BF16);
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().dtype(), DType::F64);
    assert_eq!(w.grad().unwrap().dtype(), DType::F32);
    assert_eq!(
        values(&w.grad().unwrap()),
        values(
            &x.detach()
                .sum_dims(&[0], false)?
                .unsqueeze(1)?
                .expand(&[3, 2])?
        )
    );
    Ok(())
}

#[test]
fn unsupported_dtypes_warn_and_disable_as_pytorch_s() -> Result<()> {
    let rec = recorded();
    let msgs = &rec["messages"];
    let _handler = super::WARNING_HANDLER
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    autograd::set_warning_handler(Some(Box::new(move |w: &str| {
        s.lock().unwrap().push(w.to_string())
    })));
    let mut checks = Vec::new();
    for (key, device, dtype) in [
        ("cpu_f32", Device::Cpu, Some(DType::F32)),
        ("cpu_f64", Device::Cpu, Some(DType::F64)),
        ("cuda_unavailable", Device::Cuda(0), None),
    ] {
        if key == "cuda_unavailable" && autograd::cuda::is_available() {
            continue;
        }
        let opts = match dtype {
            Some(d) => AutocastOptions::default().dtype(d),
            None => AutocastOptions::default(),
        };
        let _g = autocast_with(device, opts)?;
        checks.push((
            key,
            is_autocast_enabled(device),
            torch_dtype(get_autocast_dtype(device)?),
        ));
    }
    autograd::set_warning_handler(None);
    let seen = seen.lock().unwrap().clone();
    for (i, (key, enabled, dtype)) in checks.iter().enumerate() {
        assert_eq!(seen[i], msgs[key]["warning"].as_str().unwrap(), "{key}");
        assert_eq!(*enabled, msgs[key]["enabled"].as_bool().unwrap(), "{key}");
        assert_eq!(*dtype, msgs[key]["dtype"].as_str().unwrap(), "{key}");
    }
    Ok(())
}

#[test]
fn errors_are_pytorch_s() -> Result<()> {
    let rec = recorded();
    let err = autocast(Device::Virtual(0), DType::BF16).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    assert_eq!(
        err.to_string(),
        "User specified an unsupported autocast device_type 'virtual'"
    );
    assert!(get_autocast_dtype(Device::Virtual(1)).is_err());
    let h = det(&[2], 1).to_dtype(DType::F16)?;
    let _g = autocast(Device::Cpu, DType::BF16)?;
    let e = Tensor::cat(&[h.clone(), h], 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        rec["messages"]["prioritize"].as_str().unwrap()
    );
    Ok(())
}

#[test]
fn cuda_lists_are_pytorch_s() {
    // Every op the crate autocasts on CUDA is in PyTorch's list for its policy, and every op of
    // those lists the crate has is autocast with that policy (checked without a device).
    let rec = recorded();
    let lists = &rec["cuda_lists"];
    let policy_of = |name: &str| -> Option<CastPolicy> {
        for (key, policy) in [
            ("lower_precision_fp", CastPolicy::LowerPrecisionFp),
            ("fp32", CastPolicy::Fp32),
            ("fp32_set_opt_dtype", CastPolicy::Fp32SetOptDtype),
            ("promote", CastPolicy::Promote),
        ] {
            if lists[key].as_array().unwrap().iter().any(|n| n == name) {
                return Some(policy);
            }
        }
        None
    };
    let crate_ops = [
        "matmul",
        "bmm",
        "baddbmm",
        "linear",
        "conv1d",
        "conv2d",
        "conv_transpose2d",
        "scaled_dot_product_attention",
        "einsum",
        "lstm_cell",
        "gru_cell",
        "rnn_tanh_cell",
        "rnn_relu_cell",
        "softmax",
        "log_softmax",
        "layer_norm",
        "group_norm",
        "rms_norm",
        "exp",
        "log",
        "log2",
        "log1p",
        "expm1",
        "reciprocal",
        "rsqrt",
        "pow",
        "softplus",
        "sum",
        "prod",
        "cumsum",
        "logsumexp",
        "linalg_vector_norm",
        "mse_loss",
        "nll_loss",
        "binary_cross_entropy_with_logits",
        "cat",
        "stack",
        "scatter_add",
        "atan2",
        "cross_entropy_loss",
    ];
    for op in crate_ops {
        assert_eq!(autocast_policy(Device::Cuda(0), op), policy_of(op), "{op}");
    }
    // interpolate's kernels are all fp32 on CUDA.
    for k in [
        "upsample_nearest1d",
        "upsample_linear1d",
        "upsample_bilinear2d",
        "upsample_trilinear3d",
    ] {
        assert_eq!(policy_of(k), Some(CastPolicy::Fp32));
    }
    assert_eq!(
        autocast_policy(Device::Cuda(0), "upsample"),
        Some(CastPolicy::Fp32)
    );
    // The CPU's lists differ: no softmax or exp there, cat promotes, prod is plain fp32.
    assert_eq!(autocast_policy(Device::Cpu, "softmax"), None);
    assert_eq!(autocast_policy(Device::Cpu, "exp"), None);
    assert_eq!(
        autocast_policy(Device::Cpu, "cat"),
        Some(CastPolicy::Promote)
    );
    assert_eq!(autocast_policy(Device::Cpu, "prod"), Some(CastPolicy::Fp32));
    assert_eq!(
        autocast_policy(Device::Cpu, "cross_entropy_loss"),
        Some(CastPolicy::Fp32)
    );
    assert_eq!(autocast_policy(Device::Virtual(0), "matmul"), None);
}

#[test]
fn checkpoint_recomputes_under_the_forward_s_autocast_state() -> Result<()> {
    // PyTorch's checkpoint re-enters the forward's autocast state for the recomputation, so the
    // recomputed tensors are those of the forward (else the non-reentrant variant's metadata
    // check fails on their dtypes) and the gradients those without checkpointing.
    let x = det(&[2, 3], 1).requires_grad_(true)?;
    let w = det(&[3, 3], 2).requires_grad_(true)?;
    let plain = {
        let y = {
            let _region = autocast(Device::Cpu, DType::BF16)?;
            x.matmul(&w)?.tanh()?.matmul(&w)?
        };
        autograd::grad(
            &[y.to_dtype(DType::F32)?.sum()?],
            &[x.clone(), w.clone()],
            Default::default(),
        )?
    };
    for use_reentrant in [false, true] {
        let wc = w.clone();
        let y = {
            let _region = autocast(Device::Cpu, DType::BF16)?;
            autograd::checkpoint(
                move |xs: &[Tensor]| Ok(vec![xs[0].matmul(&wc)?.tanh()?.matmul(&wc)?]),
                &[x.clone()],
                autograd::CheckpointOptions::new().use_reentrant(use_reentrant),
            )?
            .remove(0)
        };
        assert_eq!(y.dtype(), DType::BF16);
        x.set_grad(None)?;
        w.set_grad(None)?;
        y.to_dtype(DType::F32)?.sum()?.backward()?; // outside the region
        for (p, g) in [&x, &w].into_iter().zip(&plain) {
            assert_eq!(
                values(&p.grad().unwrap()),
                values(g.as_ref().unwrap()),
                "use_reentrant={use_reentrant}"
            );
        }
    }
    Ok(())
}
