//! `--ddp`: joining an MPI job for data-parallel training (cargo feature `mpi`). Without the
//! feature there is no `--ddp` flag and [`join`] always returns `None`.

use autograd::distributed::ProcessGroup;

use crate::RunError;
use crate::cli::Args;

/// The process group `--ddp` trains over.
#[cfg(feature = "mpi")]
pub(crate) type Group = autograd::distributed::MpiGroup;
/// Never constructed without the `mpi` feature; names the type `join` returns.
#[cfg(not(feature = "mpi"))]
pub(crate) type Group = autograd::distributed::LocalGroup;

/// With `--ddp`, initialises MPI and returns this process's group.
#[cfg(feature = "mpi")]
pub(crate) fn join(args: &Args) -> Result<Option<Group>, RunError> {
    if !args.ddp {
        return Ok(None);
    }
    Ok(Some(Group::init()?))
}

/// Always `None`: `--ddp` needs the `mpi` feature.
#[cfg(not(feature = "mpi"))]
pub(crate) fn join(_args: &Args) -> Result<Option<Group>, RunError> {
    Ok(None)
}

/// This process's rank in `group`.
pub(crate) fn rank(group: &Group) -> usize {
    group.rank()
}
