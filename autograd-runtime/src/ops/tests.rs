//! The op library as a whole: every op's first and second derivatives against finite
//! differences, its node name, what it saves (B14) and that views stay views.

use crate::{DType, Device, Error, GradOptions, Result, Tensor, grad, gradcheck, gradgradcheck};

/// Deterministic values in ±[0.2, 1.5] (away from the kinks of `relu`/`abs`), all distinct.
fn vals(n: usize, seed: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = ((i as u64 * 7 + seed * 13) % 23) as f64 / 23.0 + i as f64 * 1e-3;
            let m = 0.2 + 1.3 * u;
            if (i as u64 + seed).is_multiple_of(3) {
                -m
            } else {
                m
            }
        })
        .collect()
}

fn arg(shape: &[usize], seed: u64) -> Tensor {
    Tensor::from_vec(vals(shape.iter().product(), seed), shape)
        .and_then(|t| t.requires_grad_(true))
        .expect("valid")
}

fn pos(shape: &[usize], seed: u64) -> Tensor {
    let v = vals(shape.iter().product(), seed).into_iter().map(f64::abs);
    Tensor::from_vec(v.collect(), shape)
        .and_then(|t| t.requires_grad_(true))
        .expect("valid")
}

type Op = Box<dyn Fn(&[Tensor]) -> Result<Tensor> + Send + Sync>;

fn case(
    name: &'static str,
    inputs: Vec<Tensor>,
    f: impl Fn(&[Tensor]) -> Result<Tensor> + Send + Sync + 'static,
) -> (&'static str, Vec<Tensor>, Op) {
    (name, inputs, Box::new(f))
}

/// Every differentiable op of `ops/` (the in-place ones on a copy of their input).
fn every_op() -> Vec<(&'static str, Vec<Tensor>, Op)> {
    let m = |s: u64| arg(&[2, 3], s);
    vec![
        case("add", vec![m(1), arg(&[3], 2)], |i| i[0].add(&i[1])),
        case("sub", vec![m(1), arg(&[2, 1], 2)], |i| i[0].sub(&i[1])),
        case("mul", vec![m(1), m(2)], |i| i[0].mul(&i[1])),
        case("div", vec![m(1), pos(&[3], 2)], |i| i[0].div(&i[1])),
        case("neg", vec![m(1)], |i| i[0].neg()),
        case("pow", vec![pos(&[2, 3], 1)], |i| i[0].pow(2.5)),
        case("exp", vec![m(1)], |i| i[0].exp()),
        case("log", vec![pos(&[2, 3], 1)], |i| i[0].log()),
        case("sin", vec![m(1)], |i| i[0].sin()),
        case("cos", vec![m(1)], |i| i[0].cos()),
        case("tanh", vec![m(1)], |i| i[0].tanh()),
        case("sigmoid", vec![m(1)], |i| i[0].sigmoid()),
        case("relu", vec![m(1)], |i| i[0].relu()?.mul(&i[0])),
        case("sqrt", vec![pos(&[2, 3], 1)], |i| i[0].sqrt()),
        case("abs", vec![m(1)], |i| i[0].abs()?.mul(&i[0])),
        case("mul_scalar", vec![m(1)], |i| i[0].mul_scalar(1.5)),
        case("add_scalar", vec![m(1)], |i| {
            i[0].add_scalar(1.5)?.mul(&i[0])
        }),
        case("rsub_scalar", vec![m(1)], |i| {
            i[0].rsub_scalar(1.5)?.mul(&i[0])
        }),
        case("rdiv_scalar", vec![pos(&[2, 3], 1)], |i| {
            i[0].rdiv_scalar(1.5)
        }),
        case("sum", vec![m(1)], |i| i[0].mul(&i[0])?.sum()),
        case("mean", vec![m(1)], |i| i[0].mul(&i[0])?.mean()),
        case("sum_dims", vec![m(1)], |i| {
            i[0].mul(&i[0])?.sum_dims(&[1], false)
        }),
        case("sum_dims_keepdim", vec![m(1)], |i| {
            i[0].mul(&i[0])?.sum_dims(&[0], true)
        }),
        case("sum_to_shape", vec![m(1)], |i| {
            i[0].mul(&i[0])?.sum_to_shape(&[1, 3])
        }),
        case("matmul", vec![m(1), arg(&[3, 2], 2)], |i| {
            i[0].matmul(&i[1])
        }),
        case(
            "matmul_batched",
            vec![arg(&[2, 2, 3], 1), arg(&[3, 2], 2)],
            |i| i[0].matmul(&i[1]),
        ),
        case("reshape", vec![m(1)], |i| i[0].mul(&i[0])?.reshape(&[3, 2])),
        case("reshape_copy", vec![m(1)], |i| {
            i[0].transpose(0, 1)?
                .reshape(&[6])?
                .mul(&i[0].reshape(&[6])?)
        }),
        case("transpose", vec![m(1)], |i| {
            i[0].mul(&i[0])?.transpose(0, 1)
        }),
        case("permute", vec![arg(&[2, 3, 2], 1)], |i| {
            i[0].mul(&i[0])?.permute(&[2, 0, 1])
        }),
        case("expand", vec![arg(&[3, 1], 1)], |i| {
            i[0].mul(&i[0])?.expand(&[2, 3, 4])
        }),
        case("narrow", vec![m(1)], |i| i[0].mul(&i[0])?.narrow(1, 1, 2)),
        case("split", vec![m(1)], |i| {
            let p = i[0].mul(&i[0])?.split(&[1, 2], 1)?;
            p[0].sum()?.add(&p[1].mul_scalar(2.0)?.sum()?)
        }),
        case("chunk", vec![m(1)], |i| {
            let p = i[0].mul(&i[0])?.chunk(2, 0)?;
            p[1].sub(&p[0])
        }),
        case("cat", vec![m(1), arg(&[2, 2], 2)], |i| {
            Tensor::cat(&[i[0].mul(&i[0])?, i[1].clone()], 1)
        }),
        case("stack", vec![m(1), m(2)], |i| {
            Tensor::stack(&[i[0].mul(&i[1])?, i[1].clone()], 0)
        }),
        case("copy", vec![m(1)], |i| i[0].mul(&i[0])?.copy()),
        case("to_device", vec![m(1)], |i| {
            i[0].to(Device::Virtual(0))?
                .mul(&i[0].to(Device::Virtual(0))?)?
                .to(Device::Cpu)
        }),
        case("softmax", vec![m(1)], |i| i[0].softmax(1)?.mul(&i[0])),
        case("log_softmax", vec![m(1)], |i| {
            i[0].log_softmax(0)?.mul(&i[0])
        }),
        case("index_select", vec![m(1)], |i| {
            i[0].mul(&i[0])?.index_select(1, &[2, 0, 2])
        }),
        case("max_dim", vec![m(1)], |i| {
            Ok(i[0].mul(&i[0])?.max_dim(1, false)?.0)
        }),
        case("max_dim_keepdim", vec![m(1)], |i| {
            Ok(i[0].mul(&i[0])?.max_dim(0, true)?.0)
        }),
        case("add_", vec![m(1), arg(&[3], 2)], |i| {
            let t = i[0].copy()?;
            t.add_(&i[1].mul(&i[1])?)?;
            Ok(t)
        }),
        case("sub_", vec![m(1), m(2)], |i| {
            let t = i[0].mul(&i[0])?;
            t.sub_(&i[1])?;
            Ok(t)
        }),
        case("mul_", vec![m(1), m(2)], |i| {
            let t = i[0].copy()?;
            t.mul_(&i[1])?;
            t.mul_(&i[1])?;
            Ok(t)
        }),
        case("div_", vec![m(1), pos(&[2, 3], 2)], |i| {
            let t = i[0].mul(&i[0])?;
            t.div_(&i[1])?;
            Ok(t)
        }),
        case("fill_", vec![m(1)], |i| {
            let t = i[0].copy()?;
            t.fill_(2.0)?;
            t.add(&i[0])
        }),
        case("zero_", vec![m(1)], |i| {
            let t = i[0].copy()?;
            t.zero_()?;
            t.add(&i[0].mul(&i[0])?)
        }),
        // ----- shape ops and reductions of issue 35 (dims.rs, reorder.rs, stats.rs, linalg.rs)
        case("unsqueeze", vec![m(1)], |i| i[0].mul(&i[0])?.unsqueeze(-1)),
        case("squeeze", vec![arg(&[2, 1, 3], 1)], |i| {
            i[0].mul(&i[0])?.squeeze()
        }),
        case("squeeze_dim", vec![arg(&[2, 1, 3], 1)], |i| {
            i[0].mul(&i[0])?.squeeze_dim(1)
        }),
        case("squeeze_dims", vec![arg(&[1, 3, 1], 1)], |i| {
            i[0].mul(&i[0])?.squeeze_dims(&[0, -1])
        }),
        case("t", vec![m(1)], |i| i[0].mul(&i[0])?.t()),
        case("view", vec![m(1)], |i| i[0].mul(&i[0])?.view(&[-1, 2])),
        case("reshape_infer", vec![m(1)], |i| {
            i[0].t()?.reshape_infer(&[-1])?.mul(&i[0].reshape(&[6])?)
        }),
        case("flatten", vec![arg(&[2, 3, 2], 1)], |i| {
            i[0].mul(&i[0])?.flatten(1, -1)
        }),
        case("unflatten", vec![arg(&[2, 6], 1)], |i| {
            i[0].mul(&i[0])?.unflatten(1, &[3, -1])
        }),
        case("expand_as", vec![arg(&[3], 1), m(2)], |i| {
            i[0].mul(&i[0])?.expand_as(&i[1])?.mul(&i[1])
        }),
        case("repeat", vec![m(1)], |i| {
            i[0].mul(&i[0])?.repeat(&[2, 1, 2])
        }),
        case("flip", vec![m(1)], |i| i[0].mul(&i[0])?.flip(&[0, -1])),
        case("roll", vec![m(1)], |i| {
            i[0].mul(&i[0])?.roll(&[1, -2], &[0, 1])
        }),
        case("roll_flat", vec![m(1)], |i| {
            i[0].mul(&i[0])?.roll(&[2], &[])
        }),
        case("tril", vec![arg(&[2, 3, 3], 1)], |i| {
            i[0].mul(&i[0])?.tril(0)
        }),
        case("triu", vec![m(1)], |i| i[0].mul(&i[0])?.triu(-1)),
        case("mean_dims", vec![arg(&[2, 3, 2], 1)], |i| {
            i[0].mul(&i[0])?.mean_dims(&[0, -1], false)
        }),
        case("var_dims", vec![m(1)], |i| i[0].var_dims(&[1], 1.0, false)),
        case("std_dims", vec![m(1)], |i| i[0].std_dims(&[0], 0.0, true)),
        case("prod", vec![m(1)], |i| i[0].prod()),
        case("prod_dim", vec![arg(&[2, 5], 1)], |i| {
            i[0].prod_dim(1, false)
        }),
        case("cumsum", vec![arg(&[2, 5], 1)], |i| {
            i[0].mul(&i[0])?.cumsum(-1)
        }),
        case("logsumexp", vec![m(1)], |i| i[0].logsumexp(&[1], true)),
        case("norm", vec![m(1)], |i| i[0].norm()),
        case("norm_dims", vec![m(1)], |i| {
            i[0].norm_dims(3.0, &[1], false)
        }),
        case("norm_dims_p1", vec![m(1)], |i| {
            i[0].norm_dims(1.0, &[0], false)?.mul(&i[0].sum()?)
        }),
        case("bmm", vec![arg(&[2, 2, 3], 1), arg(&[2, 3, 2], 2)], |i| {
            i[0].bmm(&i[1])
        }),
        case(
            "baddbmm",
            vec![m(3), arg(&[2, 2, 4], 1), arg(&[2, 4, 3], 2)],
            |i| i[0].baddbmm(&i[1], &i[2], 0.5, 2.0),
        ),
        case("outer", vec![arg(&[3], 1), arg(&[2], 2)], |i| {
            i[0].outer(&i[1])
        }),
        case("amax", vec![m(1)], |i| i[0].amax(&[1], false)),
        case("amin_keepdim", vec![m(1)], |i| i[0].amin(&[0], true)),
        // ----- end of issue 35's shape ops and reductions
        // The everyday math ops (`ops/math.rs`).
        case("log1p", vec![m(1)], |i| i[0].log1p()),
        case("expm1", vec![m(1)], |i| i[0].expm1()),
        case("log2", vec![pos(&[2, 3], 1)], |i| i[0].log2()),
        case("exp2", vec![m(1)], |i| i[0].exp2()),
        case("rsqrt", vec![pos(&[2, 3], 1)], |i| i[0].rsqrt()),
        case("softplus", vec![m(1)], |i| i[0].softplus(1.0, 20.0)),
        // Past the threshold (`2x > 1`) on some elements: `x` there.
        case("softplus_threshold", vec![m(1)], |i| {
            i[0].softplus(2.0, 1.0)?.mul(&i[0])
        }),
        case("silu", vec![m(1)], |i| i[0].silu()),
        case("mish", vec![m(1)], |i| i[0].mish()),
        case("hardtanh", vec![m(1)], |i| {
            i[0].hardtanh(-0.5, 0.5)?.mul(&i[0])
        }),
        case("floor", vec![m(1)], |i| {
            i[0].mul_scalar(3.0)?.floor()?.mul(&i[0])
        }),
        case("ceil", vec![m(1)], |i| {
            i[0].mul_scalar(3.0)?.ceil()?.mul(&i[0])
        }),
        case("round", vec![m(1)], |i| {
            i[0].mul_scalar(3.0)?.round()?.mul(&i[0])
        }),
        case("trunc", vec![m(1)], |i| {
            i[0].mul_scalar(3.0)?.trunc()?.mul(&i[0])
        }),
        case("minimum", vec![m(1), arg(&[3], 2)], |i| {
            i[0].minimum(&i[1])?.mul(&i[0])
        }),
        case("maximum", vec![m(1), m(2)], |i| {
            i[0].maximum(&i[1])?.mul(&i[1])
        }),
        case("fmod", vec![m(1), pos(&[3], 2)], |i| {
            i[0].mul_scalar(2.0)?.fmod(&i[1])?.mul(&i[1])
        }),
        case("remainder", vec![m(1), pos(&[2, 1], 2)], |i| {
            i[0].mul_scalar(2.0)?.remainder(&i[1])?.mul(&i[1])
        }),
        case("fmod_scalar", vec![m(1)], |i| {
            i[0].fmod_scalar(0.7)?.mul(&i[0])
        }),
        case("remainder_scalar", vec![m(1)], |i| {
            i[0].remainder_scalar(-0.7)?.mul(&i[0])
        }),
        case("atan2", vec![m(1), arg(&[3], 2)], |i| i[0].atan2(&i[1])),
    ]
}

#[test]
fn every_op_passes_gradcheck_and_gradgradcheck() {
    for (name, inputs, f) in every_op() {
        gradcheck(&f, &inputs).unwrap_or_else(|e| panic!("gradcheck {name}: {e}"));
        gradgradcheck(&f, &inputs).unwrap_or_else(|e| panic!("gradgradcheck {name}: {e}"));
    }
}

fn name(t: &Tensor) -> String {
    t.grad_fn()
        .map(|f| f.name().to_string())
        .unwrap_or_default()
}

#[test]
fn node_names_are_pytorchs() -> Result<()> {
    let x = arg(&[2, 3], 1);
    let h = x.mul_scalar(1.0)?;
    let one = Tensor::scalar(1.0f64);
    let cases = [
        (x.mul_scalar(2.0)?, "MulBackward0"),
        (x.add_scalar(2.0)?, "AddBackward0"),
        (x.sub_scalar(2.0)?, "AddBackward0"),
        (x.div_scalar(2.0)?, "DivBackward0"),
        (x.rsub_scalar(2.0)?, "RsubBackward1"),
        (x.rdiv_scalar(2.0)?, "MulBackward0"),
        (x.reciprocal()?, "ReciprocalBackward0"),
        (x.permute(&[1, 0])?, "PermuteBackward0"),
        (x.expand(&[2, 2, 3])?, "ExpandBackward0"),
        (x.narrow(1, 0, 2)?, "SliceBackward0"),
        (x.chunk(2, 1)?[1].clone(), "SplitBackward0"),
        (Tensor::cat(&[x.clone(), x.clone()], 0)?, "CatBackward0"),
        (Tensor::stack(&[x.clone(), x.clone()], 0)?, "CatBackward0"),
        (x.copy()?, "CloneBackward0"),
        (x.to_dtype(DType::F32)?, "ToCopyBackward0"),
        (x.to(Device::Virtual(0))?, "ToCopyBackward0"),
        (x.softmax(1)?, "SoftmaxBackward0"),
        (x.log_softmax(1)?, "LogSoftmaxBackward0"),
        (x.index_select(0, &[1])?, "IndexSelectBackward0"),
        (x.max_dim(1, false)?.0, "MaxBackward0"),
        (x.sum_to_shape(&[1, 3])?, "SumBackward1"),
        (h.copy()?.add_(&one)?.clone(), "AddBackward0"),
        (h.copy()?.sub_(&one)?.clone(), "SubBackward0"),
        (h.copy()?.mul_(&one)?.clone(), "MulBackward0"),
        (h.copy()?.div_(&one)?.clone(), "DivBackward0"),
        (h.copy()?.fill_(0.0)?.clone(), "FillBackward2"),
        (h.copy()?.zero_()?.clone(), "ZeroBackward0"),
    ];
    for (t, expected) in cases {
        assert_eq!(name(&t), expected);
    }

    // The gradients of narrow, index_select and max_dim are ops too (double backward).
    let create_graph = |y: &Tensor| -> Result<Tensor> {
        let v = y.ones_like()?.requires_grad_(true)?;
        let g = grad(
            &[y.clone()],
            &[x.clone()],
            GradOptions::new()
                .grad_outputs(vec![Some(v)])
                .create_graph(true),
        )?;
        Ok(g[0].clone().expect("x is used"))
    };
    assert_eq!(
        name(&create_graph(&x.narrow(1, 0, 2)?)?),
        "SliceBackwardBackward0"
    );
    assert_eq!(
        name(&create_graph(&x.index_select(1, &[0, 0])?)?),
        "IndexAddBackward0"
    );
    assert_eq!(
        name(&create_graph(&x.max_dim(1, true)?.0)?),
        "MaxBackwardBackward0"
    );
    Ok(())
}

/// Modifies `t` in place (a version bump) and runs `y.backward()`.
fn modify_then_backward(t: &Tensor, y: &Tensor) -> Result<()> {
    t.add_(&Tensor::scalar(1.0f64))?;
    y.sum()?.backward()
}

fn is_modified_error(r: Result<()>) -> bool {
    matches!(r, Err(Error::SavedTensorModified { .. }))
}

/// B14: each operand of `mul`, `div`, `matmul`, `mul_` and `div_` is saved only if a gradient
/// that needs it is wanted, so modifying an unsaved one in place before backward is fine.
#[test]
fn operands_are_saved_only_when_needed() -> Result<()> {
    let leaf = arg(&[2, 2], 1);
    let fresh = || leaf.mul_scalar(1.0);
    let plain = || Tensor::from_vec(vals(4, 2), &[2, 2]);
    type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let ops: [(&str, Binary); 3] = [
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("matmul", |a, b| a.matmul(b)),
    ];
    for (op, f) in ops {
        // Only `a` requires grad: `a` is not saved, `b` is.
        let (a, b) = (fresh()?, plain()?);
        let y = f(&a, &b)?;
        assert!(modify_then_backward(&a, &y).is_ok(), "{op}: a is not saved");
        let (a, b) = (fresh()?, plain()?);
        let y = f(&a, &b)?;
        assert!(
            is_modified_error(modify_then_backward(&b, &y)),
            "{op}: b is saved"
        );
        // Only `b` requires grad: `a` is saved; `b` only by `div` (its gradient needs it).
        let (a, b) = (plain()?, fresh()?);
        let y = f(&a, &b)?;
        let b_saved = is_modified_error(modify_then_backward(&b, &y));
        assert_eq!(b_saved, op == "div", "{op}");
        let (a, b) = (plain()?, fresh()?);
        let y = f(&a, &b)?;
        assert!(
            is_modified_error(modify_then_backward(&a, &y)),
            "{op}: a is saved"
        );
    }

    // In place: `other` is saved for `self`'s gradient (and, by div_, for its own); `self` from
    // before the op (a copy, immune to later changes) only for `other`'s gradient.
    for op in ["mul_", "div_"] {
        let apply = |t: &Tensor, o: &Tensor| -> Result<()> {
            if op == "mul_" {
                t.mul_(o).map(drop)
            } else {
                t.div_(o).map(drop)
            }
        };
        let (t, w) = (fresh()?, plain()?);
        apply(&t, &w)?;
        assert!(
            is_modified_error(modify_then_backward(&w, &t)),
            "{op}: other is saved"
        );
        let (t, w) = (plain()?, fresh()?);
        apply(&t, &w)?;
        let other_saved = is_modified_error(modify_then_backward(&w, &t));
        assert_eq!(other_saved, op == "div_", "{op}");
    }
    // `w`'s gradient is `t` from before the op.
    leaf.set_grad(None)?;
    let (t, w) = (plain()?, fresh()?);
    let before = t.to_vec::<f64>()?;
    t.mul_(&w)?;
    t.sum()?.backward()?;
    assert_eq!(leaf.grad().expect("leaf.grad").to_vec::<f64>()?, before);
    Ok(())
}

/// A view op's output stays a view of its input (shared storage and version counter), with the
/// op's node as its grad_fn.
#[test]
fn views_stay_views() -> Result<()> {
    let x = arg(&[2, 3], 1).mul_scalar(1.0)?;
    let views = [
        (x.reshape(&[3, 2])?, "ViewBackward0"),
        (x.transpose(0, 1)?, "TransposeBackward0"),
        (x.permute(&[1, 0])?, "PermuteBackward0"),
        (x.expand(&[4, 2, 3])?, "ExpandBackward0"),
        (x.narrow(1, 1, 2)?, "SliceBackward0"),
        (x.split(&[1, 2], 1)?[1].clone(), "SplitWithSizesBackward0"),
    ];
    for (v, node) in &views {
        assert_eq!(name(v), *node);
    }
    let _g = crate::no_grad();
    x.add_(&Tensor::scalar(1.0f64))?;
    for (v, node) in views {
        assert!(v.is_view(), "{node}");
        assert_eq!(v.version(), x.version(), "{node}");
        // The base moved on: each view's grad_fn is regenerated over its current history (a
        // view of a multi-output op may not be, PyTorch's error node stands in).
        let now = if node.starts_with("Split") {
            "Error"
        } else {
            "AsStridedBackward0"
        };
        assert_eq!(name(&v), now, "{node}");
    }
    Ok(())
}

/// In-place ops are checked before they run: a refused one modifies nothing.
#[test]
fn refused_in_place_ops_change_nothing() -> Result<()> {
    let x = arg(&[2], 1);
    let before = x.to_vec::<f64>()?;
    assert!(matches!(
        x.mul_(&Tensor::scalar(2.0f64)),
        Err(Error::LeafInPlace)
    ));
    assert!(matches!(
        x.narrow(0, 0, 1)?.fill_(0.0),
        Err(Error::ViewOfLeafInPlace)
    ));
    assert_eq!((x.to_vec::<f64>()?, x.version()), (before, 0));
    // Under no_grad the op runs, bumps the version and records nothing.
    {
        let _g = crate::no_grad();
        x.zero_()?;
    }
    assert!(x.is_leaf() && x.version() == 1);
    Ok(())
}
