//! The inspection tools: tensor printing, the autograd profiler and the graph's DOT view.

mod printing;
mod profiler;
mod viz;
