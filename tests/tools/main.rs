//! The inspection tools: the autograd profiler and the graph's DOT view.

mod profiler;
mod viz;
