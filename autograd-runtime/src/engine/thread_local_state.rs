//! `ThreadLocalState`: the caller's thread-local state that a backward pass carries to every
//! thread running its nodes (PyTorch's `at::ThreadLocalState`, kept in `GraphTask::thread_locals_`
//! and set by a `ThreadLocalStateGuard` around each task, B30).
//!
//! What travels, and how each part reaches the thread that runs a node:
//!
//! | state | captured | on the node's thread |
//! | --- | --- | --- |
//! | autograd modes (`grad_mode.rs`) | the caller's inference mode, multithreading setting and autocast flags and dtypes (`amp/autocast/`); grad mode not the caller's but the pass's `create_graph` (B30) | set before every node and final callback (one `u16`) |
//! | saved-tensor hooks stack (B38) | the caller's whole stack, one reference count | installed before every node and final callback when the thread's stack is another one (an address comparison) |
//! | profiler sessions (`profiler.rs`) | the caller's open sessions plus those of the pass whose node starts this one | read from the graph task by the engine, which is their only reader: nothing to install |
//!
//! Anomaly mode is not here: it is process-wide, as PyTorch's (`anomaly.rs`), so every thread
//! already sees the caller's.
//!
//! The thread's own state is saved when a thread starts running nodes of a pass (a task it popped,
//! and the continuations it runs after it) and restored when it stops; before each node, the
//! pass's state is made current again, so a node starts with exactly that state whatever the node
//! before it did, as with PyTorch's guard around each task.
//!
//! *Cost.* Per node: one thread-local store (the modes), one thread-local load and one comparison
//! of two addresses (the hooks stack) — no more than the grad-mode guard per node it replaces. A
//! pass that runs on the thread that started it finds that thread's hooks stack already in place;
//! swapping stacks is out of line. A reentrant pass captures the state of the thread
//! that starts it — inside a node, the state installed for that node's pass — so nested passes
//! inherit it on whatever thread they run.

use crate::grad_mode::{self, AutogradState};
use crate::graph::saved_hooks::{self, HookStack, RestoreStack};
use crate::profiler::Sessions;

/// The thread-local state one graph task runs its nodes with.
pub(crate) struct ThreadLocalState {
    /// The modes the pass's nodes and final callbacks run with (PyTorch's `autograd_tls_`): the
    /// caller's, with grad mode set to the pass's `create_graph`. Its multithreading flag also
    /// decides where the pass queues device nodes (B28).
    pub(crate) modes: AutogradState,
    /// The saved-tensor hooks stack of the thread that started the pass.
    saved_hooks: HookStack,
    /// Its [`address`](saved_hooks::address), compared with the thread's before each node.
    saved_hooks_addr: usize,
    /// The profiler sessions this pass records into (`profiler.rs`, step 2), `None` when not
    /// profiling. Read by the engine where it calls a node's `apply`.
    pub(crate) profiler: Option<Sessions>,
}

impl ThreadLocalState {
    /// The state of the calling thread, for a pass with this `create_graph`; `parent_profiler`
    /// is the profiler state of the graph task running the node that starts this pass, if any.
    pub(crate) fn capture(create_graph: bool, parent_profiler: Option<&Sessions>) -> Self {
        let saved_hooks = saved_hooks::current_stack();
        ThreadLocalState {
            modes: grad_mode::state().with_grad(create_graph),
            saved_hooks_addr: saved_hooks::address(&saved_hooks),
            saved_hooks,
            profiler: Sessions::capture(parent_profiler),
        }
    }

    /// Makes this the state of the current thread until the guard drops, swapping in only what
    /// differs (PyTorch's `ThreadLocalStateGuard`). Entered once per run of a graph task's nodes
    /// on a thread (a task popped from a queue and the continuations run after it, `worker.rs`);
    /// [`ThreadLocalStateGuard::reinstate`] before each node of the run.
    #[inline(always)]
    pub(crate) fn enter(&self) -> ThreadLocalStateGuard<'_> {
        ThreadLocalStateGuard {
            state: self,
            previous_modes: grad_mode::replace_state(self.modes),
            previous_hooks: saved_hooks::install(&self.saved_hooks, self.saved_hooks_addr),
        }
    }
}

/// Keeps a graph task's [`ThreadLocalState`] installed on this thread; restores the thread's own
/// state when dropped.
pub(crate) struct ThreadLocalStateGuard<'a> {
    state: &'a ThreadLocalState,
    /// The thread's modes before `enter`.
    previous_modes: AutogradState,
    /// The thread's hooks stack before `enter`, when it was not the pass's (`None`: it was).
    previous_hooks: Option<RestoreStack>,
}

impl ThreadLocalStateGuard<'_> {
    /// Makes sure the next node starts with exactly the pass's state, whatever the node before it
    /// left behind (a guard it leaked, say): sets the modes, and swaps the hooks stack back in if
    /// it is not the pass's. So every node runs with the state PyTorch gives it, at the cost of
    /// one store, one load and one comparison per node; restoring the thread's own state is left
    /// to the end of the run.
    #[inline(always)]
    pub(crate) fn reinstate(&self) {
        grad_mode::set_state(self.state.modes);
        saved_hooks::ensure(&self.state.saved_hooks, self.state.saved_hooks_addr);
    }
}

impl Drop for ThreadLocalStateGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        grad_mode::set_state(self.previous_modes);
        match self.previous_hooks.take() {
            Some(previous) => previous.restore(),
            // The thread's own stack was the pass's: put it back only if a node changed it.
            None => saved_hooks::ensure(&self.state.saved_hooks, self.state.saved_hooks_addr),
        }
    }
}

impl std::fmt::Debug for ThreadLocalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadLocalState")
            .field("modes", &self.modes)
            .field("saved_hooks", &self.saved_hooks.is_some())
            .field("profiler", &self.profiler.is_some())
            .finish()
    }
}
