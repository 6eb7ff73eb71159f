//! The index ops that take integer index tensors (`gather`, `scatter`, `scatter_value`,
//! `scatter_add`, `index_add`, `index_select_tensor`, `masked_select`, `masked_scatter`,
//! `nonzero`) against
//! PyTorch 2.15: values, node names and gradients printed by `tests/ops/scatter_values.py`
//! (pasted beside each assertion), repeated indices, every dtype, PyTorch's error texts, and
//! first and second derivatives against finite differences.

use autograd::{DType, Tensor, f16};

type R = autograd::Result<()>;

fn f64s(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    f64s(v, shape).requires_grad_(true).unwrap()
}

fn idx(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn node(t: &Tensor) -> Option<String> {
    t.grad_fn().map(|n| n.name().to_string())
}

fn grad(t: &Tensor) -> Vec<f64> {
    t.grad().expect("the leaf has a gradient").to_vec().unwrap()
}

/// `sum(y * [1, 2, ..])`: a backward whose gradient tells the elements apart.
fn weighted_backward(y: &Tensor) -> R {
    let n = y.numel();
    let w = Tensor::from_vec((1..=n).map(|k| k as f64).collect(), y.shape())?;
    y.mul(&w)?.sum()?.backward()
}

fn err_text(r: autograd::Result<Tensor>) -> String {
    r.expect_err("PyTorch raises here").to_string()
}

// ----- gather ---------------------------------------------------------------------------------

#[test]
fn gather_picks_along_a_dim_and_its_gradient_sums_repeated_indices() -> R {
    // gather1 [2, 4] [3.0, 3.0, 1.0, 3.0, 5.0, 4.0, 4.0, 4.0]; GatherBackward0
    // gather1.grad [2, 3] [3.0, 0.0, 7.0, 21.0, 5.0, 0.0]
    let x = leaf(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let y = x.gather(1, &idx(&[2, 2, 0, 2, 1, 0, 0, 0], &[2, 4]))?;
    assert_eq!(y.shape(), &[2, 4]);
    assert_eq!(
        y.to_vec::<f64>()?,
        vec![3.0, 3.0, 1.0, 3.0, 5.0, 4.0, 4.0, 4.0]
    );
    assert_eq!(node(&y).as_deref(), Some("GatherBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![3.0, 0.0, 7.0, 21.0, 5.0, 0.0]);
    // gather0 [1, 3] [4.0, 2.0, 6.0] (dim -2)
    let y0 = x.detach().gather(-2, &idx(&[1, 0, 1], &[1, 3]))?;
    assert_eq!(
        (y0.shape(), y0.to_vec::<f64>()?),
        (&[1, 3][..], vec![4.0, 2.0, 6.0])
    );
    Ok(())
}

#[test]
fn gather_works_for_every_dtype_and_int32_indices() -> R {
    // gather.i64 [2, 2] [20, 20, 30, 40] (int32 index)
    let t = Tensor::from_vec(vec![10i64, 20, 30, 40], &[2, 2])?;
    let i32_index = Tensor::from_vec(vec![1i32, 1, 0, 1], &[2, 2])?;
    let y = t.gather(1, &i32_index)?;
    assert_eq!(
        (y.dtype(), y.to_vec::<i64>()?),
        (DType::I64, vec![20, 20, 30, 40])
    );
    // gather.bool [3] [False, True, True]
    let b = Tensor::from_vec(vec![true, false, true], &[3])?;
    assert_eq!(
        b.gather(0, &idx(&[1, 2, 2], &[3]))?.to_vec::<bool>()?,
        vec![false, true, true]
    );
    // gather.f16 [2] [0.300048828125, 0.0999755859375]
    let h = Tensor::from_vec(vec![0.1f32, 0.2, 0.3], &[3])?.to_dtype(DType::F16)?;
    let g = h.gather(0, &idx(&[2, 0], &[2]))?;
    assert_eq!(g.dtype(), DType::F16);
    assert_eq!(
        g.to_vec::<f16>()?
            .iter()
            .map(|v| v.to_f64())
            .collect::<Vec<_>>(),
        vec![0.300048828125, 0.0999755859375]
    );
    // gather.0dim [2] [5.0, 5.0]
    let s = Tensor::scalar(5.0f32).gather(0, &idx(&[0, 0], &[2]))?;
    assert_eq!((s.shape(), s.to_vec::<f32>()?), (&[2][..], vec![5.0, 5.0]));
    Ok(())
}

// ----- scatter --------------------------------------------------------------------------------

#[test]
fn scatter_writes_the_last_repeat_and_routes_gradients_as_pytorch() -> R {
    // scatter [2, 3] [2.0, 0.0, 0.0, 0.0, 5.0, 4.0]; ScatterBackward0
    // scatter.grad_self [2, 3] [0.0, 2.0, 3.0, 4.0, 0.0, 0.0]
    // scatter.grad_src [2, 2] [1.0, 1.0, 6.0, 5.0]
    let x = leaf(&[0.0; 6], &[2, 3]);
    let s = leaf(&[1., 2., 4., 5.], &[2, 2]);
    let y = x.scatter(1, &idx(&[0, 0, 2, 1], &[2, 2]), &s)?;
    assert_eq!(y.to_vec::<f64>()?, vec![2.0, 0.0, 0.0, 0.0, 5.0, 4.0]);
    assert_eq!(node(&y).as_deref(), Some("ScatterBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![0.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
    assert_eq!(grad(&s), vec![1.0, 1.0, 6.0, 5.0]);
    Ok(())
}

#[test]
fn scatter_value_casts_the_value_to_the_tensors_dtype() -> R {
    // scatter_value [2, 3] [1.0, 2.5, 1.0, 2.5, 1.0, 2.5]; ScatterBackward1
    // scatter_value.grad [2, 3] [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    let x = leaf(&[1.0; 6], &[2, 3]);
    let y = x.scatter_value(0, &idx(&[1, 0, 1], &[1, 3]), 2.5)?;
    assert_eq!(y.to_vec::<f64>()?, vec![1.0, 2.5, 1.0, 2.5, 1.0, 2.5]);
    assert_eq!(node(&y).as_deref(), Some("ScatterBackward1"));
    y.sum()?.backward()?;
    assert_eq!(grad(&x), vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
    // scatter_value.i64 [2, 2] [0, 2, 2, 0]: 2.7 truncates
    let i = Tensor::zeros(&[2, 2], DType::I64)?.scatter_value(1, &idx(&[1, 0], &[2, 1]), 2.7)?;
    assert_eq!(i.to_vec::<i64>()?, vec![0, 2, 2, 0]);
    // scatter_value.bool [3] [False, False, True]
    let b = Tensor::zeros(&[3], DType::Bool)?.scatter_value(0, &idx(&[2], &[1]), true)?;
    assert_eq!(b.to_vec::<bool>()?, vec![false, false, true]);
    Ok(())
}

// ----- scatter_add ----------------------------------------------------------------------------

#[test]
fn scatter_add_sums_repeats_and_gathers_the_gradient_of_src() -> R {
    // scatter_add [2, 3] [1.0, 1.0, 7.0, 11.0, 6.0, 1.0]; ScatterAddBackward0
    // scatter_add.grad_self [2, 3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    // scatter_add.grad_src [2, 3] [3.0, 3.0, 3.0, 4.0, 5.0, 4.0]
    let x = leaf(&[1.0; 6], &[2, 3]);
    let s = leaf(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let y = x.scatter_add(1, &idx(&[2, 2, 2, 0, 1, 0], &[2, 3]), &s)?;
    assert_eq!(y.to_vec::<f64>()?, vec![1.0, 1.0, 7.0, 11.0, 6.0, 1.0]);
    assert_eq!(node(&y).as_deref(), Some("ScatterAddBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(grad(&s), vec![3.0, 3.0, 3.0, 4.0, 5.0, 4.0]);
    Ok(())
}

#[test]
fn scatter_add_accumulates_in_the_element_type_as_pytorch() -> R {
    // scatter_add.i32 [2] [-2147483648, 5]: int32 wraps
    let i = Tensor::from_vec(vec![i32::MAX, 0], &[2])?.scatter_add(
        0,
        &idx(&[0, 1], &[2]),
        &Tensor::from_vec(vec![1i32, 5], &[2])?,
    )?;
    assert_eq!(i.to_vec::<i32>()?, vec![-2147483648, 5]);
    // scatter_add.bool [2] [False, True]
    let b = Tensor::zeros(&[2], DType::Bool)?.scatter_add(
        0,
        &idx(&[1, 1], &[2]),
        &Tensor::from_vec(vec![true, false], &[2])?,
    )?;
    assert_eq!(b.to_vec::<bool>()?, vec![false, true]);
    // scatter_add.f16 [1] [1.0009765625]: 1 + 4 * 2^-12 summed in f32 and rounded once (each
    // addition rounded to half would leave 1.0).
    let h = Tensor::ones(&[1], DType::F16)?.scatter_add(
        0,
        &idx(&[0; 4], &[4]),
        &Tensor::full(&[4], 2f64.powi(-12), DType::F16)?,
    )?;
    assert_eq!(h.to_vec::<f16>()?[0].to_f64(), 1.0009765625);
    // scatter_add.bf16 [1] [1.015625]: 1 + 3 * 2^-8 rounded once (ties to even)
    let bf = Tensor::ones(&[1], DType::BF16)?.scatter_add(
        0,
        &idx(&[0; 3], &[3]),
        &Tensor::full(&[3], 0.00390625, DType::BF16)?,
    )?;
    assert_eq!(bf.to_dtype(DType::F64)?.item::<f64>()?, 1.015625);
    // scatter_add.bigsrc [2, 3] [2.0, 0.0, 0.0, 0.0, 0.0, 0.0]: only the part the index covers
    let big = Tensor::zeros(&[2, 3], DType::F32)?.scatter_add(
        1,
        &idx(&[0, 0], &[1, 2]),
        &Tensor::ones(&[2, 3], DType::F32)?,
    )?;
    assert_eq!(big.to_vec::<f32>()?, vec![2.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    Ok(())
}

// ----- index_add ------------------------------------------------------------------------------

#[test]
fn index_add_scales_by_alpha_and_sums_repeated_slices() -> R {
    // index_add [3, 2] [12.0, 16.0, 0.0, 0.0, 6.0, 8.0]; IndexAddBackward0
    // index_add.grad_self [3, 2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    // index_add.grad_src [3, 2] [2.0, 4.0, 10.0, 12.0, 2.0, 4.0]
    let x = leaf(&[0.0; 6], &[3, 2]);
    let src = leaf(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
    let y = x.index_add(0, &idx(&[0, 2, 0], &[3]), &src, 2.0)?;
    assert_eq!(y.to_vec::<f64>()?, vec![12.0, 16.0, 0.0, 0.0, 6.0, 8.0]);
    assert_eq!(node(&y).as_deref(), Some("IndexAddBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(grad(&src), vec![2.0, 4.0, 10.0, 12.0, 2.0, 4.0]);
    Ok(())
}

#[test]
fn index_add_along_an_inner_dim_and_for_integers_and_bools() -> R {
    // index_add.dim1 [2, 3] [0.5, 0.0, 0.5, 0.5, 0.0, 0.5]
    let d1 = Tensor::zeros(&[2, 3], DType::F32)?.index_add(
        1,
        &idx(&[0, 2], &[2]),
        &Tensor::ones(&[2, 2], DType::F32)?,
        0.5,
    )?;
    assert_eq!(d1.to_vec::<f32>()?, vec![0.5, 0.0, 0.5, 0.5, 0.0, 0.5]);
    // index_add.i64 [2, 3] [0, 0, 0, 2, 2, 2]: alpha 1.5 truncates to 1 for int64
    let i = Tensor::zeros(&[2, 3], DType::I64)?.index_add(
        0,
        &idx(&[1, 1], &[2]),
        &Tensor::ones(&[2, 3], DType::I64)?,
        1.5,
    )?;
    assert_eq!(i.to_vec::<i64>()?, vec![0, 0, 0, 2, 2, 2]);
    // index_add.bool [2, 3] [True, True, True, False, False, False]
    let b = Tensor::zeros(&[2, 3], DType::Bool)?.index_add(
        0,
        &idx(&[0], &[1]),
        &Tensor::ones(&[1, 3], DType::Bool)?,
        1,
    )?;
    assert_eq!(
        b.to_vec::<bool>()?,
        vec![true, true, true, false, false, false]
    );
    Ok(())
}

// ----- index_select with a tensor ------------------------------------------------------------

#[test]
fn index_select_tensor_is_index_select() -> R {
    // index_select [3, 2] [5.0, 6.0, 1.0, 2.0, 5.0, 6.0]; IndexSelectBackward0
    // index_select.grad [3, 2] [1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    let x = leaf(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
    let y = x.index_select_tensor(0, &idx(&[2, 0, 2], &[3]))?;
    assert_eq!(y.to_vec::<f64>()?, vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0]);
    assert_eq!(node(&y).as_deref(), Some("IndexSelectBackward0"));
    y.sum()?.backward()?;
    assert_eq!(grad(&x), vec![1.0, 1.0, 0.0, 0.0, 2.0, 2.0]);
    // index_select.0dim [3, 1] [2.0, 4.0, 6.0]
    let z = x.detach().index_select_tensor(1, &Tensor::scalar(1i64))?;
    assert_eq!(
        (z.shape(), z.to_vec::<f64>()?),
        (&[3, 1][..], vec![2.0, 4.0, 6.0])
    );
    let i32_index = Tensor::from_vec(vec![1i32], &[1])?;
    assert_eq!(
        x.detach()
            .index_select_tensor(-2, &i32_index)?
            .to_vec::<f64>()?,
        vec![3.0, 4.0]
    );
    Ok(())
}

// ----- masked_select and nonzero -------------------------------------------------------------

#[test]
fn masked_select_broadcasts_and_sums_the_gradient_over_copies() -> R {
    // masked_select [4] [1.0, 3.0, 1.0, 2.0]; MaskedSelectBackward0
    // masked_select.grad [3] [4.0, 4.0, 2.0]
    let x = leaf(&[1., 2., 3.], &[3]);
    let m = Tensor::from_vec(vec![true, false, true, true, true, false], &[2, 3])?;
    let y = x.masked_select(&m)?;
    assert_eq!(y.to_vec::<f64>()?, vec![1.0, 3.0, 1.0, 2.0]);
    assert_eq!(node(&y).as_deref(), Some("MaskedSelectBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![4.0, 4.0, 2.0]);
    // masked_select.u8 [2] [1, 3]
    let u = Tensor::from_vec(vec![1u8, 2, 3], &[3])?;
    let sel = u.masked_select(&Tensor::from_vec(vec![true, false, true], &[3])?)?;
    assert_eq!(sel.to_vec::<u8>()?, vec![1, 3]);
    // masked_select.mask_bigger [4] [7.0, 7.0, 8.0, 8.0]
    let col = Tensor::from_vec(vec![7.0f32, 8.0], &[2, 1])?;
    let sel = col.masked_select(&Tensor::from_vec(vec![true, false, true], &[3])?)?;
    assert_eq!(sel.to_vec::<f32>()?, vec![7.0, 7.0, 8.0, 8.0]);
    Ok(())
}

#[test]
fn masked_scatter_fills_in_c_order_and_routes_gradients_as_pytorch() -> R {
    // masked_scatter [2, 3] [1.0, 0.0, 2.0, 0.0, 3.0, 0.0]; MaskedScatterBackward0
    // masked_scatter.grad_self [2, 3] [0.0, 2.0, 0.0, 4.0, 0.0, 6.0]
    // masked_scatter.grad_src [5] [1.0, 3.0, 5.0, 0.0, 0.0]
    let x = leaf(&[0.0; 6], &[2, 3]);
    let m = Tensor::from_vec(vec![true, false, true, false, true, false], &[2, 3])?;
    let src = leaf(&[1., 2., 3., 4., 5.], &[5]);
    let y = x.masked_scatter(&m, &src)?;
    assert_eq!(y.to_vec::<f64>()?, vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
    assert_eq!(node(&y).as_deref(), Some("MaskedScatterBackward0"));
    weighted_backward(&y)?;
    assert_eq!(grad(&x), vec![0.0, 2.0, 0.0, 4.0, 0.0, 6.0]);
    assert_eq!(grad(&src), vec![1.0, 3.0, 5.0, 0.0, 0.0]);
    // masked_scatter.broadcast [2, 3] [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]: self broadcasts
    let b =
        Tensor::zeros(&[3], DType::F32)?.masked_scatter(&m, &Tensor::ones(&[5], DType::F32)?)?;
    assert_eq!(
        (b.shape(), b.to_vec::<f32>()?),
        (&[2, 3][..], vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    );
    // masked_scatter.src2d [2, 3] [0.0, 0.0, 1.0, 2.0, 0.0, 3.0]: the mask broadcasts
    let src2d = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])?;
    let row = Tensor::from_vec(vec![true, false, true], &[3])?;
    let c = Tensor::zeros(&[2, 3], DType::F32)?.masked_scatter(&row, &src2d)?;
    assert_eq!(c.to_vec::<f32>()?, vec![0.0, 0.0, 1.0, 2.0, 0.0, 3.0]);
    Ok(())
}

#[test]
fn empty_indices_and_masks_give_empty_results() -> R {
    // gather.empty0 [0, 3] [], gather.empty1 [2, 0] [], masked_select.none [0] []
    let x = Tensor::zeros(&[2, 3], DType::F32)?;
    let e0 = x.gather(1, &Tensor::zeros(&[0, 3], DType::I64)?)?;
    let e1 = x.gather(1, &Tensor::zeros(&[2, 0], DType::I64)?)?;
    let none = x.masked_select(&Tensor::zeros(&[2, 3], DType::Bool)?)?;
    assert_eq!(
        (e0.shape(), e1.shape(), none.shape()),
        (&[0, 3][..], &[2, 0][..], &[0][..])
    );
    Ok(())
}

#[test]
fn nonzero_lists_positions_as_int64_rows() -> R {
    // nonzero [3, 2] [0, 1, 1, 0, 1, 2]
    let n = Tensor::from_vec(vec![0i64, 1, 0, 2, 0, 3], &[2, 3])?.nonzero()?;
    assert_eq!((n.dtype(), n.shape()), (DType::I64, &[3, 2][..]));
    assert_eq!(n.to_vec::<i64>()?, vec![0, 1, 1, 0, 1, 2]);
    // nonzero.nan [2, 1] [0, 3]: NaN is nonzero, -0.0 is zero
    let n = Tensor::from_vec(vec![f64::NAN, 0.0, -0.0, 1e-30], &[4])?.nonzero()?;
    assert_eq!((n.shape(), n.to_vec::<i64>()?), (&[2, 1][..], vec![0, 3]));
    // nonzero.0dim_zero [0, 0] [] and nonzero.0dim_one [1, 0] []
    assert_eq!(Tensor::scalar(0i64).nonzero()?.shape(), &[0, 0]);
    assert_eq!(Tensor::scalar(3.0f32).nonzero()?.shape(), &[1, 0]);
    // nonzero.bool3d [2, 3] [0, 0, 0, 1, 1, 0]
    let b = Tensor::from_vec(vec![true, false, false, true], &[2, 2, 1])?.nonzero()?;
    assert_eq!(
        (b.shape(), b.to_vec::<i64>()?),
        (&[2, 3][..], vec![0, 0, 0, 1, 1, 0])
    );
    Ok(())
}

// ----- errors ---------------------------------------------------------------------------------

#[test]
fn gather_and_scatter_errors_are_pytorchs() -> R {
    let x = Tensor::zeros(&[2, 3], DType::F32)?;
    let one = Tensor::ones(&[1, 1], DType::F32)?;
    let cases = [
        (
            err_text(x.gather(1, &idx(&[5], &[1, 1]))),
            "index 5 is out of bounds for dimension 1 with size 3",
        ),
        (
            err_text(x.gather(1, &idx(&[-1], &[1, 1]))),
            "index -1 is out of bounds for dimension 1 with size 3",
        ),
        (
            err_text(x.gather(1, &Tensor::zeros(&[1, 1], DType::F32)?)),
            "gather(): Expected dtype int32/int64 for index",
        ),
        (
            err_text(x.gather(1, &idx(&[0], &[1]))),
            "Index tensor must have the same number of dimensions as input tensor",
        ),
        (
            err_text(x.gather(1, &idx(&[0, 0, 0], &[3, 1]))),
            "Size does not match at dimension 0 expected index [3, 1] to be no larger than \
             self [2, 3] apart from dimension 1",
        ),
        (
            err_text(x.gather(2, &idx(&[0], &[1, 1]))),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
        (
            err_text(x.scatter(1, &idx(&[0], &[1, 1]), &one.to_dtype(DType::F64)?)),
            "scatter(): Expected self.dtype to be equal to src.dtype",
        ),
        (
            err_text(x.scatter_value(1, &Tensor::zeros(&[1, 1], DType::F32)?, 1.0)),
            "scatter(): Expected dtype int32/int64 for index",
        ),
        (
            err_text(x.scatter_add(1, &idx(&[0], &[1]), &Tensor::ones(&[1], DType::F32)?)),
            "Index tensor must have the same number of dimensions as self tensor",
        ),
        (
            err_text(x.scatter(1, &idx(&[0, 0], &[1, 2]), &one)),
            "Expected index [1, 2] to be no larger than self [2, 3] apart from dimension 1 \
             and to be no larger size than src [1, 1]",
        ),
        (
            err_text(x.scatter_add(0, &idx(&[2], &[1, 1]), &one)),
            "index 2 is out of bounds for dimension 0 with size 2",
        ),
    ];
    for (ours, pytorch) in cases {
        assert_eq!(ours, pytorch);
    }
    Ok(())
}

#[test]
fn index_add_index_select_and_masked_select_errors_are_pytorchs() -> R {
    let x = Tensor::zeros(&[2, 3], DType::F32)?;
    let row = Tensor::ones(&[1, 3], DType::F32)?;
    let cases = [
        (
            err_text(x.index_add(0, &idx(&[0], &[1, 1]), &row, 1)),
            "index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and \
             size: [1, 1]",
        ),
        (
            err_text(x.index_add(0, &Tensor::zeros(&[1], DType::F32)?, &row, 1)),
            "index_add_(): Expected dtype int32/int64 for index but got: Float",
        ),
        (
            err_text(x.index_add(0, &idx(&[0], &[1]), &row.to_dtype(DType::F64)?, 1)),
            "index_add_(): self (Float) and source (Double) must have the same scalar type",
        ),
        (
            err_text(x.index_add(0, &idx(&[0], &[1]), &Tensor::ones(&[2, 3], DType::F32)?, 1)),
            "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for \
             dim: 0",
        ),
        (
            err_text(x.index_add(0, &idx(&[0], &[1]), &Tensor::ones(&[1, 2], DType::F32)?, 1)),
            "source tensor shape must match self tensor shape, excluding the specified \
             dimension. Got self.shape = [2, 3] source.shape = [1, 2]",
        ),
        (
            err_text(x.index_add(0, &idx(&[-1], &[1]), &row, 1)),
            "index -1 is out of bounds for dimension 0 with size 2",
        ),
        (
            err_text(x.index_select_tensor(0, &idx(&[0], &[1, 1]))),
            "index_select(): Index is supposed to be a vector",
        ),
        (
            err_text(x.index_select_tensor(0, &Tensor::zeros(&[1], DType::F32)?)),
            "index_select(): Expected dtype int32 or int64 for index",
        ),
        (
            err_text(x.index_select_tensor(0, &idx(&[2], &[1]))),
            "index out of range in self",
        ),
        (
            err_text(x.masked_select(&idx(&[1, 0, 1], &[3]))),
            "masked_select: expected BoolTensor for mask",
        ),
        (
            err_text(x.masked_select(&Tensor::from_vec(vec![true, false], &[2])?)),
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton \
             dimension 1",
        ),
    ];
    for (ours, pytorch) in cases {
        assert_eq!(ours, pytorch);
    }
    let m = Tensor::from_vec(vec![true, false, true, false, true, false], &[2, 3])?;
    let ones = |n: usize, d: DType| Tensor::ones(&[n], d).unwrap();
    assert_eq!(
        err_text(x.masked_scatter(&m, &ones(2, DType::F32))),
        "Number of elements of source < number of ones in mask"
    );
    assert_eq!(
        err_text(x.masked_scatter(&m.to_dtype(DType::I64)?, &ones(5, DType::F32))),
        "masked_scatter_ only supports boolean masks, but got mask with dtype Long"
    );
    assert_eq!(
        err_text(x.masked_scatter(&m, &ones(5, DType::F64))),
        "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"
    );
    Ok(())
}

// ----- first and second derivatives against finite differences -------------------------------

/// Each case: a name, the function of the inputs, the inputs (f64 leaves requiring grad).
macro_rules! grad_checks {
    ($($name:ident: |$i:ident| $body:expr, [$($input:expr),+ $(,)?];)*) => {$(
        mod $name {
            use super::*;
            fn f($i: &[Tensor]) -> autograd::Result<Tensor> {
                $body
            }
            fn inputs() -> Vec<Tensor> {
                vec![$($input),+]
            }
            #[test]
            fn gradcheck() -> R {
                autograd::gradcheck(f, &inputs())
            }
            #[test]
            fn gradgradcheck() -> R {
                autograd::gradgradcheck(f, &inputs())
            }
        }
    )*};
}

/// Values away from each other, so products in the checked functions have curvature.
fn vals(n: usize, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|k| (k as f64 * 0.37 + seed).sin() + 0.1)
        .collect()
}

grad_checks! {
    // Squared, so the second derivative is not zero and routes through the op's gradient.
    gather_repeated: |i| i[0].gather(1, &idx(&[2, 2, 0, 1, 1, 1], &[2, 3]))?.pow(2.0),
        [leaf(&vals(6, 0.3), &[2, 3])];
    gather_transposed: |i| i[0].transpose(0, 1)?.gather(0, &idx(&[1, 0, 1], &[1, 3]))?.pow(2.0),
        [leaf(&vals(6, 0.5), &[3, 2])];
    // Distinct positions: with repeats, PyTorch's gradient of `src` (a gather) is not the
    // derivative of "the last write wins", and finite differences would rightly disagree.
    scatter_src: |i| i[0].scatter(1, &idx(&[0, 2, 2, 1], &[2, 2]), &i[1])?.pow(2.0),
        [leaf(&vals(6, 0.7), &[2, 3]), leaf(&vals(4, 1.1), &[2, 2])];
    scatter_value: |i| i[0].scatter_value(0, &idx(&[1, 0, 1], &[1, 3]), 2.5)?.pow(2.0),
        [leaf(&vals(6, 0.2), &[2, 3])];
    scatter_add_repeated: |i| i[0].scatter_add(1, &idx(&[2, 2, 2, 0, 1, 0], &[2, 3]), &i[1])?.pow(2.0),
        [leaf(&vals(6, 0.4), &[2, 3]), leaf(&vals(6, 0.9), &[2, 3])];
    index_add_alpha: |i| i[0].index_add(0, &idx(&[0, 2, 0], &[3]), &i[1], -1.5)?.pow(2.0),
        [leaf(&vals(6, 0.6), &[3, 2]), leaf(&vals(6, 1.3), &[3, 2])];
    index_select_tensor: |i| i[0].index_select_tensor(1, &idx(&[2, 0, 2], &[3]))?.pow(2.0),
        [leaf(&vals(6, 0.8), &[2, 3])];
    masked_select_broadcast: |i| {
        let m = Tensor::from_vec(vec![true, false, true, true, true, false], &[2, 3])?;
        i[0].masked_select(&m)?.pow(2.0)
    },
        [leaf(&vals(3, 1.7), &[3])];
    masked_scatter_both: |i| {
        let m = Tensor::from_vec(vec![true, false, true, false, true, false], &[2, 3])?;
        i[0].masked_scatter(&m, &i[1])?.pow(2.0)
    },
        [leaf(&vals(6, 0.15), &[2, 3]), leaf(&vals(4, 2.1), &[2, 2])];
}
