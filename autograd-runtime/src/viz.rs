//! Renders the backward graph behind a tensor as Graphviz DOT (what torchviz's `make_dot` draws).
//!
//! The walk is iterative — an explicit work list and a visited map keyed by node identity — so a
//! graph of any depth renders in constant stack space, and a node reached along several paths is
//! drawn once.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::graph::{InputMetadata, NodeRef};
use crate::{Device, Tensor};

/// Graphviz DOT of the backward graph reachable from `tensor`'s `grad_fn` (torchviz's
/// `make_dot(tensor, show_saved=True)`).
///
/// What is drawn:
/// * `tensor` itself (green), with its shape and dtype, fed by its `grad_fn`;
/// * every node of the graph (grey boxes), named as PyTorch names them (`MulBackward0`, ...);
/// * `AccumulateGrad` sinks (blue), labelled with the shape and dtype of the leaf they fill;
/// * the tensors each node saved for its backward (orange), by the name the backward gives them,
///   with shape and dtype, linked to their node by a dotted edge (a saved tensor freed by a
///   backward pass without `retain_graph` shows as `released`);
/// * an edge from each node to the node that consumes its output gradient — leaves at the top,
///   `tensor` at the bottom, as in torchviz — labelled with the output number when the node it
///   comes from belongs to an op with several outputs.
///
/// A device other than the CPU is appended to shapes (`[3, 2] f32 virtual:0`). Node ids (`n0`,
/// `n1`, ...) follow the walk order, so the same graph always renders to the same text. A tensor
/// without a `grad_fn` (a leaf, or one that does not require grad) renders as a single node.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{viz, DType, Tensor};
/// let w = Tensor::randn_seeded(&[3, 2], DType::F32, 0)?.requires_grad_(true)?;
/// let x = Tensor::ones(&[4, 3], DType::F32)?;
/// let loss = x.matmul(&w)?.tanh()?.sum()?;
/// let dot = viz::to_dot(&loss);
/// assert!(dot.starts_with("digraph"));
/// for name in ["SumBackward0", "TanhBackward0", "MmBackward0", "AccumulateGrad"] {
///     assert!(dot.contains(name), "{name} missing from\n{dot}");
/// }
/// assert!(dot.contains("[3, 2] f32")); // the leaf `w`
/// // Write it out and render with `dot -Tsvg graph.dot -o graph.svg`.
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn to_dot(tensor: &Tensor) -> String {
    let mut out = String::new();
    out.push_str(concat!(
        "digraph backward {\n",
        "  graph [rankdir=TB, fontname=\"Helvetica\"];\n",
        "  node [shape=box, style=\"rounded,filled\", fillcolor=lightgrey, fontname=\"Helvetica\", fontsize=11, height=0.2];\n",
        "  edge [fontname=\"Helvetica\", fontsize=9];\n",
    ));
    let root_label = format!("tensor\n{}", describe(&InputMetadata::of(tensor)));
    let _ = writeln!(
        out,
        "  out [label=\"{}\", fillcolor=darkolivegreen1];",
        escape(&root_label)
    );
    if let Some(grad_fn) = tensor.grad_fn() {
        let mut walk = Walk::default();
        let root = walk.id_of(&grad_fn);
        edge(&mut out, root, "out", &grad_fn, tensor.output_nr());
        while let Some((id, node)) = walk.pending.pop() {
            draw_node(&mut out, id, &node);
            for next in node.meta().next_edges().iter().flatten() {
                let next_id = walk.id_of(&next.node);
                edge(
                    &mut out,
                    next_id,
                    &format!("n{id}"),
                    &next.node,
                    next.input_nr,
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

/// The nodes seen so far, by identity, and those still to draw.
#[derive(Default)]
struct Walk {
    /// Node address → its id in the output. Addresses are stable: every node stays alive while
    /// the tensor the walk started from is borrowed.
    ids: HashMap<usize, usize>,
    /// Nodes with an id whose box and edges are not written yet.
    pending: Vec<(usize, NodeRef)>,
}

impl Walk {
    /// The node's id, queueing it for drawing the first time it is seen.
    fn id_of(&mut self, node: &NodeRef) -> usize {
        let next = self.ids.len();
        *self.ids.entry(node.addr()).or_insert_with(|| {
            self.pending.push((next, node.clone()));
            next
        })
    }
}

/// The box of node `id` and those of the tensors it saved.
fn draw_node(out: &mut String, id: usize, node: &NodeRef) {
    match node.accumulates_into() {
        Some(leaf) => {
            let label = format!("{}\n{}", node.name(), describe(&InputMetadata::of(leaf)));
            let _ = writeln!(
                out,
                "  n{id} [label=\"{}\", fillcolor=lightblue];",
                escape(&label)
            );
        }
        None => {
            let _ = writeln!(out, "  n{id} [label=\"{}\"];", escape(node.name()));
        }
    }
    let mut k = 0;
    node.visit_saved_tensors(&mut |name, saved| {
        let what = saved
            .metadata()
            .map_or_else(|| saved.state_name().to_string(), |md| describe(&md));
        let label = format!("{name}\n{what}");
        let _ = writeln!(
            out,
            "  n{id}_s{k} [label=\"{}\", fillcolor=orange];\n  n{id}_s{k} -> n{id} [style=dotted, arrowhead=none];",
            escape(&label)
        );
        k += 1;
    });
}

/// An edge carrying the gradient of `from`'s output `input_nr` to `to`; labelled when `from`
/// has several outputs.
fn edge(out: &mut String, from: usize, to: &str, from_node: &NodeRef, input_nr: usize) {
    if from_node.meta().num_inputs() > 1 {
        let _ = writeln!(out, "  n{from} -> {to} [label=\"{input_nr}\"];");
    } else {
        let _ = writeln!(out, "  n{from} -> {to};");
    }
}

/// `[3, 2] f32`, plus the device when it is not the CPU.
fn describe(md: &InputMetadata) -> String {
    let mut s = format!("{:?} {}", md.shape(), md.dtype());
    if md.device() != Device::Cpu {
        let _ = write!(s, " {}", md.device());
    }
    s
}

/// Escapes a label for a double-quoted DOT string (`\n` stays a line break).
fn escape(label: &str) -> String {
    let mut s = String::with_capacity(label.len());
    for c in label.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn escapes_quotes_backslashes_and_newlines() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn leaf_renders_as_one_node() -> crate::Result<()> {
        let x = Tensor::zeros(&[2], DType::F64)?.requires_grad_(true)?;
        let dot = to_dot(&x);
        assert!(dot.contains("out [label=\"tensor\\n[2] f64\""), "{dot}");
        assert!(!dot.contains("->"), "{dot}");
        Ok(())
    }

    #[test]
    fn shared_node_is_drawn_once() -> crate::Result<()> {
        let x = Tensor::scalar(1.0f32).requires_grad_(true)?;
        let h = x.exp()?;
        let y = h.add(&h)?; // both edges of AddBackward0 go to the same ExpBackward0
        let dot = to_dot(&y);
        assert_eq!(dot.matches("[label=\"ExpBackward0\"]").count(), 1, "{dot}");
        assert_eq!(dot.matches("[label=\"AccumulateGrad").count(), 1, "{dot}");
        // AddBackward0 is n0, ExpBackward0 n1: two edges n1 -> n0.
        assert_eq!(dot.matches("n1 -> n0;").count(), 2, "{dot}");
        Ok(())
    }

    #[test]
    fn multi_output_edges_carry_the_output_number() -> crate::Result<()> {
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
        let parts = x.chunk(2, 0)?;
        let y = parts[1].mul(&parts[0])?;
        let dot = to_dot(&y);
        assert!(dot.contains("-> n0 [label=\"1\"]"), "{dot}");
        assert!(dot.contains("-> n0 [label=\"0\"]"), "{dot}");
        Ok(())
    }

    #[test]
    fn saved_tensors_show_shape_dtype_and_release() -> crate::Result<()> {
        let x = Tensor::zeros(&[2, 3], DType::F32)?.requires_grad_(true)?;
        let y = x.exp()?.sum()?;
        let before = to_dot(&y);
        assert!(
            before.contains("result\\n[2, 3] f32\", fillcolor=orange"),
            "{before}"
        );
        y.backward()?;
        let after = to_dot(&y);
        assert!(after.contains("result\\nreleased\""), "{after}");
        Ok(())
    }
}
