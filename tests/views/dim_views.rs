//! Issue 35's views (`unsqueeze`, `squeeze*`, `t`, `view`, `reshape_infer`, `flatten`,
//! `unflatten`) are real views, as PyTorch's: they share storage and the version counter with
//! their base, and an in-place op through one rewrites the base's history (`CopySlices`), so the
//! base's gradient sees it. PyTorch: `y = x * 1; v = op(y); v.mul_(2)` doubles `y`, and
//! `(y * w).sum().backward()` gives `x.grad == 2 w`.

use autograd::*;

type ViewOp = fn(&Tensor) -> Result<Tensor>;

fn views() -> Vec<(&'static str, &'static [usize], ViewOp)> {
    vec![
        ("unsqueeze", &[2, 3], |y| y.unsqueeze(-1)),
        ("squeeze", &[1, 2, 1, 3], |y| y.squeeze()),
        ("squeeze_dim", &[1, 6], |y| y.squeeze_dim(0)),
        ("squeeze_dims", &[1, 2, 1, 3], |y| y.squeeze_dims(&[0, 2])),
        ("t", &[2, 3], |y| y.t()),
        ("view", &[2, 3], |y| y.view(&[3, -1])),
        ("view_of_t", &[2, 3], |y| y.t()?.view(&[3, 1, 2])),
        ("reshape_infer", &[2, 3], |y| y.reshape_infer(&[-1])),
        ("flatten", &[2, 3, 1], |y| y.flatten(0, -1)),
        ("unflatten", &[2, 6], |y| y.unflatten(1, &[-1, 2])),
        ("unsqueeze_of_narrow", &[2, 3], |y| {
            y.narrow(1, 1, 2)?.unsqueeze(0)
        }),
    ]
}

#[test]
fn in_place_ops_through_the_new_views_reach_the_base_and_its_gradient() -> Result<()> {
    for (name, shape, op) in views() {
        let n: usize = shape.iter().product();
        let x = Tensor::from_vec((0..n).map(|i| i as f64 + 1.0).collect(), shape)?
            .requires_grad_(true)?;
        let y = x.mul_scalar(1.0)?;
        let v = op(&y)?;
        assert!(v.is_view(), "{name}: a view");
        assert!(v.shares_storage(&y), "{name}: shares its base's storage");
        let before = y.version();
        v.mul_(&Tensor::scalar(2.0f64))?;
        assert_eq!(
            y.version(),
            before + 1,
            "{name}: the version counter is shared"
        );
        assert_eq!(
            y.grad_fn().unwrap().name(),
            "CopySlices",
            "{name}: the base's history is rewritten"
        );
        // The elements the view covers are doubled in the base.
        let covered = op(&Tensor::from_vec(
            (0..n).map(|i| i as f64).collect(),
            shape,
        )?)?
        .contiguous()?
        .to_vec::<f64>()?;
        let yv = y.detach().to_vec::<f64>()?;
        for (i, &e) in yv.iter().enumerate() {
            let want = if covered.contains(&(i as f64)) {
                2.0
            } else {
                1.0
            };
            assert_eq!(e, want * (i as f64 + 1.0), "{name}: base element {i}");
        }
        let w = Tensor::from_vec((0..n).map(|i| (i + 1) as f64 / 8.0).collect(), shape)?;
        y.mul(&w)?.sum()?.backward()?;
        let g = x.grad().unwrap().to_vec::<f64>()?;
        for (i, &gi) in g.iter().enumerate() {
            let want = if covered.contains(&(i as f64)) {
                2.0
            } else {
                1.0
            };
            assert_eq!(gi, want * (i + 1) as f64 / 8.0, "{name}: x.grad[{i}]");
        }
    }
    Ok(())
}

#[test]
fn view_refuses_what_reshape_copies() -> Result<()> {
    let x = Tensor::from_vec((0..6).map(f64::from).collect(), &[2, 3])?;
    let err = x.t()?.view(&[6]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "view size is not compatible with input tensor's size and stride (at least one \
         dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
    let copy = x.t()?.reshape_infer(&[-1])?;
    assert!(!copy.is_view() && !copy.shares_storage(&x));
    assert_eq!(copy.to_vec::<f64>()?, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // flatten of the transpose copies too, as PyTorch's (`UnsafeViewBackward0`).
    assert!(!x.t()?.flatten(0, -1)?.shares_storage(&x));
    Ok(())
}
