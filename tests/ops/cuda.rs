//! CUDA tensors against the CPU. Every test needs a GPU; without one each prints
//! `skipped: <why>` and passes, so `cargo test --workspace` runs anywhere.
//!
//! * every op's gradient on `cuda:0` equals the CPU's (f32 within 1e-4 relative, f64 within
//!   1e-10), and gradcheck holds in f64 through the device;
//! * double backward, a mixed CPU/CUDA graph (B26–B28 with a real device), single-threaded
//!   backward (B28), concurrent backward from several threads on one GPU, and an out-of-memory
//!   request that fails cleanly.

use std::thread;

use autograd::*;

/// `cuda:0`, or `None` after printing why this test is skipped.
fn gpu(test: &str) -> Option<Device> {
    if cuda::is_available() {
        return Some(Device::Cuda(0));
    }
    let why = cuda::unavailable_reason(0).unwrap_or_default();
    println!("skipped {test}: no CUDA device ({why})");
    None
}

/// A program: differentiable inputs in, one tensor out.
type Program = fn(&[Tensor]) -> Result<Tensor>;

/// Positive values for `log`, `sqrt`, `pow(0.5)` and division.
fn positive(x: &Tensor) -> Result<Tensor> {
    x.abs()?.add_scalar(0.5)
}

/// Every op of the library, each with the shapes of its inputs.
fn programs() -> Vec<(&'static str, Vec<Vec<usize>>, Program)> {
    vec![
        ("neg", vec![vec![3, 4]], |x| x[0].neg()),
        ("exp", vec![vec![3, 4]], |x| x[0].exp()),
        ("log", vec![vec![3, 4]], |x| positive(&x[0])?.log()),
        ("sin", vec![vec![3, 4]], |x| x[0].sin()),
        ("cos", vec![vec![3, 4]], |x| x[0].cos()),
        ("tanh", vec![vec![3, 4]], |x| x[0].tanh()),
        ("sigmoid", vec![vec![3, 4]], |x| x[0].sigmoid()),
        ("relu", vec![vec![3, 4]], |x| x[0].relu()),
        ("sqrt", vec![vec![3, 4]], |x| positive(&x[0])?.sqrt()),
        ("abs", vec![vec![3, 4]], |x| x[0].abs()),
        ("pow 2", vec![vec![3, 4]], |x| x[0].pow(2.0)),
        ("pow 3", vec![vec![3, 4]], |x| x[0].pow(3.0)),
        ("pow 0.5", vec![vec![3, 4]], |x| positive(&x[0])?.pow(0.5)),
        ("clamp", vec![vec![3, 4]], |x| {
            x[0].clamp(Some(-0.5), Some(0.5))
        }),
        ("clamp min", vec![vec![3, 4]], |x| {
            x[0].clamp(Some(0.1), None)
        }),
        ("erf", vec![vec![3, 4]], |x| x[0].erf()),
        // The everyday math ops.
        ("log1p", vec![vec![3, 4]], |x| positive(&x[0])?.log1p()),
        ("expm1", vec![vec![3, 4]], |x| x[0].expm1()),
        ("log2", vec![vec![3, 4]], |x| positive(&x[0])?.log2()),
        ("exp2", vec![vec![3, 4]], |x| x[0].exp2()),
        ("rsqrt", vec![vec![3, 4]], |x| positive(&x[0])?.rsqrt()),
        ("softplus", vec![vec![3, 4]], |x| x[0].softplus(1.0, 20.0)),
        ("softplus threshold", vec![vec![3, 4]], |x| {
            x[0].softplus(2.0, 0.5)
        }),
        ("silu", vec![vec![3, 4]], |x| x[0].silu()),
        ("mish", vec![vec![3, 4]], |x| x[0].mish()),
        ("hardtanh", vec![vec![3, 4]], |x| x[0].hardtanh(-0.5, 0.5)),
        ("rounding", vec![vec![3, 4]], |x| {
            let y = x[0].mul_scalar(3.0)?;
            y.floor()?
                .add(&y.ceil()?)?
                .add(&y.round()?)?
                .add(&y.trunc()?)?
                .add(&x[0])
        }),
        ("minimum broadcast", vec![vec![3, 4], vec![4]], |x| {
            x[0].minimum(&x[1])
        }),
        ("maximum broadcast", vec![vec![3, 1], vec![1, 4]], |x| {
            x[0].maximum(&x[1])
        }),
        ("fmod", vec![vec![3, 4], vec![4]], |x| {
            x[0].mul_scalar(3.0)?.fmod(&positive(&x[1])?)
        }),
        ("remainder", vec![vec![3, 4], vec![3, 4]], |x| {
            x[0].mul_scalar(3.0)?.remainder(&positive(&x[1])?)
        }),
        ("fmod and remainder by scalars", vec![vec![5]], |x| {
            x[0].fmod_scalar(0.3)?.add(&x[0].remainder_scalar(-0.3)?)
        }),
        ("atan2", vec![vec![3, 4], vec![3, 4]], |x| x[0].atan2(&x[1])),
        ("add broadcast", vec![vec![3, 4], vec![4]], |x| {
            x[0].add(&x[1])
        }),
        ("sub broadcast", vec![vec![3, 1], vec![1, 4]], |x| {
            x[0].sub(&x[1])
        }),
        ("mul broadcast", vec![vec![2, 3, 4], vec![3, 1]], |x| {
            x[0].mul(&x[1])
        }),
        ("div", vec![vec![3, 4], vec![3, 4]], |x| {
            x[0].div(&positive(&x[1])?)
        }),
        ("scalars", vec![vec![5]], |x| {
            x[0].mul_scalar(3.0)?
                .add_scalar(1.0)?
                .rsub_scalar(2.0)?
                .div_scalar(4.0)
        }),
        ("rdiv", vec![vec![5]], |x| positive(&x[0])?.rdiv_scalar(2.0)),
        ("sum", vec![vec![3, 4]], |x| x[0].sum()),
        ("sum dims", vec![vec![2, 3, 4]], |x| {
            x[0].sum_dims(&[0, 2], true)
        }),
        ("mean", vec![vec![3, 4]], |x| x[0].mean()),
        ("max_dim", vec![vec![3, 4]], |x| {
            Ok(x[0].max_dim(1, false)?.0)
        }),
        ("softmax", vec![vec![3, 4]], |x| x[0].softmax(1)),
        ("log_softmax dim 0", vec![vec![3, 4]], |x| {
            x[0].log_softmax(0)
        }),
        ("matmul", vec![vec![3, 4], vec![4, 5]], |x| {
            x[0].matmul(&x[1])
        }),
        ("matmul transposed", vec![vec![4, 3], vec![5, 4]], |x| {
            x[0].transpose(0, 1)?.matmul(&x[1].transpose(0, 1)?)
        }),
        ("matmul batched", vec![vec![2, 3, 4], vec![4, 5]], |x| {
            x[0].matmul(&x[1])
        }),
        (
            "matmul batch broadcast",
            vec![vec![2, 1, 3, 4], vec![3, 4, 2]],
            |x| x[0].matmul(&x[1]),
        ),
        ("index_select", vec![vec![4, 3]], |x| {
            x[0].index_select(0, &[2, 0, 2])
        }),
        ("narrow", vec![vec![4, 3]], |x| x[0].narrow(1, 1, 2)),
        ("cat", vec![vec![2, 3], vec![1, 3]], |x| {
            Tensor::cat(&[x[0].clone(), x[1].clone()], 0)
        }),
        ("stack", vec![vec![2, 3], vec![2, 3]], |x| {
            Tensor::stack(&[x[0].clone(), x[1].clone()], 1)
        }),
        ("permute contiguous", vec![vec![2, 3, 4]], |x| {
            x[0].permute(&[2, 0, 1])?.contiguous()
        }),
        ("reshape expand", vec![vec![3, 1]], |x| {
            x[0].expand(&[3, 4])?.reshape(&[4, 3])
        }),
        // `y.mul_(&y.detach())` was here: PyTorch refuses its backward (the saved operand is
        // the modified tensor), and so do we now; see tests/views/views_pytorch.rs.
        ("in-place", vec![vec![3, 4], vec![4]], |x| {
            let y = x[0].mul_scalar(2.0)?;
            y.add_(&x[1])?;
            y.mul_(&x[1].tanh()?)?;
            y.narrow(0, 1, 2)?.sub_(&x[1])?;
            Ok(y)
        }),
    ]
}

/// Deterministic inputs of `shapes` in `dtype` on the CPU.
fn inputs(shapes: &[Vec<usize>], dtype: DType) -> Result<Vec<Tensor>> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| Tensor::randn_seeded(s, DType::F64, 7 + i as u64)?.to_dtype(dtype))
        .collect()
}

/// The gradients of `sum(program(inputs) * weights)` with the program run on `device`.
fn gradients(program: Program, cpu_inputs: &[Tensor], device: Device) -> Result<Vec<Vec<f64>>> {
    let leaves = cpu_inputs
        .iter()
        .map(|t| t.to(device)?.detach().requires_grad_(true))
        .collect::<Result<Vec<_>>>()?;
    let out = program(&leaves)?;
    assert_eq!(out.device(), device);
    let weights = Tensor::randn_seeded(out.shape(), DType::F64, 99)?
        .to_dtype(out.dtype())?
        .to(device)?;
    out.mul(&weights)?.sum()?.backward()?;
    leaves
        .iter()
        .map(|l| {
            let g = l.grad().expect("every input gets a gradient");
            assert_eq!(g.device(), device);
            g.to_dtype(DType::F64)?.to_vec::<f64>()
        })
        .collect()
}

#[test]
fn every_op_gradient_on_cuda_equals_the_cpu_gradient() -> Result<()> {
    let Some(gpu) = gpu("every_op_gradient_on_cuda_equals_the_cpu_gradient") else {
        return Ok(());
    };
    for (dtype, tolerance) in [(DType::F32, 1e-4), (DType::F64, 1e-10)] {
        for (name, shapes, program) in programs() {
            let x = inputs(&shapes, dtype)?;
            let on_cpu = gradients(program, &x, Device::Cpu)?;
            let on_gpu = gradients(program, &x, gpu)?;
            for (i, (c, g)) in on_cpu.iter().zip(&on_gpu).enumerate() {
                for (a, b) in c.iter().zip(g) {
                    let err = (a - b).abs() / a.abs().max(1.0);
                    assert!(
                        err <= tolerance,
                        "{name} ({dtype}) input {i}: cpu {c:?} vs cuda {g:?}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Sums large enough to take every cut of the CUDA reductions (segments of long runs, column
/// sums of dense rows, two passes), on dense, transposed, narrowed and broadcast inputs: the
/// CPU's values in f64 (within 1e-12 of the sum of the magnitudes added: a misplaced segment
/// would be off by hundreds), and the same bits on a second run.
#[test]
fn large_sums_on_cuda_equal_the_cpu_sums_and_repeat_bit_for_bit() -> Result<()> {
    let Some(gpu) = gpu("large_sums_on_cuda_equal_the_cpu_sums_and_repeat_bit_for_bit") else {
        return Ok(());
    };
    type Sum = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Vec<usize>, Sum); 9] = [
        ("full sum", vec![(1 << 20) + 3], |x| x.sum()),
        ("bias gradient", vec![4099, 2050], |x| {
            x.sum_dims(&[0], false)
        }),
        ("few long columns", vec![100_000, 3], |x| {
            x.sum_dims(&[0], true)
        }),
        ("rows", vec![3, 100_003], |x| x.sum_dims(&[1], false)),
        ("middle dim", vec![5, 3001, 7], |x| x.sum_dims(&[1], false)),
        ("outer dims", vec![9, 70, 33], |x| {
            x.sum_dims(&[0, 1], false)
        }),
        ("transposed", vec![700, 301], |x| {
            x.transpose(0, 1)?.sum_dims(&[0], false)
        }),
        ("narrowed rows", vec![3000, 40], |x| {
            x.narrow(1, 3, 30)?.sum_dims(&[0], false)
        }),
        ("broadcast", vec![1, 129], |x| {
            x.expand(&[5000, 129])?.sum_dims(&[0], false)
        }),
    ];
    for (name, shape, sum) in cases {
        let n: usize = shape.iter().product();
        let values: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.5)
            .collect();
        let x = Tensor::from_vec(values, &shape)?;
        let expected = sum(&x)?.to_vec::<f64>()?;
        // Rounding error grows with the sum of the magnitudes added, not with the sum.
        let scale = sum(&x.abs()?)?.to_vec::<f64>()?;
        let on_gpu = x.to(gpu)?;
        let first = sum(&on_gpu)?.to_vec::<f64>()?;
        let second = sum(&on_gpu)?.to_vec::<f64>()?;
        assert_eq!(first.len(), expected.len(), "{name}");
        for (j, ((g, c), m)) in first.iter().zip(&expected).zip(&scale).enumerate() {
            assert!(
                (g - c).abs() <= 1e-12 * m.max(1.0),
                "{name} output {j}: cuda {g} vs cpu {c}"
            );
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&first), bits(&second), "{name}: a second run differs");
    }
    Ok(())
}

/// Element-wise kernels on `cuda:0` give the CPU's bits for exactly rounded ops, whichever way
/// they read their operands: in 16-byte packs (dense runs, bias rows of whole packs), with a
/// tail, or one element at a time (misaligned views, rows of 6, transposes), in f32 and f64.
#[test]
fn element_wise_ops_on_cuda_give_the_cpu_bits_packed_or_not() -> Result<()> {
    let Some(gpu) = gpu("element_wise_ops_on_cuda_give_the_cpu_bits_packed_or_not") else {
        return Ok(());
    };
    type Op = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let ops: [(&str, Op); 7] = [
        ("add", |a, b| a.add(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(&b.abs()?.add_scalar(0.5)?)),
        ("relu", |a, _| a.relu()),
        ("neg", |a, _| a.neg()),
        ("mul_scalar", |a, _| a.mul_scalar(0.3)),
        ("rsub_scalar", |a, _| a.rsub_scalar(1.0)),
    ];
    for dtype in [DType::F32, DType::F64] {
        let values = |n: usize, seed: u64| Tensor::randn_seeded(&[n], dtype, seed);
        // (what, a, b) with b broadcast or viewed as named.
        let cases: Vec<(&str, Tensor, Tensor)> = vec![
            ("dense", values(4096, 1)?, values(4096, 2)?),
            ("odd length", values(4099, 3)?, values(4099, 4)?),
            (
                "bias rows of 8",
                values(64 * 8, 5)?.reshape(&[64, 8])?,
                values(8, 6)?,
            ),
            (
                "bias rows of 6",
                values(64 * 6, 7)?.reshape(&[64, 6])?,
                values(6, 8)?,
            ),
            (
                "misaligned views",
                values(4100, 9)?.narrow(0, 1, 4097)?,
                values(4100, 10)?.narrow(0, 3, 4097)?,
            ),
            (
                "transposed",
                values(64 * 32, 11)?.reshape(&[64, 32])?.transpose(0, 1)?,
                values(32 * 64, 12)?.reshape(&[32, 64])?,
            ),
        ];
        for (what, a, b) in &cases {
            let (ga, gb) = (a.to(gpu)?, b.to(gpu)?);
            for (name, op) in ops {
                // Widening f32 to f64 is exact, so the f64 bits compare the f32 bits.
                let cpu = op(a, b)?.to_dtype(DType::F64)?.to_vec::<f64>()?;
                let cuda = op(&ga, &gb)?.to_dtype(DType::F64)?.to_vec::<f64>()?;
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&cuda), bits(&cpu), "{name} on {what} ({dtype})");
            }
        }
    }
    Ok(())
}

/// The harness itself, on any machine: every program runs, and the device path (a
/// host-backed `Virtual` device, scheduled like a GPU) gives the CPU's gradients bit for bit.
#[test]
fn every_program_gives_the_same_gradients_on_a_virtual_device() -> Result<()> {
    for dtype in [DType::F32, DType::F64] {
        for (name, shapes, program) in programs() {
            let x = inputs(&shapes, dtype)?;
            let on_cpu = gradients(program, &x, Device::Cpu)?;
            let on_virtual = gradients(program, &x, Device::Virtual(0))?;
            assert_eq!(on_cpu, on_virtual, "{name} ({dtype})");
            assert!(
                on_cpu.iter().flatten().any(|g| *g != 0.0),
                "{name}: all-zero gradient"
            );
        }
    }
    Ok(())
}

#[test]
fn gradcheck_and_gradgradcheck_hold_in_f64_on_cuda() -> Result<()> {
    let Some(gpu) = gpu("gradcheck_and_gradgradcheck_hold_in_f64_on_cuda") else {
        return Ok(());
    };
    for (name, shapes, program) in programs() {
        let x = inputs(&shapes, DType::F64)?
            .into_iter()
            .map(|t| t.requires_grad_(true))
            .collect::<Result<Vec<_>>>()?;
        // The inputs move to the device inside the function (differentiably), so the checks'
        // own perturbations stay on the CPU while every op runs on the GPU.
        let on_gpu = |i: &[Tensor]| -> Result<Tensor> {
            let moved = i.iter().map(|t| t.to(gpu)).collect::<Result<Vec<_>>>()?;
            program(&moved)?.to(Device::Cpu)
        };
        gradcheck(on_gpu, &x).map_err(|e| Error::msg(format!("{name}: {e}")))?;
        if !matches!(name, "relu" | "abs" | "max_dim" | "in-place") {
            gradgradcheck(on_gpu, &x).map_err(|e| Error::msg(format!("{name}: {e}")))?;
        }
    }
    Ok(())
}

#[test]
fn double_backward_on_cuda_matches_the_closed_form() -> Result<()> {
    let Some(gpu) = gpu("double_backward_on_cuda_matches_the_closed_form") else {
        return Ok(());
    };
    let x = Tensor::from_vec(vec![0.5f64, -1.0, 2.0], &[3])?
        .to(gpu)?
        .requires_grad_(true)?;
    let y = x.pow(3.0)?.sum()?;
    let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?;
    let g = g[0].clone().unwrap();
    assert_eq!(g.device(), gpu);
    g.sum()?.backward()?; // d/dx Σ 3x² = 6x
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [3.0, -6.0, 12.0]);
    Ok(())
}

#[test]
fn a_mixed_cpu_and_cuda_graph_runs_each_node_on_its_device_thread() -> Result<()> {
    let Some(gpu) = gpu("a_mixed_cpu_and_cuda_graph_runs_each_node_on_its_device_thread") else {
        return Ok(());
    };
    let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let on_gpu = w.to(gpu)?; // B26: `to` is differentiable
    let threads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = threads.clone();
    let h = on_gpu.tanh()?;
    h.register_hook(move |_| {
        t.lock()
            .unwrap()
            .push(thread::current().name().unwrap_or("").to_string());
        None
    })?;
    let back = h.to(Device::Cpu)?.mul_scalar(2.0)?.sum()?;
    back.backward()?;
    // B28: the CUDA node ran on the device-0 worker; the gradient arrived on the CPU, complete.
    assert_eq!(*threads.lock().unwrap(), ["autograd-device-0"]);
    let expected: Vec<f32> = [1.0f32, 2.0, 3.0]
        .iter()
        .map(|v| 2.0 * (1.0 - v.tanh().powi(2)))
        .collect();
    let got = w.grad().unwrap().to_vec::<f32>()?;
    for (a, b) in got.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-6, "{got:?} vs {expected:?}");
    }
    Ok(())
}

/// PyTorch's `test_backward_single_threaded` (a CUDA test there too): with multithreading
/// disabled the CUDA nodes run on the thread that called backward, with the same gradient;
/// enabled, on the device-0 worker.
#[test]
fn backward_single_threaded_runs_cuda_nodes_on_the_caller() -> Result<()> {
    let Some(gpu) = gpu("backward_single_threaded_runs_cuda_nodes_on_the_caller") else {
        return Ok(());
    };
    let run = || -> Result<(Vec<thread::ThreadId>, Vec<f32>)> {
        let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
        let h = w.to(gpu)?.tanh()?;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        h.register_hook(move |_| {
            s.lock().unwrap().push(thread::current().id());
            None
        })?;
        h.to(Device::Cpu)?.mul_scalar(2.0)?.sum()?.backward()?;
        let threads = seen.lock().unwrap().clone();
        Ok((threads, w.grad().unwrap().to_vec::<f32>()?))
    };
    let me = thread::current().id();
    let (threads, single) = {
        let _g = set_multithreading_enabled(false);
        run()?
    };
    assert_eq!(threads, [me]);
    let (threads, multi) = run()?;
    assert_eq!(threads.len(), 1);
    assert_ne!(threads[0], me);
    assert_eq!(single, multi);
    let expected: Vec<f32> = [1.0f32, 2.0, 3.0]
        .iter()
        .map(|v| 2.0 * (1.0 - v.tanh().powi(2)))
        .collect();
    for (a, b) in single.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-6, "{single:?} vs {expected:?}");
    }
    Ok(())
}

#[test]
fn concurrent_backward_passes_share_one_gpu() -> Result<()> {
    let Some(gpu) = gpu("concurrent_backward_passes_share_one_gpu") else {
        return Ok(());
    };
    let handles: Vec<_> = (0..8)
        .map(|i| {
            thread::spawn(move || -> Result<Vec<f32>> {
                let x = Tensor::full(&[256, 64], f64::from(i), DType::F32)?
                    .to(gpu)?
                    .requires_grad_(true)?;
                let w = Tensor::full(&[64, 32], 0.01, DType::F32)?.to(gpu)?;
                x.matmul(&w)?.tanh()?.sum()?.backward()?;
                x.grad().unwrap().sum_dims(&[0], false)?.to_vec::<f32>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let got = h.join().unwrap()?;
        // d/dx Σ tanh(x·w) = Σ_j (1 - tanh²(Σ_k x w)) w: every row the same.
        let z = (i as f32 * 0.01 * 64.0).tanh();
        let per_row = 32.0 * 0.01 * (1.0 - z * z);
        for g in got {
            assert!((g - 256.0 * per_row).abs() <= 1e-3 * (256.0 * per_row).max(1.0));
        }
    }
    Ok(())
}

#[test]
fn an_out_of_memory_request_is_an_error_and_the_next_pass_works() -> Result<()> {
    let Some(gpu) = gpu("an_out_of_memory_request_is_an_error_and_the_next_pass_works") else {
        return Ok(());
    };
    // 2^40 f64s = 8 TiB: more than any GPU has.
    let huge = Tensor::zeros(&[1], DType::F64)?
        .to(gpu)?
        .expand(&[1 << 20, 1 << 20])?;
    let err = huge.contiguous().unwrap_err();
    assert!(
        matches!(&err, Error::Device { message, .. } if message.contains("out of memory")),
        "{err}"
    );
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?
        .to(gpu)?
        .requires_grad_(true)?;
    x.exp()?.sum()?.backward()?;
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>()?,
        [1.0f64.exp(), 2.0f64.exp()]
    );
    Ok(())
}

#[test]
fn without_a_gpu_moving_to_cuda_is_an_error_naming_the_device() -> Result<()> {
    let x = Tensor::scalar(1.0f32);
    if cuda::is_available() {
        let beyond = Device::Cuda(cuda::device_count());
        let err = x.to(beyond).unwrap_err();
        assert!(err.to_string().contains("no such device"), "{err}");
        return Ok(());
    }
    let err = x.to(Device::Cuda(0)).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::DeviceUnavailable {
                device: Device::Cuda(0),
                ..
            }
        ),
        "{err:?}"
    );
    println!("as a user sees it: {err}");
    Ok(())
}

/// `x * sigmoid(x)` (SiLU) as a custom op whose forward and backward use tensor ops only.
#[differentiable]
fn silu(x: &Tensor) -> Result<Tensor> {
    x.mul(&x.sigmoid()?)
}

#[backward(silu)]
fn silu_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let s = x.sigmoid()?;
    grad.mul(&s.mul(&x.mul(&s.rsub_scalar(1.0)?)?.add_scalar(1.0)?)?)
}

#[test]
fn a_custom_differentiable_op_runs_on_cuda_unchanged() -> Result<()> {
    // The same check on a Virtual device everywhere, on CUDA where there is one.
    let devices = [
        Some(Device::Virtual(0)),
        gpu("a_custom_differentiable_op_runs_on_cuda_unchanged"),
    ];
    for device in devices.into_iter().flatten() {
        let host = Tensor::from_vec(vec![-1.0f64, 0.5, 2.0], &[3])?;
        let x = host.to(device)?.requires_grad_(true)?;
        let y = silu(&x)?;
        assert_eq!(
            (y.device(), y.grad_fn().unwrap().name()),
            (device, "SiluBackward0")
        );
        y.sum()?.backward()?;
        let g = x.grad().unwrap();
        assert_eq!(g.device(), device);
        for (v, g) in [-1.0f64, 0.5, 2.0].iter().zip(g.to_vec::<f64>()?) {
            let s = 1.0 / (1.0 + (-v).exp());
            assert!((g - s * (1.0 + v * (1.0 - s))).abs() < 1e-12);
        }
        gradcheck(
            |i| silu(&i[0].to(device)?)?.to(Device::Cpu),
            &[host.requires_grad_(true)?],
        )?;
    }
    Ok(())
}

/// A derived function whose node keeps shape-only stand-ins (`add`'s broadcast `b`, `mean`'s
/// input): they must live on the tensors' device.
#[differentiable(derive)]
fn dense_tanh_mean(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = x.matmul(w)? + b;
    h.tanh()?.mean()
}

#[test]
fn a_derived_op_runs_on_a_device_with_the_cpu_gradients() -> Result<()> {
    let devices = [
        Some(Device::Virtual(0)),
        gpu("a_derived_op_runs_on_a_device_with_the_cpu_gradients"),
    ];
    let hosts = [
        Tensor::randn_seeded(&[4, 3], DType::F64, 51)?,
        Tensor::randn_seeded(&[3, 2], DType::F64, 52)?,
        Tensor::randn_seeded(&[2], DType::F64, 53)?,
    ];
    let gradients = |device: Device| -> Result<Vec<Vec<f64>>> {
        let inputs: Vec<Tensor> = hosts
            .iter()
            .map(|h| h.to(device)?.detach().requires_grad_(true))
            .collect::<Result<_>>()?;
        let y = dense_tanh_mean(&inputs[0], &inputs[1], &inputs[2])?;
        assert_eq!(y.grad_fn().unwrap().name(), "DenseTanhMeanBackward0");
        y.backward()?;
        inputs
            .iter()
            .map(|t| {
                let g = t.grad().unwrap();
                assert_eq!(g.device(), device);
                g.to_vec::<f64>()
            })
            .collect()
    };
    let cpu = gradients(Device::Cpu)?;
    for device in devices.into_iter().flatten() {
        for (d, c) in gradients(device)?.iter().zip(&cpu) {
            for (d, c) in d.iter().zip(c) {
                assert!((d - c).abs() < 1e-12, "{device}: {d} vs {c}");
            }
        }
    }
    Ok(())
}

#[test]
fn generated_kernels_read_a_view_at_its_offset() -> Result<()> {
    // Found by the ops corpus on an H200 (programs 1388, 4134, 5680): clamp and erf of
    // `x.select(0, 2)` read element 0 on CUDA, since the generated kernels read their inputs'
    // buffers from the start and a view whose strides are contiguous was passed at its offset.
    let Some(gpu) = gpu("generated_kernels_read_a_view_at_its_offset") else {
        return Ok(());
    };
    let host = Tensor::from_vec(vec![0.958f64, -1.187, 0.25, 2.0, -0.5, 0.75], &[3, 2])?;
    for x in [host.clone(), host.to_dtype(DType::F32)?] {
        let x = x.requires_grad_(true)?;
        let on_gpu = x.to(gpu)?;
        let views = |t: &Tensor| -> Result<Vec<Tensor>> {
            Ok(vec![
                t.select(0, 2)?.select(0, 0)?,
                t.select(0, 1)?,
                t.narrow(0, 1, 2)?,
                t.transpose(0, 1)?.narrow(0, 1, 1)?,
            ])
        };
        for (v_cpu, v_gpu) in views(&x)?.iter().zip(views(&on_gpu)?.iter()) {
            for (name, cpu, dev) in [
                (
                    "clamp",
                    v_cpu.clamp(Some(0.5), None)?,
                    v_gpu.clamp(Some(0.5), None)?,
                ),
                (
                    "clamp max",
                    v_cpu.clamp(None, Some(0.0))?,
                    v_gpu.clamp(None, Some(0.0))?,
                ),
                ("erf", v_cpu.erf()?, v_gpu.erf()?),
            ] {
                // The wrong element is off by far more than CUDA's erf from the host's (1 ulp).
                let (cpu, dev) = (
                    cpu.to_dtype(DType::F64)?.to_vec::<f64>()?,
                    dev.to(Device::Cpu)?.to_dtype(DType::F64)?.to_vec::<f64>()?,
                );
                let close = cpu.iter().zip(&dev).all(|(a, b)| (a - b).abs() <= 1e-6);
                assert!(
                    close && cpu.len() == dev.len(),
                    "{name} of a view of shape {:?}: {cpu:?} on the host, {dev:?} on cuda:0",
                    v_cpu.shape()
                );
            }
        }
    }
    Ok(())
}
