//! Mixed-precision training: PyTorch's `torch.amp`. Here [`GradScaler`], dynamic loss scaling:
//! the loss is multiplied by a large factor before the backward pass so that small gradients do
//! not underflow in low precision (`f16`, `bf16`), the gradients are divided by it before the
//! optimizer's step, and steps whose gradients overflowed are skipped while the factor adapts.
//! `autocast` (running ops in a lower precision automatically) is not here yet.
//!
//! # Examples
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

mod grad_scaler;
mod unscale;

pub use grad_scaler::{GradScaler, GradScalerOptions};
