//! `compute_dependencies`: one iterative walk of the graph from the root that gives every
//! reachable node a dense index and counts, per node, how many edges point at it (B03), skipping
//! the expansion of nodes below `min_topo_nr` (B09).
//!
//! # Finding a node's index during the walk
//!
//! The walk must recognise nodes it has already seen. A hash map from node address to index
//! costs a cache miss per edge on large graphs, so the walk that holds [`WALK_SLOTS`] stores the
//! index in the node itself (a `WalkSlot` in every `NodeMeta`, tagged with the walk's epoch;
//! defined in `graph/node.rs` beside the node). Only one walk at a time may use the slots; a walk
//! that finds them taken (another thread is walking concurrently) falls back to a hash map. The slots are only read during the walk: afterwards the
//! plan's dense arrays are used, so a later walk may overwrite them freely.

use crate::sync::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::sync::atomic::{AtomicBool, AtomicU64};
use std::ptr::NonNull;

use crate::graph::NodeMeta;
use crate::{Node, NodeRef};

/// Sentinel for an output whose edge is absent.
pub(crate) const NO_TARGET: u32 = u32::MAX;

/// Held by the one walk that may use the per-node index slots.
static WALK_SLOTS: AtomicBool = AtomicBool::new(false);
/// Epoch of the latest slot-using walk (0 is never used, so fresh nodes never match).
static WALK_EPOCH: AtomicU64 = AtomicU64::new(0);

/// One node of a [`GraphPlan`]: what the engine reads of it for every node it runs, in one
/// entry (the walk pushes one entry per node, not one to each of several vectors).
#[derive(Debug)]
struct PlanNode {
    /// The node, borrowed from the graph the plan's root owns (no reference count traffic).
    node: NonNull<dyn Node>,
    /// Its `meta()`, read once by the walk: the engine reads a node's metadata and its
    /// children's for every node it runs, and each `meta()` is a virtual call.
    meta: NonNull<NodeMeta>,
    /// Where its next edges start in `GraphPlan::edge_target` (they end where the next node's
    /// start, or at the end for the last node).
    edge_start: u32,
    /// Number of edges pointing at it (the graph task counts down a copy; this stays as the walk
    /// made it).
    dependencies: u32,
}

/// The reachable graph of one backward pass with dense node indices, so that the hot loop uses
/// vectors instead of hash maps. Index 0 is the root.
#[derive(Debug)]
pub(crate) struct GraphPlan {
    /// Keeps every node of the plan alive: all of them are reachable from the root through
    /// `next_edges`, which never change after a node is created.
    _root: NodeRef,
    /// The nodes by index.
    nodes: Vec<PlanNode>,
    /// Dense index of each next edge's node, or [`NO_TARGET`] (no edge, or node not expanded);
    /// node `i`'s edges are [`GraphPlan::edges`]`(i)`.
    edge_target: Vec<u32>,
}

// SAFETY: the pointers refer to `Node`s (which are `Send + Sync`) and to their `NodeMeta`s (part
// of those nodes) owned by the graph that `root` keeps alive; the plan hands out only shared
// references.
unsafe impl Send for GraphPlan {}
// SAFETY: as above; `&GraphPlan` only yields `&dyn Node` and `&NodeMeta`.
unsafe impl Sync for GraphPlan {}

impl GraphPlan {
    /// The node with dense index `i`.
    #[inline]
    pub(crate) fn node(&self, i: u32) -> &dyn Node {
        // SAFETY: every pointer was taken from a `NodeRef` reachable from `self._root` through
        // immutable `next_edges`, so the node lives at least as long as `self`.
        unsafe { self.nodes[i as usize].node.as_ref() }
    }

    /// The metadata of the node with dense index `i` (its `meta()`).
    #[inline]
    pub(crate) fn meta(&self, i: u32) -> &NodeMeta {
        // SAFETY: as in `node`: the metadata lives in a node the plan keeps alive.
        unsafe { self.nodes[i as usize].meta.as_ref() }
    }

    /// The metadata of node `i` and the number of edges pointing at it (as the walk counted
    /// them), read together: what the engine needs of a child it hands a gradient to.
    #[inline]
    pub(crate) fn child(&self, i: u32) -> (&NodeMeta, u32) {
        let entry = &self.nodes[i as usize];
        // SAFETY: as in `node`: the metadata lives in a node the plan keeps alive.
        (unsafe { entry.meta.as_ref() }, entry.dependencies)
    }

    /// Every node's [`GraphPlan::dependencies`], by index.
    pub(crate) fn dependency_counts(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.dependencies).collect()
    }

    /// The targets of node `i`'s next edges, in order (see `edge_target`).
    pub(crate) fn edges(&self, i: u32) -> &[u32] {
        let start = self.nodes[i as usize].edge_start as usize;
        let end = self
            .nodes
            .get(i as usize + 1)
            .map_or(self.edge_target.len(), |n| n.edge_start as usize);
        &self.edge_target[start..end]
    }

    /// The dense index of `node`, by a linear scan (for rare queries after the walk).
    pub(crate) fn position(&self, node: &NodeRef) -> Option<u32> {
        let addr = node.addr();
        self.nodes
            .iter()
            .position(|p| p.node.as_ptr() as *const () as usize == addr)
            .map(|i| i as u32)
    }

    #[inline]
    pub(crate) fn target(&self, node: u32, output: usize) -> u32 {
        self.edge_target[self.nodes[node as usize].edge_start as usize + output]
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
}

/// How the walk maps nodes to indices.
enum Index {
    Slots { epoch: u64 },
    Map(HashMap<usize, u32, BuildHasherDefault<AddrHasher>>),
}

impl Index {
    /// `node`'s index, if it has one; `meta` is `node.meta()` (read once by the caller: every
    /// `meta()` is a virtual call).
    #[inline]
    fn get(&self, node: &NodeRef, meta: &NodeMeta) -> Option<u32> {
        match self {
            Index::Slots { epoch } => meta.walk_slot.get(*epoch),
            Index::Map(m) => m.get(&node.addr()).copied(),
        }
    }

    #[inline]
    fn insert(&mut self, node: &NodeRef, meta: &NodeMeta, index: u32) {
        match self {
            Index::Slots { epoch } => meta.walk_slot.set(index, *epoch),
            Index::Map(m) => {
                m.insert(node.addr(), index);
            }
        }
    }
}

/// Walks the graph from `root` without recursion (a million-node chain must not overflow) and
/// returns the plan plus the index of each node in `lookups` (`None` if unreachable).
pub(crate) fn compute_dependencies(
    root: &NodeRef,
    min_topo_nr: u64,
    lookups: &[&NodeRef],
) -> (GraphPlan, Vec<Option<u32>>) {
    // Acquire: pairs with the Release store that ends the previous slot walk, so its slot writes
    // happen-before ours.
    let use_slots = WALK_SLOTS
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_ok();
    let mut index = if use_slots {
        // Relaxed: the epoch is only touched under WALK_SLOTS.
        Index::Slots {
            epoch: WALK_EPOCH.fetch_add(1, Ordering::Relaxed) + 1,
        }
    } else {
        Index::Map(HashMap::default())
    };
    let plan = walk(root, min_topo_nr, &mut index);
    let found = lookups.iter().map(|n| index.get(n, n.meta())).collect();
    if use_slots {
        // Release: publishes our slot writes to the next walk's Acquire.
        WALK_SLOTS.store(false, Ordering::Release);
    }
    (plan, found)
}

fn walk(root: &NodeRef, min_topo_nr: u64, index: &mut Index) -> GraphPlan {
    // The nodes of a longest path from the root are all reached down to the first one below
    // `min_topo_nr` (each one's topological number is one less than the one before): a lower
    // bound on the plan's size, so reserving it never over-allocates, and a chain grows (copies)
    // no vector.
    let topo = root.meta().topological_nr();
    let lower_bound =
        usize::try_from((topo.saturating_sub(min_topo_nr) + 2).min(topo.saturating_add(1)))
            .unwrap_or(usize::MAX);
    let mut plan = GraphPlan {
        _root: root.clone(),
        nodes: Vec::with_capacity(lower_bound),
        // Every node but the root is the target of an edge of an expanded node.
        edge_target: Vec::with_capacity(lower_bound - 1),
    };
    let root_meta = root.meta();
    plan.nodes.push(PlanNode {
        node: NonNull::from(&**root.arc()),
        meta: NonNull::from(root_meta),
        edge_start: 0,
        dependencies: 0,
    });
    index.insert(root, root_meta, 0);
    // Nodes are expanded in index order, so the "stack" is just a cursor over `plan.nodes`.
    let mut cursor = 0;
    while cursor < plan.nodes.len() {
        let entry = &mut plan.nodes[cursor];
        entry.edge_start = plan.edge_target.len() as u32;
        // SAFETY: as in `GraphPlan::node`: reachable from the root, which the plan holds.
        let meta = unsafe { entry.meta.as_ref() };
        let expand = meta.topological_nr() >= min_topo_nr;
        for edge in meta.next_edges() {
            let Some(edge) = edge.as_ref().filter(|_| expand) else {
                plan.edge_target.push(NO_TARGET);
                continue;
            };
            let child = edge.node.meta();
            let idx = match index.get(&edge.node, child) {
                Some(i) => {
                    plan.nodes[i as usize].dependencies += 1;
                    i
                }
                None => {
                    let i = plan.nodes.len() as u32;
                    index.insert(&edge.node, child, i);
                    // Found through this edge: one dependency so far.
                    plan.nodes.push(PlanNode {
                        node: NonNull::from(&**edge.node.arc()),
                        meta: NonNull::from(child),
                        edge_start: 0,
                        dependencies: 1,
                    });
                    i
                }
            };
            plan.edge_target.push(idx);
        }
        cursor += 1;
    }
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
