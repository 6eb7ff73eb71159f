//! Forward-mode AD (issue 37): `forward_ad`'s dual levels, `make_dual`/`unpack_dual` with
//! PyTorch 2.15's errors, tangents through the ops checked against reverse-mode Jacobians, view
//! and in-place tangents, and custom functions.

mod api;
mod custom;
mod in_place;
mod no_derivative;
mod ops;
mod rules_elementwise;
mod rules_norm;
mod rules_structural;

use std::sync::{Mutex, MutexGuard};

/// One dual level may be open at a time in the process (as in PyTorch): the tests that open
/// one take this lock.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
