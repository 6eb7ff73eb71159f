//! Spare tensors: the allocations of small tensors that died on this thread, reused for the next
//! small tensor built here (every gradient of a scalar graph is one), so that the engine's hot
//! path builds a gradient without touching the allocator.
//!
//! A tensor qualifies when nothing else can reach it: its last handle is dropping, no hook holds
//! it weakly, it is not a view, and its storage is its own with an inline buffer (at most two
//! elements). Its autograd state is dropped at once, as an ordinary drop would, so keeping the
//! allocation delays nothing observable.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use super::storage::Storage;
use super::{AutogradMeta, Layout, Tensor, TensorImpl};
use crate::backend::Buffer;
use crate::backend::ElemVec;
use crate::sync::Arc;
use crate::{Device, Element};

/// Spare tensors kept per thread, at most this many.
const MAX: usize = 32;

thread_local! {
    static SPARE: RefCell<Vec<Arc<TensorImpl>>> = const { RefCell::new(Vec::new()) };
}

/// The end of a tensor's last handle: keeps the allocation as a spare if it qualifies (see the
/// module docs); otherwise `arc` drops as usual. Out of line: `Tensor::drop` calls it only for
/// what looks like the last handle, after checking the count inline (as `get_mut` would, but
/// without taking and giving back the weak count).
#[inline(never)]
pub(super) fn retire(mut arc: Arc<TensorImpl>) {
    let Some(imp) = Arc::get_mut(&mut arc) else {
        return;
    };
    if imp.view.is_some() || !Storage::is_spare(&mut imp.storage) {
        return;
    }
    reset(imp.autograd.get_mut());
    let mut arc = Some(arc);
    // During thread teardown the list may be gone: the tensor is then just dropped.
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < MAX
            && let Some(arc) = arc.take()
        {
            // A `push`, inline (`extend` from the `Option` is a call per retired tensor).
            spare.push(arc);
        }
    });
}

/// `*meta = AutogradMeta::default()`, field by field (the destructuring names every field, so a
/// new one cannot be forgotten): the hooks, which almost no tensor has, are dropped out of line,
/// so the common case is a few tests and stores rather than a call into `AutogradMeta`'s drop
/// glue and its set-up.
#[inline]
fn reset(meta: &mut AutogradMeta) {
    let AutogradMeta {
        requires_grad,
        grad,
        grad_fn,
        output_nr,
        grad_accumulator,
        retains_grad,
        leaf_hooks,
        detached_in_place,
        forward_grad,
    } = meta;
    *requires_grad = false;
    *grad = None;
    *grad_fn = None;
    *output_nr = 0;
    *grad_accumulator = None;
    *retains_grad = false;
    if let Some(hooks) = leaf_hooks.take() {
        drop_leaf_hooks(hooks);
    }
    *detached_in_place = false;
    if forward_grad.is_some() {
        drop_forward_grad(forward_grad.take());
    }
}

#[inline(never)]
fn drop_forward_grad(grad: Option<Box<crate::forward_ad::ForwardGrad>>) {
    drop(grad);
}

#[inline(never)]
fn drop_leaf_hooks(hooks: Box<super::LeafHooks>) {
    drop(hooks);
}

/// A contiguous tensor of `shape` on `device` (a host device) holding `values[..len]`, where
/// `len` (at most two) is the element count of `shape`: [`reuse`], or a new tensor when this
/// thread has no spare, without building a `Buffer` first. A spare whose buffer holds `len`
/// elements of type `T` already gets the values written over its own, and one whose layout is
/// `shape`'s contiguous layout keeps it (the result of a scalar op on a scalar, every op of a
/// scalar graph, rebuilds neither).
#[inline(always)] // into the element map that computed `values`: one call less per scalar op
pub(super) fn small<T: Element>(
    values: [T; 2],
    len: usize,
    shape: &[usize],
    device: Device,
) -> Tensor {
    debug_assert!(len <= 2, "invariant: at most two elements inline");
    let Some(mut arc) = SPARE.try_with(|s| s.borrow_mut().pop()).ok().flatten() else {
        let data = Buffer::host(ElemVec::from_buf_and_len(values, len));
        return Tensor::new_owning(data, shape, device);
    };
    let imp = Arc::get_mut(&mut arc).expect("invariant: spare tensors are unique");
    imp.dtype = T::DTYPE;
    if !imp.layout.is_contiguous_layout_of(shape) {
        imp.layout = Layout::contiguous(shape);
    }
    Storage::refill_with(&mut imp.storage, &values[..len], device);
    Tensor(ManuallyDrop::new(arc))
}

/// A contiguous tensor of `shape` on `device` holding `data` (at most two elements, inline),
/// built in a spare allocation of this thread; `data` back when there is none.
#[inline]
pub(super) fn reuse(data: Buffer, shape: &[usize], device: Device) -> Result<Tensor, Buffer> {
    if data.len() > 2 {
        return Err(data);
    }
    let Some(mut arc) = SPARE.try_with(|s| s.borrow_mut().pop()).ok().flatten() else {
        return Err(data);
    };
    let imp = Arc::get_mut(&mut arc).expect("invariant: spare tensors are unique");
    imp.dtype = data.dtype();
    imp.layout = Layout::contiguous(shape);
    Storage::refill(&mut imp.storage, data, device);
    Ok(Tensor(ManuallyDrop::new(arc)))
}
