//! `reshape` as PyTorch's: a view (`view` of contiguous data, `_reshape_alias` of strided data
//! whose strides allow one, ATen's `computeStride`) or a copy (`_unsafe_view` of a `clone`),
//! with PyTorch 2.15's strides, nodes, values, gradients and in-place semantics through the
//! view. `RESHAPE_CASES` is printed by `tests/views/gen_reshape_cases.py`; the scenarios' values
//! are PyTorch's.

use autograd::*;

type R = Result<()>;

/// A view applied to the `arange` input before the reshape (the generator's ops).
#[derive(Debug)]
enum Op {
    /// `permute(dims)`
    P(&'static [usize]),
    /// `narrow(dim, start, len)`
    N(usize, usize, usize),
    /// `select(dim, index)`
    S(usize, usize),
    /// `expand(shape)`
    E(&'static [usize]),
}
use Op::{E, N, P, S};

/// One reshape as PyTorch ran it: the leaf `x = arange(base)`, `y = x * 1`, the `ops` on `y`,
/// then `reshape(shape)`.
#[derive(Debug)]
struct Case {
    base: &'static [usize],
    ops: &'static [Op],
    /// PyTorch's `is_contiguous()` of the reshaped input.
    input_contiguous: bool,
    shape: &'static [usize],
    /// `r._is_view()`.
    view: bool,
    strides: &'static [usize],
    /// `r.grad_fn` and the node of its first edge.
    node: &'static str,
    under: &'static str,
    values: &'static [i64],
    /// `x.grad` after `(r * arange(1, n + 1)).sum().backward()`.
    grad: &'static [i64],
    /// What `r.mul_(2)` raised ("" if nothing), on a fresh `y = x * 1` and the same ops ...
    inplace_error: &'static str,
    /// ... then `y`'s values and `x.grad` after `(y * arange(1, n + 1)).sum().backward()`.
    base_after: &'static [i64],
    base_grad: &'static [i64],
}

fn ints(t: &Tensor) -> Vec<i64> {
    t.to_vec::<f64>()
        .unwrap()
        .iter()
        .map(|&v| {
            assert_eq!(v.fract(), 0.0, "{v}");
            v as i64
        })
        .collect()
}

fn arange_from(first: f64, shape: &[usize], device: Device) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| first + i as f64).collect(), shape)?.to(device)
}

/// `y = x * 1` and `y` with the case's views applied.
fn replay(x: &Tensor, ops: &[Op]) -> Result<(Tensor, Tensor)> {
    let y = x.mul_scalar(1.0)?;
    let mut t = y.clone();
    for op in ops {
        t = match *op {
            P(dims) => t.permute(dims)?,
            N(d, start, len) => t.narrow(d, start, len)?,
            S(d, i) => t.select(d, i)?,
            E(shape) => t.expand(shape)?,
        };
    }
    Ok((y, t))
}

fn node_name(t: &Tensor) -> String {
    t.grad_fn().expect("a grad_fn").name().to_string()
}

fn check_case(c: &Case, device: Device) -> R {
    let x = arange_from(0.0, c.base, device)?.requires_grad_(true)?;
    let (_, t) = replay(&x, c.ops)?;
    if t.numel() > 0 {
        assert_eq!(t.is_contiguous(), c.input_contiguous, "is_contiguous");
    }
    let r = t.reshape(c.shape)?;
    assert_eq!(r.shape(), c.shape);
    assert_eq!(r.is_view(), c.view, "is_view");
    assert_eq!(r.shares_storage(&t), c.view, "shares_storage");
    assert_eq!(r.strides(), c.strides, "strides");
    assert_eq!(r.device(), device);
    let node = r.grad_fn().expect("a grad_fn");
    assert_eq!(node.name(), c.node);
    let under = node.next_functions()[0].clone().expect("an edge").node;
    assert_eq!(under.name(), c.under);
    assert_eq!(ints(&r), c.values, "values");
    let w = arange_from(1.0, c.shape, device)?;
    r.mul(&w)?.sum()?.backward()?;
    assert_eq!(ints(&x.grad().expect("x.grad")), c.grad, "grad");

    x.set_grad(None)?;
    let (y, t) = replay(&x, c.ops)?;
    let r = t.reshape(c.shape)?;
    match r.mul_(&Tensor::scalar(2.0f64).to(device)?) {
        Ok(_) => assert_eq!(c.inplace_error, "", "mul_ was accepted"),
        Err(e) => assert_eq!(e.to_string(), c.inplace_error),
    }
    let wy = arange_from(1.0, y.shape(), device)?;
    y.mul(&wy)?.sum()?.backward()?;
    assert_eq!(ints(&y), c.base_after, "base after mul_");
    assert_eq!(ints(&x.grad().expect("x.grad")), c.base_grad, "base grad");
    Ok(())
}

/// Every case of `RESHAPE_CASES` on the CPU, the virtual device and (where there is one) the GPU:
/// view or copy, strides, nodes, values, gradients, and an in-place op through the result.
#[test]
fn reshape_is_a_view_exactly_when_pytorchs_is() {
    let mut devices = vec![Device::Cpu, Device::Virtual(1)];
    if cuda::is_available() {
        devices.push(Device::Cuda(0));
    }
    let mut failures = Vec::new();
    for (i, c) in RESHAPE_CASES.iter().enumerate() {
        for &device in &devices {
            let outcome = std::panic::catch_unwind(|| check_case(c, device));
            let failure = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(panic) => panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            };
            failures.push(format!("case {i} on {device}: {failure}\n  {c:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ----- scenarios ---------------------------------------------------------------------------------

/// `arange(1, n + 1)` of `shape`, a leaf that requires grad.
fn leaf(shape: &[usize]) -> Tensor {
    arange_from(1.0, shape, Device::Cpu)
        .and_then(|t| t.requires_grad_(true))
        .unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_of(x: &Tensor) -> Vec<f64> {
    vals(&x.grad().expect("the leaf has a gradient"))
}

fn scalar(v: f64) -> Tensor {
    Tensor::scalar(v)
}

/// A size-1 narrow flattened is a view (stride 4), and an in-place op on it writes the base,
/// whose grad_fn becomes `CopySlices`. PyTorch: `y = [1, 12, 3, 4, 5, 26, 7, 8, 9, 40, 11, 12]`,
/// `x.grad = 2 y`.
#[test]
fn size_one_narrow_flattened_is_a_view_written_through() -> R {
    let x = leaf(&[3, 4]);
    let y = x.mul_scalar(1.0)?;
    let f = y.narrow(1, 1, 1)?.reshape(&[3])?;
    assert!(f.is_view());
    assert_eq!(f.strides(), &[4]);
    assert_eq!(node_name(&f), "ReshapeAliasBackward0");
    f.add_(&Tensor::from_vec(vec![10.0f64, 20.0, 30.0], &[3])?)?;
    assert_eq!(node_name(&y), "CopySlices");
    assert_eq!((y.version(), f.version()), (1, 1));
    let expected = [
        1.0, 12.0, 3.0, 4.0, 5.0, 26.0, 7.0, 8.0, 9.0, 40.0, 11.0, 12.0,
    ];
    assert_eq!(vals(&y), expected);
    y.mul(&y)?.sum()?.backward()?;
    let twice: Vec<f64> = expected.iter().map(|v| 2.0 * v).collect();
    assert_eq!(grad_of(&x), twice);
    Ok(())
}

/// A strided 1-D `select` reshaped to its own shape is a view of it; after `r.mul_(2)` the
/// view's grad_fn is regenerated (`AsStridedBackward0`). PyTorch: `x.grad = 1` but `4` in
/// column 2.
#[test]
fn strided_select_reshaped_to_its_own_shape_is_a_view() -> R {
    let x = leaf(&[3, 4]);
    let y = x.mul_scalar(1.0)?;
    let r = y.select(1, 2)?.reshape(&[3])?;
    assert!(r.is_view());
    assert_eq!(r.strides(), &[4]);
    assert_eq!(node_name(&r), "ReshapeAliasBackward0");
    r.mul_(&scalar(2.0))?;
    assert_eq!(
        vals(&y),
        [
            1.0, 2.0, 6.0, 4.0, 5.0, 6.0, 14.0, 8.0, 9.0, 10.0, 22.0, 12.0
        ]
    );
    assert_eq!(node_name(&y), "CopySlices");
    assert_eq!(node_name(&r), "AsStridedBackward0");
    y.sum()?.add(&r.sum()?)?.backward()?;
    assert_eq!(
        grad_of(&x),
        [1.0, 1.0, 4.0, 1.0, 1.0, 1.0, 4.0, 1.0, 1.0, 1.0, 4.0, 1.0]
    );
    Ok(())
}

/// A transposed `[2, 4, 3]` tensor: splitting its dims is a view, merging the transposed pair
/// is a copy (`UnsafeViewBackward0` over `CloneBackward0`) that an in-place op leaves the base
/// alone through. PyTorch's gradient: `10 + 8 i`.
#[test]
fn transposed_reshape_is_a_view_only_where_the_strides_allow() -> R {
    let x = leaf(&[2, 3, 4]);
    let y = x.mul_scalar(1.0)?;
    let t = y.transpose(1, 2)?;
    let a = t.reshape(&[2, 2, 2, 3])?;
    let b = t.reshape(&[8, 3])?;
    let c = t.reshape(&[2, 12])?;
    assert!(a.is_view() && !b.is_view() && !c.is_view());
    assert_eq!(a.strides(), &[12, 2, 1, 4]);
    assert_eq!(b.strides(), &[3, 1]);
    assert_eq!(c.strides(), &[12, 1]);
    let under = |v: &Tensor| {
        v.grad_fn().unwrap().next_functions()[0]
            .clone()
            .unwrap()
            .node
            .name()
            .to_string()
    };
    assert_eq!(
        (node_name(&a), under(&a)),
        ("ReshapeAliasBackward0".into(), "TransposeBackward0".into())
    );
    for copy in [&b, &c] {
        assert_eq!(
            (node_name(copy), under(copy)),
            ("UnsafeViewBackward0".into(), "CloneBackward0".into())
        );
    }
    b.mul_(&scalar(3.0))?;
    assert_eq!((y.version(), b.version()), (0, 1));
    a.mul_(&scalar(2.0))?;
    assert_eq!((y.version(), a.version()), (1, 1));
    assert_eq!(node_name(&y), "CopySlices");
    a.sum()?.add(&y.mul(&y)?.sum()?)?.backward()?;
    let expected: Vec<f64> = (0..24).map(|i| 10.0 + 8.0 * i as f64).collect();
    assert_eq!(grad_of(&x), expected);
    Ok(())
}

/// A reshape-view of a `chunk` output keeps its multi-output creation: refused in place with
/// PyTorch's text naming `ReshapeAlias`; a reshape that copies is an ordinary tensor.
#[test]
fn reshape_view_of_a_multi_output_view_is_refused_in_place() -> R {
    let x = leaf(&[3, 4]);
    let y = x.mul_scalar(1.0)?;
    let p = y.chunk(2, 1)?.remove(0);
    let v = p.reshape(&[3, 2, 1])?;
    assert!(v.is_view());
    assert_eq!(v.strides(), &[4, 1, 1]);
    assert_eq!(node_name(&v), "ReshapeAliasBackward0");
    let err = v.mul_(&scalar(2.0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Output 0 of ReshapeAlias is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
    );
    let copy = p.reshape(&[6])?;
    assert!(!copy.is_view());
    assert_eq!(node_name(&copy), "UnsafeViewBackward0");
    copy.mul_(&scalar(2.0))?;
    assert_eq!((y.version(), copy.version()), (0, 1));
    Ok(())
}

/// A reshape-view made under `no_grad` is a view without grad_fn that requires grad, refused in
/// place in grad mode with PyTorch's text.
#[test]
fn reshape_view_made_in_no_grad_mode_is_refused_in_place() -> R {
    let x = leaf(&[3, 4]);
    let y = x.mul_scalar(1.0)?;
    let v = {
        let _g = no_grad();
        y.transpose(0, 1)?.reshape(&[2, 2, 3])?
    };
    assert!(v.is_view() && v.grad_fn().is_none() && v.requires_grad());
    assert_eq!(v.strides(), &[2, 1, 4]);
    let err = v.mul_(&scalar(2.0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
    );
    Ok(())
}

/// A reshape-view saved by `mul` shares its base's version counter: modifying the base fails the
/// backward with PyTorch's text (the view's grad_fn regenerated, `AsStrided`; the dtype and the
/// hint written as this crate writes them, `[torch.DoubleTensor [3, 2, 1]]` and
/// `torch.autograd.set_detect_anomaly(True, check_nan=False)` there); a reshape that copied does
/// not. PyTorch: `x.grad = 2 x` then.
#[test]
fn saved_reshape_view_sees_its_base_modified() -> R {
    let x = leaf(&[2, 3]);
    let y = x.mul_scalar(1.0)?;
    let r = y.transpose(0, 1)?.reshape(&[3, 2, 1])?;
    let z = r.mul(&r)?;
    y.mul_(&scalar(2.0))?;
    assert_eq!(node_name(&r), "AsStridedBackward0");
    let err = z.sum()?.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "one of the variables needed for gradient computation has been modified by an inplace operation: [f64 [3, 2, 1]], which is output 0 of AsStrided, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd::set_detect_anomaly(true, false)."
    );
    let x = leaf(&[2, 3]);
    let y = x.mul_scalar(1.0)?;
    let r = y.transpose(0, 1)?.reshape(&[6])?;
    let z = r.mul(&r)?;
    y.mul_(&scalar(2.0))?;
    z.sum()?.backward()?;
    assert_eq!(grad_of(&x), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    Ok(())
}

/// Second order through a reshape-view of a transposed tensor: `r = (x * x).t().reshape(3, 1,
/// 2)`, `g = d/dx sum(r * r * w)` with `create_graph`, then `d/dx sum(g)`; PyTorch's values.
#[test]
fn double_backward_through_a_reshape_view() -> R {
    let x = leaf(&[2, 3]);
    let y = x.mul(&x)?;
    let r = y.transpose(0, 1)?.reshape(&[3, 1, 2])?;
    assert!(r.is_view());
    let w = arange_from(1.0, &[3, 1, 2], Device::Cpu)?;
    let loss = r.mul(&r)?.mul(&w)?.sum()?;
    let g = grad(
        &[loss],
        std::slice::from_ref(&x),
        GradOptions::new().create_graph(true),
    )?;
    let g = g[0].clone().expect("a gradient");
    assert_eq!(vals(&g), [4.0, 96.0, 540.0, 512.0, 2000.0, 5184.0]);
    let gg = grad(&[g.sum()?], &[x], GradOptions::new())?;
    assert_eq!(
        vals(gg[0].as_ref().expect("a gradient")),
        [12.0, 144.0, 540.0, 384.0, 1200.0, 2592.0]
    );
    Ok(())
}

/// A reshape-view taken before its base is modified sees the new history. PyTorch: `x.grad = 2`.
#[test]
fn reshape_view_taken_before_its_base_is_modified_sees_it() -> R {
    let x = leaf(&[2, 3]);
    let y = x.mul_scalar(1.0)?;
    let r = y.transpose(0, 1)?.reshape(&[3, 2])?;
    y.mul_(&scalar(2.0))?;
    assert_eq!(node_name(&r), "AsStridedBackward0");
    r.sum()?.backward()?;
    assert_eq!(grad_of(&x), [2.0; 6]);
    Ok(())
}

// Generated by tests/views/gen_reshape_cases.py (torch 2.15.0+cu132).
#[rustfmt::skip]
const RESHAPE_CASES: &[Case] = &[
    Case { base: &[3, 1, 4, 1], ops: &[P(&[2, 1, 0, 3]), E(&[2, 4, 2, 3, 2]), E(&[2, 4, 2, 3, 2])], input_contiguous: false, shape: &[2, 4, 2, 3, 2], view: true, strides: &[0, 1, 0, 4, 0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0, 4, 4, 8, 8, 0, 0, 4, 4, 8, 8, 1, 1, 5, 5, 9, 9, 1, 1, 5, 5, 9, 9, 2, 2, 6, 6, 10, 10, 2, 2, 6, 6, 10, 10, 3, 3, 7, 7, 11, 11, 3, 3, 7, 7, 11, 11, 0, 0, 4, 4, 8, 8, 0, 0, 4, 4, 8, 8, 1, 1, 5, 5, 9, 9, 1, 1, 5, 5, 9, 9, 2, 2, 6, 6, 10, 10, 2, 2, 6, 6, 10, 10, 3, 3, 7, 7, 11, 11, 3, 3, 7, 7, 11, 11], grad: &[228, 324, 420, 516, 244, 340, 436, 532, 260, 356, 452, 548], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
    Case { base: &[4, 4, 4], ops: &[N(1, 0, 3), P(&[1, 0, 2])], input_contiguous: false, shape: &[1, 6, 8], view: false, strides: &[48, 8, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 8, 9, 10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59], grad: &[1, 2, 3, 4, 17, 18, 19, 20, 33, 34, 35, 36, 0, 0, 0, 0, 5, 6, 7, 8, 21, 22, 23, 24, 37, 38, 39, 40, 0, 0, 0, 0, 9, 10, 11, 12, 25, 26, 27, 28, 41, 42, 43, 44, 0, 0, 0, 0, 13, 14, 15, 16, 29, 30, 31, 32, 45, 46, 47, 48, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64] },
    Case { base: &[3, 1, 1, 2], ops: &[N(2, 0, 1)], input_contiguous: true, shape: &[1, 2, 1, 3], view: true, strides: &[6, 3, 3, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1, 2, 3, 4, 5], grad: &[1, 2, 3, 4, 5, 6], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10], base_grad: &[2, 4, 6, 8, 10, 12] },
    Case { base: &[3, 3, 4, 2], ops: &[S(0, 2)], input_contiguous: true, shape: &[1, 3, 8], view: true, strides: &[24, 8, 1], node: "ViewBackward0", under: "SelectBackward0", values: &[48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 142], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 142, 144] },
    Case { base: &[3, 1, 1], ops: &[N(1, 0, 1), N(1, 1, 0), N(0, 1, 1)], input_contiguous: true, shape: &[1, 0, 1], view: true, strides: &[1, 1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[], grad: &[0, 0, 0], inplace_error: "", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3, 3, 3, 2], ops: &[N(1, 2, 1), N(0, 0, 3)], input_contiguous: false, shape: &[9, 2, 1], view: false, strides: &[2, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[12, 13, 14, 15, 16, 17, 30, 31, 32, 33, 34, 35, 48, 49, 50, 51, 52, 53], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13, 14, 15, 16, 17, 18], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54] },
    Case { base: &[2, 3], ops: &[N(1, 0, 2)], input_contiguous: false, shape: &[2, 2], view: true, strides: &[3, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 1, 3, 4], grad: &[1, 2, 0, 3, 4, 0], inplace_error: "", base_after: &[0, 2, 2, 6, 8, 5], base_grad: &[2, 4, 3, 8, 10, 6] },
    Case { base: &[4, 3, 4, 1], ops: &[N(0, 0, 4), P(&[2, 0, 1, 3])], input_contiguous: false, shape: &[4, 4, 3, 1], view: true, strides: &[1, 12, 4, 1], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47], grad: &[1, 13, 25, 37, 2, 14, 26, 38, 3, 15, 27, 39, 4, 16, 28, 40, 5, 17, 29, 41, 6, 18, 30, 42, 7, 19, 31, 43, 8, 20, 32, 44, 9, 21, 33, 45, 10, 22, 34, 46, 11, 23, 35, 47, 12, 24, 36, 48], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96] },
    Case { base: &[3], ops: &[N(0, 1, 2)], input_contiguous: true, shape: &[2, 1], view: true, strides: &[1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[1, 2], grad: &[0, 1, 2], inplace_error: "", base_after: &[0, 2, 4], base_grad: &[1, 4, 6] },
    Case { base: &[3], ops: &[P(&[0])], input_contiguous: true, shape: &[3], view: true, strides: &[1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2], grad: &[1, 2, 3], inplace_error: "", base_after: &[0, 2, 4], base_grad: &[2, 4, 6] },
    Case { base: &[3, 3, 3, 1], ops: &[E(&[3, 3, 3, 2])], input_contiguous: false, shape: &[18, 3, 1], view: false, strides: &[3, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26], grad: &[3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63, 67, 71, 75, 79, 83, 87, 91, 95, 99, 103, 107], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27] },
    Case { base: &[3, 3], ops: &[P(&[1, 0]), S(0, 1), N(0, 1, 2)], input_contiguous: false, shape: &[2], view: true, strides: &[3], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[4, 7], grad: &[0, 0, 0, 0, 1, 0, 0, 2, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 8, 5, 6, 14, 8], base_grad: &[1, 2, 3, 4, 10, 6, 7, 16, 9] },
    Case { base: &[3, 4, 2, 2], ops: &[E(&[2, 3, 4, 2, 2]), E(&[2, 3, 4, 2, 2])], input_contiguous: false, shape: &[1, 2, 2, 24], view: true, strides: &[0, 0, 24, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], grad: &[50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 142, 144], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48] },
    Case { base: &[4, 1, 4, 4], ops: &[N(0, 3, 1), P(&[0, 1, 3, 2])], input_contiguous: false, shape: &[2, 8], view: false, strides: &[8, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[48, 52, 56, 60, 49, 53, 57, 61, 50, 54, 58, 62, 51, 55, 59, 63], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64] },
    Case { base: &[4, 4, 4], ops: &[S(2, 3)], input_contiguous: false, shape: &[1, 8, 1, 2], view: true, strides: &[64, 8, 8, 4], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63], grad: &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 10, 0, 0, 0, 11, 0, 0, 0, 12, 0, 0, 0, 13, 0, 0, 0, 14, 0, 0, 0, 15, 0, 0, 0, 16], inplace_error: "", base_after: &[0, 1, 2, 6, 4, 5, 6, 14, 8, 9, 10, 22, 12, 13, 14, 30, 16, 17, 18, 38, 20, 21, 22, 46, 24, 25, 26, 54, 28, 29, 30, 62, 32, 33, 34, 70, 36, 37, 38, 78, 40, 41, 42, 86, 44, 45, 46, 94, 48, 49, 50, 102, 52, 53, 54, 110, 56, 57, 58, 118, 60, 61, 62, 126], base_grad: &[1, 2, 3, 8, 5, 6, 7, 16, 9, 10, 11, 24, 13, 14, 15, 32, 17, 18, 19, 40, 21, 22, 23, 48, 25, 26, 27, 56, 29, 30, 31, 64, 33, 34, 35, 72, 37, 38, 39, 80, 41, 42, 43, 88, 45, 46, 47, 96, 49, 50, 51, 104, 53, 54, 55, 112, 57, 58, 59, 120, 61, 62, 63, 128] },
    Case { base: &[4, 4, 2, 2], ops: &[P(&[3, 0, 1, 2]), S(2, 3)], input_contiguous: false, shape: &[1, 4, 4], view: false, strides: &[16, 4, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[12, 14, 28, 30, 44, 46, 60, 62, 13, 15, 29, 31, 45, 47, 61, 63], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9, 2, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 11, 4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 13, 6, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 15, 8, 16], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64] },
    Case { base: &[1, 2, 4], ops: &[P(&[0, 1, 2])], input_contiguous: true, shape: &[2, 1, 4, 1], view: true, strides: &[4, 4, 1, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 3, 4, 5, 6, 7], grad: &[1, 2, 3, 4, 5, 6, 7, 8], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16] },
    Case { base: &[3, 3, 3, 4], ops: &[N(0, 0, 1), S(2, 1)], input_contiguous: false, shape: &[1, 4, 1, 3], view: false, strides: &[12, 3, 3, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[4, 5, 6, 7, 16, 17, 18, 19, 28, 29, 30, 31], grad: &[0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108] },
    Case { base: &[1, 1, 4], ops: &[P(&[0, 2, 1]), E(&[2, 3, 4, 1]), N(2, 0, 4)], input_contiguous: false, shape: &[1, 2, 4, 3], view: false, strides: &[24, 12, 3, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], grad: &[66, 72, 78, 84], inplace_error: "", base_after: &[0, 1, 2, 3], base_grad: &[1, 2, 3, 4] },
    Case { base: &[3, 3, 2], ops: &[E(&[3, 3, 2]), P(&[1, 2, 0])], input_contiguous: false, shape: &[3, 2, 3], view: true, strides: &[2, 1, 6], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 6, 12, 1, 7, 13, 2, 8, 14, 3, 9, 15, 4, 10, 16, 5, 11, 17], grad: &[1, 4, 7, 10, 13, 16, 2, 5, 8, 11, 14, 17, 3, 6, 9, 12, 15, 18], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36] },
    Case { base: &[4, 1, 4, 1], ops: &[N(3, 0, 1)], input_contiguous: true, shape: &[4, 1, 4, 1], view: true, strides: &[4, 4, 1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32] },
    Case { base: &[2], ops: &[E(&[2, 2]), N(1, 0, 2)], input_contiguous: false, shape: &[1, 1, 1, 4], view: false, strides: &[4, 4, 4, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 0, 1], grad: &[4, 6], inplace_error: "", base_after: &[0, 1], base_grad: &[1, 2] },
    Case { base: &[3, 1], ops: &[S(0, 1), E(&[2])], input_contiguous: false, shape: &[1, 1, 2, 1], view: true, strides: &[0, 0, 0, 0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[1, 1], grad: &[0, 3, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3, 1, 2], ops: &[E(&[3, 2, 2])], input_contiguous: false, shape: &[6, 1, 1, 2], view: false, strides: &[2, 2, 2, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5], grad: &[4, 6, 12, 14, 20, 22], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[4, 1, 3, 4], ops: &[P(&[1, 0, 3, 2])], input_contiguous: false, shape: &[1, 4, 4, 3], view: true, strides: &[48, 12, 1, 4], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23, 24, 28, 32, 25, 29, 33, 26, 30, 34, 27, 31, 35, 36, 40, 44, 37, 41, 45, 38, 42, 46, 39, 43, 47], grad: &[1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12, 13, 16, 19, 22, 14, 17, 20, 23, 15, 18, 21, 24, 25, 28, 31, 34, 26, 29, 32, 35, 27, 30, 33, 36, 37, 40, 43, 46, 38, 41, 44, 47, 39, 42, 45, 48], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96] },
    Case { base: &[2, 2], ops: &[N(1, 1, 1)], input_contiguous: false, shape: &[2, 1], view: true, strides: &[2, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[1, 3], grad: &[0, 1, 0, 2], inplace_error: "", base_after: &[0, 2, 2, 6], base_grad: &[1, 4, 3, 8] },
    Case { base: &[3, 4], ops: &[S(1, 2)], input_contiguous: false, shape: &[1, 1, 3, 1], view: true, strides: &[12, 12, 4, 4], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[2, 6, 10], grad: &[0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0], inplace_error: "", base_after: &[0, 1, 4, 3, 4, 5, 12, 7, 8, 9, 20, 11], base_grad: &[1, 2, 6, 4, 5, 6, 14, 8, 9, 10, 22, 12] },
    Case { base: &[1, 3, 1, 2], ops: &[P(&[3, 1, 0, 2]), E(&[2, 2, 3, 2, 3])], input_contiguous: false, shape: &[2, 6, 6], view: false, strides: &[36, 6, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5], grad: &[258, 474, 330, 546, 402, 618], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[3, 4, 3, 1], ops: &[E(&[3, 4, 3, 3]), P(&[3, 1, 0, 2])], input_contiguous: false, shape: &[3, 4, 3, 3], view: true, strides: &[0, 3, 12, 1], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 12, 13, 14, 24, 25, 26, 3, 4, 5, 15, 16, 17, 27, 28, 29, 6, 7, 8, 18, 19, 20, 30, 31, 32, 9, 10, 11, 21, 22, 23, 33, 34, 35, 0, 1, 2, 12, 13, 14, 24, 25, 26, 3, 4, 5, 15, 16, 17, 27, 28, 29, 6, 7, 8, 18, 19, 20, 30, 31, 32, 9, 10, 11, 21, 22, 23, 33, 34, 35, 0, 1, 2, 12, 13, 14, 24, 25, 26, 3, 4, 5, 15, 16, 17, 27, 28, 29, 6, 7, 8, 18, 19, 20, 30, 31, 32, 9, 10, 11, 21, 22, 23, 33, 34, 35], grad: &[111, 114, 117, 138, 141, 144, 165, 168, 171, 192, 195, 198, 120, 123, 126, 147, 150, 153, 174, 177, 180, 201, 204, 207, 129, 132, 135, 156, 159, 162, 183, 186, 189, 210, 213, 216], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36] },
    Case { base: &[1, 4, 3, 3], ops: &[P(&[2, 1, 3, 0])], input_contiguous: false, shape: &[36, 1, 1, 1], view: false, strides: &[1, 1, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 9, 10, 11, 18, 19, 20, 27, 28, 29, 3, 4, 5, 12, 13, 14, 21, 22, 23, 30, 31, 32, 6, 7, 8, 15, 16, 17, 24, 25, 26, 33, 34, 35], grad: &[1, 2, 3, 13, 14, 15, 25, 26, 27, 4, 5, 6, 16, 17, 18, 28, 29, 30, 7, 8, 9, 19, 20, 21, 31, 32, 33, 10, 11, 12, 22, 23, 24, 34, 35, 36], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36] },
    Case { base: &[3, 4, 1], ops: &[N(0, 0, 2), P(&[1, 0, 2]), P(&[2, 0, 1])], input_contiguous: false, shape: &[1, 2, 2, 2], view: true, strides: &[4, 2, 1, 4], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 4, 1, 5, 2, 6, 3, 7], grad: &[1, 3, 5, 7, 2, 4, 6, 8, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 8, 9, 10, 11], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 9, 10, 11, 12] },
    Case { base: &[1, 2, 1], ops: &[P(&[1, 2, 0]), N(2, 0, 1)], input_contiguous: true, shape: &[2, 1, 1], view: true, strides: &[1, 2, 2], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1], grad: &[1, 2], inplace_error: "", base_after: &[0, 2], base_grad: &[2, 4] },
    Case { base: &[4], ops: &[N(0, 2, 1), E(&[3])], input_contiguous: false, shape: &[3], view: true, strides: &[0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[2, 2, 2], grad: &[0, 0, 6, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3], base_grad: &[1, 2, 3, 4] },
    Case { base: &[1, 3], ops: &[E(&[2, 1, 3]), E(&[2, 3, 3])], input_contiguous: false, shape: &[1, 1, 6, 3], view: true, strides: &[0, 0, 0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2], grad: &[51, 57, 63], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[1, 2, 2], ops: &[S(0, 0), S(1, 0), N(0, 0, 2)], input_contiguous: false, shape: &[2, 1, 1], view: true, strides: &[2, 2, 2], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 2], grad: &[1, 0, 2, 0], inplace_error: "", base_after: &[0, 1, 4, 3], base_grad: &[2, 2, 6, 4] },
    Case { base: &[3, 1, 1, 1], ops: &[P(&[0, 1, 2, 3]), E(&[3, 3, 2, 2])], input_contiguous: false, shape: &[3, 3, 2, 2], view: true, strides: &[1, 0, 0, 0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], grad: &[78, 222, 366], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3], ops: &[N(0, 0, 2)], input_contiguous: true, shape: &[2, 1, 1, 1], view: true, strides: &[1, 1, 1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1], grad: &[1, 2, 0], inplace_error: "", base_after: &[0, 2, 2], base_grad: &[2, 4, 3] },
    Case { base: &[3], ops: &[P(&[0]), E(&[2, 3])], input_contiguous: false, shape: &[1, 1, 2, 3], view: true, strides: &[0, 0, 0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 0, 1, 2], grad: &[5, 7, 9], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3, 3], ops: &[N(1, 0, 2)], input_contiguous: false, shape: &[2, 3, 1], view: false, strides: &[3, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 3, 4, 6, 7], grad: &[1, 2, 0, 3, 4, 0, 5, 6, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
    Case { base: &[4, 1, 3], ops: &[E(&[4, 3, 3]), N(0, 0, 3), E(&[2, 3, 3, 3])], input_contiguous: false, shape: &[2, 3, 3, 3], view: true, strides: &[0, 3, 0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 6, 7, 8, 6, 7, 8, 6, 7, 8, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 6, 7, 8, 6, 7, 8, 6, 7, 8], grad: &[105, 111, 117, 159, 165, 171, 213, 219, 225, 0, 0, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
    Case { base: &[3, 1], ops: &[E(&[2, 3, 2]), P(&[1, 0, 2]), E(&[3, 2, 2])], input_contiguous: false, shape: &[3, 1, 1, 4], view: true, strides: &[1, 0, 0, 0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], grad: &[10, 26, 42], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3, 3, 1], ops: &[E(&[3, 3, 2]), N(2, 0, 2)], input_contiguous: false, shape: &[1, 3, 6], view: false, strides: &[18, 6, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8], grad: &[3, 7, 11, 15, 19, 23, 27, 31, 35], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
    Case { base: &[2, 2, 4], ops: &[N(0, 0, 2), S(1, 1), S(1, 2)], input_contiguous: false, shape: &[2, 1, 1, 1], view: true, strides: &[8, 8, 8, 8], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[6, 14], grad: &[0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 12, 7, 8, 9, 10, 11, 12, 13, 28, 15], base_grad: &[1, 2, 3, 4, 5, 6, 14, 8, 9, 10, 11, 12, 13, 14, 30, 16] },
    Case { base: &[4], ops: &[E(&[4]), P(&[0])], input_contiguous: true, shape: &[4], view: true, strides: &[1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 3], grad: &[1, 2, 3, 4], inplace_error: "", base_after: &[0, 2, 4, 6], base_grad: &[2, 4, 6, 8] },
    Case { base: &[3, 2, 4, 3], ops: &[S(3, 0)], input_contiguous: false, shape: &[24, 1, 1], view: true, strides: &[3, 3, 3], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 51, 54, 57, 60, 63, 66, 69], grad: &[1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 10, 0, 0, 11, 0, 0, 12, 0, 0, 13, 0, 0, 14, 0, 0, 15, 0, 0, 16, 0, 0, 17, 0, 0, 18, 0, 0, 19, 0, 0, 20, 0, 0, 21, 0, 0, 22, 0, 0, 23, 0, 0, 24, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 6, 4, 5, 12, 7, 8, 18, 10, 11, 24, 13, 14, 30, 16, 17, 36, 19, 20, 42, 22, 23, 48, 25, 26, 54, 28, 29, 60, 31, 32, 66, 34, 35, 72, 37, 38, 78, 40, 41, 84, 43, 44, 90, 46, 47, 96, 49, 50, 102, 52, 53, 108, 55, 56, 114, 58, 59, 120, 61, 62, 126, 64, 65, 132, 67, 68, 138, 70, 71], base_grad: &[2, 2, 3, 8, 5, 6, 14, 8, 9, 20, 11, 12, 26, 14, 15, 32, 17, 18, 38, 20, 21, 44, 23, 24, 50, 26, 27, 56, 29, 30, 62, 32, 33, 68, 35, 36, 74, 38, 39, 80, 41, 42, 86, 44, 45, 92, 47, 48, 98, 50, 51, 104, 53, 54, 110, 56, 57, 116, 59, 60, 122, 62, 63, 128, 65, 66, 134, 68, 69, 140, 71, 72] },
    Case { base: &[2], ops: &[E(&[2, 2]), N(1, 0, 1)], input_contiguous: false, shape: &[2, 1, 1, 1], view: true, strides: &[0, 1, 1, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 0], grad: &[3, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1], base_grad: &[1, 2] },
    Case { base: &[4, 3], ops: &[P(&[0, 1]), S(1, 0), N(0, 1, 2)], input_contiguous: false, shape: &[1, 2], view: true, strides: &[6, 3], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[3, 6], grad: &[0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 6, 4, 5, 12, 7, 8, 9, 10, 11], base_grad: &[1, 2, 3, 8, 5, 6, 14, 8, 9, 10, 11, 12] },
    Case { base: &[3], ops: &[N(0, 1, 1), E(&[2, 2]), S(1, 0)], input_contiguous: false, shape: &[1, 2], view: true, strides: &[0, 0], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[1, 1], grad: &[0, 3, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[4, 2], ops: &[E(&[2, 4, 2]), N(2, 0, 2), P(&[0, 2, 1])], input_contiguous: false, shape: &[4, 4, 1], view: false, strides: &[4, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 2, 4, 6, 1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7], grad: &[10, 18, 12, 20, 14, 22, 16, 24], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8] },
    Case { base: &[3], ops: &[E(&[2, 3])], input_contiguous: false, shape: &[2, 1, 1, 3], view: true, strides: &[0, 3, 3, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 0, 1, 2], grad: &[5, 7, 9], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3], ops: &[N(0, 2, 1), P(&[0])], input_contiguous: true, shape: &[], view: true, strides: &[], node: "ViewBackward0", under: "PermuteBackward0", values: &[2], grad: &[0, 0, 1], inplace_error: "", base_after: &[0, 1, 4], base_grad: &[1, 2, 6] },
    Case { base: &[2], ops: &[N(0, 1, 1)], input_contiguous: true, shape: &[], view: true, strides: &[], node: "ViewBackward0", under: "SliceBackward0", values: &[1], grad: &[0, 1], inplace_error: "", base_after: &[0, 2], base_grad: &[1, 4] },
    Case { base: &[2, 3, 1, 4], ops: &[P(&[1, 3, 2, 0]), S(1, 3)], input_contiguous: false, shape: &[1, 1, 6, 1], view: false, strides: &[6, 6, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[3, 15, 7, 19, 11, 23], grad: &[0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24] },
    Case { base: &[3, 2], ops: &[E(&[3, 2]), E(&[2, 3, 2]), E(&[2, 3, 2])], input_contiguous: false, shape: &[2, 3, 2], view: true, strides: &[0, 2, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5], grad: &[8, 10, 12, 14, 16, 18], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[3, 3], ops: &[E(&[3, 3]), S(0, 2), E(&[3])], input_contiguous: true, shape: &[1, 3, 1, 1], view: true, strides: &[3, 1, 1, 1], node: "ViewBackward0", under: "ExpandBackward0", values: &[6, 7, 8], grad: &[0, 0, 0, 0, 0, 0, 1, 2, 3], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 12, 14, 16], base_grad: &[1, 2, 3, 4, 5, 6, 14, 16, 18] },
    Case { base: &[3], ops: &[N(0, 0, 1), E(&[2, 2]), E(&[2, 2])], input_contiguous: false, shape: &[1, 1, 4], view: true, strides: &[0, 0, 0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0, 0, 0], grad: &[10, 0, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[4, 2, 4], ops: &[S(1, 0), S(1, 2), N(0, 0, 3)], input_contiguous: false, shape: &[3], view: true, strides: &[8], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[2, 10, 18], grad: &[0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 4, 3, 4, 5, 6, 7, 8, 9, 20, 11, 12, 13, 14, 15, 16, 17, 36, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31], base_grad: &[1, 2, 6, 4, 5, 6, 7, 8, 9, 10, 22, 12, 13, 14, 15, 16, 17, 18, 38, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32] },
    Case { base: &[4], ops: &[N(0, 0, 4), N(0, 0, 4), N(0, 0, 3)], input_contiguous: true, shape: &[1, 3, 1, 1], view: true, strides: &[3, 1, 1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1, 2], grad: &[1, 2, 3, 0], inplace_error: "", base_after: &[0, 2, 4, 3], base_grad: &[2, 4, 6, 4] },
    Case { base: &[2, 3], ops: &[P(&[0, 1])], input_contiguous: true, shape: &[1, 1, 3, 2], view: true, strides: &[6, 6, 2, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 3, 4, 5], grad: &[1, 2, 3, 4, 5, 6], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10], base_grad: &[2, 4, 6, 8, 10, 12] },
    Case { base: &[4], ops: &[S(0, 2)], input_contiguous: true, shape: &[1], view: true, strides: &[1], node: "ViewBackward0", under: "SelectBackward0", values: &[2], grad: &[0, 0, 1, 0], inplace_error: "", base_after: &[0, 1, 4, 3], base_grad: &[1, 2, 6, 4] },
    Case { base: &[2, 2, 4], ops: &[P(&[2, 0, 1]), P(&[0, 1, 2]), E(&[4, 2, 2])], input_contiguous: false, shape: &[4, 2, 2], view: true, strides: &[1, 8, 4], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15], grad: &[1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32] },
    Case { base: &[3, 2, 2], ops: &[P(&[2, 1, 0])], input_contiguous: false, shape: &[1, 1, 6, 2], view: false, strides: &[12, 12, 2, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 4, 8, 2, 6, 10, 1, 5, 9, 3, 7, 11], grad: &[1, 7, 4, 10, 2, 8, 5, 11, 3, 9, 6, 12], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
    Case { base: &[3, 2], ops: &[P(&[1, 0]), N(1, 0, 3), N(0, 0, 2)], input_contiguous: false, shape: &[6, 1], view: false, strides: &[1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 2, 4, 1, 3, 5], grad: &[1, 4, 2, 5, 3, 6], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[2, 3, 2, 3], ops: &[N(3, 1, 1)], input_contiguous: false, shape: &[1, 6, 2, 1], view: true, strides: &[36, 6, 3, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34], grad: &[0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 10, 0, 0, 11, 0, 0, 12, 0], inplace_error: "", base_after: &[0, 2, 2, 3, 8, 5, 6, 14, 8, 9, 20, 11, 12, 26, 14, 15, 32, 17, 18, 38, 20, 21, 44, 23, 24, 50, 26, 27, 56, 29, 30, 62, 32, 33, 68, 35], base_grad: &[1, 4, 3, 4, 10, 6, 7, 16, 9, 10, 22, 12, 13, 28, 15, 16, 34, 18, 19, 40, 21, 22, 46, 24, 25, 52, 27, 28, 58, 30, 31, 64, 33, 34, 70, 36] },
    Case { base: &[3], ops: &[E(&[3]), S(0, 2)], input_contiguous: true, shape: &[1, 1, 1, 1], view: true, strides: &[1, 1, 1, 1], node: "ViewBackward0", under: "SelectBackward0", values: &[2], grad: &[0, 0, 1], inplace_error: "", base_after: &[0, 1, 4], base_grad: &[1, 2, 6] },
    Case { base: &[4, 2, 3, 3], ops: &[S(3, 2)], input_contiguous: false, shape: &[2, 2, 6], view: true, strides: &[36, 18, 3], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47, 50, 53, 56, 59, 62, 65, 68, 71], grad: &[0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 10, 0, 0, 11, 0, 0, 12, 0, 0, 13, 0, 0, 14, 0, 0, 15, 0, 0, 16, 0, 0, 17, 0, 0, 18, 0, 0, 19, 0, 0, 20, 0, 0, 21, 0, 0, 22, 0, 0, 23, 0, 0, 24], inplace_error: "", base_after: &[0, 1, 4, 3, 4, 10, 6, 7, 16, 9, 10, 22, 12, 13, 28, 15, 16, 34, 18, 19, 40, 21, 22, 46, 24, 25, 52, 27, 28, 58, 30, 31, 64, 33, 34, 70, 36, 37, 76, 39, 40, 82, 42, 43, 88, 45, 46, 94, 48, 49, 100, 51, 52, 106, 54, 55, 112, 57, 58, 118, 60, 61, 124, 63, 64, 130, 66, 67, 136, 69, 70, 142], base_grad: &[1, 2, 6, 4, 5, 12, 7, 8, 18, 10, 11, 24, 13, 14, 30, 16, 17, 36, 19, 20, 42, 22, 23, 48, 25, 26, 54, 28, 29, 60, 31, 32, 66, 34, 35, 72, 37, 38, 78, 40, 41, 84, 43, 44, 90, 46, 47, 96, 49, 50, 102, 52, 53, 108, 55, 56, 114, 58, 59, 120, 61, 62, 126, 64, 65, 132, 67, 68, 138, 70, 71, 144] },
    Case { base: &[2, 2], ops: &[P(&[1, 0]), P(&[1, 0])], input_contiguous: true, shape: &[1, 1, 2, 2], view: true, strides: &[4, 4, 2, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 3], grad: &[1, 2, 3, 4], inplace_error: "", base_after: &[0, 2, 4, 6], base_grad: &[2, 4, 6, 8] },
    Case { base: &[1], ops: &[E(&[1]), N(0, 0, 1)], input_contiguous: true, shape: &[1], view: true, strides: &[1], node: "ViewBackward0", under: "SliceBackward0", values: &[0], grad: &[1], inplace_error: "", base_after: &[0], base_grad: &[2] },
    Case { base: &[4, 4, 2], ops: &[S(2, 1), N(1, 1, 3), N(1, 0, 3)], input_contiguous: false, shape: &[4, 1, 1, 3], view: true, strides: &[8, 6, 6, 2], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[3, 5, 7, 11, 13, 15, 19, 21, 23, 27, 29, 31], grad: &[0, 0, 0, 1, 0, 2, 0, 3, 0, 0, 0, 4, 0, 5, 0, 6, 0, 0, 0, 7, 0, 8, 0, 9, 0, 0, 0, 10, 0, 11, 0, 12], inplace_error: "", base_after: &[0, 1, 2, 6, 4, 10, 6, 14, 8, 9, 10, 22, 12, 26, 14, 30, 16, 17, 18, 38, 20, 42, 22, 46, 24, 25, 26, 54, 28, 58, 30, 62], base_grad: &[1, 2, 3, 8, 5, 12, 7, 16, 9, 10, 11, 24, 13, 28, 15, 32, 17, 18, 19, 40, 21, 44, 23, 48, 25, 26, 27, 56, 29, 60, 31, 64] },
    Case { base: &[4], ops: &[N(0, 1, 3), E(&[3])], input_contiguous: true, shape: &[3], view: true, strides: &[1], node: "ViewBackward0", under: "ExpandBackward0", values: &[1, 2, 3], grad: &[0, 1, 2, 3], inplace_error: "", base_after: &[0, 2, 4, 6], base_grad: &[1, 4, 6, 8] },
    Case { base: &[3, 4, 1, 3], ops: &[P(&[0, 3, 2, 1]), S(0, 0)], input_contiguous: false, shape: &[2, 1, 6, 1], view: false, strides: &[6, 6, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11], grad: &[1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36] },
    Case { base: &[4, 2, 1], ops: &[P(&[2, 1, 0])], input_contiguous: false, shape: &[1, 2, 4], view: true, strides: &[2, 1, 2], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 2, 4, 6, 1, 3, 5, 7], grad: &[1, 5, 2, 6, 3, 7, 4, 8], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16] },
    Case { base: &[3, 4, 2], ops: &[S(2, 0), N(0, 0, 2)], input_contiguous: false, shape: &[1, 1, 8], view: true, strides: &[16, 16, 2], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 2, 4, 6, 8, 10, 12, 14], grad: &[1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 4, 3, 8, 5, 12, 7, 16, 9, 20, 11, 24, 13, 28, 15, 16, 17, 18, 19, 20, 21, 22, 23], base_grad: &[2, 2, 6, 4, 10, 6, 14, 8, 18, 10, 22, 12, 26, 14, 30, 16, 17, 18, 19, 20, 21, 22, 23, 24] },
    Case { base: &[4], ops: &[P(&[0])], input_contiguous: true, shape: &[1, 2, 2, 1], view: true, strides: &[4, 2, 1, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2, 3], grad: &[1, 2, 3, 4], inplace_error: "", base_after: &[0, 2, 4, 6], base_grad: &[2, 4, 6, 8] },
    Case { base: &[1, 3, 4, 2], ops: &[N(2, 0, 3), P(&[3, 2, 1, 0])], input_contiguous: false, shape: &[2, 9, 1, 1], view: false, strides: &[9, 1, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 8, 16, 2, 10, 18, 4, 12, 20, 1, 9, 17, 3, 11, 19, 5, 13, 21], grad: &[1, 10, 4, 13, 7, 16, 0, 0, 2, 11, 5, 14, 8, 17, 0, 0, 3, 12, 6, 15, 9, 18, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24] },
    Case { base: &[4, 3, 1], ops: &[P(&[1, 0, 2])], input_contiguous: false, shape: &[3, 4, 1], view: true, strides: &[1, 3, 1], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11], grad: &[1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24] },
    Case { base: &[2, 4, 2, 4], ops: &[N(1, 2, 1)], input_contiguous: false, shape: &[1, 1, 2, 8], view: true, strides: &[64, 64, 32, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[16, 17, 18, 19, 20, 21, 22, 23, 48, 49, 50, 51, 52, 53, 54, 55], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 32, 34, 36, 38, 40, 42, 44, 46, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 96, 98, 100, 102, 104, 106, 108, 110, 56, 57, 58, 59, 60, 61, 62, 63], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 34, 36, 38, 40, 42, 44, 46, 48, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 98, 100, 102, 104, 106, 108, 110, 112, 57, 58, 59, 60, 61, 62, 63, 64] },
    Case { base: &[3, 3], ops: &[N(0, 2, 1)], input_contiguous: true, shape: &[1, 3], view: true, strides: &[3, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[6, 7, 8], grad: &[0, 0, 0, 0, 0, 0, 1, 2, 3], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 12, 14, 16], base_grad: &[1, 2, 3, 4, 5, 6, 14, 16, 18] },
    Case { base: &[4, 1, 3], ops: &[N(1, 0, 1)], input_contiguous: true, shape: &[1, 2, 3, 2], view: true, strides: &[12, 6, 2, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24] },
    Case { base: &[4, 1, 1], ops: &[S(0, 1), E(&[2, 1, 1])], input_contiguous: false, shape: &[2, 1], view: true, strides: &[0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[1, 1], grad: &[0, 3, 0, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3], base_grad: &[1, 2, 3, 4] },
    Case { base: &[1, 4, 2], ops: &[E(&[2, 4, 2]), N(1, 1, 2), E(&[2, 2, 2, 2])], input_contiguous: false, shape: &[4, 4], view: true, strides: &[0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5], grad: &[0, 0, 28, 32, 36, 40, 0, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8] },
    Case { base: &[2, 2, 2, 4], ops: &[E(&[2, 2, 2, 4]), P(&[2, 3, 0, 1]), E(&[2, 4, 2, 2])], input_contiguous: false, shape: &[2, 2, 8], view: false, strides: &[16, 8, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27, 4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31], grad: &[1, 5, 9, 13, 17, 21, 25, 29, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31, 4, 8, 12, 16, 20, 24, 28, 32], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32] },
    Case { base: &[3, 4, 3], ops: &[P(&[0, 1, 2]), N(2, 1, 2), N(0, 1, 2)], input_contiguous: false, shape: &[1, 2, 8], view: false, strides: &[16, 8, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[13, 14, 16, 17, 19, 20, 22, 23, 25, 26, 28, 29, 31, 32, 34, 35], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 0, 5, 6, 0, 7, 8, 0, 9, 10, 0, 11, 12, 0, 13, 14, 0, 15, 16], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36] },
    Case { base: &[1], ops: &[N(0, 0, 1)], input_contiguous: true, shape: &[], view: true, strides: &[], node: "ViewBackward0", under: "SliceBackward0", values: &[0], grad: &[1], inplace_error: "", base_after: &[0], base_grad: &[2] },
    Case { base: &[4, 2, 1], ops: &[P(&[0, 1, 2]), E(&[4, 2, 3]), N(0, 2, 2)], input_contiguous: false, shape: &[2, 2, 3], view: true, strides: &[2, 1, 0], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7], grad: &[0, 0, 0, 0, 6, 15, 24, 33], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8] },
    Case { base: &[3, 3, 1], ops: &[N(1, 0, 2)], input_contiguous: false, shape: &[3, 2, 1], view: true, strides: &[3, 1, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 1, 3, 4, 6, 7], grad: &[1, 2, 0, 3, 4, 0, 5, 6, 0], inplace_error: "", base_after: &[0, 2, 2, 6, 8, 5, 12, 14, 8], base_grad: &[2, 4, 3, 8, 10, 6, 14, 16, 9] },
    Case { base: &[1, 2, 4], ops: &[P(&[0, 2, 1])], input_contiguous: false, shape: &[1, 4, 2], view: true, strides: &[4, 1, 4], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[0, 4, 1, 5, 2, 6, 3, 7], grad: &[1, 3, 5, 7, 2, 4, 6, 8], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10, 12, 14], base_grad: &[2, 4, 6, 8, 10, 12, 14, 16] },
    Case { base: &[4, 3], ops: &[N(1, 1, 1), N(0, 0, 4), N(1, 0, 1)], input_contiguous: false, shape: &[2, 2, 1, 1], view: true, strides: &[6, 3, 1, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[1, 4, 7, 10], grad: &[0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0], inplace_error: "", base_after: &[0, 2, 2, 3, 8, 5, 6, 14, 8, 9, 20, 11], base_grad: &[1, 4, 3, 4, 10, 6, 7, 16, 9, 10, 22, 12] },
    Case { base: &[4, 1, 4, 2], ops: &[N(3, 0, 1)], input_contiguous: false, shape: &[4, 2, 2, 1], view: true, strides: &[8, 4, 2, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30], grad: &[1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15, 0, 16, 0], inplace_error: "", base_after: &[0, 1, 4, 3, 8, 5, 12, 7, 16, 9, 20, 11, 24, 13, 28, 15, 32, 17, 36, 19, 40, 21, 44, 23, 48, 25, 52, 27, 56, 29, 60, 31], base_grad: &[2, 2, 6, 4, 10, 6, 14, 8, 18, 10, 22, 12, 26, 14, 30, 16, 34, 18, 38, 20, 42, 22, 46, 24, 50, 26, 54, 28, 58, 30, 62, 32] },
    Case { base: &[2, 3, 3, 2], ops: &[E(&[2, 3, 3, 2]), S(0, 1), S(0, 0)], input_contiguous: true, shape: &[1, 2, 3, 1], view: true, strides: &[6, 3, 1, 1], node: "ViewBackward0", under: "SelectBackward0", values: &[18, 19, 20, 21, 22, 23], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 36, 38, 40, 42, 44, 46, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 38, 40, 42, 44, 46, 48, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36] },
    Case { base: &[4], ops: &[S(0, 1)], input_contiguous: true, shape: &[], view: true, strides: &[], node: "ViewBackward0", under: "SelectBackward0", values: &[1], grad: &[0, 1, 0, 0], inplace_error: "", base_after: &[0, 2, 2, 3], base_grad: &[1, 4, 3, 4] },
    Case { base: &[4], ops: &[E(&[2, 4]), N(0, 0, 2)], input_contiguous: false, shape: &[4, 1, 2, 1], view: false, strides: &[2, 2, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 3, 0, 1, 2, 3], grad: &[6, 8, 10, 12], inplace_error: "", base_after: &[0, 1, 2, 3], base_grad: &[1, 2, 3, 4] },
    Case { base: &[3, 1], ops: &[P(&[0, 1]), S(1, 0), P(&[0])], input_contiguous: true, shape: &[3, 1], view: true, strides: &[1, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0, 1, 2], grad: &[1, 2, 3], inplace_error: "", base_after: &[0, 2, 4], base_grad: &[2, 4, 6] },
    Case { base: &[2, 4, 4, 1], ops: &[E(&[2, 2, 4, 4, 2]), N(0, 0, 2)], input_contiguous: false, shape: &[1, 1, 128], view: false, strides: &[128, 128, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31], grad: &[134, 142, 150, 158, 166, 174, 182, 190, 198, 206, 214, 222, 230, 238, 246, 254, 262, 270, 278, 286, 294, 302, 310, 318, 326, 334, 342, 350, 358, 366, 374, 382], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32] },
    Case { base: &[2, 3], ops: &[E(&[2, 3]), N(1, 2, 1), E(&[2, 3])], input_contiguous: false, shape: &[1, 1, 6], view: false, strides: &[6, 6, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[2, 2, 2, 5, 5, 5], grad: &[0, 0, 6, 0, 0, 15], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[1, 4, 2], ops: &[S(2, 1), N(1, 1, 2), N(1, 0, 2)], input_contiguous: false, shape: &[1, 1, 2], view: true, strides: &[4, 4, 2], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[3, 5], grad: &[0, 0, 0, 1, 0, 2, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 6, 4, 10, 6, 7], base_grad: &[1, 2, 3, 8, 5, 12, 7, 8] },
    Case { base: &[3, 1, 2, 1], ops: &[P(&[3, 0, 1, 2]), S(2, 0)], input_contiguous: true, shape: &[1, 3, 2], view: true, strides: &[6, 2, 1], node: "ViewBackward0", under: "SelectBackward0", values: &[0, 1, 2, 3, 4, 5], grad: &[1, 2, 3, 4, 5, 6], inplace_error: "", base_after: &[0, 2, 4, 6, 8, 10], base_grad: &[2, 4, 6, 8, 10, 12] },
    Case { base: &[1, 3, 2], ops: &[E(&[2, 3, 2])], input_contiguous: false, shape: &[2, 3, 2], view: true, strides: &[0, 2, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5], grad: &[8, 10, 12, 14, 16, 18], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[1, 3], ops: &[E(&[1, 3]), S(0, 0), E(&[2, 3])], input_contiguous: false, shape: &[2, 3, 1], view: true, strides: &[0, 1, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 0, 1, 2], grad: &[5, 7, 9], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[3, 2], ops: &[N(1, 0, 1)], input_contiguous: false, shape: &[1, 1, 3, 1], view: true, strides: &[6, 6, 2, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 2, 4], grad: &[1, 0, 2, 0, 3, 0], inplace_error: "", base_after: &[0, 1, 4, 3, 8, 5], base_grad: &[2, 2, 6, 4, 10, 6] },
    Case { base: &[2, 3], ops: &[N(0, 1, 1), N(1, 0, 2), E(&[2, 3, 2])], input_contiguous: false, shape: &[2, 3, 2], view: true, strides: &[0, 0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4], grad: &[0, 0, 0, 36, 42, 0], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5], base_grad: &[1, 2, 3, 4, 5, 6] },
    Case { base: &[3], ops: &[E(&[3]), N(0, 0, 2), N(0, 0, 2)], input_contiguous: true, shape: &[2, 1, 1], view: true, strides: &[1, 1, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[0, 1], grad: &[1, 2, 0], inplace_error: "", base_after: &[0, 2, 2], base_grad: &[2, 4, 3] },
    Case { base: &[1, 2, 2, 2], ops: &[S(3, 1), E(&[2, 3, 2, 2])], input_contiguous: false, shape: &[2, 3, 2, 2], view: true, strides: &[0, 0, 4, 2], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7], grad: &[0, 66, 0, 72, 0, 78, 0, 84], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8] },
    Case { base: &[3, 4, 1, 4], ops: &[E(&[3, 4, 3, 4])], input_contiguous: false, shape: &[3, 4, 3, 4], view: true, strides: &[16, 4, 0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 16, 17, 18, 19, 16, 17, 18, 19, 16, 17, 18, 19, 20, 21, 22, 23, 20, 21, 22, 23, 20, 21, 22, 23, 24, 25, 26, 27, 24, 25, 26, 27, 24, 25, 26, 27, 28, 29, 30, 31, 28, 29, 30, 31, 28, 29, 30, 31, 32, 33, 34, 35, 32, 33, 34, 35, 32, 33, 34, 35, 36, 37, 38, 39, 36, 37, 38, 39, 36, 37, 38, 39, 40, 41, 42, 43, 40, 41, 42, 43, 40, 41, 42, 43, 44, 45, 46, 47, 44, 45, 46, 47, 44, 45, 46, 47], grad: &[15, 18, 21, 24, 51, 54, 57, 60, 87, 90, 93, 96, 123, 126, 129, 132, 159, 162, 165, 168, 195, 198, 201, 204, 231, 234, 237, 240, 267, 270, 273, 276, 303, 306, 309, 312, 339, 342, 345, 348, 375, 378, 381, 384, 411, 414, 417, 420], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48] },
    Case { base: &[1], ops: &[N(0, 0, 1), P(&[0]), E(&[3])], input_contiguous: false, shape: &[3], view: true, strides: &[0], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0, 0], grad: &[6], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0], base_grad: &[1] },
    Case { base: &[3, 2, 2, 4], ops: &[N(2, 0, 2), N(0, 1, 2), E(&[2, 2, 2, 2, 4])], input_contiguous: false, shape: &[2, 1, 8, 4], view: true, strides: &[0, 32, 4, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48] },
    Case { base: &[1, 3], ops: &[E(&[2, 1, 3]), N(2, 0, 3)], input_contiguous: false, shape: &[1, 1, 6, 1], view: false, strides: &[6, 6, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 0, 1, 2], grad: &[5, 7, 9], inplace_error: "", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[2, 2, 1, 3], ops: &[P(&[3, 1, 0, 2]), S(0, 2)], input_contiguous: false, shape: &[2, 1, 1, 2], view: true, strides: &[3, 12, 12, 6], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[2, 8, 5, 11], grad: &[0, 0, 1, 0, 0, 3, 0, 0, 2, 0, 0, 4], inplace_error: "", base_after: &[0, 1, 4, 3, 4, 10, 6, 7, 16, 9, 10, 22], base_grad: &[1, 2, 6, 4, 5, 12, 7, 8, 18, 10, 11, 24] },
    Case { base: &[3, 1, 1], ops: &[E(&[3, 1, 1]), N(0, 0, 2), E(&[2, 2, 3])], input_contiguous: false, shape: &[12], view: false, strides: &[1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], grad: &[21, 57, 0], inplace_error: "", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
    Case { base: &[4, 3, 2, 4], ops: &[N(3, 1, 1), N(1, 0, 3), P(&[2, 0, 1, 3])], input_contiguous: false, shape: &[3, 2, 1, 4], view: false, strides: &[8, 4, 4, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[1, 9, 17, 25, 33, 41, 49, 57, 65, 73, 81, 89, 5, 13, 21, 29, 37, 45, 53, 61, 69, 77, 85, 93], grad: &[0, 1, 0, 0, 0, 13, 0, 0, 0, 2, 0, 0, 0, 14, 0, 0, 0, 3, 0, 0, 0, 15, 0, 0, 0, 4, 0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0, 17, 0, 0, 0, 6, 0, 0, 0, 18, 0, 0, 0, 7, 0, 0, 0, 19, 0, 0, 0, 8, 0, 0, 0, 20, 0, 0, 0, 9, 0, 0, 0, 21, 0, 0, 0, 10, 0, 0, 0, 22, 0, 0, 0, 11, 0, 0, 0, 23, 0, 0, 0, 12, 0, 0, 0, 24, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96] },
    Case { base: &[2, 2, 4], ops: &[N(1, 0, 1), N(0, 0, 2)], input_contiguous: false, shape: &[2, 1, 4], view: true, strides: &[8, 4, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 1, 2, 3, 8, 9, 10, 11], grad: &[1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 2, 4, 6, 4, 5, 6, 7, 16, 18, 20, 22, 12, 13, 14, 15], base_grad: &[2, 4, 6, 8, 5, 6, 7, 8, 18, 20, 22, 24, 13, 14, 15, 16] },
    Case { base: &[1, 4], ops: &[E(&[2, 3, 4]), E(&[2, 2, 3, 4]), N(0, 0, 2)], input_contiguous: false, shape: &[2, 2, 3, 4], view: true, strides: &[0, 0, 0, 1], node: "ReshapeAliasBackward0", under: "SliceBackward0", values: &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], grad: &[276, 288, 300, 312], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0, 1, 2, 3], base_grad: &[1, 2, 3, 4] },
    Case { base: &[2, 3], ops: &[N(1, 0, 2), S(1, 1), P(&[0])], input_contiguous: false, shape: &[2], view: true, strides: &[3], node: "ReshapeAliasBackward0", under: "PermuteBackward0", values: &[1, 4], grad: &[0, 1, 0, 0, 2, 0], inplace_error: "", base_after: &[0, 2, 2, 3, 8, 5], base_grad: &[1, 4, 3, 4, 10, 6] },
    Case { base: &[1, 4, 4], ops: &[E(&[3, 4, 4])], input_contiguous: false, shape: &[4, 6, 2, 1], view: false, strides: &[12, 2, 1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], grad: &[51, 54, 57, 60, 63, 66, 69, 72, 75, 78, 81, 84, 87, 90, 93, 96], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] },
    Case { base: &[1], ops: &[E(&[2, 1])], input_contiguous: false, shape: &[2, 1], view: true, strides: &[0, 1], node: "ReshapeAliasBackward0", under: "ExpandBackward0", values: &[0, 0], grad: &[3], inplace_error: "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.", base_after: &[0], base_grad: &[1] },
    Case { base: &[4, 2, 3, 4], ops: &[N(0, 1, 1), N(1, 1, 1)], input_contiguous: true, shape: &[1, 1, 3, 4], view: true, strides: &[12, 12, 4, 1], node: "ViewBackward0", under: "SliceBackward0", values: &[36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47], grad: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96] },
    Case { base: &[2, 2], ops: &[P(&[0, 1]), P(&[1, 0]), S(0, 0)], input_contiguous: false, shape: &[2], view: true, strides: &[2], node: "ReshapeAliasBackward0", under: "SelectBackward0", values: &[0, 2], grad: &[1, 0, 2, 0], inplace_error: "", base_after: &[0, 1, 4, 3], base_grad: &[2, 2, 6, 4] },
    Case { base: &[1, 1, 1], ops: &[P(&[0, 1, 2])], input_contiguous: true, shape: &[1, 1, 1], view: true, strides: &[1, 1, 1], node: "ViewBackward0", under: "PermuteBackward0", values: &[0], grad: &[1], inplace_error: "", base_after: &[0], base_grad: &[2] },
    Case { base: &[1, 3, 3], ops: &[P(&[0, 2, 1])], input_contiguous: false, shape: &[9, 1], view: false, strides: &[1, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 3, 6, 1, 4, 7, 2, 5, 8], grad: &[1, 4, 7, 2, 5, 8, 3, 6, 9], inplace_error: "", base_after: &[0, 1, 2, 3, 4, 5, 6, 7, 8], base_grad: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
    Case { base: &[3, 1, 1, 1], ops: &[P(&[2, 0, 1, 3]), E(&[2, 1, 3, 2, 3]), N(4, 0, 2)], input_contiguous: false, shape: &[2, 2, 6], view: false, strides: &[12, 6, 1], node: "UnsafeViewBackward0", under: "CloneBackward0", values: &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], grad: &[68, 100, 132], inplace_error: "", base_after: &[0, 1, 2], base_grad: &[1, 2, 3] },
];
