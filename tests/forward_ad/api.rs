//! The `forward_ad` API as PyTorch's `torch.autograd.forward_ad`: levels, `make_dual` and
//! `unpack_dual` with PyTorch 2.15's error texts, view and in-place tangents, grad mode, and
//! tangents that are differentiated backward.

use autograd::{DType, Result, Tensor, forward_ad};

fn vec(values: &[f64]) -> Result<Tensor> {
    Tensor::from_vec(values.to_vec(), &[values.len()])
}

fn tangent(t: &Tensor) -> Result<Vec<f64>> {
    forward_ad::unpack_dual(t)?
        .tangent
        .expect("a tangent")
        .to_vec::<f64>()
}

#[test]
fn a_chain_of_ops_carries_the_product_rule() -> Result<()> {
    let _serial = crate::serial();
    let x = vec(&[0.5, 1.0, 2.0])?;
    let t = vec(&[1.0, 2.0, 3.0])?;
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &t)?;
    let y = d.sin()?.mul(&d)?.sum()?;
    let expected: f64 = [0.5f64, 1.0, 2.0]
        .iter()
        .zip([1.0, 2.0, 3.0])
        .map(|(x, t)| (x.cos() * x + x.sin()) * t)
        .sum();
    let got = forward_ad::unpack_dual(&y)?
        .tangent
        .unwrap()
        .item::<f64>()?;
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    Ok(())
}

#[test]
fn errors_are_pytorchs() -> Result<()> {
    let _serial = crate::serial();
    let x = vec(&[1.0, 2.0, 3.0])?;
    assert_eq!(
        forward_ad::make_dual(&x, &x).unwrap_err().to_string(),
        "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
    );
    assert_eq!(
        forward_ad::exit_dual_level(0).unwrap_err().to_string(),
        "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
    );
    let level = forward_ad::dual_level()?;
    assert_eq!(
        forward_ad::dual_level().unwrap_err().to_string(),
        "Nested forward mode AD is not supported at the moment"
    );
    assert_eq!(
        forward_ad::make_dual(&x, &vec(&[1.0; 4])?)
            .unwrap_err()
            .to_string(),
        "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size [3] while the given forward gradient is of size [4]."
    );
    let ints = Tensor::from_vec(vec![1i64, 2, 3], &[3])?;
    assert_eq!(
        forward_ad::make_dual(&x, &ints).unwrap_err().to_string(),
        "Expected tangent to be floating point or complex, but got: torch.int64"
    );
    assert_eq!(
        forward_ad::make_dual(&ints, &ints).unwrap_err().to_string(),
        "Expected primal to be floating point or complex, but got: torch.int64"
    );
    let d = forward_ad::make_dual(&x, &x)?;
    assert_eq!(
        forward_ad::make_dual(&d, &x).unwrap_err().to_string(),
        "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level 0 is not supported."
    );
    assert_eq!(
        forward_ad::exit_dual_level(1).unwrap_err().to_string(),
        "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
    );
    drop(level);
    Ok(())
}

#[test]
fn exiting_the_level_frees_the_tangents() -> Result<()> {
    let _serial = crate::serial();
    let x = vec(&[1.0, 2.0])?;
    let t = vec(&[3.0, 4.0])?;
    let level = forward_ad::enter_dual_level()?;
    assert_eq!(level, 0);
    let d = forward_ad::make_dual(&x, &t)?;
    let y = d.exp()?;
    // `make_dual` keeps a tangent that has the primal's layout as it is.
    assert!(forward_ad::unpack_dual(&d)?.tangent.unwrap().is_same(&t));
    forward_ad::exit_dual_level(level)?;
    assert!(forward_ad::unpack_dual(&d)?.tangent.is_none());
    assert!(forward_ad::unpack_dual(&y)?.tangent.is_none());
    // A new level does not see the old tangents either.
    let _level = forward_ad::dual_level()?;
    assert!(forward_ad::unpack_dual(&y)?.tangent.is_none());
    assert!(forward_ad::unpack_dual(&y.exp()?)?.tangent.is_none());
    Ok(())
}

#[test]
fn make_dual_views_the_primal_and_unpack_dual_strips_the_tangent() -> Result<()> {
    let _serial = crate::serial();
    let x = vec(&[1.0, 2.0, 3.0])?.requires_grad_(true)?;
    let _level = forward_ad::dual_level()?;
    let strided = vec(&[1.0, 0.0, 2.0, 0.0, 3.0, 0.0])?
        .reshape(&[3, 2])?
        .select(1, 0)?;
    let d = forward_ad::make_dual(&x, &strided)?;
    assert!(d.is_view() && d.shares_storage(&x));
    assert!(d.requires_grad(), "gradients flow back to the primal");
    assert_eq!(d.grad_fn().unwrap().name(), "ViewBackward0");
    // A strided tangent is copied into the primal's (contiguous) layout.
    let t = forward_ad::unpack_dual(&d)?.tangent.unwrap();
    assert!(t.is_contiguous() && !t.is_same(&strided));
    assert_eq!(t.to_vec::<f64>()?, [1.0, 2.0, 3.0]);
    let unpacked = forward_ad::unpack_dual(&d)?;
    assert!(unpacked.primal.shares_storage(&x));
    assert!(forward_ad::unpack_dual(&unpacked.primal)?.tangent.is_none());
    assert!(forward_ad::unpack_dual(&d.detach())?.tangent.is_none());
    // A tangent of another floating dtype is kept in it, as PyTorch keeps it.
    let y = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    let dy = forward_ad::make_dual(&y, &vec(&[1.0, 1.0])?)?;
    assert_eq!(
        forward_ad::unpack_dual(&dy)?.tangent.unwrap().dtype(),
        DType::F64
    );
    Ok(())
}

#[test]
fn views_take_views_of_the_tangent_and_in_place_ops_update_it() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    // PyTorch: b = make_dual(zeros(4), zeros(4)); b[1:3].add_(d[:2]) → b's tangent [0, 1, 1, 0].
    let b = forward_ad::make_dual(
        &Tensor::zeros(&[4], DType::F64)?,
        &Tensor::zeros(&[4], DType::F64)?,
    )?;
    let d = forward_ad::make_dual(&vec(&[5.0, 6.0, 7.0])?, &vec(&[1.0, 1.0, 1.0])?)?;
    let v = b.narrow(0, 1, 2)?;
    let vt = forward_ad::unpack_dual(&v)?.tangent.unwrap();
    assert!(
        vt.is_view(),
        "the tangent of a view is a view of the base's tangent"
    );
    v.add_(&d.narrow(0, 0, 2)?)?;
    assert_eq!(tangent(&b)?, [0.0, 1.0, 1.0, 0.0]);
    assert_eq!(b.to_vec::<f64>()?, [0.0, 5.0, 6.0, 0.0]);
    // An in-place op on a dual tensor writes its new tangent into the old one.
    let e = forward_ad::make_dual(&vec(&[1.0, 2.0])?, &vec(&[1.0, 1.0])?)?;
    let et = forward_ad::unpack_dual(&e)?.tangent.unwrap();
    e.mul_(&vec(&[3.0, 3.0])?)?;
    assert_eq!(et.to_vec::<f64>()?, [3.0, 3.0]);
    assert!(forward_ad::unpack_dual(&e)?.tangent.unwrap().is_same(&et));
    // An in-place op on a plain tensor with a dual operand gives it a tangent.
    let a = Tensor::zeros(&[3], DType::F64)?;
    a.add_(&d)?;
    assert_eq!(tangent(&a)?, [1.0, 1.0, 1.0]);
    Ok(())
}

#[test]
fn grad_mode_does_not_stop_forward_mode_and_integer_results_have_no_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&vec(&[1.0, -2.0, 3.0])?, &vec(&[1.0, 1.0, 1.0])?)?;
    let z = {
        let _no_grad = autograd::no_grad();
        d.mul_scalar(2.0)?
    };
    assert_eq!(tangent(&z)?, [2.0, 2.0, 2.0]);
    assert!(!z.requires_grad());
    assert!(
        forward_ad::unpack_dual(&d.argmax(None, false)?)?
            .tangent
            .is_none()
    );
    assert!(
        forward_ad::unpack_dual(&d.gt_scalar(0.0)?)?
            .tangent
            .is_none()
    );
    assert_eq!(tangent(&d.sum()?)?, [3.0]);
    Ok(())
}

#[test]
fn a_tangent_can_be_differentiated_backward() -> Result<()> {
    let _serial = crate::serial();
    // f(x) = Σ x³: the tangent Σ 3x²·v, whose gradient w.r.t. x is 6x·v (a Hessian-vector
    // product, reverse over forward).
    let x = vec(&[1.0, 2.0, -1.0])?.requires_grad_(true)?;
    let v = vec(&[1.0, 0.5, 2.0])?;
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &v)?;
    let y = d.pow(3.0)?.sum()?;
    let t = forward_ad::unpack_dual(&y)?.tangent.unwrap();
    assert!(t.requires_grad());
    assert_eq!(
        t.item::<f64>()?,
        3.0 * 1.0 + 3.0 * 4.0 * 0.5 + 3.0 * 1.0 * 2.0
    );
    t.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [6.0, 6.0, -12.0]);
    Ok(())
}

#[test]
fn forward_over_reverse_gives_a_hessian_vector_product() -> Result<()> {
    let _serial = crate::serial();
    // f(x) = Σ x³ + x₀x₁: ∇f = 3x² + (x₁, x₀, 0), H = diag(6x) + the x₀x₁ block, so with
    // v = (1, 2, 3) at x = (1, 2, -1): H·v = (6 + 2, 24 + 1, -18).
    let x = vec(&[1.0, 2.0, -1.0])?;
    let v = vec(&[1.0, 2.0, 3.0])?;
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &v)?.requires_grad_(true)?;
    let y = d
        .pow(3.0)?
        .sum()?
        .add(&d.select(0, 0)?.mul(&d.select(0, 1)?)?)?;
    let g = autograd::grad(
        &[y],
        &[d.clone()],
        autograd::GradOptions::new().create_graph(true),
    )?;
    let g = g[0].clone().expect("a gradient");
    assert_eq!(g.to_vec::<f64>()?, [3.0 + 2.0, 12.0 + 1.0, 3.0]);
    assert_eq!(tangent(&g)?, [8.0, 25.0, -18.0]);
    Ok(())
}
