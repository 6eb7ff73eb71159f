//! Inference mode and inference tensors (B31): PyTorch's `TestAutogradInferenceMode`
//! (`test/autograd/test_inference_mode.py`), ported case by case, with the texts of torch 2.15.
//! `view(-1)` / `view_as` are `reshape` here, `clone()` is `copy()`; PyTorch's `transpose_`
//! variants are left out (no in-place transpose here).

use autograd::*;

type R = Result<()>;

const SAVED: &str = "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `autograd::no_grad()` instead of `autograd::inference_mode()`.";
const INPLACE: &str = "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.";
const REQUIRES_GRAD: &str =
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.";
const AMBIGUOUS: &str = " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";
const LEAF: &str = "a leaf Variable that requires grad is being used in an in-place operation.";

fn ones() -> Tensor {
    Tensor::ones(&[1, 2, 3], DType::F64).unwrap()
}

fn ones_rg(requires_grad: bool) -> Tensor {
    ones().requires_grad_(requires_grad).unwrap()
}

/// An inference tensor made the way the tests make theirs.
fn inference_ones(requires_grad: bool) -> Tensor {
    let _g = inference_mode();
    ones_rg(requires_grad)
}

/// An in-place op, for the tests that try several.
type InPlace = Box<dyn Fn(&Tensor) -> Result<()>>;

fn two() -> Tensor {
    Tensor::scalar(2.0f64)
}

fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn inference_mode_guard_nests_and_sets_the_other_modes() {
    assert!(!is_inference_mode_enabled());
    {
        let _g = inference_mode();
        assert!(is_inference_mode_enabled());
        // As torch 2.15: grad mode and multithreaded backward are off inside.
        assert!(!is_grad_enabled() && !is_multithreading_enabled());
        {
            let _g = inference_mode_with(false);
            assert!(!is_inference_mode_enabled());
            assert!(is_grad_enabled() && is_multithreading_enabled());
        }
        assert!(is_inference_mode_enabled() && !is_grad_enabled());
    }
    assert!(!is_inference_mode_enabled());
    assert!(is_grad_enabled() && is_multithreading_enabled());
    // `inference_mode(False)` turns grad mode and multithreading on, also under `no_grad` and
    // `set_multithreading_enabled(false)` (torch 2.15 prints True for both).
    let _n = no_grad();
    let _m = set_multithreading_enabled(false);
    {
        let _g = inference_mode_with(false);
        assert!(is_grad_enabled() && is_multithreading_enabled());
    }
    assert!(!is_grad_enabled() && !is_multithreading_enabled());
}

/// `test_inference_mode_decorator`: a function run in inference mode.
#[test]
fn inference_mode_function() -> R {
    let func = |x: &Tensor| {
        let _g = inference_mode();
        assert!(is_inference_mode_enabled());
        x.mul(x)
    };
    for requires_grad in [true, false] {
        let c = ones_rg(requires_grad);
        let d = func(&c)?;
        assert!(d.is_inference());
        assert!(!d.requires_grad());
        assert_eq!(d.to_vec::<f64>()?, vec![1.0; 6]);
    }
    Ok(())
}

#[test]
fn inference_mode_tensor_creation() -> R {
    let _g = inference_mode();
    // New tensors are inference tensors.
    let c = ones();
    assert!(!c.requires_grad() && c.is_inference());
    // requires_grad may be set in inference mode.
    let tmp = ones().requires_grad_(true)?;
    assert!(tmp.requires_grad() && tmp.is_inference());
    let tmp = ones().requires_grad_(false)?;
    assert!(!tmp.requires_grad() && tmp.is_inference());
    // Every constructor.
    for t in [
        Tensor::scalar(1.0f32),
        Tensor::from_vec(vec![1.0f64; 40], &[40])?,
        Tensor::randn_seeded(&[3], DType::F32, 0)?,
        Tensor::zeros(&[1000], DType::F64)?,
    ] {
        assert!(t.is_inference());
    }
    Ok(())
}

/// `test_inference_mode_existing_autograd_session`: a normal tensor modified in inference mode
/// still has its version counter bumped.
#[test]
fn inference_mode_existing_autograd_session() -> R {
    let s = ones_rg(true);
    let a = s.copy()?;
    let out = a.mul(&a)?; // saves `a` outside inference mode
    {
        let _g = inference_mode();
        a.add_(&two())?;
    }
    assert!(!a.is_inference());
    assert_eq!(a.version(), 1);
    let err = err_text(out.backward_with(BackwardOptions::new().gradient(out.ones_like()?)));
    assert!(
        err.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation: [f64 [1, 2, 3]], which is output 0 of Clone, is at version 1; expected version 0 instead."),
        "{err}"
    );
    Ok(())
}

#[test]
fn inference_tensor_in_inference_mode_functional_op() -> R {
    let _g = inference_mode();
    for requires_grad in [true, false] {
        let c = ones_rg(requires_grad);
        let out = c.mul(&c)?;
        assert!(out.is_inference() && !out.requires_grad() && out.grad_fn().is_none());
    }
    // Not even under `enable_grad` (torch 2.15: `requires_grad` False, an inference tensor).
    let _e = enable_grad();
    assert!(is_grad_enabled());
    let c = ones_rg(true);
    let out = c.mul(&c)?;
    assert!(out.is_inference() && !out.requires_grad());
    Ok(())
}

#[test]
fn inference_tensor_in_inference_mode_inplace_op() -> R {
    let _g = inference_mode();
    for requires_grad in [true, false] {
        let c = ones_rg(requires_grad);
        c.add_(&two())?;
        assert!(c.is_inference());
        assert_eq!(c.requires_grad(), requires_grad);
        assert_eq!(c.to_vec::<f64>()?, vec![3.0; 6]);
        // No version counter: nothing is counted.
        assert_eq!(c.version(), 0);
    }
    Ok(())
}

#[test]
fn inference_tensor_in_inference_mode_view_op() -> R {
    let _g = inference_mode();
    for requires_grad in [true, false] {
        let c = ones_rg(requires_grad);
        for view in [c.reshape(&[6])?, c.transpose(1, 2)?, c.narrow(2, 0, 2)?] {
            assert!(view.is_inference());
            assert!(!view.requires_grad());
            assert!(!view.is_view());
        }
    }
    Ok(())
}

#[test]
fn inference_tensor_in_normal_mode_functional_op() -> R {
    for requires_grad in [true, false] {
        let c = inference_ones(requires_grad);
        // Ops over inference tensors alone record nothing, whatever `requires_grad` (torch 2.15:
        // `c * c` and `c.exp()` of a `requires_grad=True` inference tensor do not require grad).
        for out in [c.mul(&c)?, c.exp()?, c.sum()?] {
            assert!(!out.is_inference());
            assert!(!out.requires_grad());
            assert!(out.is_leaf());
        }
    }
    Ok(())
}

#[test]
fn inference_tensor_in_normal_mode_inplace_op() -> R {
    for requires_grad in [false, true] {
        let c = inference_ones(requires_grad);
        let ops: [(&str, InPlace); 4] = [
            ("add_", Box::new(|x| x.add_(&two()).map(drop))),
            ("mul_", Box::new(|x| x.mul_(&two()).map(drop))),
            ("fill_", Box::new(|x| x.fill_(5.0).map(drop))),
            ("copy_", Box::new(|x| x.copy_(&ones()).map(drop))),
        ];
        for (name, op) in &ops {
            let err = err_text(op(&c));
            if requires_grad {
                // The leaf check comes first, as in PyTorch.
                assert_eq!(err, LEAF, "{name}");
            } else {
                assert_eq!(err, INPLACE, "{name}");
            }
            // Also under no_grad (torch 2.15), where the leaf check does not apply.
            let _g = no_grad();
            assert_eq!(err_text(op(&c)), INPLACE, "{name} under no_grad");
        }
        // Refused before anything was written.
        assert_eq!(c.to_vec::<f64>()?, vec![1.0; 6]);
    }
    Ok(())
}

#[test]
fn inference_tensor_in_normal_mode_view_op() -> R {
    for requires_grad in [true, false] {
        let c = inference_ones(requires_grad);
        let out = c.reshape(&[6])?;
        assert!(out.is_inference());
        assert!(!out.requires_grad());
        assert!(!out.is_view());
        assert!(out.is_leaf());
        assert!(out.shares_storage(&c));
    }
    Ok(())
}

#[test]
fn requires_grad_on_an_inference_tensor_outside_inference_mode() -> R {
    let c = inference_ones(false);
    assert_eq!(err_text(c.set_requires_grad(true)), REQUIRES_GRAD);
    assert!(matches!(
        c.clone().requires_grad_(true),
        Err(Error::InferenceTensorRequiresGrad)
    ));
    c.set_requires_grad(false)?;
    // A copy is a normal tensor.
    let n = c.copy()?.requires_grad_(true)?;
    assert!(!n.is_inference() && n.requires_grad());
    Ok(())
}

#[test]
fn normal_tensor_inplace_output_in_inference_mode() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let _g = inference_mode();
        a.add_(&two())?;
        assert!(!a.is_inference());
        assert_eq!(a.requires_grad(), requires_grad);
        // inplace -> inplace
        a.add_(&two())?;
        assert!(!a.is_inference());
        assert_eq!(a.requires_grad(), requires_grad);
        assert_eq!(a.version(), 2);
        // inplace -> inplace -> view
        let view_out = a.reshape(&[6])?;
        assert!(!view_out.is_inference());
        assert_eq!(view_out.requires_grad(), requires_grad);
    }
    Ok(())
}

#[test]
fn normal_tensor_inplace_output_in_normal_mode() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        {
            let _g = inference_mode();
            a.add_(&two())?;
            assert!(!a.is_inference());
            assert_eq!(a.requires_grad(), requires_grad);
        }
        a.add_(&two())?;
        assert!(!a.is_inference());
        assert_eq!(a.requires_grad(), requires_grad);
        a.add_(&two())?;
        let view_out = a.reshape(&[6])?;
        assert!(!view_out.is_inference());
        assert_eq!(view_out.requires_grad(), requires_grad);
        if requires_grad {
            // The in-place ops outside inference mode were recorded: d/ds of Σ (s + 6) is 1.
            view_out.sum()?.backward()?;
            assert_eq!(s.grad().unwrap().to_vec::<f64>()?, vec![1.0; 6]);
        }
    }
    Ok(())
}

#[test]
fn normal_tensor_view_output_in_inference_mode() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let _g = inference_mode();
        let out = a.reshape(&[6])?;
        assert!(!out.is_inference());
        assert_eq!(out.requires_grad(), requires_grad);
        assert!(out.is_view());
        // view -> view
        let tmp = out.reshape(&[6])?;
        assert!(!tmp.is_inference());
        assert_eq!(tmp.requires_grad(), requires_grad);
        assert!(tmp.is_view());
        // view -> view -> inplace
        tmp.add_(&two())?;
        assert!(!tmp.is_inference());
        assert_eq!(tmp.requires_grad(), requires_grad);
        assert_eq!(a.version(), tmp.version());
        assert_eq!(a.version(), 1);
    }
    Ok(())
}

#[test]
fn normal_tensor_view_output_in_normal_mode() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let out = {
            let _g = inference_mode();
            let out = a.reshape(&[6])?;
            assert!(!out.is_inference());
            assert_eq!(out.requires_grad(), requires_grad);
            assert!(out.is_view() && out.is_leaf());
            out
        };
        let tmp = out.mul(&out)?;
        assert!(!tmp.is_inference());
        assert_eq!(tmp.requires_grad(), requires_grad);
        if requires_grad {
            assert_eq!(
                err_text(out.add_(&two())),
                format!(
                    "A view was created in inference mode and is being modified inplace in normal mode.{AMBIGUOUS}"
                )
            );
        } else {
            out.add_(&two())?;
        }
        let tmp = out.reshape(&[2, 3])?;
        assert!(!tmp.is_inference());
        assert_eq!(tmp.requires_grad(), requires_grad);
    }
    Ok(())
}

/// A view of such a view, taken outside inference mode, keeps the refusal (torch 2.15's text
/// for it).
#[test]
fn view_of_an_inference_mode_view_is_refused_in_place() -> R {
    let s = ones_rg(true);
    let a = s.copy()?;
    let v = {
        let _g = inference_mode();
        a.reshape(&[6])?
    };
    let w = v.reshape(&[2, 3])?;
    assert_eq!(w.grad_fn().unwrap().name(), "ViewBackward0");
    assert_eq!(
        err_text(w.add_(&two())),
        format!(
            "Output 0 of View is a view of a view which was created in inference mode and is being modified inplace in normal mode.{AMBIGUOUS}"
        )
    );
    Ok(())
}

#[test]
fn mix_inference_and_normal_tensor_functional_op() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let c = inference_ones(requires_grad);
        // `add` saves nothing for backward.
        let out = c.add(&s)?;
        assert!(!out.is_inference());
        assert_eq!(out.requires_grad(), requires_grad);
        if requires_grad {
            // A leaf inference tensor that requires grad still gets its gradient.
            out.backward_with(BackwardOptions::new().gradient(out.ones_like()?))?;
            assert_eq!(c.grad().unwrap().to_vec::<f64>()?, vec![1.0; 6]);
            assert_eq!(s.grad().unwrap().to_vec::<f64>()?, vec![1.0; 6]);
            // `mul` would save `c`.
            assert_eq!(err_text(c.mul(&s)), SAVED);
            assert!(matches!(s.mul(&c), Err(Error::InferenceTensorSaved)));
            // `cat` and `stack` save nothing (torch 2.15 accepts `torch.stack([s, c])`).
            let st = Tensor::stack(&[s.clone(), c.clone()], 0)?;
            assert!(st.requires_grad() && !st.is_inference());
            let ct = Tensor::cat(&[s.clone(), c.clone()], 0)?;
            assert!(ct.requires_grad());
        } else {
            assert_eq!(c.mul(&s)?.to_vec::<f64>()?, vec![1.0; 6]);
        }
    }
    Ok(())
}

#[test]
fn mix_inference_and_normal_tensor_inplace_op() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let c = inference_ones(false);
        assert!(c.is_inference());
        if requires_grad {
            assert_eq!(err_text(a.mul_(&c)), SAVED);
        } else {
            a.mul_(&c)?;
            assert_eq!(err_text(c.copy_(&s.mul(&s)?)), INPLACE);
        }
    }
    Ok(())
}

#[test]
fn mix_inference_and_normal_tensor_view_op() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let c = {
            let _g = inference_mode();
            ones()
        };
        let tmp1 = c.reshape(s.shape())?;
        assert!(tmp1.is_inference() && !tmp1.requires_grad());
        let tmp2 = s.reshape(c.shape())?;
        assert!(!tmp2.is_inference());
        assert_eq!(tmp2.requires_grad(), requires_grad);
    }
    Ok(())
}

#[test]
fn inference_mode_handle_direct_view_on_rebase() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let view_out = {
            let _g = inference_mode();
            a.reshape(a.shape())?
        };
        if requires_grad {
            let err = err_text(view_out.add_(&two()));
            assert!(
                err.starts_with(
                    "A view was created in inference mode and is being modified inplace"
                ),
                "{err}"
            );
        } else {
            view_out.add_(&two())?;
            assert_eq!(a.to_vec::<f64>()?, vec![3.0; 6]);
        }
    }
    Ok(())
}

#[test]
fn inference_mode_handle_indirect_view_on_rebase() -> R {
    for requires_grad in [true, false] {
        let s = ones_rg(requires_grad);
        let a = s.copy()?;
        let view_out = {
            let _g = inference_mode();
            a.reshape(&[6])?
        };
        a.add_(&two())?;
        if requires_grad {
            // PyTorch raises on reading `grad_fn`; here an op given the view does (torch 2.15
            // raises the same text for `view_out * 2`).
            assert_eq!(
                err_text(view_out.mul_scalar(2.0)),
                format!(
                    "A view was created in inference mode and its base or another view of its base has been modified inplace in normal mode.{AMBIGUOUS}"
                )
            );
        } else {
            assert!(view_out.grad_fn().is_none());
            assert_eq!(view_out.mul_scalar(2.0)?.to_vec::<f64>()?, vec![6.0; 6]);
        }
    }
    Ok(())
}

/// A backward pass run in inference mode runs its nodes in it (the caller's modes travel with
/// the pass): the gradients it makes are inference tensors, as in torch 2.15.
#[test]
fn backward_in_inference_mode_makes_inference_gradients() -> R {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let y = x.mul(&x)?.sum()?;
    {
        let _g = inference_mode();
        y.backward()?;
    }
    let g = x.grad().unwrap();
    assert!(g.is_inference());
    assert_eq!(g.to_vec::<f64>()?, vec![2.0, 4.0]);
    Ok(())
}

/// The cost model: an inference tensor's in-place ops in inference mode are not counted, a
/// normal tensor's are (also in inference mode), and nothing records.
#[test]
fn inference_mode_records_nothing_and_counts_only_normal_tensors() -> R {
    let w = Tensor::from_vec(vec![0.5f64, -1.0], &[2])?.requires_grad_(true)?;
    let m = Tensor::from_vec(vec![1.0f64], &[1])?;
    let _g = inference_mode();
    let h = w.mul_scalar(2.0)?.tanh()?;
    assert!(h.grad_fn().is_none() && h.is_inference());
    h.mul_(&h)?;
    assert_eq!(h.version(), 0);
    let (t1, t2) = (1f64.tanh(), 2f64.tanh());
    assert_eq!(h.to_vec::<f64>()?, vec![t1 * t1, t2 * t2]);
    m.add_(&Tensor::scalar(1.0f64))?;
    assert_eq!((m.version(), m.item::<f64>()?), (1, 2.0));
    assert!(!m.is_inference());
    Ok(())
}
