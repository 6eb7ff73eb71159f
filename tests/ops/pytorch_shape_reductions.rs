//! Issue 35's shape ops and reductions against PyTorch 2.15: values, the input's gradient, the
//! node and view-or-copy of each case, and the error texts of bad arguments. The tables at the
//! end are printed by `tests/ops/gen_shape_reduction_cases.py` (its docstring says how); the
//! ops each case runs are in `run` and `bad`, under the same names.

use autograd::*;

struct Case {
    name: &'static str,
    shape: &'static [usize],
    /// PyTorch's `type(y.grad_fn).__name__`.
    node: &'static str,
    /// PyTorch's `y._is_view()`.
    view: bool,
    shape_out: &'static [usize],
    values: &'static [f64],
    /// `x.grad` after `(y * w).sum().backward()`, `w` = 1/8, 2/8, ... in `y`'s C order.
    grad: &'static [f64],
}

/// The ops recorded here as a composition of other ops, so with another node on top than
/// PyTorch's own: `(case, our node)`. Values and gradients are PyTorch's all the same.
const COMPOSED: &[(&str, &str)] = &[("baddbmm", "AddBackward0")];

fn input(shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| ((37 * i) % 17) as f64 / 4.0 - 2.0).collect();
    Tensor::from_vec(v, shape)?.requires_grad_(true)
}

fn run(name: &str, x: &Tensor) -> Result<Tensor> {
    match name {
        "unsqueeze" => x.unsqueeze(-1),
        "unsqueeze0" => x.unsqueeze(0),
        "squeeze" => x.squeeze(),
        "squeeze_dim" => x.squeeze_dim(-2),
        "squeeze_dim_kept" => x.squeeze_dim(1),
        "squeeze_dims" => x.squeeze_dims(&[0, 1, 2]),
        "t" | "t_1d" => x.t(),
        "view" => x.view(&[-1, 2]),
        "view_t" => x.t()?.view(&[3, 1, 2]),
        "reshape_infer_t" => x.t()?.reshape_infer(&[-1]),
        "flatten" => x.flatten(0, -1),
        "flatten_12" => x.flatten(1, 2),
        "flatten_t" => x.t()?.flatten(0, -1),
        "unflatten" => x.unflatten(1, &[3, -1]),
        "unflatten_t" => x.t()?.unflatten(0, &[2, 3]),
        "expand_as" => x.expand_as(&Tensor::zeros(&[2, 3], DType::F64)?),
        "repeat" => x.repeat(&[2, 1, 2]),
        "repeat_t" => x.t()?.repeat(&[1, 2]),
        "flip" => x.flip(&[0, 1]),
        "flip_last" => x.flip(&[-1]),
        "roll" => x.roll(&[1, -2], &[0, 1]),
        "roll_flat" => x.roll(&[2], &[]),
        "roll_big" => x.roll(&[7], &[1]),
        "tril" => x.tril(0),
        "tril_1" => x.tril(1),
        "triu" => x.triu(0),
        "triu_m1" => x.triu(-1),
        "mean_dims" => x.mean_dims(&[0, -1], false),
        "mean_dims_keep" => x.mean_dims(&[1], true),
        "var" => x.var_dims(&[1], 1.0, false),
        "var_c0_keep" => x.var_dims(&[0], 0.0, true),
        "var_all" => x.var_dims(&[], 1.0, false),
        "std" => x.std_dims(&[1], 1.0, false),
        "std_all_c0" => x.std_dims(&[], 0.0, false),
        "prod" => x.add_scalar(3.0)?.prod(),
        "prod_zero" => x.prod(),
        "prod_dim" => x.add_scalar(1.0)?.prod_dim(1, false),
        "prod_dim_keep" => x.prod_dim(0, true),
        "cumsum" => x.cumsum(1),
        "cumsum0" => x.cumsum(-2),
        "logsumexp" => x.logsumexp(&[1], false),
        "logsumexp_all_keep" => x.logsumexp(&[0, 1], true),
        "norm" => x.norm(),
        "norm_p3" => x.norm_dims(3.0, &[1], false),
        "norm_p1_keep" => x.norm_dims(1.0, &[0], true),
        "amax" => x.amax(&[1], false),
        // Each maximum ties with its detached copy: half its gradient reaches `x`.
        "amax_ties" => Tensor::cat(&[x.clone(), x.detach()], 1)?.amax(&[1], false),
        "amin_keep" => x.amin(&[0], true),
        "bmm" => {
            let other = Tensor::from_vec((0..12).map(f64::from).collect(), &[2, 3, 2])?;
            x.bmm(&other)
        }
        "baddbmm" => x.baddbmm(
            &Tensor::ones(&[2, 3, 4], DType::F64)?,
            &Tensor::ones(&[2, 4, 3], DType::F64)?,
            0.5,
            2.0,
        ),
        "outer" => x.outer(&Tensor::from_vec(vec![1.0f64, -2.0], &[2])?),
        _ => panic!("no op for case {name}"),
    }
}

fn bad(name: &str) -> Result<Tensor> {
    let z = |shape: &[usize]| Tensor::zeros(shape, DType::F32);
    match name {
        "unsqueeze_range" => z(&[2, 3])?.unsqueeze(3),
        "squeeze_range" => z(&[2, 3])?.squeeze_dim(2),
        "squeeze_dup" => z(&[1, 3])?.squeeze_dims(&[0, 0]),
        "t_3d" => z(&[1, 2, 3])?.t(),
        "view_two" => z(&[2, 3])?.view(&[-1, -1]),
        "view_bad" => z(&[2, 3])?.view(&[4, -1]),
        "view_neg" => z(&[2, 3])?.view(&[-2, 3]),
        "view_stride" => z(&[2, 3])?.t()?.view(&[6]),
        "reshape_bad" => z(&[2, 3])?.reshape_infer(&[-1, 4]),
        "reshape_zero" => z(&[0, 3])?.reshape_infer(&[-1, 0]),
        "flatten_order" => z(&[2, 3])?.flatten(1, 0),
        "unflatten_bad" => z(&[2, 3])?.unflatten(1, &[2, 2]),
        "repeat_short" => z(&[2, 3])?.repeat(&[2]),
        "tril_1d" => z(&[3])?.tril(0),
        "triu_1d" => z(&[3])?.triu(0),
        "roll_align" => z(&[2, 3])?.roll(&[1, 2], &[0]),
        "roll_empty" => z(&[2, 3])?.roll(&[], &[]),
        "flip_dup" => z(&[2, 3])?.flip(&[0, 0]),
        "mean_dup" => z(&[2, 3])?.mean_dims(&[0, 0], false),
        "mean_range" => z(&[2, 3])?.mean_dims(&[2], false),
        "amax_empty" => z(&[2, 0])?.amax(&[1], false),
        "bmm_2d" => z(&[3, 4])?.bmm(&z(&[2, 4, 5])?),
        "bmm_2d_b" => z(&[2, 3, 4])?.bmm(&z(&[4, 5])?),
        "bmm_batch" => z(&[2, 3, 4])?.bmm(&z(&[3, 4, 5])?),
        "bmm_k" => z(&[2, 3, 4])?.bmm(&z(&[2, 3, 5])?),
        "baddbmm_self" => z(&[3, 6])?.baddbmm(&z(&[2, 3, 4])?, &z(&[2, 4, 5])?, 1.0, 1.0),
        "outer_2d" => z(&[3, 2])?.outer(&z(&[2])?),
        "outer_2d_b" => z(&[3])?.outer(&z(&[2, 2])?),
        _ => panic!("no bad call for case {name}"),
    }
}

fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 + 1e-12 * w.abs(),
            "{what}: {got:?} vs PyTorch's {want:?}"
        );
    }
}

#[test]
fn values_gradients_nodes_and_views_are_pytorchs() -> Result<()> {
    for case in CASES {
        let name = case.name;
        let x = input(case.shape)?;
        let y = run(name, &x)?;
        assert_eq!(y.shape(), case.shape_out, "{name}: shape");
        close(&y.to_vec::<f64>()?, case.values, &format!("{name}: values"));
        let node = y
            .grad_fn()
            .map(|f| f.name().to_string())
            .unwrap_or_default();
        let want_node = COMPOSED
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(case.node, |(_, ours)| ours);
        assert_eq!(node, want_node, "{name}: node (PyTorch's: {})", case.node);
        assert_eq!(y.is_view(), case.view, "{name}: is_view");
        if case.view && !name.ends_with("_t") {
            assert!(
                y.shares_storage(&x),
                "{name}: a view of its input's storage"
            );
        }
        if !case.view {
            assert!(!y.shares_storage(&x), "{name}: a copy, not sharing storage");
        }
        let n = y.numel();
        let w = Tensor::from_vec((1..=n).map(|i| i as f64 / 8.0).collect(), y.shape())?;
        y.mul(&w)?.sum()?.backward()?;
        let g = x.grad().expect("the input gets a gradient");
        close(&g.to_vec::<f64>()?, case.grad, &format!("{name}: gradient"));
    }
    Ok(())
}

#[test]
fn error_texts_are_pytorchs() {
    for (name, want) in ERRORS {
        let err = bad(name).expect_err(name).to_string();
        // Errors of older ops carry the op's name in front (`expand: ...`).
        let bare = err.split_once(": ").map_or(err.as_str(), |(_, rest)| rest);
        assert!(
            err == *want || bare == *want,
            "{name}: {err:?}, PyTorch says {want:?}"
        );
    }
}

#[test]
fn edge_values_are_pytorchs() -> Result<()> {
    // std and norm of constant / zero inputs: PyTorch's gradient is 0, not NaN.
    let c = Tensor::ones(&[3], DType::F64)?.requires_grad_(true)?;
    c.std_dims(&[], 1.0, false)?.backward()?;
    assert_eq!(c.grad().unwrap().to_vec::<f64>()?, vec![0.0; 3]);
    let z = Tensor::zeros(&[3], DType::F64)?.requires_grad_(true)?;
    z.norm()?.backward()?;
    assert_eq!(z.grad().unwrap().to_vec::<f64>()?, vec![0.0; 3]);
    // Tiny but nonzero results keep their exact gradients (PyTorch 2.15: x.std().backward() of
    // [1e-40, 3e-40] gives [-0.7071.., 0.7071..]; norm(p=1) of [1e-300, -2e-300] gives [1, -1]).
    let tiny = Tensor::from_vec(vec![1e-40f64, 3e-40], &[2])?.requires_grad_(true)?;
    tiny.std_dims(&[], 1.0, false)?.backward()?;
    close(
        &tiny.grad().unwrap().to_vec::<f64>()?,
        &[-0.7071067811865475, 0.7071067811865478],
        "std of tiny values",
    );
    let tiny = Tensor::from_vec(vec![1e-300f64, -2e-300], &[2])?.requires_grad_(true)?;
    tiny.norm_dims(1.0, &[], false)?.backward()?;
    assert_eq!(tiny.grad().unwrap().to_vec::<f64>()?, vec![1.0, -1.0]);
    // prod with one zero, then two zeros (PyTorch: [0, 6, 0, 0] and all zeros).
    let p = Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 3.0], &[4])?.requires_grad_(true)?;
    p.prod()?.backward()?;
    assert_eq!(p.grad().unwrap().to_vec::<f64>()?, vec![0.0, 6.0, 0.0, 0.0]);
    let p = Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 0.0], &[4])?.requires_grad_(true)?;
    p.prod()?.backward()?;
    assert_eq!(p.grad().unwrap().to_vec::<f64>()?, vec![0.0; 4]);
    // var of one element is NaN, with too large a correction inf (PyTorch warns, then says so).
    let one = Tensor::from_vec(vec![1.0f64], &[1])?;
    assert!(one.var_dims(&[], 1.0, false)?.item::<f64>()?.is_nan());
    let two = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
    assert_eq!(two.var_dims(&[], 3.0, false)?.item::<f64>()?, f64::INFINITY);
    // logsumexp of all -inf is -inf, with a +inf entry +inf.
    let ninf = Tensor::from_vec(vec![f64::NEG_INFINITY; 2], &[2])?;
    assert_eq!(
        ninf.logsumexp(&[0], false)?.item::<f64>()?,
        f64::NEG_INFINITY
    );
    let pinf = Tensor::from_vec(vec![f64::INFINITY, 1.0], &[2])?;
    assert_eq!(pinf.logsumexp(&[0], false)?.item::<f64>()?, f64::INFINITY);
    // tril/triu zero the masked entries even where they are NaN (PyTorch's too).
    let nan = Tensor::from_vec(vec![1.0f64, f64::NAN, 3.0, 4.0], &[2, 2])?;
    assert_eq!(nan.tril(0)?.to_vec::<f64>()?, vec![1.0, 0.0, 3.0, 4.0]);
    // flatten(d, d) is the tensor itself, as PyTorch's (`y is x`).
    let x = input(&[2, 3])?;
    assert!(x.flatten(1, 1)?.is_same(&x));
    // Copies never alias their input, even where nothing moves.
    let one_col = input(&[2, 1])?;
    for y in [
        one_col.repeat(&[1, 1])?,
        one_col.cumsum(1)?,
        one_col.prod_dim(1, true)?,
        one_col.flip(&[1])?,
        one_col.roll(&[0], &[0])?,
        one_col.tril(0)?,
    ] {
        assert!(!y.shares_storage(&one_col) && !y.is_view());
    }
    // f32 runs the same code.
    let f = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    assert_eq!(f.cumsum(0)?.to_vec::<f32>()?, vec![1.0, 2.0, 4.0, 6.0]);
    assert_eq!(f.prod_dim(1, false)?.to_vec::<f32>()?, vec![2.0, 12.0]);
    Ok(())
}

// Printed by tests/ops/gen_shape_reduction_cases.py with torch 2.15.0+cu132.
const CASES: &[Case] = &[
    Case {
        name: "unsqueeze",
        shape: &[2, 3],
        node: "UnsqueezeBackward0",
        view: true,
        shape_out: &[2, 3, 1],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "unsqueeze0",
        shape: &[2, 3],
        node: "UnsqueezeBackward0",
        view: true,
        shape_out: &[1, 2, 3],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "squeeze",
        shape: &[1, 2, 1, 3],
        node: "SqueezeBackward0",
        view: true,
        shape_out: &[2, 3],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "squeeze_dim",
        shape: &[1, 2, 1, 3],
        node: "SqueezeBackward1",
        view: true,
        shape_out: &[1, 2, 3],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "squeeze_dim_kept",
        shape: &[1, 2, 1, 3],
        node: "SqueezeBackward1",
        view: true,
        shape_out: &[1, 2, 1, 3],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "squeeze_dims",
        shape: &[1, 2, 1, 3],
        node: "SqueezeBackward2",
        view: true,
        shape_out: &[2, 3],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "t",
        shape: &[2, 3],
        node: "TBackward0",
        view: true,
        shape_out: &[3, 2],
        values: &[-2.0, 0.25, -1.25, 1.0, -0.5, 1.75],
        grad: &[0.125, 0.375, 0.625, 0.25, 0.5, 0.75],
    },
    Case {
        name: "t_1d",
        shape: &[3],
        node: "TBackward0",
        view: true,
        shape_out: &[3],
        values: &[-2.0, -1.25, -0.5],
        grad: &[0.125, 0.25, 0.375],
    },
    Case {
        name: "view",
        shape: &[2, 3],
        node: "ViewBackward0",
        view: true,
        shape_out: &[3, 2],
        values: &[-2.0, -1.25, -0.5, 0.25, 1.0, 1.75],
        grad: &[0.125, 0.25, 0.375, 0.5, 0.625, 0.75],
    },
    Case {
        name: "view_t",
        shape: &[2, 3],
        node: "ViewBackward0",
        view: true,
        shape_out: &[3, 1, 2],
        values: &[-2.0, 0.25, -1.25, 1.0, -0.5, 1.75],
        grad: &[0.125, 0.375, 0.625, 0.25, 0.5, 0.75],
    },
    Case {
        name: "reshape_infer_t",
        shape: &[2, 3],
        node: "UnsafeViewBackward0",
        view: false,
        shape_out: &[6],
        values: &[-2.0, 0.25, -1.25, 1.0, -0.5, 1.75],
        grad: &[0.125, 0.375, 0.625, 0.25, 0.5, 0.75],
    },
    Case {
        name: "flatten",
        shape: &[2, 3, 2],
        node: "ViewBackward0",
        view: true,
        shape_out: &[12],
        values: &[
            -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, -1.75, -1.0, -0.25, 0.5, 1.25, 2.0,
        ],
        grad: &[
            0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5,
        ],
    },
    Case {
        name: "flatten_12",
        shape: &[2, 3, 2],
        node: "ViewBackward0",
        view: true,
        shape_out: &[2, 6],
        values: &[
            -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, -1.75, -1.0, -0.25, 0.5, 1.25, 2.0,
        ],
        grad: &[
            0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5,
        ],
    },
    Case {
        name: "flatten_t",
        shape: &[2, 3],
        node: "UnsafeViewBackward0",
        view: false,
        shape_out: &[6],
        values: &[-2.0, 0.25, -1.25, 1.0, -0.5, 1.75],
        grad: &[0.125, 0.375, 0.625, 0.25, 0.5, 0.75],
    },
    Case {
        name: "unflatten",
        shape: &[2, 6],
        node: "ViewBackward0",
        view: true,
        shape_out: &[2, 3, 2],
        values: &[
            -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, -1.75, -1.0, -0.25, 0.5, 1.25, 2.0,
        ],
        grad: &[
            0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5,
        ],
    },
    Case {
        name: "unflatten_t",
        shape: &[2, 6],
        node: "ViewBackward0",
        view: true,
        shape_out: &[2, 3, 2],
        values: &[
            -2.0, -1.75, -1.25, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 1.25, 1.75, 2.0,
        ],
        grad: &[
            0.125, 0.375, 0.625, 0.875, 1.125, 1.375, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5,
        ],
    },
    Case {
        name: "expand_as",
        shape: &[3],
        node: "ExpandBackward0",
        view: true,
        shape_out: &[2, 3],
        values: &[-2.0, -1.25, -0.5, -2.0, -1.25, -0.5],
        grad: &[0.625, 0.875, 1.125],
    },
    Case {
        name: "repeat",
        shape: &[2, 3],
        node: "RepeatBackward0",
        view: false,
        shape_out: &[2, 2, 6],
        values: &[
            -2.0, -1.25, -0.5, -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, 0.25, 1.0, 1.75, -2.0, -1.25,
            -0.5, -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, 0.25, 1.0, 1.75,
        ],
        grad: &[4.25, 4.75, 5.25, 7.25, 7.75, 8.25],
    },
    Case {
        name: "repeat_t",
        shape: &[2, 3],
        node: "RepeatBackward0",
        view: false,
        shape_out: &[3, 4],
        values: &[
            -2.0, 0.25, -2.0, 0.25, -1.25, 1.0, -1.25, 1.0, -0.5, 1.75, -0.5, 1.75,
        ],
        grad: &[0.5, 1.5, 2.5, 0.75, 1.75, 2.75],
    },
    Case {
        name: "flip",
        shape: &[2, 3],
        node: "FlipBackward0",
        view: false,
        shape_out: &[2, 3],
        values: &[1.75, 1.0, 0.25, -0.5, -1.25, -2.0],
        grad: &[0.75, 0.625, 0.5, 0.375, 0.25, 0.125],
    },
    Case {
        name: "flip_last",
        shape: &[2, 3, 2],
        node: "FlipBackward0",
        view: false,
        shape_out: &[2, 3, 2],
        values: &[
            -1.25, -2.0, 0.25, -0.5, 1.75, 1.0, -1.0, -1.75, 0.5, -0.25, 2.0, 1.25,
        ],
        grad: &[
            0.25, 0.125, 0.5, 0.375, 0.75, 0.625, 1.0, 0.875, 1.25, 1.125, 1.5, 1.375,
        ],
    },
    Case {
        name: "roll",
        shape: &[2, 3],
        node: "RollBackward0",
        view: false,
        shape_out: &[2, 3],
        values: &[1.75, 0.25, 1.0, -0.5, -2.0, -1.25],
        grad: &[0.625, 0.75, 0.5, 0.25, 0.375, 0.125],
    },
    Case {
        name: "roll_flat",
        shape: &[2, 3],
        node: "RollBackward0",
        view: false,
        shape_out: &[2, 3],
        values: &[1.0, 1.75, -2.0, -1.25, -0.5, 0.25],
        grad: &[0.375, 0.5, 0.625, 0.75, 0.125, 0.25],
    },
    Case {
        name: "roll_big",
        shape: &[2, 3],
        node: "RollBackward0",
        view: false,
        shape_out: &[2, 3],
        values: &[-0.5, -2.0, -1.25, 1.75, 0.25, 1.0],
        grad: &[0.25, 0.375, 0.125, 0.625, 0.75, 0.5],
    },
    Case {
        name: "tril",
        shape: &[3, 4],
        node: "TrilBackward0",
        view: false,
        shape_out: &[3, 4],
        values: &[
            -2.0, 0.0, 0.0, 0.0, 1.0, 1.75, 0.0, 0.0, -0.25, 0.5, 1.25, 0.0,
        ],
        grad: &[
            0.125, 0.0, 0.0, 0.0, 0.625, 0.75, 0.0, 0.0, 1.125, 1.25, 1.375, 0.0,
        ],
    },
    Case {
        name: "tril_1",
        shape: &[2, 3, 3],
        node: "TrilBackward0",
        view: false,
        shape_out: &[2, 3, 3],
        values: &[
            -2.0, -1.25, 0.0, 0.25, 1.0, 1.75, -1.75, -1.0, -0.25, 0.5, 1.25, 0.0, -1.5, -0.75,
            0.0, 0.75, 1.5, -2.0,
        ],
        grad: &[
            0.125, 0.25, 0.0, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 0.0, 1.625, 1.75,
            1.875, 2.0, 2.125, 2.25,
        ],
    },
    Case {
        name: "triu",
        shape: &[3, 4],
        node: "TriuBackward0",
        view: false,
        shape_out: &[3, 4],
        values: &[
            -2.0, -1.25, -0.5, 0.25, 0.0, 1.75, -1.75, -1.0, 0.0, 0.0, 1.25, 2.0,
        ],
        grad: &[
            0.125, 0.25, 0.375, 0.5, 0.0, 0.75, 0.875, 1.0, 0.0, 0.0, 1.375, 1.5,
        ],
    },
    Case {
        name: "triu_m1",
        shape: &[4, 3],
        node: "TriuBackward0",
        view: false,
        shape_out: &[4, 3],
        values: &[
            -2.0, -1.25, -0.5, 0.25, 1.0, 1.75, 0.0, -1.0, -0.25, 0.0, 0.0, 2.0,
        ],
        grad: &[
            0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.0, 1.0, 1.125, 0.0, 0.0, 1.5,
        ],
    },
    Case {
        name: "mean_dims",
        shape: &[2, 3, 2],
        node: "MeanBackward1",
        view: false,
        shape_out: &[3],
        values: &[-1.5, 0.0, 1.5],
        grad: &[
            0.03125, 0.03125, 0.0625, 0.0625, 0.09375, 0.09375, 0.03125, 0.03125, 0.0625, 0.0625,
            0.09375, 0.09375,
        ],
    },
    Case {
        name: "mean_dims_keep",
        shape: &[2, 3],
        node: "MeanBackward1",
        view: false,
        shape_out: &[2, 1],
        values: &[-1.25, 1.0],
        grad: &[
            0.041666666666666664,
            0.041666666666666664,
            0.041666666666666664,
            0.08333333333333333,
            0.08333333333333333,
            0.08333333333333333,
        ],
    },
    Case {
        name: "var",
        shape: &[2, 3],
        node: "VarBackward0",
        view: false,
        shape_out: &[2],
        values: &[0.5625, 0.5625],
        grad: &[-0.09375, 0.0, 0.09375, -0.1875, 0.0, 0.1875],
    },
    Case {
        name: "var_c0_keep",
        shape: &[2, 3],
        node: "VarBackward0",
        view: false,
        shape_out: &[1, 3],
        values: &[1.265625, 1.265625, 1.265625],
        grad: &[-0.140625, -0.28125, -0.421875, 0.140625, 0.28125, 0.421875],
    },
    Case {
        name: "var_all",
        shape: &[2, 3],
        node: "VarBackward0",
        view: false,
        shape_out: &[],
        values: &[1.96875],
        grad: &[
            -0.09375,
            -0.05625,
            -0.018750000000000003,
            0.018750000000000003,
            0.05625,
            0.09375,
        ],
    },
    Case {
        name: "std",
        shape: &[2, 3],
        node: "StdBackward0",
        view: false,
        shape_out: &[2],
        values: &[0.75, 0.75],
        grad: &[-0.0625, 0.0, 0.0625, -0.125, 0.0, 0.125],
    },
    Case {
        name: "std_all_c0",
        shape: &[2, 3],
        node: "StdBackward0",
        view: false,
        shape_out: &[],
        values: &[1.2808688457449497],
        grad: &[
            -0.030496877279641663,
            -0.018298126367784995,
            -0.006099375455928332,
            0.006099375455928332,
            0.018298126367784995,
            0.030496877279641663,
        ],
    },
    Case {
        name: "prod",
        shape: &[2, 3],
        node: "ProdBackward0",
        view: false,
        shape_out: &[],
        values: &[270.15625],
        grad: &[
            33.76953125,
            19.296875,
            13.5078125,
            10.390625,
            8.4423828125,
            7.109375,
        ],
    },
    Case {
        name: "prod_zero",
        shape: &[5],
        node: "ProdBackward0",
        view: false,
        shape_out: &[],
        values: &[-0.3125],
        grad: &[0.01953125, 0.03125, 0.078125, -0.15625, -0.0390625],
    },
    Case {
        name: "prod_dim",
        shape: &[3, 4],
        node: "ProdBackward1",
        view: false,
        shape_out: &[3],
        values: &[0.15625, -0.0, 7.59375],
        grad: &[
            -0.01953125,
            -0.078125,
            0.0390625,
            0.015625,
            -0.0,
            -0.0,
            0.0,
            -1.03125,
            3.796875,
            1.8984375,
            1.265625,
            0.94921875,
        ],
    },
    Case {
        name: "prod_dim_keep",
        shape: &[3, 4],
        node: "ProdBackward1",
        view: false,
        shape_out: &[1, 4],
        values: &[0.5, -1.09375, 1.09375, -0.5],
        grad: &[
            -0.03125, 0.21875, -0.8203125, -1.0, 0.0625, -0.15625, -0.234375, 0.25, -0.25,
            -0.546875, 0.328125, -0.125,
        ],
    },
    Case {
        name: "cumsum",
        shape: &[2, 5],
        node: "CumsumBackward0",
        view: false,
        shape_out: &[2, 5],
        values: &[
            -2.0, -3.25, -3.75, -3.5, -2.5, 1.75, 0.0, -1.0, -1.25, -0.75,
        ],
        grad: &[
            1.875, 1.75, 1.5, 1.125, 0.625, 5.0, 4.25, 3.375, 2.375, 1.25,
        ],
    },
    Case {
        name: "cumsum0",
        shape: &[3, 2],
        node: "CumsumBackward0",
        view: false,
        shape_out: &[3, 2],
        values: &[-2.0, -1.25, -2.5, -1.0, -1.5, 0.75],
        grad: &[1.125, 1.5, 1.0, 1.25, 0.625, 0.75],
    },
    Case {
        name: "logsumexp",
        shape: &[2, 3],
        node: "LogsumexpBackward0",
        view: false,
        shape_out: &[2],
        values: &[0.027975743855309765, 2.27797574385531],
        grad: &[
            0.01645020589336429,
            0.034825086149534126,
            0.07372470795710158,
            0.03290041178672858,
            0.06965017229906825,
            0.14744941591420313,
        ],
    },
    Case {
        name: "logsumexp_all_keep",
        shape: &[2, 3],
        node: "LogsumexpBackward0",
        view: false,
        shape_out: &[1, 1],
        values: &[2.378182302772057],
        grad: &[
            0.0015685183294124629,
            0.0033205533294234685,
            0.007029611453552755,
            0.01488168756395183,
            0.03150453282011066,
            0.06669509650354882,
        ],
    },
    Case {
        name: "norm",
        shape: &[2, 3],
        node: "LinalgVectorNormBackward0",
        view: false,
        shape_out: &[],
        values: &[3.152380053229623],
        grad: &[
            -0.07930515857181442,
            -0.04956572410738401,
            -0.019826289642953604,
            0.009913144821476802,
            0.03965257928590721,
            0.06939201375033761,
        ],
    },
    Case {
        name: "norm_p3",
        shape: &[2, 3],
        node: "LinalgVectorNormBackward0",
        view: false,
        shape_out: &[2],
        values: &[2.160030649427922, 1.8542148846330946],
        grad: &[
            -0.10716431128944731,
            -0.041861059097440353,
            -0.006697769455590457,
            0.004544644325081115,
            0.07271430920129784,
            0.22268757192897465,
        ],
    },
    Case {
        name: "norm_p1_keep",
        shape: &[2, 3],
        node: "LinalgVectorNormBackward0",
        view: false,
        shape_out: &[1, 3],
        values: &[2.25, 2.25, 2.25],
        grad: &[-0.125, -0.25, -0.375, 0.125, 0.25, 0.375],
    },
    Case {
        name: "amax",
        shape: &[2, 3],
        node: "AmaxBackward0",
        view: false,
        shape_out: &[2],
        values: &[-0.5, 1.75],
        grad: &[0.0, 0.0, 0.125, 0.0, 0.0, 0.25],
    },
    Case {
        name: "amax_ties",
        shape: &[2, 3],
        node: "AmaxBackward0",
        view: false,
        shape_out: &[2],
        values: &[-0.5, 1.75],
        grad: &[0.0, 0.0, 0.0625, 0.0, 0.0, 0.125],
    },
    Case {
        name: "amin_keep",
        shape: &[2, 3],
        node: "AminBackward0",
        view: false,
        shape_out: &[1, 3],
        values: &[-2.0, -1.25, -0.5],
        grad: &[0.125, 0.25, 0.375, 0.0, 0.0, 0.0],
    },
    Case {
        name: "bmm",
        shape: &[2, 2, 3],
        node: "BmmBackward0",
        view: false,
        shape_out: &[2, 2, 2],
        values: &[-4.5, -8.25, 9.0, 12.0, -21.0, -24.0, 33.0, 36.75],
        grad: &[
            0.25, 1.0, 1.75, 0.5, 2.25, 4.0, 9.0, 11.75, 14.5, 12.25, 16.0, 19.75,
        ],
    },
    Case {
        name: "baddbmm",
        shape: &[3, 3],
        node: "BaddbmmBackward0",
        view: false,
        shape_out: &[2, 3, 3],
        values: &[
            7.0, 7.375, 7.75, 8.125, 8.5, 8.875, 7.125, 7.5, 7.875, 7.0, 7.375, 7.75, 8.125, 8.5,
            8.875, 7.125, 7.5, 7.875,
        ],
        grad: &[
            0.6875, 0.8125, 0.9375, 1.0625, 1.1875, 1.3125, 1.4375, 1.5625, 1.6875,
        ],
    },
    Case {
        name: "outer",
        shape: &[3],
        node: "MulBackward0",
        view: false,
        shape_out: &[3, 2],
        values: &[-2.0, 4.0, -1.25, 2.5, -0.5, 1.0],
        grad: &[-0.375, -0.625, -0.875],
    },
];

const ERRORS: &[(&str, &str)] = &[
    (
        "unsqueeze_range",
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    ),
    (
        "squeeze_range",
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    ),
    (
        "squeeze_dup",
        "dim 0 appears multiple times in the list of dims",
    ),
    (
        "t_3d",
        "t() expects a tensor with <= 2 dimensions, but self is 3D",
    ),
    ("view_two", "only one dimension can be inferred"),
    ("view_bad", "shape '[4, -1]' is invalid for input of size 6"),
    (
        "view_neg",
        "invalid shape dimension -2 at index 0 of shape [-2, 3]",
    ),
    (
        "view_stride",
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
    ),
    (
        "reshape_bad",
        "shape '[-1, 4]' is invalid for input of size 6",
    ),
    (
        "reshape_zero",
        "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any value and is ambiguous",
    ),
    (
        "flatten_order",
        "flatten() has invalid args: start_dim cannot come after end_dim",
    ),
    (
        "unflatten_bad",
        "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor",
    ),
    (
        "repeat_short",
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
    ),
    (
        "tril_1d",
        "tril: input tensor must have at least 2 dimensions",
    ),
    (
        "triu_1d",
        "triu: input tensor must have at least 2 dimensions",
    ),
    (
        "roll_align",
        "shifts and dimensions must align. shifts: 2, dims:1",
    ),
    ("roll_empty", "`shifts` required"),
    (
        "flip_dup",
        "dim 0 appears multiple times in the list of dims",
    ),
    (
        "mean_dup",
        "dim 0 appears multiple times in the list of dims",
    ),
    (
        "mean_range",
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    ),
    (
        "amax_empty",
        "amax(): Expected reduction dim 1 to have non-zero size.",
    ),
    ("bmm_2d", "batch1 must be a 3D tensor"),
    ("bmm_2d_b", "batch2 must be a 3D tensor"),
    (
        "bmm_batch",
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].",
    ),
    (
        "bmm_k",
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3].",
    ),
    (
        "baddbmm_self",
        "The expanded size of the tensor (5) must match the existing size (6) at non-singleton dimension 2.  Target sizes: [2, 3, 5].  Tensor sizes: [3, 6]",
    ),
    ("outer_2d", "outer: Expected 1-D argument self, but got 2-D"),
    (
        "outer_2d_b",
        "outer: Expected 1-D argument vec2, but got 2-D",
    ),
];
