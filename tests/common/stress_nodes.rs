//! Nodes the leak and soak tests build their graphs from: a checkpoint (a node whose backward
//! recomputes a segment and runs a nested, reentrant backward through it), a node whose backward
//! returns an error, a hook that panics, and a panic hook that keeps those injected panics quiet.
#![allow(
    dead_code,
    reason = "each test binary uses the part of this module it needs"
)]

use std::sync::{Arc, Once};

use autograd::graph::GradVec;
use autograd::{BackwardOptions, Error, Result, Tensor, enable_grad, is_grad_enabled, no_grad};

use crate::common::custom;

/// Part of every injected panic's message: the panic hook installed by
/// [`quiet_injected_panics`] does not print those.
pub(crate) const INJECTED_PANIC: &str = "injected panic";

/// A differentiable function of one tensor that a checkpoint recomputes during backward.
pub(crate) type Segment = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// `segment(x)` as reentrant checkpointing computes it (`torch.utils.checkpoint`, reentrant
/// variant): the forward runs without recording; the node's backward recomputes the segment from
/// a detached copy of `x` with grad mode on and runs a nested `backward()` through it, which
/// accumulates into any leaves the segment closes over and leaves `x`'s gradient in the copy.
///
/// Without grad mode, or when `x` does not require grad, this is just `segment(x)`.
pub(crate) fn checkpoint(x: &Tensor, segment: Segment) -> Result<Tensor> {
    if !is_grad_enabled() || !x.requires_grad() {
        return segment(x);
    }
    let out = {
        let _g = no_grad();
        segment(x)?
    };
    let saved = x.detach();
    Ok(custom(&[x], out, move |grads: GradVec| {
        let x = saved.detach().requires_grad_(true)?;
        let recomputed = {
            let _g = enable_grad();
            segment(&x)?
        };
        autograd::backward(&[recomputed], &[grads[0].clone()], BackwardOptions::new())?;
        Ok(GradVec::from_iter([x.grad()]))
    }))
}

/// `y = x` through a node whose backward returns `Error::msg(message)` (a plain copy when grad
/// mode is off or `x` does not require grad).
pub(crate) fn failing(x: &Tensor, message: String) -> Result<Tensor> {
    let out = {
        let _g = no_grad();
        x.copy()?
    };
    if !is_grad_enabled() || !x.requires_grad() {
        return Ok(out);
    }
    Ok(custom(&[x], out, move |_| Err(Error::msg(message.clone()))))
}

/// `y = x` through a node whose backward panics with a message containing [`INJECTED_PANIC`]
/// and `tag`.
pub(crate) fn panicking(x: &Tensor, tag: String) -> Result<Tensor> {
    let out = {
        let _g = no_grad();
        x.copy()?
    };
    Ok(custom(&[x], out, move |_| panic!("{INJECTED_PANIC} {tag}")))
}

/// Registers on `t` a hook that panics with a message containing [`INJECTED_PANIC`] and `tag`.
pub(crate) fn panic_in_hook(t: &Tensor, tag: String) -> Result<()> {
    let _handle = t.register_hook(move |_| panic!("{INJECTED_PANIC} {tag}"))?;
    Ok(())
}

/// Wraps the current panic hook so that panics whose message contains [`INJECTED_PANIC`] print
/// nothing (thousands of them would bury a real failure); every other panic prints as before.
pub(crate) fn quiet_injected_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !message.contains(INJECTED_PANIC) {
                previous(info);
            }
        }));
    });
}
