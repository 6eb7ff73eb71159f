//! The generated description of a random program: plain data that proptest generates and
//! shrinks. Every combination of fields is meaningful: the planner (`plan.rs`) reads operand
//! picks modulo the values available and attributes modulo their range, so a shrunk program
//! (ops removed, numbers moved towards 0) still lowers to a valid program.

use proptest::prelude::*;

/// What a generated op does; the planner adds whatever adapters the operands need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum OpKind {
    Neg,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Sqrt,
    Abs,
    Pow,
    Add,
    Sub,
    Mul,
    Div,
    MulScalar,
    AddScalar,
    SubScalar,
    RsubScalar,
    DivScalar,
    RdivScalar,
    Sum,
    SumDims,
    Mean,
    MaxDim,
    Softmax,
    LogSoftmax,
    Matmul,
    Reshape,
    Transpose,
    Permute,
    Expand,
    Narrow,
    IndexSelect,
    Cat,
    Stack,
    Split,
    Chunk,
    Copy,
    Detach,
    Const,
    AddInPlace,
    SubInPlace,
    MulInPlace,
    DivInPlace,
    CustomXTanh,
    CustomMix,
}

impl OpKind {
    /// Every kind, in declaration order (shrinking moves towards the front).
    pub(crate) const ALL: [OpKind; 47] = [
        OpKind::Neg,
        OpKind::Exp,
        OpKind::Log,
        OpKind::Sin,
        OpKind::Cos,
        OpKind::Tanh,
        OpKind::Sigmoid,
        OpKind::Relu,
        OpKind::Sqrt,
        OpKind::Abs,
        OpKind::Pow,
        OpKind::Add,
        OpKind::Sub,
        OpKind::Mul,
        OpKind::Div,
        OpKind::MulScalar,
        OpKind::AddScalar,
        OpKind::SubScalar,
        OpKind::RsubScalar,
        OpKind::DivScalar,
        OpKind::RdivScalar,
        OpKind::Sum,
        OpKind::SumDims,
        OpKind::Mean,
        OpKind::MaxDim,
        OpKind::Softmax,
        OpKind::LogSoftmax,
        OpKind::Matmul,
        OpKind::Reshape,
        OpKind::Transpose,
        OpKind::Permute,
        OpKind::Expand,
        OpKind::Narrow,
        OpKind::IndexSelect,
        OpKind::Cat,
        OpKind::Stack,
        OpKind::Split,
        OpKind::Chunk,
        OpKind::Copy,
        OpKind::Detach,
        OpKind::Const,
        OpKind::AddInPlace,
        OpKind::SubInPlace,
        OpKind::MulInPlace,
        OpKind::DivInPlace,
        OpKind::CustomXTanh,
        OpKind::CustomMix,
    ];
}

/// One generated op: its kind, up to three operand picks (0 = the newest value, 1 the one
/// before, ..., modulo the number of values) and a number the planner reads attributes from.
#[derive(Clone, Debug)]
pub(crate) struct OpSpec {
    pub(crate) kind: OpKind,
    pub(crate) operands: [usize; 3],
    pub(crate) attr: u32,
}

/// A leaf: its shape, and whether its storage is transposed (non-contiguous; rank ≥ 2 only).
#[derive(Clone, Debug)]
pub(crate) struct LeafSpec {
    pub(crate) shape: Vec<usize>,
    pub(crate) transposed: bool,
}

/// A whole program: leaves, ops, and the seed of the leaf values and output weights.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub(crate) leaves: Vec<LeafSpec>,
    pub(crate) ops: Vec<OpSpec>,
    pub(crate) seed: u64,
}

/// Leaves share one "base" shape of up to 3 dims; each takes a suffix of it with some dims set
/// to 1, so that leaves broadcast against each other.
fn leaves() -> impl Strategy<Value = Vec<LeafSpec>> {
    let dim = prop_oneof![2 => Just(1usize), 3 => Just(2usize), 3 => Just(3usize)];
    (
        proptest::collection::vec(dim, 3),
        proptest::collection::vec((0usize..=3, any::<u8>(), any::<bool>()), 1..=4),
    )
        .prop_map(|(base, leaves)| {
            leaves
                .into_iter()
                .map(|(rank, ones, transposed)| {
                    let shape: Vec<usize> = base[3 - rank..]
                        .iter()
                        .enumerate()
                        .map(|(i, &d)| if ones >> i & 1 == 1 { 1 } else { d })
                        .collect();
                    LeafSpec {
                        transposed: transposed && shape.len() >= 2,
                        shape,
                    }
                })
                .collect()
        })
}

fn op() -> impl Strategy<Value = OpSpec> {
    let pick = prop_oneof![6 => 0usize..3, 2 => 0usize..12];
    (
        proptest::sample::select(&OpKind::ALL[..]),
        [pick.clone(), pick.clone(), pick],
        any::<u32>(),
    )
        .prop_map(|(kind, operands, attr)| OpSpec {
            kind,
            operands,
            attr,
        })
}

/// Programs of 1–4 leaves and 3–40 ops.
pub(crate) fn program() -> impl Strategy<Value = Program> {
    (
        leaves(),
        proptest::collection::vec(op(), 3..=40),
        any::<u64>(),
    )
        .prop_map(|(leaves, ops, seed)| Program { leaves, ops, seed })
}
