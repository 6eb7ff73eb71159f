//! A lowered program: concrete ops with exact attributes over numbered values, which both the
//! library runner (`library.rs`) and the reference evaluator (`reference.rs`) execute.

/// Element-wise functions of one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unary {
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
    Pow(f64),
}

/// Element-wise functions of two broadcast tensors (also the in-place ops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

/// `x (op) c` for a constant `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarOp {
    Mul,
    Add,
    Sub,
    Rsub,
    Div,
    Rdiv,
}

/// The view an in-place op writes through.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum View {
    Narrow {
        dim: usize,
        start: usize,
        len: usize,
    },
    Transpose(usize, usize),
    Permute(Vec<usize>),
    Reshape(Vec<usize>),
}

/// One op of a lowered program.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    /// A tensor that does not require grad; no inputs.
    Const {
        values: Vec<f64>,
        shape: Vec<usize>,
    },
    Unary(Unary),
    Binary(Binary),
    Scalar(ScalarOp, f64),
    Sum,
    Mean,
    SumDims {
        dims: Vec<usize>,
        keepdim: bool,
    },
    MaxDim {
        dim: usize,
        keepdim: bool,
    },
    Softmax {
        dim: usize,
        log: bool,
    },
    Matmul,
    Reshape(Vec<usize>),
    Transpose(usize, usize),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Narrow {
        dim: usize,
        start: usize,
        len: usize,
    },
    IndexSelect {
        dim: usize,
        index: Vec<usize>,
    },
    /// Any number of inputs.
    Cat(usize),
    /// Any number of inputs.
    Stack(usize),
    /// One output per size.
    Split {
        sizes: Vec<usize>,
        dim: usize,
    },
    /// `Tensor::chunk`: one output per chunk.
    Chunk {
        chunks: usize,
        dim: usize,
    },
    Copy,
    Detach,
    /// Inputs `[src, other]`: `t` made from `src` as `fresh` says (a copy, or the result of a
    /// custom function), then the views `earlier` of `t`, then `op_` on `t` or on a view of it
    /// with `other` (with `dirty`, by a custom function that modifies its input in place and
    /// marks it dirty); outputs `[t]`, or `[t, view]`, then the `earlier` views, read after the
    /// op (so they see it, through their regenerated history).
    InPlace {
        op: Binary,
        view: Option<View>,
        earlier: Vec<View>,
        fresh: Fresh,
        dirty: bool,
    },
    /// The test's custom `x · tanh(x) · a`.
    XTanh(f64),
    /// The test's custom two-output `(x·y, x + sin y)` (same shapes).
    Mix,
}

/// How an in-place step makes the tensor it writes from its input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fresh {
    /// `src.copy()`.
    Copy,
    /// The test's custom `x · tanh(x) · a` of `src`: a custom function's result, written after.
    XTanh(f64),
}

/// One op applied to earlier values.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) op: Op,
    /// Value ids: leaves are `0..n_leaves`, then each step's outputs in order.
    pub(crate) inputs: Vec<usize>,
    /// Number of values this step appends.
    pub(crate) outputs: usize,
}

/// A lowered program with its data.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Leaf shapes and values (row-major), and whether a leaf's storage is transposed.
    pub(crate) leaves: Vec<(Vec<usize>, Vec<f64>, bool)>,
    pub(crate) steps: Vec<Step>,
    /// The values the loss reads, each with its weights: `loss = Σ sum(value · weights)`.
    pub(crate) roots: Vec<(usize, Vec<f64>)>,
    /// Shape of every value.
    pub(crate) shapes: Vec<Vec<usize>>,
    /// False when some kink (relu, abs, max) is too close for finite differences.
    pub(crate) fd_safe: bool,
    /// The value of each `Detach` output at the plan's leaves, by value id: finite differences
    /// hold detached values fixed, as the gradient does.
    pub(crate) detached: std::collections::BTreeMap<usize, Vec<f64>>,
}

/// Row-major strides.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Multi-index of flat index `i`.
pub(crate) fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// Flat index of a multi-index.
pub(crate) fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(strides(shape)).map(|(&i, s)| i * s).sum()
}

pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// NumPy broadcasting of two shapes.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// Sizes `Tensor::chunk` splits a dim of `size` into.
pub(crate) fn chunk_sizes(size: usize, chunks: usize) -> Vec<usize> {
    let step = size.div_ceil(chunks).max(1);
    (0..size)
        .step_by(step)
        .map(|s| step.min(size - s))
        .collect()
}

impl Op {
    /// The op's name as the summary counts it (`add`, `add_ on narrow`, `softmax`, ...).
    pub(crate) fn name(&self) -> String {
        let lower = |d: &dyn std::fmt::Debug| {
            let s = format!("{d:?}").to_lowercase();
            s.split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or_default()
                .to_string()
        };
        match self {
            Op::Const { .. } => "const".into(),
            Op::Unary(u) => lower(u),
            Op::Binary(b) => lower(b),
            Op::Scalar(s, _) => format!("{}_scalar", lower(s)),
            Op::Sum => "sum".into(),
            Op::Mean => "mean".into(),
            Op::SumDims { keepdim, .. } => format!("sum_dims(keepdim={keepdim})"),
            Op::MaxDim { keepdim, .. } => format!("max_dim(keepdim={keepdim})"),
            Op::Softmax { log: false, .. } => "softmax".into(),
            Op::Softmax { log: true, .. } => "log_softmax".into(),
            Op::Matmul => "matmul".into(),
            Op::Reshape(_) => "reshape".into(),
            Op::Transpose(..) => "transpose".into(),
            Op::Permute(_) => "permute".into(),
            Op::Expand(_) => "expand".into(),
            Op::Narrow { .. } => "narrow".into(),
            Op::IndexSelect { .. } => "index_select".into(),
            Op::Cat(_) => "cat".into(),
            Op::Stack(_) => "stack".into(),
            Op::Split { .. } => "split".into(),
            Op::Chunk { .. } => "chunk".into(),
            Op::Copy => "copy".into(),
            Op::Detach => "detach".into(),
            Op::InPlace {
                op,
                view,
                earlier,
                fresh,
                dirty,
            } => {
                let op = if *dirty {
                    format!("custom dirty {}_", lower(op))
                } else {
                    format!("{}_", lower(op))
                };
                let mut s = match view {
                    None => op,
                    Some(v) => format!("{op} on {} view", lower(v)),
                };
                if let Fresh::XTanh(_) = fresh {
                    s.push_str(" of a custom xtanh result");
                }
                if !earlier.is_empty() {
                    s.push_str(&format!(" (+{} earlier views)", earlier.len()));
                }
                s
            }
            Op::XTanh(_) => "custom xtanh".into(),
            Op::Mix => "custom mix (2 outputs)".into(),
        }
    }
}

impl std::fmt::Display for Plan {
    /// One line per leaf and per step: `v3, v4 = Split { sizes: [1, 1], dim: 0 } (v2)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (shape, _, transposed)) in self.leaves.iter().enumerate() {
            let t = if *transposed {
                " (transposed storage)"
            } else {
                ""
            };
            writeln!(f, "v{i} = leaf {shape:?}{t}")?;
        }
        let mut next = self.leaves.len();
        for s in &self.steps {
            let outs: Vec<String> = (next..next + s.outputs)
                .map(|v| format!("v{v}: {:?}", self.shapes[v]))
                .collect();
            let ins: Vec<String> = s.inputs.iter().map(|v| format!("v{v}")).collect();
            writeln!(f, "{} = {:?} ({})", outs.join(", "), s.op, ins.join(", "))?;
            next += s.outputs;
        }
        let roots: Vec<String> = self.roots.iter().map(|r| format!("v{}", r.0)).collect();
        write!(f, "loss = Σ sum(root · weights) over {}", roots.join(", "))
    }
}
