//! `compute_dependencies`: one iterative walk of the graph from the root that gives every
//! reachable node a dense index and counts, per node, how many edges point at it (B03), skipping
//! the expansion of nodes below `min_topo_nr` (B09).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::NodeRef;

/// Sentinel for an output whose edge is absent.
pub(crate) const NO_TARGET: u32 = u32::MAX;

/// The reachable graph of one backward pass with dense node indices, so that the hot loop uses
/// vectors instead of hash maps. Index 0 is the root.
#[derive(Debug, Default)]
pub(crate) struct GraphPlan {
    /// Node handles by index (keeps every node alive for the pass).
    pub(crate) nodes: Vec<NodeRef>,
    /// `edge_start[i]..edge_start[i + 1]` indexes `edge_target` for node `i`'s next edges.
    pub(crate) edge_start: Vec<u32>,
    /// Dense index of each next edge's node, or [`NO_TARGET`] (no edge, or node not expanded).
    pub(crate) edge_target: Vec<u32>,
    /// Number of edges pointing at each node.
    pub(crate) dependencies: Vec<u32>,
    /// Node address to index, for looking up `grad()` inputs.
    pub(crate) index: HashMap<usize, u32, BuildHasherDefault<AddrHasher>>,
}

impl GraphPlan {
    #[inline]
    pub(crate) fn target(&self, node: u32, output: usize) -> u32 {
        self.edge_target[self.edge_start[node as usize] as usize + output]
    }

    pub(crate) fn index_of(&self, node: &NodeRef) -> Option<u32> {
        self.index.get(&node.addr()).copied()
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
}

/// Walks the graph from `root` without recursion (a million-node chain must not overflow).
pub(crate) fn compute_dependencies(root: &NodeRef, min_topo_nr: u64) -> GraphPlan {
    let mut plan = GraphPlan::default();
    plan.index.insert(root.addr(), 0);
    plan.nodes.push(root.clone());
    plan.dependencies.push(0);
    // Nodes are expanded in index order, so the "stack" is just a cursor over `plan.nodes`.
    let mut cursor = 0;
    while cursor < plan.nodes.len() {
        let node = plan.nodes[cursor].clone();
        plan.edge_start.push(plan.edge_target.len() as u32);
        let expand = node.meta().topological_nr() >= min_topo_nr;
        for edge in node.meta().next_edges() {
            let Some(edge) = edge else {
                plan.edge_target.push(NO_TARGET);
                continue;
            };
            if !expand {
                plan.edge_target.push(NO_TARGET);
                continue;
            }
            let next_index = plan.nodes.len() as u32;
            let idx = *plan.index.entry(edge.node.addr()).or_insert(next_index);
            if idx == next_index {
                plan.nodes.push(edge.node.clone());
                plan.dependencies.push(0);
            }
            plan.dependencies[idx as usize] += 1;
            plan.edge_target.push(idx);
        }
        cursor += 1;
    }
    plan.edge_start.push(plan.edge_target.len() as u32);
    plan
}

/// A hasher for node addresses: they are unique and 8/16-byte aligned, so a multiply spreads them.
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
