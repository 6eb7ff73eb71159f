//! `tracing` spans for backward passes and nodes (cargo feature `tracing`), and the same API as
//! empty inline stubs without the feature, so the engine has no `#[cfg]` at its call sites.
//!
//! With the feature, each backward pass opens a `DEBUG` span `backward` (fields `graph_task_id`,
//! `reentrant_depth`) and each node it executes a `TRACE` span `node` (fields `name`,
//! `sequence_nr`, `thread`) whose parent is its pass's span, on whichever thread the node runs.
//! Field values are only computed when a subscriber is interested in the span.

#[cfg(feature = "tracing")]
mod imp {
    use crate::graph::Node;

    /// The span of one backward pass; kept by its `GraphTask`.
    #[derive(Debug)]
    pub(crate) struct PassSpan(tracing::Span);

    impl PassSpan {
        pub(crate) fn new(graph_task_id: u64, reentrant_depth: usize) -> PassSpan {
            PassSpan(tracing::debug_span!(
                "backward",
                graph_task_id,
                reentrant_depth = reentrant_depth as u64
            ))
        }

        /// Enters the pass's span on this thread until the guard drops (the owner thread, while
        /// it waits for the pass).
        pub(crate) fn enter(&self) -> tracing::span::Entered<'_> {
            self.0.enter()
        }
    }

    /// Enters a span for `node` of the pass `pass` until the guard drops.
    #[inline]
    pub(crate) fn node_span(pass: &PassSpan, node: &dyn Node) -> tracing::span::EnteredSpan {
        tracing::trace_span!(
            parent: &pass.0,
            "node",
            name = node.name(),
            sequence_nr = node.meta().sequence_nr(),
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
        )
        .entered()
    }
}

#[cfg(not(feature = "tracing"))]
mod imp {
    use crate::graph::Node;

    /// Nothing without the `tracing` feature.
    #[derive(Debug)]
    pub(crate) struct PassSpan;

    /// The guard of an entered span: nothing without the `tracing` feature.
    pub(crate) struct Entered;

    impl PassSpan {
        #[inline(always)]
        pub(crate) fn new(_graph_task_id: u64, _reentrant_depth: usize) -> PassSpan {
            PassSpan
        }

        #[inline(always)]
        pub(crate) fn enter(&self) -> Entered {
            Entered
        }
    }

    #[inline(always)]
    pub(crate) fn node_span(_pass: &PassSpan, _node: &dyn Node) -> Entered {
        Entered
    }
}

pub(crate) use imp::{PassSpan, node_span};
