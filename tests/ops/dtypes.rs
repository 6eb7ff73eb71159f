//! Integer, bool and half-precision tensors against PyTorch 2.15 (values printed by
//! `tests/ops/dtypes_values.py`): the promotion tables, casts, integer and bool arithmetic,
//! printing, half precision computed in f32, masks, `where`, `masked_fill` and the
//! arg-reductions, and the errors PyTorch raises.

use autograd::{DType, Scalar, Tensor, bf16, f16, result_type};

type R = autograd::Result<()>;

/// PyTorch's dtype names, in the order of `DType::ALL`.
const NAMES: [&str; 8] = [
    "bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
];

fn name(d: DType) -> &'static str {
    NAMES[DType::ALL
        .iter()
        .position(|&x| x == d)
        .expect("every dtype is in ALL")]
}

#[test]
fn promote_types_is_pytorchs_table() {
    let table = "\
bool uint8 int32 int64 float16 bfloat16 float32 float64
uint8 uint8 int32 int64 float16 bfloat16 float32 float64
int32 int32 int32 int64 float16 bfloat16 float32 float64
int64 int64 int64 int64 float16 bfloat16 float32 float64
float16 float16 float16 float16 float16 float32 float32 float64
bfloat16 bfloat16 bfloat16 bfloat16 float32 bfloat16 float32 float64
float32 float32 float32 float32 float32 float32 float32 float64
float64 float64 float64 float64 float64 float64 float64 float64";
    for (a, row) in DType::ALL.iter().zip(table.lines()) {
        let ours: Vec<&str> = DType::ALL.iter().map(|&b| name(a.promote(b))).collect();
        assert_eq!(ours.join(" "), row, "promote({a}, ..)");
    }
}

#[test]
fn a_0_dim_tensor_promotes_only_from_a_higher_category() -> R {
    let table = "\
bool uint8 int32 int64 float16 bfloat16 float32 float64
uint8 uint8 uint8 uint8 float16 bfloat16 float32 float64
int32 int32 int32 int32 float16 bfloat16 float32 float64
int64 int64 int64 int64 float16 bfloat16 float32 float64
float16 float16 float16 float16 float16 float16 float16 float16
bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16
float32 float32 float32 float32 float32 float32 float32 float32
float64 float64 float64 float64 float64 float64 float64 float64";
    for (&a, row) in DType::ALL.iter().zip(table.lines()) {
        let x = Tensor::ones(&[2], a)?;
        let mut ours = Vec::new();
        for &b in &DType::ALL {
            let z = Tensor::ones(&[], b)?;
            ours.push(name(result_type(&x, &z)));
            // The order of the operands does not matter.
            assert_eq!(result_type(&z, &x), result_type(&x, &z));
        }
        assert_eq!(ours.join(" "), row, "result_type({a} tensor, 0-dim ..)");
    }
    Ok(())
}

#[test]
fn scalars_promote_by_kind() -> R {
    // PyTorch: (int scalar, float scalar, bool scalar) for each tensor dtype.
    let expected = [
        ("bool", "int64", "float32", "bool"),
        ("uint8", "uint8", "float32", "uint8"),
        ("int32", "int32", "float32", "int32"),
        ("int64", "int64", "float32", "int64"),
        ("float16", "float16", "float16", "float16"),
        ("bfloat16", "bfloat16", "bfloat16", "bfloat16"),
        ("float32", "float32", "float32", "float32"),
        ("float64", "float64", "float64", "float64"),
    ];
    for (&d, (_, int, float, boolean)) in DType::ALL.iter().zip(expected) {
        assert_eq!(name(Scalar::from(2).result_type_with(d)), int);
        assert_eq!(name(Scalar::from(2.5).result_type_with(d)), float);
        assert_eq!(name(Scalar::from(true).result_type_with(d)), boolean);
    }
    let ints = Tensor::from_vec(vec![1i64, 2, 3], &[3])?;
    let scaled = &ints * 2.5;
    assert_eq!(scaled.dtype(), DType::F32);
    assert_eq!(scaled.to_vec::<f32>()?, vec![2.5, 5.0, 7.5]);
    assert_eq!((&ints * 2).dtype(), DType::I64);
    assert_eq!((&ints * 2).to_vec::<i64>()?, vec![2, 4, 6]);
    let mask = Tensor::from_vec(vec![true, false], &[2])?;
    assert_eq!(mask.add_scalar(1)?.dtype(), DType::I64);
    let h = Tensor::ones(&[2], DType::F16)?;
    assert_eq!(h.add_scalar(2.5)?.dtype(), DType::F16);
    assert_eq!(h.add(&Tensor::scalar(1.0f32))?.dtype(), DType::F16);
    assert_eq!(h.mul_scalar(0.5f32)?.dtype(), DType::F16);
    Ok(())
}

#[test]
fn casts_follow_pytorchs_rules() -> R {
    let inf = f64::INFINITY;
    let x = Tensor::from_vec(
        vec![
            -1.7,
            -0.5,
            0.0,
            0.5,
            2.5,
            300.0,
            -300.0,
            65504.0,
            1e6,
            f64::NAN,
            inf,
        ],
        &[11],
    )?;
    let min64 = i64::MIN;
    assert_eq!(
        x.to_dtype(DType::I64)?.to_vec::<i64>()?,
        vec![-1, 0, 0, 0, 2, 300, -300, 65504, 1000000, min64, min64]
    );
    let min32 = i32::MIN;
    assert_eq!(
        x.to_dtype(DType::I32)?.to_vec::<i32>()?,
        vec![-1, 0, 0, 0, 2, 300, -300, 65504, 1000000, min32, min32]
    );
    assert_eq!(
        x.to_dtype(DType::U8)?.to_vec::<u8>()?,
        vec![255, 0, 0, 0, 2, 44, 212, 224, 64, 0, 0]
    );
    assert_eq!(
        x.to_dtype(DType::Bool)?.to_vec::<bool>()?,
        vec![
            true, true, false, true, true, true, true, true, true, true, true
        ]
    );
    let halves: Vec<f64> = x
        .to_dtype(DType::F16)?
        .to_vec::<f16>()?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let want = [
        -1.7001953125,
        -0.5,
        0.0,
        0.5,
        2.5,
        300.0,
        -300.0,
        65504.0,
        inf,
    ];
    assert_eq!(
        &halves[..9],
        &want[..8].iter().chain([&inf]).copied().collect::<Vec<_>>()[..]
    );
    assert!(halves[9].is_nan() && halves[10] == inf);
    let bf: Vec<f64> = x
        .to_dtype(DType::BF16)?
        .to_vec::<bf16>()?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    assert_eq!(
        &bf[..9],
        &[
            -1.703125, -0.5, 0.0, 0.5, 2.5, 300.0, -300.0, 65536.0, 999424.0
        ]
    );
    // Back from the integer types: exact.
    let i = Tensor::from_vec(vec![-3i32, 7], &[2])?;
    assert_eq!(i.to_dtype(DType::F64)?.to_vec::<f64>()?, vec![-3.0, 7.0]);
    assert_eq!(i.to_dtype(DType::I64)?.to_vec::<i64>()?, vec![-3, 7]);
    assert_eq!(i.to_dtype(DType::U8)?.to_vec::<u8>()?, vec![253, 7]);
    Ok(())
}

#[test]
fn integer_and_bool_arithmetic_is_pytorchs() -> R {
    let a = Tensor::from_vec(vec![7i64, -7, 7, -7], &[4])?;
    let b = Tensor::from_vec(vec![3i64, 3, -3, -3], &[4])?;
    assert_eq!(a.remainder(&b)?.to_vec::<i64>()?, vec![1, 2, -2, -1]);
    assert_eq!(a.fmod(&b)?.to_vec::<i64>()?, vec![1, -1, 1, -1]);
    // True division is a float.
    let q = Tensor::from_vec(vec![1i64, 2, 3], &[3])?
        .div(&Tensor::from_vec(vec![2i64, 2, 2], &[3])?)?;
    assert_eq!(
        (q.dtype(), q.to_vec::<f32>()?),
        (DType::F32, vec![0.5, 1.0, 1.5])
    );
    // uint8 wraps.
    let u = Tensor::from_vec(vec![200u8], &[1])?.add(&Tensor::from_vec(vec![100u8], &[1])?)?;
    assert_eq!(u.to_vec::<u8>()?, vec![44]);
    // bool: `+` is "or"; `-` and negation are refused with PyTorch's words.
    let t = Tensor::from_vec(vec![true, false], &[2])?;
    let s = Tensor::from_vec(vec![true, true], &[2])?;
    assert_eq!(t.add(&s)?.to_vec::<bool>()?, vec![true, true]);
    assert_eq!(
        t.sub(&s).unwrap_err().to_string(),
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or \
         `logical_xor()` operator instead."
    );
    assert_eq!(
        t.neg().unwrap_err().to_string(),
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to \
         invert a mask, use the `~` or `logical_not()` operator instead."
    );
    // Sums of integers and bools are int64.
    let total = Tensor::from_vec(vec![1i32, 2, 3], &[3])?.sum()?;
    assert_eq!((total.dtype(), total.item::<i64>()?), (DType::I64, 6));
    assert_eq!(s.sum()?.item::<i64>()?, 2);
    // Floating functions promote integers to f32.
    let r = Tensor::from_vec(vec![4i64, 2], &[2])?.sqrt()?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f32>()?),
        (DType::F32, vec![2.0, std::f32::consts::SQRT_2])
    );
    assert_eq!(
        Tensor::from_vec(vec![1i64, 2, 3], &[3])?.exp()?.dtype(),
        DType::F32
    );
    Ok(())
}

#[test]
fn errors_are_pytorchs() -> R {
    let long = Tensor::zeros(&[2], DType::I64)?;
    assert_eq!(
        long.set_requires_grad(true).unwrap_err().to_string(),
        "only Tensors of floating point dtype can require gradients"
    );
    assert_eq!(
        long.softmax(0).unwrap_err().to_string(),
        "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"
    );
    let x = Tensor::from_vec(vec![1.0f32], &[1])?;
    assert_eq!(
        Tensor::where_(&long, &x, &x).unwrap_err().to_string(),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Long"
    );
    Ok(())
}

#[test]
fn tensors_print_as_pytorchs() -> R {
    let cases: [(Tensor, &str); 9] = [
        (
            Tensor::from_vec(vec![1i64, -20, 3], &[3])?,
            "tensor([  1, -20,   3])",
        ),
        (
            Tensor::from_vec(vec![true, false, true], &[3])?,
            "tensor([ True, False,  True])",
        ),
        (
            Tensor::from_vec(vec![1i32, 2], &[2])?,
            "tensor([1, 2], dtype=torch.int32)",
        ),
        (
            Tensor::from_vec(vec![f16::from_f32(1.5), f16::from_f32(2.0)], &[2])?,
            "tensor([1.5000, 2.0000], dtype=torch.float16)",
        ),
        (
            Tensor::from_vec(vec![bf16::from_f32(1.5), bf16::from_f32(2.0)], &[2])?,
            "tensor([1.5000, 2.0000], dtype=torch.bfloat16)",
        ),
        (
            Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2])?,
            "tensor([[1, 2],\n        [3, 4]], dtype=torch.uint8)",
        ),
        (
            Tensor::zeros(&[0], DType::I64)?,
            "tensor([], dtype=torch.int64)",
        ),
        (Tensor::scalar(5i64), "tensor(5)"),
        (Tensor::scalar(true), "tensor(True)"),
    ];
    for (t, want) in cases {
        assert_eq!(t.to_string(), want);
    }
    Ok(())
}

#[test]
fn half_precision_computes_in_f32_and_rounds_once() -> R {
    let h = |v: &[f32]| -> autograd::Result<Tensor> {
        Tensor::from_vec(v.iter().map(|&x| f16::from_f32(x)).collect(), &[v.len()])
    };
    let read = |t: &Tensor| -> autograd::Result<Vec<f64>> {
        Ok(t.to_vec::<f16>()?.iter().map(|v| v.to_f64()).collect())
    };
    assert_eq!(read(&h(&[0.1, 2.0])?.exp()?)?, vec![1.10546875, 7.390625]);
    assert_eq!(
        read(&h(&[0.1, 2.0])?.mul(&h(&[3.0, 0.7])?)?)?,
        vec![0.2998046875, 1.400390625]
    );
    assert_eq!(read(&h(&[0.1, 0.2, 0.3])?.sum()?)?, vec![0.60009765625]);
    let b = Tensor::from_vec(vec![bf16::from_f32(0.1); 100], &[100])?;
    assert_eq!(b.sum()?.to_vec::<bf16>()?[0].to_f64(), 10.0);
    // A bf16 GEMM: one f32 product, each result rounded once.
    let m = Tensor::from_vec(
        [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .map(|&v| bf16::from_f32(v))
            .collect(),
        &[2, 2],
    )?
    .mul_scalar(0.3)?;
    let p: Vec<f64> = m
        .matmul(&m)?
        .to_vec::<bf16>()?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    assert_eq!(p, vec![0.6328125, 0.90625, 1.3515625, 1.984375]);
    Ok(())
}

#[test]
fn gradients_come_back_in_each_inputs_dtype() -> R {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let b = Tensor::from_vec(vec![10.0f64, 20.0, 30.0], &[3])?.requires_grad_(true)?;
    let y = a.mul(&b)?;
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(
        y.grad_fn().map(|n| n.name().to_string()),
        Some("MulBackward0".into())
    );
    y.sum()?.backward()?;
    let ga = a.grad().expect("a requires grad");
    let gb = b.grad().expect("b requires grad");
    assert_eq!(
        (ga.dtype(), ga.to_vec::<f32>()?),
        (DType::F32, vec![10.0, 20.0, 30.0])
    );
    assert_eq!(
        (gb.dtype(), gb.to_vec::<f64>()?),
        (DType::F64, vec![1.0, 2.0, 3.0])
    );
    // A half leaf gets a half gradient.
    let h = Tensor::from_vec(vec![f16::from_f32(1.5)], &[1])?.requires_grad_(true)?;
    h.mul_scalar(3)?.sum()?.backward()?;
    let gh = h.grad().expect("h requires grad");
    assert_eq!(
        (gh.dtype(), gh.to_vec::<f16>()?[0].to_f64()),
        (DType::F16, 3.0)
    );
    Ok(())
}

#[test]
fn masks_where_and_masked_fill_route_gradients_as_pytorch() -> R {
    let x = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0], &[3])?.requires_grad_(true)?;
    let m = x.gt_scalar(0)?;
    assert_eq!((m.dtype(), m.requires_grad()), (DType::Bool, false));
    let r = Tensor::where_(&m, &x, &Tensor::scalar(0.0f32))?;
    assert_eq!(
        r.grad_fn().map(|n| n.name().to_string()),
        Some("WhereBackward0".into())
    );
    r.mul(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?)?
        .sum()?
        .backward()?;
    assert_eq!(
        x.grad().expect("grad").to_vec::<f32>()?,
        vec![0.0, 2.0, 0.0]
    );

    let x = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0], &[3])?.requires_grad_(true)?;
    let r = x.masked_fill(&x.lt_scalar(0)?, 5.0)?;
    assert_eq!(
        r.grad_fn().map(|n| n.name().to_string()),
        Some("MaskedFillBackward0".into())
    );
    assert_eq!(r.to_vec::<f32>()?, vec![5.0, 2.0, 5.0]);
    r.sum()?.backward()?;
    assert_eq!(
        x.grad().expect("grad").to_vec::<f32>()?,
        vec![0.0, 1.0, 0.0]
    );

    let ints = Tensor::from_vec(vec![1i64, 2, 3], &[3])?;
    assert_eq!(
        ints.lt_scalar(2.5)?.to_vec::<bool>()?,
        vec![true, true, false]
    );
    let nan = Tensor::from_vec(vec![1.0f64, f64::NAN], &[2])?;
    assert_eq!(nan.ne(&nan)?.to_vec::<bool>()?, vec![false, true]);
    Ok(())
}

#[test]
fn arg_reductions_give_int64_positions() -> R {
    let t = Tensor::from_vec(vec![0.1f32, 2.0, 0.3, 5.0, 0.0, 1.0], &[2, 3])?;
    assert_eq!(t.argmax(Some(1), false)?.to_vec::<i64>()?, vec![1, 0]);
    assert_eq!(t.argmax(None, false)?.item::<i64>()?, 3);
    assert_eq!(t.argmax(Some(1), true)?.shape(), &[2, 1]);
    let i = Tensor::from_vec(vec![3i64, 1, 2, 1], &[4])?;
    assert_eq!(i.argmin(None, false)?.item::<i64>()?, 1);
    let nan = Tensor::from_vec(vec![1.0f64, f64::NAN, 3.0], &[3])?;
    assert_eq!(nan.argmax(None, false)?.item::<i64>()?, 1);
    let nan = Tensor::from_vec(vec![1.0f64, f64::NAN, 0.0], &[3])?;
    assert_eq!(nan.argmin(None, false)?.item::<i64>()?, 1);
    Ok(())
}

#[test]
fn every_dtype_round_trips_a_checkpoint() -> R {
    let mut dict = autograd::StateDict::new();
    dict.insert("i64", Tensor::from_vec(vec![i64::MIN, 7], &[2])?);
    dict.insert("i32", Tensor::from_vec(vec![-5i32], &[1])?);
    dict.insert("u8", Tensor::from_vec(vec![255u8, 0], &[2])?);
    dict.insert("bool", Tensor::from_vec(vec![true, false], &[2])?);
    dict.insert("f16", Tensor::from_vec(vec![f16::from_f32(0.1)], &[1])?);
    dict.insert("bf16", Tensor::from_vec(vec![bf16::from_f32(-2.5)], &[1])?);
    let back = autograd::StateDict::from_bytes(&dict.to_bytes()?)?;
    for (k, v) in dict.iter() {
        let w = back.get(k).expect("every key comes back");
        assert_eq!(
            (w.dtype(), w.to_string()),
            (v.dtype(), v.to_string()),
            "{k}"
        );
    }
    Ok(())
}

#[test]
fn integer_reductions_and_scalars_never_truncate_silently() -> R {
    let ints = Tensor::from_vec(vec![1i64, 2], &[2])?;
    assert_eq!(
        ints.mean().unwrap_err().to_string(),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or \
         complex dtype. Got: Long"
    );
    assert_eq!(
        ints.var_dims(&[0], 1.0, false).unwrap_err().to_string(),
        "std and var only support floating point and complex dtypes"
    );
    // `int * 0.5` is a float, whichever way it is spelled.
    assert_eq!(ints.mul_scalar(0.5)?.to_vec::<f32>()?, vec![0.5, 1.0]);
    assert_eq!((&ints / 2).to_vec::<f32>()?, vec![0.5, 1.0]);
    assert_eq!((&ints - 3).to_vec::<i64>()?, vec![-2, -1]);
    assert_eq!((10 - &ints).to_vec::<i64>()?, vec![9, 8]);
    assert_eq!(ints.add_scalar(1u8)?.to_vec::<i64>()?, vec![2, 3]);
    // Constructors with dtypes.
    assert_eq!(
        Tensor::full(&[2], 3, DType::U8)?.to_vec::<u8>()?,
        vec![3, 3]
    );
    assert_eq!(
        Tensor::eye(2, None, DType::I64)?.to_vec::<i64>()?,
        vec![1, 0, 0, 1]
    );
    assert_eq!(Tensor::arange(0, 3, 1)?.to_string(), "tensor([0, 1, 2])");
    Ok(())
}

/// Integer scalars on integer tensors are exact (PyTorch keeps an `int64_t` scalar, never a
/// double): 2^53 + 1 and `i64::MAX`/`MIN` through arithmetic, comparisons, the fills and the
/// index ops, wrapping into the narrower integer types as PyTorch's casts; the fills refuse a
/// value the dtype cannot hold with PyTorch's text. Values printed by PyTorch 2.15.
#[test]
fn integer_scalars_stay_exact_beyond_2_pow_53() -> R {
    const B: i64 = 9_007_199_254_740_993; // 2^53 + 1: the first integer f64 cannot hold
    let x = Tensor::from_vec(vec![0i64, 1, -1], &[3])?;
    let long = |t: Tensor| t.to_vec::<i64>().unwrap();
    assert_eq!(
        long(x.add_scalar(B)?),
        [9007199254740993, 9007199254740994, 9007199254740992]
    );
    assert_eq!(
        long(x.mul_scalar(B)?),
        [0, 9007199254740993, -9007199254740993]
    );
    assert_eq!(
        long(x.sub_scalar(B)?),
        [-9007199254740993, -9007199254740992, -9007199254740994]
    );
    assert_eq!(
        long(x.rsub_scalar(B)?),
        [9007199254740993, 9007199254740992, 9007199254740994]
    );
    // Wrapping at the ends of int64, as PyTorch's kernels.
    let max = Tensor::from_vec(vec![i64::MAX], &[1])?;
    let min = Tensor::from_vec(vec![i64::MIN], &[1])?;
    assert_eq!(long(max.add_scalar(1)?), [i64::MIN]);
    assert_eq!(long(min.sub_scalar(1)?), [i64::MAX]);
    assert_eq!(
        long(Tensor::from_vec(vec![1i64], &[1])?.mul_scalar(i64::MAX)?),
        [i64::MAX]
    );
    assert_eq!(
        long(x.sub_scalar(i64::MIN)?),
        [i64::MIN, -i64::MAX, i64::MAX]
    );
    // Comparisons.
    let near = Tensor::from_vec(vec![B, B - 1], &[2])?;
    assert_eq!(near.eq_scalar(B)?.to_vec::<bool>()?, [true, false]);
    assert_eq!(near.gt_scalar(B - 1)?.to_vec::<bool>()?, [true, false]);
    assert_eq!(near.lt_scalar(B)?.to_vec::<bool>()?, [false, true]);
    assert_eq!(min.eq_scalar(i64::MIN)?.to_vec::<bool>()?, [true]);
    // Fills and constructors.
    assert_eq!(
        long(Tensor::full(&[2], i64::MAX, DType::I64)?),
        [i64::MAX; 2]
    );
    assert_eq!(
        long(Tensor::full(&[2], i64::MIN, DType::I64)?),
        [i64::MIN; 2]
    );
    assert_eq!(long(x.full_like(B)?), [B; 3]);
    let filled = Tensor::zeros(&[3], DType::I64)?;
    filled.fill_(B)?;
    assert_eq!(long(filled.clone()), [B; 3]);
    filled.fill_(i64::MAX)?;
    assert_eq!(long(filled), [i64::MAX; 3]);
    let mask = Tensor::from_vec(vec![true, false, true], &[3])?;
    assert_eq!(
        long(x.masked_fill(&mask, i64::MAX)?),
        [i64::MAX, 1, i64::MAX]
    );
    let at = Tensor::from_vec(vec![1i64], &[1])?;
    let zeros = Tensor::zeros(&[3], DType::I64)?;
    assert_eq!(long(zeros.scatter_value(0, &at, B)?), [0, B, 0]);
    assert_eq!(long(zeros.index_add(0, &at, &at, B)?), [0, B, 0]);
    // A narrower integer type wraps the scalar in arithmetic and comparisons...
    let i32_one = Tensor::from_vec(vec![1i32], &[1])?;
    assert_eq!(i32_one.add_scalar(1i64 << 40)?.to_vec::<i32>()?, [1]);
    assert_eq!(i32_one.mul_scalar((1i64 << 40) + 3)?.to_vec::<i32>()?, [3]);
    assert_eq!(
        i32_one.eq_scalar((1i64 << 32) + 1)?.to_vec::<bool>()?,
        [true]
    );
    let u8_one = Tensor::from_vec(vec![1u8], &[1])?;
    assert_eq!(u8_one.add_scalar(256)?.to_vec::<u8>()?, [1]);
    assert_eq!(u8_one.add_scalar(255)?.to_vec::<u8>()?, [0]);
    assert_eq!(u8_one.add_scalar(-1)?.to_vec::<u8>()?, [0]);
    let u8_five = Tensor::from_vec(vec![5u8], &[1])?;
    assert_eq!(u8_five.gt_scalar(-1)?.to_vec::<bool>()?, [false]);
    assert_eq!(u8_five.gt_scalar(256)?.to_vec::<bool>()?, [true]);
    // ... and the fills check it fits, as PyTorch's `checked_convert`.
    assert_eq!(Tensor::full(&[1], -1, DType::U8)?.to_vec::<u8>()?, [255]);
    assert_eq!(
        Tensor::full(&[1], 2, DType::Bool)?.to_vec::<bool>()?,
        [true]
    );
    assert_eq!(long(Tensor::full(&[1], 2.7, DType::I64)?), [2]);
    let overflow = |r: autograd::Result<Tensor>| r.unwrap_err().to_string();
    let int = "value cannot be converted to type int without overflow";
    let uint8 = "value cannot be converted to type uint8_t without overflow";
    let int64 = "value cannot be converted to type int64_t without overflow";
    assert_eq!(overflow(Tensor::full(&[1], 1i64 << 40, DType::I32)), int);
    assert_eq!(overflow(Tensor::full(&[1], 1i64 << 31, DType::I32)), int);
    assert_eq!(overflow(Tensor::full(&[1], f64::INFINITY, DType::I32)), int);
    assert_eq!(overflow(Tensor::full(&[1], 256, DType::U8)), uint8);
    assert_eq!(overflow(Tensor::full(&[1], -256, DType::U8)), uint8);
    assert_eq!(overflow(Tensor::full(&[1], -1.0, DType::U8)), uint8);
    assert_eq!(overflow(Tensor::full(&[1], 300.0, DType::U8)), uint8);
    assert_eq!(overflow(Tensor::full(&[1], f64::NAN, DType::I64)), int64);
    assert_eq!(
        overflow(Tensor::full(&[1], 2f64.powi(63), DType::I64)),
        int64
    );
    let ints = Tensor::zeros(&[1], DType::I32)?;
    assert_eq!(ints.fill_(1i64 << 31).unwrap_err().to_string(), int);
    assert_eq!(ints.fill_(2f64.powi(40)).unwrap_err().to_string(), int);
    let yes = Tensor::from_vec(vec![true], &[1])?;
    assert_eq!(overflow(ints.masked_fill(&yes, 1i64 << 31)), int);
    assert_eq!(
        overflow(x.masked_fill(&mask, f64::NEG_INFINITY)),
        "value cannot be converted to type int64_t without overflow"
    );
    // `masked_fill` and `fill_` check floats too (`full` does not: it gives inf).
    let halves = Tensor::zeros(&[3], DType::F16)?;
    let half_overflow = "value cannot be converted to type c10::Half without overflow";
    assert_eq!(overflow(halves.masked_fill(&mask, 65519.0)), half_overflow);
    assert_eq!(overflow(halves.masked_fill(&mask, 70000)), half_overflow);
    assert_eq!(halves.fill_(1e6).unwrap_err().to_string(), half_overflow);
    let bf = Tensor::zeros(&[3], DType::BF16)?;
    assert_eq!(
        overflow(bf.masked_fill(&mask, 1e300)),
        "value cannot be converted to type c10::BFloat16 without overflow"
    );
    let singles = Tensor::zeros(&[3], DType::F32)?;
    assert_eq!(
        overflow(singles.masked_fill(&mask, 1e300)),
        "value cannot be converted to type float without overflow"
    );
    assert!(singles.masked_fill(&mask, f64::NAN)?.to_vec::<f32>()?[0].is_nan());
    assert_eq!(
        Tensor::full(&[1], 1e6, DType::F16)?.to_vec::<f16>()?,
        [f16::INFINITY]
    );
    // `masked_fill` keeps the tensor's dtype: a float value truncates into an integer tensor.
    let ints2 = Tensor::from_vec(vec![1i64, 2], &[2])?;
    let first = Tensor::from_vec(vec![true, false], &[2])?;
    let filled = ints2.masked_fill(&first, 2.7)?;
    assert_eq!((filled.dtype(), long(filled)), (DType::I64, vec![2, 2]));
    assert_eq!(long(ints2.masked_fill(&first, -2.7)?), [-2, 2]);
    let u8s = Tensor::from_vec(vec![1u8, 2], &[2])?;
    assert_eq!(u8s.masked_fill(&first, -1)?.to_vec::<u8>()?, [255, 2]);
    // Float tensors keep taking the scalar as a double, as PyTorch does.
    let f = Tensor::from_vec(vec![0.0f64], &[1])?;
    assert_eq!(f.add_scalar(B)?.to_vec::<f64>()?, [9007199254740992.0]);
    Ok(())
}

/// `clamp`, `fmod`/`remainder` by a scalar and `arange` take any scalar, exact on integer
/// tensors past 2^53, with PyTorch 2.15's values, promotion, range checks and texts.
#[test]
fn clamp_fmod_remainder_and_arange_take_integer_scalars_exactly() -> R {
    const B: i64 = 1 << 62;
    let long = |t: Tensor| (t.dtype(), t.to_vec::<i64>().unwrap());
    let big = Tensor::from_vec(vec![B + 1, B + 9], &[2])?;
    let err = |r: autograd::Result<Tensor>| r.unwrap_err().to_string();
    // torch.tensor([2**62+1]).clamp(max=2**62+3) and friends.
    let one = Tensor::from_vec(vec![B + 1], &[1])?;
    assert_eq!(long(one.clamp(None, B + 3)?), (DType::I64, vec![B + 1]));
    let five = Tensor::from_vec(vec![B + 5], &[1])?;
    assert_eq!(long(five.clamp(None, B + 3)?), (DType::I64, vec![B + 3]));
    assert_eq!(long(big.clamp(B + 3, None)?).1, [B + 3, B + 9]);
    assert_eq!(long(big.clamp(B + 3, B + 7)?).1, [B + 3, B + 7]);
    let small = Tensor::from_vec(vec![5i64, -3], &[2])?;
    assert_eq!(long(small.clamp(0, None)?), (DType::I64, vec![5, 0]));
    assert_eq!(long(small.clamp(7, 3)?).1, [3, 3]);
    // A float bound promotes to float32; a bool tensor takes an integer bound as int64.
    let f = small.clamp(None, 2.5)?;
    assert_eq!(
        (f.dtype(), f.to_vec::<f32>()?),
        (DType::F32, vec![2.5, -3.0])
    );
    let mask = Tensor::from_vec(vec![true, false], &[2])?;
    assert_eq!(long(mask.clamp(0, None)?), (DType::I64, vec![1, 0]));
    assert_eq!(long(mask.clamp(2, None)?).1, [2, 2]);
    let f = mask.clamp(None, Some(0.5))?;
    assert_eq!(
        (f.dtype(), f.to_vec::<f32>()?),
        (DType::F32, vec![0.5, 0.0])
    );
    assert_eq!(
        err(mask.clamp(true, None)),
        "\"clamp_min_scalar_cpu\" not implemented for 'Bool'"
    );
    // Narrower integer tensors: a bound past the dtype's range is no bound in one direction
    // and refused in the other.
    let i32s = Tensor::from_vec(vec![5i32, -3], &[2])?;
    assert_eq!(i32s.clamp(0, 3)?.to_vec::<i32>()?, [3, 0]);
    assert_eq!(
        i32s.clamp(-(1i64 << 40), 1i64 << 40)?.to_vec::<i32>()?,
        [5, -3]
    );
    assert_eq!(
        i32s.clamp(i64::from(i32::MAX), None)?.to_vec::<i32>()?,
        [i32::MAX; 2]
    );
    assert_eq!(
        err(i32s.clamp(1i64 << 40, None)),
        "Clamp min value 1.09951e+12 is outside the representable range of Int"
    );
    assert_eq!(
        err(i32s.clamp(3_000_000_000i64, None)),
        "Clamp min value 3e+09 is outside the representable range of Int"
    );
    assert_eq!(
        err(i32s.clamp(1, -2_147_483_649i64)),
        "Clamp max value -2.14748e+09 is outside the representable range of Int"
    );
    let u8s = Tensor::from_vec(vec![200u8, 3], &[2])?;
    assert_eq!(u8s.clamp(None, 300)?.to_vec::<u8>()?, [200, 3]);
    assert_eq!(u8s.clamp(-1, None)?.to_vec::<u8>()?, [200, 3]);
    assert_eq!(u8s.clamp(2, 100)?.to_vec::<u8>()?, [100, 3]);
    assert_eq!(
        err(u8s.clamp(300, None)),
        "Clamp min value 300 is outside the representable range of Byte"
    );
    assert_eq!(
        err(u8s.clamp(None, -1)),
        "Clamp max value -1 is outside the representable range of Byte"
    );
    assert_eq!(
        err(u8s.clamp(1_000_000, None)),
        "Clamp min value 1e+06 is outside the representable range of Byte"
    );
    assert_eq!(
        err(Tensor::from_vec(vec![5i64], &[1])?.clamp(None, None)),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    // Float tensors: an integer bound as a double; a bound past a narrower float's range is
    // refused as PyTorch's `checked_convert` refuses it.
    let d = Tensor::from_vec(vec![5.0f64], &[1])?;
    assert_eq!(
        d.clamp(B + 1, None)?.to_vec::<f64>()?,
        [4.611686018427388e18]
    );
    let h = Tensor::from_vec(vec![1.5f32, -3.0], &[2])?.to_dtype(DType::F16)?;
    assert_eq!(
        h.clamp(Some(0.25), None)?.to_vec::<f16>()?,
        [f16::from_f32(1.5), f16::from_f32(0.25)]
    );
    assert_eq!(
        err(h.clamp(Some(1e6), None)),
        "value cannot be converted to type c10::Half without overflow"
    );
    assert_eq!(
        err(Tensor::from_vec(vec![1.0f32], &[1])?.clamp(Some(1e39), None)),
        "value cannot be converted to type float without overflow"
    );

    // torch.tensor([2**62+7]).fmod(5), .remainder(5), and the negative side.
    let seven = Tensor::from_vec(vec![B + 7], &[1])?;
    assert_eq!(long(seven.fmod_scalar(5)?), (DType::I64, vec![1]));
    assert_eq!(long(seven.remainder_scalar(5)?), (DType::I64, vec![1]));
    assert_eq!(long(seven.fmod_scalar(B + 3)?).1, [4]);
    let neg = Tensor::from_vec(vec![-B - 7], &[1])?;
    assert_eq!(long(neg.remainder_scalar(5)?).1, [4]);
    assert_eq!(long(neg.fmod_scalar(5)?).1, [-1]);
    let min = Tensor::from_vec(vec![i64::MIN], &[1])?;
    assert_eq!(long(min.fmod_scalar(-1)?).1, [0]);
    assert_eq!(long(min.remainder_scalar(-1)?).1, [0]);
    // Promotion: a float scalar makes an integer tensor float32; a narrower integer type
    // wraps the scalar as PyTorch's cast.
    let s7 = Tensor::from_vec(vec![7i64], &[1])?;
    for r in [s7.fmod_scalar(2.5)?, s7.remainder_scalar(2.5)?] {
        assert_eq!((r.dtype(), r.to_vec::<f32>()?), (DType::F32, vec![2.0]));
    }
    assert!(s7.fmod_scalar(0.0)?.to_vec::<f32>()?[0].is_nan());
    assert_eq!(err(s7.fmod_scalar(0)), "ZeroDivisionError");
    assert_eq!(err(s7.remainder_scalar(0)), "ZeroDivisionError");
    let yes = Tensor::from_vec(vec![true], &[1])?;
    assert_eq!(long(yes.fmod_scalar(7)?), (DType::I64, vec![1]));
    let r = yes.fmod_scalar(7.0)?;
    assert_eq!((r.dtype(), r.to_vec::<f32>()?), (DType::F32, vec![1.0]));
    let i32_300 = Tensor::from_vec(vec![300i32], &[1])?;
    assert_eq!(i32_300.fmod_scalar((1i64 << 33) + 7)?.to_vec::<i32>()?, [6]);
    let u8_100 = Tensor::from_vec(vec![100u8], &[1])?;
    assert_eq!(u8_100.remainder_scalar(-3)?.to_vec::<u8>()?, [100]);

    // torch.arange(2**60, 2**60 + 5) and friends.
    let a = Tensor::arange(1i64 << 60, (1i64 << 60) + 5, 1)?;
    assert_eq!(
        long(a),
        (DType::I64, (0..5).map(|i| (1i64 << 60) + i).collect())
    );
    assert_eq!(long(Tensor::arange(B, B + 7, 3)?).1, [B, B + 3, B + 6]);
    assert_eq!(
        long(Tensor::arange(i64::MAX - 2, i64::MAX, 1)?).1,
        [i64::MAX - 2, i64::MAX - 1]
    );
    assert_eq!(
        err(Tensor::arange(B + 1, B, 1)),
        "invalid size, possible overflow?"
    );
    Ok(())
}

/// What the dtype corpus (`tests/corpus/dtypes.rs`) found, with PyTorch 2.15's values.
#[test]
fn dtype_corpus_findings_are_pytorchs() -> R {
    let mask = Tensor::from_vec(vec![true, false], &[2])?;
    let ints = Tensor::from_vec(vec![1i64, 2], &[2])?;
    let bool_text = "Subtraction, the `-` operator, with a bool tensor is not supported. If you \
                     are trying to invert a mask, use the `~` or `logical_not()` operator instead.";
    // One bool operand beside another dtype, a tensor or a scalar, is refused.
    assert_eq!(ints.sub(&mask).unwrap_err().to_string(), bool_text);
    assert_eq!(mask.sub_scalar(1).unwrap_err().to_string(), bool_text);
    assert_eq!(ints.sub_scalar(true).unwrap_err().to_string(), bool_text);
    assert_eq!(mask.rsub_scalar(0.5).unwrap_err().to_string(), bool_text);
    // Half: `x - s` casts `s` to half first; `x / s` divides by `s` in f32; the gradient of
    // `x / s` too; a mean rounds once.
    let h = Tensor::from_vec(vec![f16::from_f64(0.2066650390625)], &[1])?;
    assert_eq!(
        h.sub_scalar(0.3)?.to_vec::<f16>()?[0].to_f64(),
        -0.0933837890625
    );
    assert_eq!(
        h.rsub_scalar(0.3)?.to_vec::<f16>()?[0].to_f64(),
        0.0933837890625
    );
    let b = Tensor::from_vec(vec![bf16::from_f64(2.375), bf16::from_f64(2.75)], &[2])?
        .requires_grad_(true)?;
    let y = b.div_scalar(0.3)?;
    let got: Vec<f64> = y.to_vec::<bf16>()?.iter().map(|v| v.to_f64()).collect();
    assert_eq!(got, vec![7.90625, 9.1875]);
    let c = Tensor::from_vec(vec![bf16::from_f64(1.0), bf16::from_f64(2.75)], &[2])?;
    y.mul(&c)?.sum()?.backward()?;
    let g: Vec<f64> = b
        .grad()
        .unwrap()
        .to_vec::<bf16>()?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    assert_eq!(g, vec![3.328125, 9.1875]);
    let m = Tensor::from_vec(
        vec![-0.1591796875, 3.359375, -0.11572265625]
            .into_iter()
            .map(bf16::from_f64)
            .collect::<Vec<_>>(),
        &[3],
    )?;
    assert_eq!(m.mean()?.item::<bf16>()?.to_f64(), 1.03125);
    // A half softmax's gradient is computed in f32 and rounded once.
    let x = Tensor::from_vec(
        vec![2.390625, -2.333984375, 1.677734375, 2.1875]
            .into_iter()
            .map(f16::from_f64)
            .collect::<Vec<_>>(),
        &[2, 2],
    )?
    .requires_grad_(true)?;
    let c = Tensor::from_vec(
        vec![4.25, 2.625, -4.0, 5.0]
            .into_iter()
            .map(f16::from_f64)
            .collect::<Vec<_>>(),
        &[2, 2],
    )?;
    x.softmax(1)?.mul(&c)?.sum()?.backward()?;
    let g: Vec<f64> = x
        .grad()
        .unwrap()
        .to_vec::<f16>()?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    assert_eq!(
        g,
        vec![
            0.01413726806640625,
            -0.01416778564453125,
            -2.109375,
            2.109375
        ]
    );
    // PyTorch's kernel names in its dtype errors.
    let longs = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2])?;
    assert_eq!(
        longs.softmax(1).unwrap_err().to_string(),
        "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"
    );
    assert_eq!(
        longs.softmax(0).unwrap_err().to_string(),
        "\"softmax_kernel_impl\" not implemented for 'Long'"
    );
    assert_eq!(
        mask.remainder(&mask).unwrap_err().to_string(),
        "\"remainder_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        mask.abs().unwrap_err().to_string(),
        "\"abs_cpu\" not implemented for 'Bool'"
    );
    // A bool tensor % 7 is int64; % 7.0 is float32.
    let r = mask.remainder_scalar(7)?;
    assert_eq!((r.dtype(), r.to_vec::<i64>()?), (DType::I64, vec![1, 0]));
    let r = mask.remainder_scalar(7.0)?;
    assert_eq!(
        (r.dtype(), r.to_vec::<f32>()?),
        (DType::F32, vec![1.0, 0.0])
    );
    // Sequences in integer dtypes: the ends converted first, a float step truncated.
    assert_eq!(
        Tensor::linspace(-1, 0, 7, DType::U8)?.to_vec::<u8>()?,
        vec![255, 212, 170, 127, 85, 42, 0]
    );
    assert_eq!(
        Tensor::arange_dtype(0.1, 3, 0.1, DType::U8)?.to_vec::<u8>()?,
        vec![0; 29]
    );
    assert_eq!(
        Tensor::arange_dtype(-1.5, 3, 1.5, DType::I32)?.to_vec::<i32>()?,
        vec![-1, 0, 1]
    );
    // any / all of uint8 are uint8.
    let u = Tensor::from_vec(vec![8u8, 52, 194], &[3])?;
    assert_eq!((u.all()?.dtype(), u.all()?.item::<u8>()?), (DType::U8, 1));
    Ok(())
}
