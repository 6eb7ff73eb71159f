//! Lowers a generated [`Program`] to a [`Plan`]: concrete ops with exact attributes, plus the
//! adapters that make any operands fit (reshape / index_select to a wanted shape, a positive
//! transform before log, sqrt, division and fractional powers, a shift away from the kinks of
//! relu and abs, a tie-breaker before max, a power-of-two rescale of large values). The planner
//! runs the reference forward as it goes, so these choices see the actual values; the resulting
//! plan is then fixed, whatever the leaves are perturbed to.

use super::op::{Binary, Fresh, Op, Plan, ScalarOp, Step, Unary, View, broadcast, numel, unravel};
use super::program::{OpKind, Program};
use super::reference::{Val, apply, view_map};

/// Largest tensor a program makes.
const MAX_NUMEL: usize = 48;
/// Values stay within this magnitude (larger ones are rescaled by a power of two).
const MAX_ABS: f64 = 4.0;
/// Smallest distance to a kink (relu/abs at 0, a tie in max) kept for finite differences.
const KINK: f64 = 0.02;
/// Smallest operand of log, sqrt, division and fractional powers.
const MIN_POSITIVE: f64 = 0.2;

/// SplitMix64: leaf values, constants and weights from the program's seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// In [-1.5, -0.2] ∪ [0.2, 1.5].
    pub(crate) fn value(&mut self) -> f64 {
        let m = 0.2 + 1.3 * self.unit();
        if self.next_u64() & 1 == 0 { -m } else { m }
    }

    pub(crate) fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.value()).collect()
    }
}

struct Planner {
    plan: Plan,
    vals: Vec<Val>,
    requires_grad: Vec<bool>,
    consumed: Vec<bool>,
    /// Values later ops pick from (rescaled versions replace the originals).
    visible: Vec<usize>,
    rng: Rng,
}

fn bit(a: u32, i: u32) -> bool {
    a >> i & 1 == 1
}

impl Planner {
    fn shape(&self, v: usize) -> Vec<usize> {
        self.vals[v].shape.clone()
    }

    fn rank(&self, v: usize) -> usize {
        self.vals[v].shape.len()
    }

    fn max_abs(&self, v: usize) -> f64 {
        self.vals[v].data.iter().fold(0.0, |m, x| m.max(x.abs()))
    }

    fn min(&self, v: usize) -> f64 {
        self.vals[v]
            .data
            .iter()
            .fold(f64::INFINITY, |m, &x| m.min(x))
    }

    fn pick(&self, k: usize) -> usize {
        self.visible[self.visible.len() - 1 - k % self.visible.len()]
    }

    /// Records `op` and returns its outputs.
    fn emit(&mut self, op: Op, inputs: Vec<usize>) -> Vec<usize> {
        let outs = {
            let ins: Vec<&Val> = inputs.iter().map(|&i| &self.vals[i]).collect();
            apply(&op, &ins)
        };
        for v in &outs {
            assert!(
                v.data.iter().all(|x| x.is_finite()),
                "planner made a non-finite value with {op:?}"
            );
        }
        let rg = !matches!(op, Op::Detach | Op::Const { .. })
            && inputs.iter().any(|&i| self.requires_grad[i]);
        for &i in &inputs {
            self.consumed[i] = true;
        }
        let first = self.vals.len();
        for v in outs {
            self.plan.shapes.push(v.shape.clone());
            self.vals.push(v);
            self.requires_grad.push(rg);
            self.consumed.push(false);
        }
        let n = self.vals.len() - first;
        if op == Op::Detach {
            self.plan
                .detached
                .insert(first, self.vals[first].data.clone());
        }
        self.plan.steps.push(Step {
            op,
            inputs,
            outputs: n,
        });
        (first..first + n).collect()
    }

    fn emit1(&mut self, op: Op, inputs: Vec<usize>) -> usize {
        self.emit(op, inputs)[0]
    }

    /// A value of exactly `shape` made from `v`: a reshape, or the flattened `v` resampled by
    /// index_select.
    fn coerce(&mut self, v: usize, shape: &[usize], salt: u32) -> usize {
        let from = self.shape(v);
        if from == shape {
            return v;
        }
        let n = numel(&from);
        if n == numel(shape) {
            return self.emit1(Op::Reshape(shape.to_vec()), vec![v]);
        }
        let flat = if from.len() == 1 {
            v
        } else {
            self.emit1(Op::Reshape(vec![n]), vec![v])
        };
        let stride = 1 + (salt as usize % 3);
        let index = (0..numel(shape))
            .map(|i| (i * stride + (salt as usize >> 2)) % n)
            .collect();
        let sel = self.emit1(Op::IndexSelect { dim: 0, index }, vec![flat]);
        if shape == [numel(shape)] {
            sel
        } else {
            self.emit1(Op::Reshape(shape.to_vec()), vec![sel])
        }
    }

    /// A value that broadcasts to `target` without growing it.
    fn fit_into(&mut self, v: usize, target: &[usize], bits: u32) -> usize {
        if broadcast(&self.shape(v), target).as_deref() == Some(target) {
            return v;
        }
        let drop = if bit(bits, 0) && !target.is_empty() {
            1
        } else {
            0
        };
        let shape: Vec<usize> = target[drop..]
            .iter()
            .enumerate()
            .map(|(i, &d)| if bit(bits, i as u32 + 1) { 1 } else { d })
            .collect();
        self.coerce(v, &shape, bits >> 4)
    }

    /// `v` shifted away from 0 by a constant, if some element is within `KINK` of it.
    fn away_from_kink(&mut self, v: usize) -> usize {
        let close = |p: &Planner, c: f64| p.vals[v].data.iter().any(|x| (x + c).abs() < KINK);
        if !close(self, 0.0) {
            return v;
        }
        for c in [
            0.05, -0.05, 0.11, -0.11, 0.23, -0.23, 0.47, -0.47, 0.71, -0.71,
        ] {
            if !close(self, c) {
                return self.emit1(Op::Scalar(ScalarOp::Add, c), vec![v]);
            }
        }
        self.plan.fd_safe = false;
        v
    }

    /// `v` if all its elements are ≥ `MIN_POSITIVE`, else a smooth positive function of it.
    fn positive(&mut self, v: usize, bits: u32) -> usize {
        if self.min(v) >= MIN_POSITIVE {
            return v;
        }
        let (t, c) = match bits % 3 {
            0 => (self.emit1(Op::Unary(Unary::Pow(2.0)), vec![v]), 0.5),
            1 => (self.emit1(Op::Unary(Unary::Sigmoid), vec![v]), 0.2),
            _ => {
                let v = self.away_from_kink(v);
                (self.emit1(Op::Unary(Unary::Abs), vec![v]), 0.5)
            }
        };
        self.emit1(Op::Scalar(ScalarOp::Add, c), vec![t])
    }

    /// `v` rescaled by a power of two if it is large.
    fn normalize(&mut self, v: usize) -> usize {
        let m = self.max_abs(v);
        if m <= MAX_ABS {
            return v;
        }
        let k = (m / MAX_ABS).log2().ceil();
        self.emit1(Op::Scalar(ScalarOp::Mul, (-k).exp2()), vec![v])
    }

    /// `v` with at least one dim.
    fn at_least_1d(&mut self, v: usize) -> usize {
        if self.rank(v) == 0 {
            self.emit1(Op::Reshape(vec![1]), vec![v])
        } else {
            v
        }
    }

    /// True if the max over `dim` of `v` has a runner-up within `KINK`.
    fn has_ties(&self, v: usize, dim: usize) -> bool {
        let x = &self.vals[v];
        let shape = &x.shape;
        let mut lines: Vec<Vec<f64>> = vec![vec![]; numel(shape) / shape[dim]];
        for (i, &value) in x.data.iter().enumerate() {
            lines[line_key(&unravel(i, shape), shape, dim)].push(value);
        }
        lines.iter().any(|line| {
            let max = line.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
            line.iter().filter(|&&x| max - x < KINK).count() > 1
        })
    }

    fn reshape_target(&self, n: usize, a: u32) -> Vec<usize> {
        let mut options: Vec<Vec<usize>> = vec![vec![n], vec![1, n], vec![n, 1]];
        if n == 1 {
            options.push(vec![]);
        }
        for d in 2..n {
            if n.is_multiple_of(d) {
                options.push(vec![d, n / d]);
                options.push(vec![d, 1, n / d]);
                for e in 2..n / d {
                    if (n / d).is_multiple_of(e) {
                        options.push(vec![d, e, n / d / e]);
                    }
                }
            }
        }
        options.swap_remove(a as usize % options.len())
    }

    fn permutation(rank: usize, a: u32) -> Vec<usize> {
        let mut rest: Vec<usize> = (0..rank).collect();
        let mut code = a as usize;
        let mut perm = vec![];
        while !rest.is_empty() {
            perm.push(rest.remove(code % rest.len()));
            code /= 7;
        }
        perm
    }

    fn view(&self, v: usize, a: u32) -> Option<View> {
        let shape = self.shape(v);
        let r = shape.len();
        match a % 5 {
            1 if r >= 1 => {
                let dim = (a >> 3) as usize % r;
                let size = shape[dim];
                let start = (a >> 5) as usize % size;
                let len = 1 + (a >> 7) as usize % (size - start);
                Some(View::Narrow { dim, start, len })
            }
            2 if r >= 2 => Some(View::Transpose(
                (a >> 3) as usize % r,
                (a >> 5) as usize % r,
            )),
            3 if r >= 2 => Some(View::Permute(Planner::permutation(r, a >> 3))),
            4 => Some(View::Reshape(self.reshape_target(numel(&shape), a >> 3))),
            _ => None,
        }
    }

    /// Lowers one generated op; returns the values it makes visible.
    fn lower(&mut self, kind: OpKind, operands: [usize; 3], a: u32) -> Vec<usize> {
        let x = self.pick(operands[0]);
        let unary = |p: &mut Planner, u: Unary, x: usize| vec![p.emit1(Op::Unary(u), vec![x])];
        match kind {
            OpKind::Neg => unary(self, Unary::Neg, x),
            OpKind::Exp => unary(self, Unary::Exp, x),
            OpKind::Sin => unary(self, Unary::Sin, x),
            OpKind::Cos => unary(self, Unary::Cos, x),
            OpKind::Tanh => unary(self, Unary::Tanh, x),
            OpKind::Sigmoid => unary(self, Unary::Sigmoid, x),
            OpKind::Log | OpKind::Sqrt => {
                let x = self.positive(x, a);
                let u = if kind == OpKind::Log {
                    Unary::Log
                } else {
                    Unary::Sqrt
                };
                unary(self, u, x)
            }
            OpKind::Relu | OpKind::Abs => {
                let x = self.away_from_kink(x);
                let u = if kind == OpKind::Relu {
                    Unary::Relu
                } else {
                    Unary::Abs
                };
                unary(self, u, x)
            }
            OpKind::Pow => {
                let e = [2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 4.0][a as usize % 7];
                let x = if e == 2.0 || e == 3.0 || e == 4.0 {
                    x
                } else {
                    self.positive(x, a >> 3)
                };
                unary(self, Unary::Pow(e), x)
            }
            OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Div => {
                let mut y = self.pick(operands[1]);
                let fits = broadcast(&self.shape(x), &self.shape(y))
                    .is_some_and(|s| numel(&s) <= MAX_NUMEL);
                if !fits {
                    y = self.fit_into(y, &self.shape(x), a);
                }
                let op = match kind {
                    OpKind::Add => Binary::Add,
                    OpKind::Sub => Binary::Sub,
                    OpKind::Mul => Binary::Mul,
                    _ => {
                        y = self.positive(y, a >> 8);
                        Binary::Div
                    }
                };
                let (l, r) = if bit(a, 12) && op != Binary::Div {
                    (y, x)
                } else {
                    (x, y)
                };
                vec![self.emit1(Op::Binary(op), vec![l, r])]
            }
            OpKind::MulScalar
            | OpKind::AddScalar
            | OpKind::SubScalar
            | OpKind::RsubScalar
            | OpKind::DivScalar
            | OpKind::RdivScalar => {
                let c = [0.5, -1.5, 2.0, 0.75, -0.3, 1.25][a as usize % 6];
                let (op, x) = match kind {
                    OpKind::MulScalar => (ScalarOp::Mul, x),
                    OpKind::AddScalar => (ScalarOp::Add, x),
                    OpKind::SubScalar => (ScalarOp::Sub, x),
                    OpKind::RsubScalar => (ScalarOp::Rsub, x),
                    OpKind::DivScalar => (ScalarOp::Div, x),
                    _ => (ScalarOp::Rdiv, self.positive(x, a >> 3)),
                };
                vec![self.emit1(Op::Scalar(op, c), vec![x])]
            }
            OpKind::Sum => vec![self.emit1(Op::Sum, vec![x])],
            OpKind::Mean => vec![self.emit1(Op::Mean, vec![x])],
            OpKind::SumDims => {
                let r = self.rank(x);
                if r == 0 {
                    return vec![self.emit1(Op::Sum, vec![x])];
                }
                let mut dims: Vec<usize> = (0..r).filter(|&d| bit(a, d as u32)).collect();
                if dims.is_empty() {
                    dims.push((a >> 3) as usize % r);
                }
                if bit(a, 4) {
                    dims.reverse();
                }
                let keepdim = bit(a, 5);
                vec![self.emit1(Op::SumDims { dims, keepdim }, vec![x])]
            }
            OpKind::MaxDim => {
                let mut x = self.at_least_1d(x);
                let dim = a as usize % self.rank(x);
                if self.has_ties(x, dim) {
                    let shape = self.shape(x);
                    let values = (0..numel(&shape)).map(|i| 0.037 * i as f64).collect();
                    let ramp = self.emit1(Op::Const { values, shape }, vec![]);
                    x = self.emit1(Op::Binary(Binary::Add), vec![x, ramp]);
                    if self.has_ties(x, dim) {
                        self.plan.fd_safe = false;
                    }
                }
                let keepdim = bit(a, 3);
                vec![self.emit1(Op::MaxDim { dim, keepdim }, vec![x])]
            }
            OpKind::Softmax | OpKind::LogSoftmax => {
                let dim = a as usize % self.rank(x).max(1);
                let log = kind == OpKind::LogSoftmax;
                vec![self.emit1(Op::Softmax { dim, log }, vec![x])]
            }
            OpKind::Matmul => self.matmul(x, self.pick(operands[1]), a),
            OpKind::Reshape => {
                let shape = self.reshape_target(numel(&self.shape(x)), a);
                vec![self.emit1(Op::Reshape(shape), vec![x])]
            }
            OpKind::Transpose => {
                let r = self.rank(x).max(1);
                let (d0, d1) = (a as usize % r, (a >> 2) as usize % r);
                vec![self.emit1(Op::Transpose(d0, d1), vec![x])]
            }
            OpKind::Permute => {
                let perm = Planner::permutation(self.rank(x), a);
                vec![self.emit1(Op::Permute(perm), vec![x])]
            }
            OpKind::Expand => {
                let mut shape: Vec<usize> = self
                    .shape(x)
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| match d {
                        1 if bit(a, i as u32) => 2 + (a >> (i + 4)) as usize % 2,
                        d => d,
                    })
                    .collect();
                if shape.len() < 3 && bit(a, 8) {
                    shape.insert(0, 2);
                }
                if numel(&shape) > MAX_NUMEL {
                    shape = self.shape(x);
                }
                vec![self.emit1(Op::Expand(shape), vec![x])]
            }
            OpKind::Narrow => {
                let x = self.at_least_1d(x);
                let shape = self.shape(x);
                let dim = a as usize % shape.len();
                let start = (a >> 2) as usize % shape[dim];
                let len = 1 + (a >> 5) as usize % (shape[dim] - start);
                vec![self.emit1(Op::Narrow { dim, start, len }, vec![x])]
            }
            OpKind::IndexSelect => {
                let x = self.at_least_1d(x);
                let shape = self.shape(x);
                let dim = a as usize % shape.len();
                let mut len = 1 + (a >> 2) as usize % 4;
                while len > 1 && numel(&shape) / shape[dim] * len > MAX_NUMEL {
                    len -= 1;
                }
                let index = (0..len)
                    .map(|k| (a >> (4 + 3 * k)) as usize % shape[dim])
                    .collect();
                vec![self.emit1(Op::IndexSelect { dim, index }, vec![x])]
            }
            OpKind::Cat | OpKind::Stack => {
                let x = if kind == OpKind::Cat {
                    self.at_least_1d(x)
                } else {
                    x
                };
                let shape = self.shape(x);
                let n = 2 + usize::from(bit(a, 0));
                if numel(&shape) * (n + 2) > MAX_NUMEL {
                    return vec![self.emit1(Op::Copy, vec![x])];
                }
                let mut parts = vec![x];
                for (k, &pick) in operands.iter().enumerate().take(n).skip(1) {
                    let y = self.pick(pick);
                    let mut s = shape.clone();
                    if kind == OpKind::Cat {
                        let dim = (a >> 1) as usize % shape.len();
                        s[dim] = 1 + (a >> (4 + 2 * k)) as usize % 3;
                    }
                    parts.push(self.coerce(y, &s, a >> (10 + 3 * k)));
                }
                let op = if kind == OpKind::Cat {
                    Op::Cat((a >> 1) as usize % shape.len())
                } else {
                    Op::Stack((a >> 1) as usize % (shape.len() + 1))
                };
                vec![self.emit1(op, parts)]
            }
            OpKind::Split | OpKind::Chunk => {
                let x = self.at_least_1d(x);
                let shape = self.shape(x);
                let r = shape.len();
                let dim = (0..r)
                    .map(|k| (a as usize + k) % r)
                    .find(|&d| shape[d] > 1)
                    .unwrap_or(a as usize % r);
                let op = if kind == OpKind::Chunk {
                    Op::Chunk {
                        chunks: 1 + (a >> 2) as usize % 3,
                        dim,
                    }
                } else {
                    let mut sizes = vec![1];
                    for k in 1..shape[dim] {
                        if bit(a, 2 + k as u32) {
                            sizes.push(1);
                        } else {
                            *sizes.last_mut().expect("non-empty") += 1;
                        }
                    }
                    Op::Split { sizes, dim }
                };
                self.emit(op, vec![x])
            }
            OpKind::Copy => vec![self.emit1(Op::Copy, vec![x])],
            OpKind::Detach => vec![self.emit1(Op::Detach, vec![x])],
            OpKind::Const => {
                let shape: Vec<usize> = self
                    .shape(x)
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if bit(a, i as u32) { 1 } else { d })
                    .collect();
                let values = self.rng.values(numel(&shape));
                vec![self.emit1(Op::Const { values, shape }, vec![])]
            }
            OpKind::AddInPlace | OpKind::SubInPlace | OpKind::MulInPlace | OpKind::DivInPlace => {
                let view = self.view(x, a);
                let target = match &view {
                    Some(v) => view_map(&self.shape(x), v).0,
                    None => self.shape(x),
                };
                let y = self.pick(operands[1]);
                let mut y = self.fit_into(y, &target, a >> 12);
                let op = match kind {
                    OpKind::AddInPlace => Binary::Add,
                    OpKind::SubInPlace => Binary::Sub,
                    OpKind::MulInPlace => Binary::Mul,
                    _ => {
                        y = self.positive(y, a >> 20);
                        Binary::Div
                    }
                };
                // Up to two views of the written tensor taken before the op and read after it
                // (siblings of the written view, or views of the written base).
                let earlier = [
                    a.rotate_right(11),
                    a.wrapping_mul(0x9e37_79b1).rotate_right(7),
                ]
                .into_iter()
                .filter_map(|b| self.view(x, b))
                .collect();
                // A quarter write a custom function's result instead of a copy; a quarter write
                // through a custom function that marks its input dirty.
                let c = a.wrapping_mul(0x2545_f491);
                let fresh = if c >> 30 == 0 {
                    Fresh::XTanh([1.0, -0.5][(c >> 29) as usize & 1])
                } else {
                    Fresh::Copy
                };
                let dirty = (c >> 27) & 3 == 0;
                let op = Op::InPlace {
                    op,
                    view,
                    earlier,
                    fresh,
                    dirty,
                };
                self.emit(op, vec![x, y])
            }
            OpKind::CustomXTanh => {
                let c = [1.0, -0.5, 2.0][a as usize % 3];
                vec![self.emit1(Op::XTanh(c), vec![x])]
            }
            OpKind::CustomMix => {
                let y = self.pick(operands[1]);
                let y = self.coerce(y, &self.shape(x), a);
                self.emit(Op::Mix, vec![x, y])
            }
        }
    }

    fn matmul(&mut self, x: usize, y: usize, a: u32) -> Vec<usize> {
        let x = match self.shape(x).as_slice() {
            [] => self.emit1(Op::Reshape(vec![1, 1]), vec![x]),
            &[n] => {
                let s = if bit(a, 0) { vec![1, n] } else { vec![n, 1] };
                self.emit1(Op::Reshape(s), vec![x])
            }
            _ => x,
        };
        let xs = self.shape(x);
        let (r, k) = (xs.len(), xs[xs.len() - 1]);
        let batch_ok = |b: &[usize], m: usize| {
            broadcast(&xs[..r - 2], &b[..b.len() - 2])
                .is_some_and(|batch| numel(&batch) * xs[r - 2] * m <= MAX_NUMEL)
        };
        let ys = self.shape(y);
        let yr = ys.len();
        let y = if yr >= 2 && ys[yr - 2] == k && batch_ok(&ys, ys[yr - 1]) {
            y
        } else if yr >= 2 && ys[yr - 1] == k && batch_ok(&ys, ys[yr - 2]) {
            self.emit1(Op::Transpose(yr - 2, yr - 1), vec![y])
        } else {
            let m = 1 + (a >> 1) as usize % 3;
            let m = if batch_ok(&[k, m], m) { m } else { 1 };
            self.coerce(y, &[k, m], a >> 3)
        };
        vec![self.emit1(Op::Matmul, vec![x, y])]
    }
}

/// Which line along `dim` the element at `idx` belongs to.
fn line_key(idx: &[usize], shape: &[usize], dim: usize) -> usize {
    let mut key = 0;
    for (d, (&i, &n)) in idx.iter().zip(shape).enumerate() {
        if d != dim {
            key = key * n + i;
        }
    }
    key
}

/// Lowers `program`.
pub(crate) fn plan(program: &Program) -> Plan {
    let mut rng = Rng::new(program.seed);
    let leaves: Vec<(Vec<usize>, Vec<f64>, bool)> = program
        .leaves
        .iter()
        .map(|l| (l.shape.clone(), rng.values(numel(&l.shape)), l.transposed))
        .collect();
    let n = leaves.len();
    let mut p = Planner {
        vals: leaves
            .iter()
            .map(|(s, d, _)| Val::new(s.clone(), d.clone()))
            .collect(),
        plan: Plan {
            shapes: leaves.iter().map(|l| l.0.clone()).collect(),
            leaves,
            steps: vec![],
            roots: vec![],
            fd_safe: true,
            detached: Default::default(),
        },
        requires_grad: vec![true; n],
        consumed: vec![false; n],
        visible: (0..n).collect(),
        rng,
    };
    for op in &program.ops {
        let outs = p.lower(op.kind, op.operands, op.attr);
        for v in outs {
            let v = p.normalize(v);
            p.visible.push(v);
        }
    }
    let last = p.vals.len() - 1;
    let mut roots: Vec<usize> = (n..p.vals.len())
        .filter(|&v| p.requires_grad[v] && !p.consumed[v])
        .filter(|&v| v == last || !p.rng.next_u64().is_multiple_of(4))
        .collect();
    if roots.is_empty() {
        roots.push(p.emit1(Op::Sum, vec![0]));
    }
    p.plan.roots = roots
        .into_iter()
        .map(|r| (r, p.rng.values(p.vals[r].data.len())))
        .collect();
    p.plan
}
