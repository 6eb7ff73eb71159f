//! `copy_` across dtypes and devices converts, as PyTorch's does, and its `CopyBackwards` sends
//! the gradient back converted to the source's dtype and device (`grad.to(src_options)`,
//! differentiable). Values and names come from PyTorch 2.15 (CPU), running:
//!
//! ```python
//! s = torch.tensor([1.5, -2.25, 3.0], dtype=torch.float32, requires_grad=True)
//! y = torch.zeros(3, dtype=torch.float64); y.copy_(s)
//! # y = [1.5, -2.25, 3.0] float64, grad_fn=<CopyBackwards>, next (None, AccumulateGrad)
//! (y * torch.tensor([1., 2., 3.], dtype=torch.float64)).sum().backward()
//! # s.grad = [1., 2., 3.] float32
//! s2 = torch.tensor([0.1], dtype=torch.float64, requires_grad=True)
//! z = torch.zeros(2, 3, dtype=torch.float32); z.copy_(s2)    # 0.1 rounded to float32
//! (z * torch.arange(6., dtype=torch.float32).reshape(2, 3)).sum().backward()
//! # s2.grad = [15.] float64
//! a = torch.ones(3, dtype=torch.float64, requires_grad=True); b = a * 2
//! b.copy_(torch.tensor([5., 6., 7.], dtype=torch.float32, requires_grad=True))
//! b.sum().backward()        # a.grad = [0., 0., 0.]
//! s3 = torch.tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)
//! t = torch.zeros(2, dtype=torch.float64); t.copy_(s3 * s3)
//! g, = torch.autograd.grad(t.sum(), [s3], create_graph=True)   # [2., 4.] float32
//! torch.autograd.grad(g.sum(), [s3])                           # ([2., 2.],)
//! base = torch.zeros(2, 3, dtype=torch.float64)
//! s4 = torch.ones(3, dtype=torch.float32, requires_grad=True)
//! base[1].copy_(s4 * 4)     # base: CopySlices, [[0, 0, 0], [4, 4, 4]]
//! base.sum().backward()     # s4.grad = [4., 4., 4.] float32
//! ```
//!
//! Devices: `Device::Virtual(i)` stands for PyTorch's accelerators here (and `cuda:0` when a GPU
//! is present); the same programs are checked by gradcheck and gradgradcheck.

use autograd::*;

type R = Result<()>;

fn names(node: &NodeRef) -> Vec<Option<String>> {
    node.next_functions()
        .iter()
        .map(|e| e.as_ref().map(|e| e.node.name().to_string()))
        .collect()
}

#[test]
fn copy_from_f32_into_f64_casts_and_the_gradient_goes_back_as_f32() -> R {
    let s = Tensor::from_vec(vec![1.5f32, -2.25, 3.0], &[3])?.requires_grad_(true)?;
    let y = Tensor::zeros(&[3], DType::F64)?;
    y.copy_(&s)?;
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(y.to_vec::<f64>()?, [1.5, -2.25, 3.0]);
    let f = y.grad_fn().unwrap();
    assert_eq!(f.name(), "CopyBackwards");
    assert_eq!(names(&f), [None, Some("AccumulateGrad".to_string())]);
    y.mul(&Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?)?
        .sum()?
        .backward()?;
    let g = s.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    assert_eq!(g.to_vec::<f32>()?, [1.0, 2.0, 3.0]);
    Ok(())
}

#[test]
fn copy_from_f64_into_f32_rounds_broadcasts_and_sums_the_gradient_back_as_f64() -> R {
    let s = Tensor::from_vec(vec![0.1f64], &[1])?.requires_grad_(true)?;
    let z = Tensor::zeros(&[2, 3], DType::F32)?;
    z.copy_(&s)?;
    assert_eq!(z.to_vec::<f32>()?, [0.1f32; 6]);
    assert_eq!(f64::from(z.to_vec::<f32>()?[0]), 0.10000000149011612);
    let w = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3])?;
    z.mul(&w)?.sum()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!((g.dtype(), g.shape()), (DType::F64, &[1][..]));
    assert_eq!(g.to_vec::<f64>()?, [15.0]);
    Ok(())
}

#[test]
fn copy_across_dtypes_into_a_non_leaf_and_into_a_view() -> R {
    // The overwritten values get no gradient.
    let a = Tensor::ones(&[3], DType::F64)?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?;
    b.copy_(&Tensor::from_vec(vec![5.0f32, 6.0, 7.0], &[3])?.requires_grad_(true)?)?;
    b.sum()?.backward()?;
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, [0.0; 3]);

    // Into a row of an f64 base: CopySlices in the base's history.
    let base = Tensor::zeros(&[2, 3], DType::F64)?;
    let s = Tensor::ones(&[3], DType::F32)?.requires_grad_(true)?;
    base.narrow(0, 1, 1)?.copy_(&s.mul_scalar(4.0)?)?;
    assert_eq!(base.grad_fn().unwrap().name(), "CopySlices");
    assert_eq!(base.to_vec::<f64>()?, [0.0, 0.0, 0.0, 4.0, 4.0, 4.0]);
    base.sum()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!((g.dtype(), g.to_vec::<f32>()?), (DType::F32, vec![4.0; 3]));
    Ok(())
}

/// The cast back is differentiable: a second order through `copy_` across dtypes.
#[test]
fn double_backward_through_copy_across_dtypes() -> R {
    let s = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
    let t = Tensor::zeros(&[2], DType::F64)?;
    t.copy_(&s.mul(&s)?)?;
    let g = grad(
        &[t.sum()?],
        std::slice::from_ref(&s),
        GradOptions::new().create_graph(true),
    )?;
    let g = g[0].clone().unwrap();
    assert_eq!(
        (g.dtype(), g.to_vec::<f32>()?),
        (DType::F32, vec![2.0, 4.0])
    );
    assert!(g.requires_grad());
    let gg = grad(&[g.sum()?], &[s], GradOptions::new())?;
    assert_eq!(gg[0].as_ref().unwrap().to_vec::<f32>()?, [2.0, 2.0]);
    Ok(())
}

/// `f(src) = sum(w * dst.copy_(src))` with `dst` on `to` and `src` on `from`, back on the CPU.
fn copy_program(from: Device, to: Device) -> impl Fn(&[Tensor]) -> Result<Tensor> {
    move |inputs: &[Tensor]| {
        let src = inputs[0].to(from)?;
        let dst = Tensor::zeros(&[2, 3], DType::F64)?.to(to)?;
        dst.copy_(&src.mul(&src)?)?;
        let w = Tensor::from_vec(vec![1.0f64, -2.0, 0.5, 3.0, 1.5, -1.0], &[2, 3])?.to(to)?;
        dst.mul(&w)?.to(Device::Cpu)
    }
}

/// Across devices: the values arrive, the gradient is on the source's device, and gradcheck and
/// gradgradcheck hold (f64) for every pair of CPU, `virtual:0` and `virtual:1`, with a broadcast
/// source.
#[test]
fn copy_across_devices_converts_and_passes_gradcheck() -> R {
    let devices = [Device::Cpu, Device::Virtual(0), Device::Virtual(1)];
    for from in devices {
        for to in devices {
            let x = Tensor::from_vec(vec![0.5f64, -1.25, 2.0], &[3])?.requires_grad_(true)?;
            let f = copy_program(from, to);
            gradcheck(&f, std::slice::from_ref(&x))?;
            gradgradcheck(&f, std::slice::from_ref(&x))?;

            let src = x.to(from)?.detach().requires_grad_(true)?;
            let dst = Tensor::zeros(&[2, 3], DType::F64)?.to(to)?;
            dst.copy_(&src)?;
            assert_eq!(dst.device(), to);
            assert_eq!(
                dst.to(Device::Cpu)?.to_vec::<f64>()?,
                [0.5, -1.25, 2.0, 0.5, -1.25, 2.0]
            );
            dst.mul_scalar(3.0)?.sum()?.backward()?;
            let g = src.grad().unwrap();
            assert_eq!(g.device(), from, "{from} -> {to}");
            assert_eq!(g.to(Device::Cpu)?.to_vec::<f64>()?, [6.0; 3]);
        }
    }
    Ok(())
}

/// Another dtype and another device at once: an `f32` CPU source into an `f64` `virtual:1`
/// tensor, and an `f64` `virtual:1` source into an `f32` CPU tensor.
#[test]
fn copy_across_dtype_and_device_at_once() -> R {
    let s = Tensor::from_vec(vec![1.5f32, -2.0], &[2])?.requires_grad_(true)?;
    let dst = Tensor::zeros(&[2], DType::F64)?.to(Device::Virtual(1))?;
    dst.copy_(&s)?;
    assert_eq!(
        (dst.dtype(), dst.device()),
        (DType::F64, Device::Virtual(1))
    );
    dst.mul(&dst)?.sum()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!((g.dtype(), g.device()), (DType::F32, Device::Cpu));
    assert_eq!(g.to_vec::<f32>()?, [3.0, -4.0]);

    let s = Tensor::from_vec(vec![0.25f64, 4.0], &[2])?
        .to(Device::Virtual(1))?
        .detach()
        .requires_grad_(true)?;
    let dst = Tensor::zeros(&[2], DType::F32)?;
    dst.copy_(&s)?;
    assert_eq!(dst.to_vec::<f32>()?, [0.25, 4.0]);
    dst.mul_scalar(2.0)?.sum()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!((g.dtype(), g.device()), (DType::F64, Device::Virtual(1)));
    assert_eq!(g.to(Device::Cpu)?.to_vec::<f64>()?, [2.0, 2.0]);
    Ok(())
}

/// CPU <-> `cuda:0` when a GPU is present (skipped, saying why, without one).
#[test]
fn copy_between_cpu_and_cuda() -> R {
    if !cuda::is_available() {
        let why = cuda::unavailable_reason(0).unwrap_or_default();
        println!("skipped copy_between_cpu_and_cuda: no CUDA device ({why})");
        return Ok(());
    }
    let gpu = Device::Cuda(0);
    for (from, to) in [(Device::Cpu, gpu), (gpu, Device::Cpu), (gpu, gpu)] {
        let x = Tensor::from_vec(vec![0.5f64, -1.25, 2.0], &[3])?.requires_grad_(true)?;
        let f = copy_program(from, to);
        gradcheck(&f, std::slice::from_ref(&x))?;
        gradgradcheck(&f, std::slice::from_ref(&x))?;
    }
    // An f32 CPU source into an f64 tensor on the GPU.
    let s = Tensor::from_vec(vec![1.5f32, -2.0], &[2])?.requires_grad_(true)?;
    let dst = Tensor::zeros(&[2], DType::F64)?.to(gpu)?;
    dst.copy_(&s)?;
    dst.mul(&dst)?.sum()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!((g.dtype(), g.device()), (DType::F32, Device::Cpu));
    assert_eq!(g.to_vec::<f32>()?, [3.0, -4.0]);
    Ok(())
}
