//! `Tensor::set_grad` checks what it is given as PyTorch's `x.grad = g` setter does
//! (`THPVariable_set_grad`): the tensor itself, then the dtype, the device, the shape, in that
//! order, refusing at assignment and leaving `.grad` as it was, instead of storing a gradient
//! the next backward cannot accumulate into.
//!
//! Expected texts and values come from PyTorch 2.15 (CPU), running:
//!
//! ```python
//! x = torch.zeros(3, requires_grad=True)
//! x.grad = torch.zeros(2, 3)
//! # RuntimeError: attempting to assign a gradient of size '[2, 3]' to a tensor of size '[3]'.
//! #   Please ensure that the gradient and the tensor are the same size
//! x.grad = torch.zeros(3, dtype=torch.float64)
//! # RuntimeError: attempting to assign a gradient with dtype 'double' to a tensor with
//! #   grad_dtype 'Float'. The gradient must match the tensor's grad_dtype (...)
//! x.grad = torch.zeros(2, 3, dtype=torch.float64, device='meta')   # the dtype message
//! x.grad = torch.zeros(2, 3, device='meta')
//! # RuntimeError: attempting to assign a gradient with device type 'meta' to a tensor with
//! #   device type 'cpu'. Please ensure that the gradient and the tensor are on the same device
//! x.grad = x          # RuntimeError: can't assign Variable as its own grad
//! x.grad = x.detach() # accepted
//! s = torch.tensor(1.0, requires_grad=True)
//! s.grad = torch.ones(1)
//! # RuntimeError: attempting to assign a gradient of size '[1]' to a tensor of size '[]'. (...)
//! ```
//!
//! PyTorch names dtypes `double`/`Float` there; this crate's messages name them `f64`/`f32`.

use autograd::*;

type R = Result<()>;

const DTYPE_TAIL: &str = "The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.";

fn leaf(v: Vec<f64>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(v, shape)?.requires_grad_(true)
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    t.grad()
        .expect(".grad should be set")
        .to_vec::<f64>()
        .unwrap()
}

/// A `[2, 3]` gradient for a `[3]` leaf is refused (it used to be stored and broadcast into);
/// `.grad` keeps its value and the next backward accumulates into it.
#[test]
fn a_gradient_of_another_shape_is_refused_and_grad_is_kept() -> R {
    let x = leaf(vec![0.0; 3], &[3])?;
    let err = x
        .set_grad(Some(Tensor::zeros(&[2, 3], DType::F64)?))
        .unwrap_err();
    assert!(matches!(err, Error::AssignedGradSize { .. }));
    assert_eq!(
        err.to_string(),
        "attempting to assign a gradient of size '[2, 3]' to a tensor of size '[3]'. Please ensure that the gradient and the tensor are the same size"
    );
    assert!(x.grad().is_none(), "a refused gradient is not stored");

    x.set_grad(Some(Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?))?;
    assert!(x.set_grad(Some(Tensor::ones(&[1], DType::F64)?)).is_err());
    assert_eq!(grad_vals(&x), [1.0, 2.0, 3.0]);
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [3.0, 4.0, 5.0]);

    // A 0-dim tensor's size prints as `[]`.
    let s = Tensor::scalar(1.0f64).requires_grad_(true)?;
    assert_eq!(
        s.set_grad(Some(Tensor::ones(&[1], DType::F64)?))
            .unwrap_err()
            .to_string(),
        "attempting to assign a gradient of size '[1]' to a tensor of size '[]'. Please ensure that the gradient and the tensor are the same size"
    );
    Ok(())
}

/// An `f32` gradient on an `f64` leaf is refused at assignment (it used to make the next
/// backward fail and drop the `.grad` the leaf had).
#[test]
fn a_gradient_of_another_dtype_is_refused_and_backward_still_works() -> R {
    let x = leaf(vec![0.0; 3], &[3])?;
    x.set_grad(Some(Tensor::ones(&[3], DType::F64)?))?;
    let err = x
        .set_grad(Some(Tensor::ones(&[3], DType::F32)?))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::AssignedGradDType {
            grad: DType::F32,
            tensor: DType::F64
        }
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "attempting to assign a gradient with dtype 'f32' to a tensor with grad_dtype 'f64'. {DTYPE_TAIL}"
        )
    );
    assert_eq!(grad_vals(&x), [1.0, 1.0, 1.0]);
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [3.0, 3.0, 3.0]);

    let w = Tensor::zeros(&[2], DType::F32)?.requires_grad_(true)?;
    assert_eq!(
        w.set_grad(Some(Tensor::zeros(&[2], DType::F64)?))
            .unwrap_err()
            .to_string(),
        format!(
            "attempting to assign a gradient with dtype 'f64' to a tensor with grad_dtype 'f32'. {DTYPE_TAIL}"
        )
    );
    Ok(())
}

/// PyTorch's order: dtype before device, device before size.
#[test]
fn the_checks_run_in_pytorchs_order() -> R {
    let x = leaf(vec![0.0; 3], &[3])?;
    let wrong_everything = Tensor::zeros(&[2, 3], DType::F32)?.to(Device::Virtual(0))?;
    assert!(matches!(
        x.set_grad(Some(wrong_everything)).unwrap_err(),
        Error::AssignedGradDType { .. }
    ));
    let wrong_device_and_size = Tensor::zeros(&[2, 3], DType::F64)?.to(Device::Virtual(0))?;
    assert_eq!(
        x.set_grad(Some(wrong_device_and_size))
            .unwrap_err()
            .to_string(),
        "attempting to assign a gradient with device type 'virtual' to a tensor with device type 'cpu'. Please ensure that the gradient and the tensor are on the same device"
    );
    // The tensor itself comes first of all (its dtype, device and shape fit, of course).
    assert!(matches!(
        x.set_grad(Some(x.clone())).unwrap_err(),
        Error::GradAssignedToItself
    ));
    Ok(())
}

/// Another device: the device type (`cpu`, `virtual`, `cuda`) first, then the index, as
/// PyTorch's two checks (`device().type()`, then `get_device()`). The index message is PyTorch's
/// text from `THPVariable_set_grad`; PyTorch needs two devices of one type to show it, which the
/// machine that checked these texts did not have.
#[test]
fn a_gradient_on_another_device_is_refused() -> R {
    let v0 = leaf(vec![0.0; 2], &[2])?.to(Device::Virtual(0))?.detach();
    v0.set_requires_grad(true)?;
    let on_cpu = Tensor::ones(&[2], DType::F64)?;
    assert_eq!(
        v0.set_grad(Some(on_cpu)).unwrap_err().to_string(),
        "attempting to assign a gradient with device type 'cpu' to a tensor with device type 'virtual'. Please ensure that the gradient and the tensor are on the same device"
    );
    let on_v1 = Tensor::ones(&[2], DType::F64)?.to(Device::Virtual(1))?;
    let err = v0.set_grad(Some(on_v1)).unwrap_err();
    assert!(matches!(
        err,
        Error::AssignedGradDevice {
            grad: Device::Virtual(1),
            tensor: Device::Virtual(0)
        }
    ));
    assert_eq!(
        err.to_string(),
        "attempting to assign a gradient located on device with index '1' to a tensor located on device with index '0'. Please ensure that the gradient and the tensor are on the same device"
    );
    assert!(v0.grad().is_none());

    // The right device is accepted, and the next backward (on virtual:0's engine thread)
    // accumulates into it.
    v0.set_grad(Some(
        Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.to(Device::Virtual(0))?,
    ))?;
    v0.mul_scalar(3.0)?.sum()?.backward()?;
    let g = v0.grad().unwrap();
    assert_eq!(g.device(), Device::Virtual(0));
    assert_eq!(g.to(Device::Cpu)?.to_vec::<f64>()?, [4.0, 5.0]);
    Ok(())
}

/// `x.grad = x` is refused; an alias of `x` that is another tensor (`x.detach()`) is not.
#[test]
fn a_tensor_cannot_be_its_own_grad_but_its_detached_alias_can() -> R {
    let x = leaf(vec![1.0, 2.0], &[2])?;
    let err = x.set_grad(Some(x.clone())).unwrap_err();
    assert_eq!(err.to_string(), "can't assign Variable as its own grad");
    assert!(x.grad().is_none());
    let alias = x.detach();
    x.set_grad(Some(alias.clone()))?;
    assert!(x.grad().unwrap().is_same(&alias));
    Ok(())
}

/// What PyTorch accepts is accepted: a non-leaf's or a non-requires-grad tensor's `.grad`,
/// a gradient with other strides (transposed, expanded), a gradient with history, `None`.
///
/// ```python
/// y = torch.zeros(3); y.grad = torch.ones(3)                      # accepted
/// z = torch.zeros(3, requires_grad=True) * 2; z.grad = torch.ones(3)  # accepted
/// x = torch.zeros(2, 3, requires_grad=True); x.grad = torch.ones(3, 2).t()
/// (x * 2).sum().backward()   # x.grad == 3, strides (1, 2): accumulated in place
/// x = torch.zeros(3, requires_grad=True); w = torch.ones(3, requires_grad=True)
/// x.grad = w * 2; (x * 2).sum().backward()   # x.grad == [4, 4, 4], grad_fn=<MulBackward0>
/// x = torch.zeros(3, requires_grad=True); x.grad = torch.ones(1).expand(3)
/// (x * 2).sum().backward()
/// # RuntimeError: unsupported operation: more than one element of the written-to tensor
/// #   refers to a single memory location. Please clone() the tensor before performing the
/// #   operation.
/// ```
#[test]
fn gradients_pytorch_accepts_are_accepted() -> R {
    let y = Tensor::zeros(&[3], DType::F64)?;
    y.set_grad(Some(Tensor::ones(&[3], DType::F64)?))?;
    assert_eq!(grad_vals(&y), [1.0; 3]);

    let z = leaf(vec![0.0; 3], &[3])?.mul_scalar(2.0)?;
    z.set_grad(Some(Tensor::ones(&[3], DType::F64)?))?;
    assert_eq!(grad_vals(&z), [1.0; 3]);

    let x = leaf(vec![0.0; 6], &[2, 3])?;
    x.set_grad(Some(Tensor::ones(&[3, 2], DType::F64)?.transpose(0, 1)?))?;
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [3.0; 6]);
    assert_eq!(x.grad().unwrap().strides(), [1, 2]);

    let x = leaf(vec![0.0; 3], &[3])?;
    let w = leaf(vec![1.0; 3], &[3])?;
    x.set_grad(Some(w.mul_scalar(2.0)?))?;
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [4.0; 3]);
    assert_eq!(x.grad().unwrap().grad_fn().unwrap().name(), "MulBackward0");

    let x = leaf(vec![0.0; 3], &[3])?;
    x.set_grad(Some(Tensor::ones(&[1], DType::F64)?.expand(&[3])?))?;
    let err = x.mul_scalar(2.0)?.sum()?.backward().unwrap_err();
    assert!(matches!(err, Error::InternalOverlap), "{err}");

    x.set_grad(None)?;
    assert!(x.grad().is_none());
    Ok(())
}
