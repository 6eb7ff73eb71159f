//! `init_to_execute`: for `grad()` and `backward(inputs=..)`, decide which nodes must run and where
//! the requested gradients are captured (B10, B11).

use super::dependencies::{GraphPlan, NO_TARGET};

/// A gradient to copy out when node `input_nr`'s slot is reached: `grad()`'s result `output_idx`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Capture {
    pub(crate) input_nr: usize,
    pub(crate) output_idx: usize,
}

/// Per-node execution decision (PyTorch's `ExecInfo`).
#[derive(Clone, Debug, Default)]
pub(crate) struct ExecInfo {
    /// Runs because some requested input is reachable through it.
    pub(crate) needed: bool,
    /// Gradients to capture at this node (for `grad()`), before it would run.
    pub(crate) captures: Vec<Capture>,
}

impl ExecInfo {
    pub(crate) fn should_execute(&self) -> bool {
        self.needed || !self.captures.is_empty()
    }
}

/// What a requested input contributes: its node index (if reachable) and either a capture
/// (`grad()`) or a request to run the node (`backward(inputs=..)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Requested {
    pub(crate) node: u32,
    pub(crate) input_nr: usize,
    pub(crate) output_idx: usize,
}

/// Marks requested nodes, then propagates `needed` from children to parents in post-order, so a
/// node runs iff a path leads from it to a requested node. Iterative.
pub(crate) fn init_to_execute(
    plan: &GraphPlan,
    requested: &[Requested],
    accumulate_grad: bool,
) -> Vec<ExecInfo> {
    let n = plan.len();
    let mut info = vec![ExecInfo::default(); n];
    for r in requested {
        let i = &mut info[r.node as usize];
        if accumulate_grad {
            i.needed = true;
        } else {
            i.captures.push(Capture {
                input_nr: r.input_nr,
                output_idx: r.output_idx,
            });
        }
    }
    // Post-order DFS from the root over dense indices.
    let mut visited = vec![false; n];
    let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
    visited[0] = true;
    while let Some(&mut (node, ref mut next_child)) = stack.last_mut() {
        let edges = plan.edges(node);
        if let Some(&child) = edges.get(*next_child) {
            *next_child += 1;
            if child != NO_TARGET && !visited[child as usize] {
                visited[child as usize] = true;
                stack.push((child, 0));
            }
            continue;
        }
        stack.pop();
        let any_child = edges
            .iter()
            .any(|&c| c != NO_TARGET && info[c as usize].should_execute());
        if any_child {
            info[node as usize].needed = true;
        }
    }
    info
}
