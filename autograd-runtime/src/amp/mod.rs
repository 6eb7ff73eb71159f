//! Mixed-precision training: PyTorch's `torch.amp`.
//!
//! * [`autocast`] / [`autocast_with`]: regions in which the ops of PyTorch's autocast lists run
//!   in a lower precision automatically (`torch.autocast`): on the CPU (`bf16` by default, or
//!   `f16`) matrix products, convolutions and attention run in the region's dtype, losses in
//!   `f32`, concatenations in the widest input type; on CUDA (`f16` by default) also norms,
//!   softmax, reductions and `exp`/`log`-like ops in `f32`. [`autocast_policy`] says what an op
//!   does, [`is_autocast_enabled`] and [`get_autocast_dtype`] read the thread's state. Casts are
//!   recorded ops, so gradients reach each tensor in its own dtype; parameters' casts are made
//!   once per region (`cache_enabled`).
//! * [`GradScaler`], dynamic loss scaling: the loss is multiplied by a large factor before the
//!   backward pass so that small gradients do not underflow in low precision (`f16`, `bf16`),
//!   the gradients are divided by it before the optimizer's step, and steps whose gradients
//!   overflowed are skipped while the factor adapts.
//!
//! # Examples
//!
//! A training step under CPU autocast, as PyTorch's `with torch.autocast("cpu"):` around the
//! forward pass and the loss, backward outside it:
//!
//! ```
//! use autograd_runtime::amp::autocast;
//! use autograd_runtime::nn::functional::{cross_entropy_tensor, CrossEntropyOptions};
//! use autograd_runtime::nn::{Forward, Linear, Module, Relu, Sequential};
//! use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
//! use autograd_runtime::{DType, Device, Tensor};
//!
//! let model = Sequential::new().add(Linear::new(4, 8)?).add(Relu::new()).add(Linear::new(8, 3)?);
//! let mut opt = Sgd::new(model.parameters(), SgdOptions::default().lr(0.1))?;
//! let x = Tensor::randn_seeded(&[16, 4], DType::F32, 0)?;
//! let y = Tensor::from_vec((0..16i64).map(|i| i % 3).collect(), &[16])?;
//! let loss = {
//!     let _autocast = autocast(Device::Cpu, DType::BF16)?;
//!     let logits = model.forward(&x)?;            // the Linear layers run in bf16
//!     assert_eq!(logits.dtype(), DType::BF16);
//!     cross_entropy_tensor(&logits, &y, &CrossEntropyOptions::default())? // f32
//! };
//! assert_eq!(loss.dtype(), DType::F32);
//! opt.zero_grad();
//! loss.backward()?;
//! assert!(model.parameters().iter().all(|p| p.grad().unwrap().dtype() == DType::F32));
//! opt.step()?;
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! PyTorch's loop, `scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`, with the
//! optional `unscale_` before clipping:
//!
//! ```
//! use autograd_runtime::amp::{GradScaler, GradScalerOptions};
//! use autograd_runtime::nn::{Forward, Linear, Module};
//! use autograd_runtime::optim::{clip_grad_norm_, Adam, AdamOptions, Optimizer};
//! use autograd_runtime::{DType, Tensor};
//!
//! let model = Linear::new(3, 1)?;
//! let mut opt = Adam::new(model.parameters(), AdamOptions::default().lr(0.05))?;
//! let mut scaler = GradScaler::new(GradScalerOptions::default().device("cpu"))?;
//! let x = Tensor::randn_seeded(&[16, 3], DType::F32, 1)?;
//! let target = x.matmul(&Tensor::from_vec(vec![1.0f32, -2.0, 0.5], &[3, 1])?)?;
//! let mut losses = Vec::new();
//! for _ in 0..100 {
//!     opt.zero_grad();
//!     let diff = model.forward(&x)?.sub(&target)?;
//!     let loss = diff.mul(&diff)?.mean()?;
//!     scaler.scale(&loss)?.backward()?;
//!     scaler.unscale_(&mut opt)?;                      // true gradients from here on
//!     clip_grad_norm_(&model.parameters(), 1.0, 2.0)?;
//!     scaler.step(&mut opt)?;                          // skipped if a gradient overflowed
//!     scaler.update(None)?;
//!     losses.push(loss.item::<f32>()?);
//! }
//! assert!(losses[99] < losses[0] / 10.0);
//! assert_eq!(scaler.get_scale(), 65536.0); // no overflow, fewer than 2000 steps: unchanged
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

pub(crate) mod autocast;
mod grad_scaler;
mod unscale;

pub use autocast::{
    AutocastGuard, AutocastOptions, CastPolicy, autocast, autocast_policy, autocast_with,
    get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
};
pub(crate) use autocast::{autocast_entry, autocast_op};
pub use grad_scaler::{GradScaler, GradScalerOptions};
