//! The locks of a fused optimizer step: many tensors updated in one pass, each storage locked
//! once in address order, and the backend's `fused_step` run on the buffers.

use super::super::Tensor;
use super::super::storage::Storage;
use super::Kernels;
use crate::backend::{Buffer, StepSet, Update};
use crate::sync::Arc;
use crate::{Error, Result};

/// A written tensor's buffer (write-locked) and its tensor's element offset in it.
type WriteBuf<'a> = (&'a mut Buffer, usize);
/// A read tensor's buffer (read-locked) and its tensor's element offset in it.
type ReadBuf<'a> = (&'a Buffer, usize);

/// The lock core of [`Kernels::fused_step`]: checks that every tensor is contiguous, of one
/// dtype and `placed` (the caller's device rule, `requirement` naming it in the error), and that the storages of `writes` are distinct from each other and from those
/// of `reads` (reads may share theirs); locks each storage once, in storage-address order as
/// everywhere in this module; runs `f` on the buffers in the order given; and bumps the version
/// of every tensor in `writes` if `f` succeeded, as an in-place op does.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when a check fails (nothing is run then); `f`'s error.
fn with_locked_buffers<R>(
    writes: &[&Tensor],
    reads: &[&Tensor],
    placed: impl Fn(&Tensor) -> bool,
    requirement: &str,
    f: impl FnOnce(Vec<WriteBuf<'_>>, Vec<ReadBuf<'_>>) -> Result<R>,
) -> Result<R> {
    let refuse = |why: &str| {
        Err(Error::InvalidArgument(format!(
            "fused optimizer step: {why}"
        )))
    };
    let Some(dtype) = writes.first().or(reads.first()).map(|t| t.dtype()) else {
        return refuse("no tensors");
    };
    if !writes
        .iter()
        .chain(reads)
        .all(|t| placed(t) && t.is_contiguous() && t.dtype() == dtype)
    {
        return refuse(requirement);
    }
    for w in writes {
        w.0.storage.check_writable()?;
    }
    for (i, w) in writes.iter().enumerate() {
        if writes[i + 1..]
            .iter()
            .chain(reads)
            .any(|t| w.shares_storage(t))
        {
            return refuse("a written tensor shares its storage");
        }
    }
    // Distinct storages in address order, each locked once.
    let mut order: Vec<(&Arc<Storage>, bool)> = writes
        .iter()
        .map(|t| (&t.0.storage, true))
        .chain(reads.iter().map(|t| (&t.0.storage, false)))
        .collect();
    order.sort_by_key(|(s, _)| Arc::as_ptr(s));
    order.dedup_by(|a, b| Arc::ptr_eq(a.0, b.0));
    enum Guard<'g> {
        Write(crate::sync::RwLockWriteGuard<'g, Buffer>),
        Read(crate::sync::RwLockReadGuard<'g, Buffer>),
    }
    let mut guards: Vec<(&Arc<Storage>, Guard<'_>)> = order
        .iter()
        .map(|&(s, written)| {
            let g = if written {
                Guard::Write(s.data.write())
            } else {
                Guard::Read(s.data.read())
            };
            (s, g)
        })
        .collect();
    // Written storages are distinct, so each mutable borrow is unique.
    let mut write_bufs: Vec<Option<WriteBuf<'_>>> = (0..writes.len()).map(|_| None).collect();
    let mut read_bufs: Vec<(&Arc<Storage>, &Buffer)> = Vec::new();
    for (s, g) in guards.iter_mut() {
        match g {
            Guard::Write(g) => {
                let i = writes
                    .iter()
                    .position(|t| Arc::ptr_eq(&t.0.storage, s))
                    .expect("invariant: a written storage belongs to a written tensor");
                write_bufs[i] = Some((&mut **g, writes[i].layout().offset));
            }
            Guard::Read(g) => read_bufs.push((*s, &**g)),
        }
    }
    let w = write_bufs
        .into_iter()
        .map(|b| b.expect("invariant: every written storage was locked"))
        .collect();
    let r = reads
        .iter()
        .map(|t| {
            let b = read_bufs
                .iter()
                .find(|(s, _)| Arc::ptr_eq(s, &t.0.storage))
                .map(|(_, b)| *b)
                .expect("invariant: every read storage was locked");
            (b, t.layout().offset)
        })
        .collect();
    let out = f(w, r)?;
    drop(guards);
    for t in writes {
        t.0.storage.bump_version();
    }
    Ok(out)
}

/// One parameter's tensors for a fused optimizer step ([`Kernels::fused_step`]).
#[derive(Debug)]
pub(crate) struct StepTensors<'a> {
    /// The parameter, updated in place.
    pub(crate) param: &'a Tensor,
    /// Its gradient.
    pub(crate) grad: Tensor,
    /// Its state tensors, in the order `update` names.
    pub(crate) state: Vec<&'a Tensor>,
    /// This step's coefficients.
    pub(crate) update: Update,
}

impl Kernels {
    /// See [`Backend::fused_step`]: one step over `sets` (one group, all on this backend's
    /// device), every parameter and state tensor locked for writing and every gradient for
    /// reading, each storage once and in address order, and each written tensor's version
    /// bumped, as an in-place op does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when a tensor is not contiguous, the dtypes or devices differ,
    /// or a written tensor shares a storage (nothing is run then); the backend's error.
    pub(crate) fn fused_step(self, sets: &[StepTensors<'_>]) -> Result<()> {
        let Some(device) = sets.first().map(|s| s.param.device()) else {
            return Ok(());
        };
        let mut writes: Vec<&Tensor> = Vec::new();
        let mut reads: Vec<&Tensor> = Vec::with_capacity(sets.len());
        for s in sets {
            writes.push(s.param);
            writes.extend(s.state.iter().copied());
            reads.push(&s.grad);
        }
        with_locked_buffers(
            &writes,
            &reads,
            |t| {
                if device.is_host() {
                    t.device().is_host()
                } else {
                    t.device() == device
                }
            },
            "every tensor must be a contiguous tensor of one dtype on the host or on one device",
            |w, r| {
                let mut w = w.into_iter();
                let mut steps = Vec::with_capacity(sets.len());
                for (s, grad) in sets.iter().zip(r) {
                    let mut next = || w.next().expect("invariant: one buffer per written tensor");
                    let param = next();
                    let state = (0..s.state.len()).map(|_| next()).collect();
                    steps.push(StepSet {
                        param,
                        grad,
                        state,
                        numel: s.param.numel(),
                        update: s.update,
                    });
                }
                self.0.fused_step(steps)
            },
        )
    }
}
