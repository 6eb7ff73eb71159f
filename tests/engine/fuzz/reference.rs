//! The independent reference: a flat tape over plain `Vec<f64>` + shape that knows each op's
//! forward and its vector-Jacobian product, written the obvious way (loops over multi-indices,
//! no engine, no threads, no library ops). Ops that only move elements (views, cat, split,
//! index_select, ...) are one "gather" each: output element `i` copies input element `src[i]`,
//! and the gradient flows back along the same map.

use super::op::{Binary, Op, Plan, ScalarOp, Step, broadcast, chunk_sizes, numel, ravel, unravel};
use super::op::{Fresh, Unary, View};

/// A value: shape and row-major data.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Val {
    pub(crate) shape: Vec<usize>,
    pub(crate) data: Vec<f64>,
}

impl Val {
    pub(crate) fn new(shape: Vec<usize>, data: Vec<f64>) -> Val {
        assert_eq!(numel(&shape), data.len(), "reference: shape/data mismatch");
        Val { shape, data }
    }
}

/// For each output element of broadcasting `from` to `to`, the element of `from` it reads.
pub(crate) fn expand_map(from: &[usize], to: &[usize]) -> Vec<usize> {
    let off = to.len() - from.len();
    (0..numel(to))
        .map(|i| {
            let oi = unravel(i, to);
            let ii: Vec<usize> = (0..from.len())
                .map(|k| if from[k] == 1 { 0 } else { oi[k + off] })
                .collect();
            ravel(&ii, from)
        })
        .collect()
}

fn permute_map(shape: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let map = (0..numel(&out))
        .map(|i| {
            let oi = unravel(i, &out);
            let mut ii = vec![0; shape.len()];
            for (k, &p) in perm.iter().enumerate() {
                ii[p] = oi[k];
            }
            ravel(&ii, shape)
        })
        .collect();
    (out, map)
}

fn swap_perm(rank: usize, d0: usize, d1: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..rank).collect();
    if rank > 0 {
        perm.swap(d0, d1);
    }
    perm
}

/// Output shape and map of a `dim` slice `start..start + len`.
fn narrow_map(shape: &[usize], dim: usize, start: usize, len: usize) -> (Vec<usize>, Vec<usize>) {
    let mut out = shape.to_vec();
    out[dim] = len;
    let map = (0..numel(&out))
        .map(|i| {
            let mut ii = unravel(i, &out);
            ii[dim] += start;
            ravel(&ii, shape)
        })
        .collect();
    (out, map)
}

/// Shape and element map of a view of a tensor of `shape`.
pub(crate) fn view_map(shape: &[usize], view: &View) -> (Vec<usize>, Vec<usize>) {
    match view {
        View::Narrow { dim, start, len } => narrow_map(shape, *dim, *start, *len),
        View::Transpose(d0, d1) => permute_map(shape, &swap_perm(shape.len(), *d0, *d1)),
        View::Permute(p) => permute_map(shape, p),
        View::Reshape(s) => (s.clone(), (0..numel(s)).collect()),
    }
}

/// Each output of an element-moving op: its shape and, per element, `(input, index)`.
type Gather = Vec<(Vec<usize>, Vec<(usize, usize)>)>;

fn single(shape: Vec<usize>, map: Vec<usize>) -> Gather {
    vec![(shape, map.into_iter().map(|i| (0, i)).collect())]
}

fn split_gather(shape: &[usize], sizes: &[usize], dim: usize) -> Gather {
    let mut start = 0;
    sizes
        .iter()
        .map(|&len| {
            let (s, map) = narrow_map(shape, dim, start, len);
            start += len;
            (s, map.into_iter().map(|i| (0, i)).collect())
        })
        .collect()
}

fn gather(op: &Op, shapes: &[&[usize]]) -> Option<Gather> {
    let s = *shapes.first()?;
    Some(match op {
        Op::Reshape(t) => single(t.clone(), (0..numel(t)).collect()),
        Op::Copy | Op::Detach => single(s.to_vec(), (0..numel(s)).collect()),
        Op::Transpose(d0, d1) => {
            let (o, m) = permute_map(s, &swap_perm(s.len(), *d0, *d1));
            single(o, m)
        }
        Op::Permute(p) => {
            let (o, m) = permute_map(s, p);
            single(o, m)
        }
        Op::Expand(t) => single(t.clone(), expand_map(s, t)),
        Op::Narrow { dim, start, len } => {
            let (o, m) = narrow_map(s, *dim, *start, *len);
            single(o, m)
        }
        Op::IndexSelect { dim, index } => {
            let mut out = s.to_vec();
            out[*dim] = index.len();
            let map = (0..numel(&out))
                .map(|i| {
                    let mut ii = unravel(i, &out);
                    ii[*dim] = index[ii[*dim]];
                    ravel(&ii, s)
                })
                .collect();
            single(out, map)
        }
        Op::Cat(dim) => {
            let mut out = s.to_vec();
            out[*dim] = shapes.iter().map(|t| t[*dim]).sum();
            let map = (0..numel(&out))
                .map(|i| {
                    let mut ii = unravel(i, &out);
                    let mut k = 0;
                    while ii[*dim] >= shapes[k][*dim] {
                        ii[*dim] -= shapes[k][*dim];
                        k += 1;
                    }
                    (k, ravel(&ii, shapes[k]))
                })
                .collect();
            vec![(out, map)]
        }
        Op::Stack(dim) => {
            let mut out = s.to_vec();
            out.insert(*dim, shapes.len());
            let map = (0..numel(&out))
                .map(|i| {
                    let mut ii = unravel(i, &out);
                    let k = ii.remove(*dim);
                    (k, ravel(&ii, s))
                })
                .collect();
            vec![(out, map)]
        }
        Op::Split { sizes, dim } => split_gather(s, sizes, *dim),
        Op::Chunk { chunks, dim } => split_gather(s, &chunk_sizes(s[*dim], *chunks), *dim),
        _ => return None,
    })
}

/// Output shape of reducing `dims`, and the output element each input element goes to.
fn reduce_map(shape: &[usize], dims: &[usize], keepdim: bool) -> (Vec<usize>, Vec<usize>) {
    let kept: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if dims.contains(&d) { 1 } else { n })
        .collect();
    let out: Vec<usize> = if keepdim {
        kept.clone()
    } else {
        shape
            .iter()
            .enumerate()
            .filter(|(d, _)| !dims.contains(d))
            .map(|(_, &n)| n)
            .collect()
    };
    let map = (0..numel(shape))
        .map(|i| {
            let mut ii = unravel(i, shape);
            for &d in dims {
                ii[d] = 0;
            }
            ravel(&ii, &kept)
        })
        .collect();
    (out, map)
}

fn unary(u: Unary, x: f64) -> (f64, f64) {
    match u {
        Unary::Neg => (-x, -1.0),
        Unary::Exp => (x.exp(), x.exp()),
        Unary::Log => (x.ln(), 1.0 / x),
        Unary::Sin => (x.sin(), x.cos()),
        Unary::Cos => (x.cos(), -x.sin()),
        Unary::Tanh => (x.tanh(), 1.0 - x.tanh() * x.tanh()),
        Unary::Sigmoid => {
            let y = 1.0 / (1.0 + (-x).exp());
            (y, y * (1.0 - y))
        }
        Unary::Relu => (x.max(0.0), if x > 0.0 { 1.0 } else { 0.0 }),
        Unary::Sqrt => (x.sqrt(), 0.5 / x.sqrt()),
        Unary::Abs => (x.abs(), if x == 0.0 { 0.0 } else { x.signum() }),
        Unary::Pow(e) => (x.powf(e), e * x.powf(e - 1.0)),
    }
}

/// `(value, d/da, d/db)`.
fn binary(b: Binary, x: f64, y: f64) -> (f64, f64, f64) {
    match b {
        Binary::Add => (x + y, 1.0, 1.0),
        Binary::Sub => (x - y, 1.0, -1.0),
        Binary::Mul => (x * y, y, x),
        Binary::Div => (x / y, 1.0 / y, -x / (y * y)),
    }
}

fn scalar(op: ScalarOp, c: f64, x: f64) -> (f64, f64) {
    match op {
        ScalarOp::Mul => (x * c, c),
        ScalarOp::Add => (x + c, 1.0),
        ScalarOp::Sub => (x - c, 1.0),
        ScalarOp::Rsub => (c - x, -1.0),
        ScalarOp::Div => (x / c, 1.0 / c),
        ScalarOp::Rdiv => (c / x, -c / (x * x)),
    }
}

/// For each output element of `max_dim`, the input element holding the first maximum.
fn argmax(x: &Val, dim: usize, keepdim: bool) -> (Vec<usize>, Vec<usize>) {
    let (out, map) = reduce_map(&x.shape, &[dim], keepdim);
    let mut best: Vec<Option<usize>> = vec![None; numel(&out)];
    for (i, &o) in map.iter().enumerate() {
        if best[o].is_none_or(|b| x.data[i] > x.data[b]) {
            best[o] = Some(i);
        }
    }
    (
        out,
        best.into_iter().map(|b| b.expect("non-empty")).collect(),
    )
}

/// The two factors of a batched matmul and the output shape.
struct MatmulShape {
    out: Vec<usize>,
    batch: usize,
    a_batch: Vec<usize>,
    b_batch: Vec<usize>,
    n: usize,
    k: usize,
    m: usize,
}

fn matmul_shape(a: &[usize], b: &[usize]) -> MatmulShape {
    let (ra, rb) = (a.len(), b.len());
    let (ab, bb) = (&a[..ra - 2], &b[..rb - 2]);
    let batch = broadcast(ab, bb).expect("matmul batch dims broadcast");
    let (n, k, m) = (a[ra - 2], a[ra - 1], b[rb - 1]);
    let mut out = batch.clone();
    out.extend([n, m]);
    MatmulShape {
        a_batch: expand_map(ab, &batch),
        b_batch: expand_map(bb, &batch),
        batch: numel(&batch),
        out,
        n,
        k,
        m,
    }
}

/// Runs one op forward.
pub(crate) fn apply(op: &Op, ins: &[&Val]) -> Vec<Val> {
    let shapes: Vec<&[usize]> = ins.iter().map(|v| &v.shape[..]).collect();
    if let Some(g) = gather(op, &shapes) {
        return g
            .into_iter()
            .map(|(shape, map)| {
                let data = map.iter().map(|&(k, i)| ins[k].data[i]).collect();
                Val::new(shape, data)
            })
            .collect();
    }
    let x = ins.first().copied();
    let one = |shape: Vec<usize>, data: Vec<f64>| vec![Val::new(shape, data)];
    match op {
        Op::Const { values, shape } => one(shape.clone(), values.clone()),
        Op::Unary(u) => {
            let x = x.expect("input");
            one(
                x.shape.clone(),
                x.data.iter().map(|&v| unary(*u, v).0).collect(),
            )
        }
        Op::Binary(b) => {
            let (a, c) = (ins[0], ins[1]);
            let out = broadcast(&a.shape, &c.shape).expect("broadcast");
            let (am, cm) = (expand_map(&a.shape, &out), expand_map(&c.shape, &out));
            let data = (0..numel(&out))
                .map(|i| binary(*b, a.data[am[i]], c.data[cm[i]]).0)
                .collect();
            one(out, data)
        }
        Op::Scalar(s, c) => {
            let x = x.expect("input");
            let data = x.data.iter().map(|&v| scalar(*s, *c, v).0).collect();
            one(x.shape.clone(), data)
        }
        Op::Sum => one(vec![], vec![x.expect("input").data.iter().sum()]),
        Op::Mean => {
            let x = x.expect("input");
            one(
                vec![],
                vec![x.data.iter().sum::<f64>() / x.data.len() as f64],
            )
        }
        Op::SumDims { dims, keepdim } => {
            let x = x.expect("input");
            let (out, map) = reduce_map(&x.shape, dims, *keepdim);
            let mut data = vec![0.0; numel(&out)];
            for (i, &o) in map.iter().enumerate() {
                data[o] += x.data[i];
            }
            one(out, data)
        }
        Op::MaxDim { dim, keepdim } => {
            let x = x.expect("input");
            let (out, best) = argmax(x, *dim, *keepdim);
            one(out, best.iter().map(|&i| x.data[i]).collect())
        }
        Op::Softmax { dim, log } => {
            let x = x.expect("input");
            let dims: Vec<usize> = if x.shape.is_empty() {
                vec![]
            } else {
                vec![*dim]
            };
            let (out, map) = reduce_map(&x.shape, &dims, true);
            let mut max = vec![f64::NEG_INFINITY; numel(&out)];
            for (i, &o) in map.iter().enumerate() {
                max[o] = max[o].max(x.data[i]);
            }
            let mut total = vec![0.0; numel(&out)];
            for (i, &o) in map.iter().enumerate() {
                total[o] += (x.data[i] - max[o]).exp();
            }
            let data = map
                .iter()
                .enumerate()
                .map(|(i, &o)| {
                    let z = x.data[i] - max[o];
                    if *log {
                        z - total[o].ln()
                    } else {
                        z.exp() / total[o]
                    }
                })
                .collect();
            one(x.shape.clone(), data)
        }
        Op::Matmul => {
            let (a, b) = (ins[0], ins[1]);
            let s = matmul_shape(&a.shape, &b.shape);
            let mut data = vec![0.0; numel(&s.out)];
            for q in 0..s.batch {
                let (ao, bo) = (s.a_batch[q] * s.n * s.k, s.b_batch[q] * s.k * s.m);
                for i in 0..s.n {
                    for j in 0..s.m {
                        data[(q * s.n + i) * s.m + j] = (0..s.k)
                            .map(|l| a.data[ao + i * s.k + l] * b.data[bo + l * s.m + j])
                            .sum();
                    }
                }
            }
            one(s.out, data)
        }
        Op::InPlace {
            op,
            view,
            earlier,
            fresh,
            ..
        } => {
            let (src, other) = (ins[0], ins[1]);
            let (vshape, vm) = match view {
                Some(v) => view_map(&src.shape, v),
                None => (src.shape.clone(), (0..src.data.len()).collect()),
            };
            let om = expand_map(&other.shape, &vshape);
            let written = fresh_values(*fresh, &src.data);
            let src = &Val::new(src.shape.clone(), written);
            let mut base = src.data.clone();
            for (k, &p) in vm.iter().enumerate() {
                base[p] = binary(*op, src.data[p], other.data[om[k]]).0;
            }
            let mut outs = vec![];
            if view.is_some() {
                let data = vm.iter().map(|&p| base[p]).collect();
                outs.push(Val::new(vshape, data));
            }
            // The earlier views read the modified base.
            for e in earlier {
                let (shape, map) = view_map(&src.shape, e);
                outs.push(Val::new(shape, map.iter().map(|&p| base[p]).collect()));
            }
            outs.insert(0, Val::new(src.shape.clone(), base));
            outs
        }
        Op::XTanh(a) => {
            let x = x.expect("input");
            let data = x.data.iter().map(|&v| a * v * v.tanh()).collect();
            one(x.shape.clone(), data)
        }
        Op::Mix => {
            let (a, b) = (ins[0], ins[1]);
            let p = a.data.iter().zip(&b.data).map(|(x, y)| x * y).collect();
            let s = a
                .data
                .iter()
                .zip(&b.data)
                .map(|(x, y)| x + y.sin())
                .collect();
            vec![Val::new(a.shape.clone(), p), Val::new(a.shape.clone(), s)]
        }
        _ => unreachable!("gather ops are handled above: {op:?}"),
    }
}

/// The values an in-place step writes into, made from its input's.
fn fresh_values(fresh: Fresh, src: &[f64]) -> Vec<f64> {
    match fresh {
        Fresh::Copy => src.to_vec(),
        Fresh::XTanh(a) => src.iter().map(|&v| a * v * v.tanh()).collect(),
    }
}

/// Vector-Jacobian product of one op: the gradient of each input, given the gradient of each
/// output (zeros for outputs the loss does not reach).
fn vjp(op: &Op, ins: &[&Val], outs: &[Val], g: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut gin: Vec<Vec<f64>> = ins.iter().map(|v| vec![0.0; v.data.len()]).collect();
    if matches!(op, Op::Detach | Op::Const { .. }) {
        return gin;
    }
    let shapes: Vec<&[usize]> = ins.iter().map(|v| &v.shape[..]).collect();
    if let Some(gathers) = gather(op, &shapes) {
        for ((_, map), g) in gathers.iter().zip(g) {
            for (&(k, i), gv) in map.iter().zip(g) {
                gin[k][i] += gv;
            }
        }
        return gin;
    }
    let g0 = &g[0];
    match op {
        Op::Unary(u) => {
            for (i, &x) in ins[0].data.iter().enumerate() {
                gin[0][i] = g0[i] * unary(*u, x).1;
            }
        }
        Op::Binary(b) => {
            let (a, c) = (ins[0], ins[1]);
            let out = &outs[0].shape;
            let (am, cm) = (expand_map(&a.shape, out), expand_map(&c.shape, out));
            for i in 0..g0.len() {
                let (_, da, dc) = binary(*b, a.data[am[i]], c.data[cm[i]]);
                gin[0][am[i]] += g0[i] * da;
                gin[1][cm[i]] += g0[i] * dc;
            }
        }
        Op::Scalar(s, c) => {
            for (i, &x) in ins[0].data.iter().enumerate() {
                gin[0][i] = g0[i] * scalar(*s, *c, x).1;
            }
        }
        Op::Sum => gin[0].iter_mut().for_each(|v| *v = g0[0]),
        Op::Mean => {
            let n = gin[0].len() as f64;
            gin[0].iter_mut().for_each(|v| *v = g0[0] / n);
        }
        Op::SumDims { dims, keepdim } => {
            let (_, map) = reduce_map(&ins[0].shape, dims, *keepdim);
            for (i, &o) in map.iter().enumerate() {
                gin[0][i] = g0[o];
            }
        }
        Op::MaxDim { dim, keepdim } => {
            let (_, best) = argmax(ins[0], *dim, *keepdim);
            for (o, &i) in best.iter().enumerate() {
                gin[0][i] += g0[o];
            }
        }
        Op::Softmax { dim, log } => {
            let shape = &ins[0].shape;
            let dims: Vec<usize> = if shape.is_empty() { vec![] } else { vec![*dim] };
            let (out, map) = reduce_map(shape, &dims, true);
            let y = &outs[0].data;
            let mut acc = vec![0.0; numel(&out)];
            for (i, &o) in map.iter().enumerate() {
                acc[o] += if *log { g0[i] } else { g0[i] * y[i] };
            }
            for (i, &o) in map.iter().enumerate() {
                gin[0][i] = if *log {
                    g0[i] - y[i].exp() * acc[o]
                } else {
                    y[i] * (g0[i] - acc[o])
                };
            }
        }
        Op::Matmul => {
            let (a, b) = (ins[0], ins[1]);
            let s = matmul_shape(&a.shape, &b.shape);
            for q in 0..s.batch {
                let (ao, bo) = (s.a_batch[q] * s.n * s.k, s.b_batch[q] * s.k * s.m);
                for i in 0..s.n {
                    for j in 0..s.m {
                        let go = g0[(q * s.n + i) * s.m + j];
                        for l in 0..s.k {
                            gin[0][ao + i * s.k + l] += go * b.data[bo + l * s.m + j];
                            gin[1][bo + l * s.m + j] += go * a.data[ao + i * s.k + l];
                        }
                    }
                }
            }
        }
        Op::InPlace {
            op,
            view,
            earlier,
            fresh,
            ..
        } => {
            let (input, other) = (ins[0], ins[1]);
            let src = &Val::new(input.shape.clone(), fresh_values(*fresh, &input.data));
            let (vshape, vm) = match view {
                Some(v) => view_map(&src.shape, v),
                None => (src.shape.clone(), (0..src.data.len()).collect()),
            };
            let om = expand_map(&other.shape, &vshape);
            // The gradient w.r.t. the modified base: its own, plus each view output's.
            let mut gb = g[0].clone();
            let mut next = 1;
            if view.is_some() {
                for (k, &p) in vm.iter().enumerate() {
                    gb[p] += g[1][k];
                }
                next = 2;
            }
            for (j, e) in earlier.iter().enumerate() {
                for (k, &p) in view_map(&src.shape, e).1.iter().enumerate() {
                    gb[p] += g[next + j][k];
                }
            }
            gin[0].clone_from(&gb);
            for (k, &p) in vm.iter().enumerate() {
                let (_, da, db) = binary(*op, src.data[p], other.data[om[k]]);
                gin[0][p] = gb[p] * da;
                gin[1][om[k]] += gb[p] * db;
            }
            // Back through what made the written tensor from the input.
            if let Fresh::XTanh(a) = fresh {
                for (g, &x) in gin[0].iter_mut().zip(&input.data) {
                    let t = x.tanh();
                    *g *= a * (t + x * (1.0 - t * t));
                }
            }
        }
        Op::XTanh(a) => {
            for (i, &x) in ins[0].data.iter().enumerate() {
                let t = x.tanh();
                gin[0][i] = g0[i] * a * (t + x * (1.0 - t * t));
            }
        }
        Op::Mix => {
            let (a, b) = (ins[0], ins[1]);
            for i in 0..a.data.len() {
                gin[0][i] = g[0][i] * b.data[i] + g[1][i];
                gin[1][i] = g[0][i] * a.data[i] + g[1][i] * b.data[i].cos();
            }
        }
        _ => unreachable!("no gradient rule for {op:?}"),
    }
    gin
}

/// All values of the plan, leaves first, for the given leaf data. Detached values keep their
/// value at the plan's leaves (they are constants to the gradient).
pub(crate) fn forward(plan: &Plan, leaves: &[Vec<f64>]) -> Vec<Val> {
    let mut vals: Vec<Val> = plan
        .leaves
        .iter()
        .zip(leaves)
        .map(|((shape, _, _), data)| Val::new(shape.clone(), data.clone()))
        .collect();
    for Step { op, inputs, .. } in &plan.steps {
        let ins: Vec<&Val> = inputs.iter().map(|&i| &vals[i]).collect();
        let mut outs = apply(op, &ins);
        if let Some(fixed) = plan.detached.get(&vals.len()) {
            outs[0].data.clone_from(fixed);
        }
        vals.extend(outs);
    }
    vals
}

/// `loss = Σ sum(root · weights)`.
pub(crate) fn loss(plan: &Plan, vals: &[Val]) -> f64 {
    plan.roots
        .iter()
        .map(|(r, w)| vals[*r].data.iter().zip(w).map(|(v, w)| v * w).sum::<f64>())
        .sum()
}

/// Gradient of the loss w.r.t. each leaf, by reverse accumulation over the tape.
pub(crate) fn gradient(plan: &Plan, leaves: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let vals = forward(plan, leaves);
    let mut grads: Vec<Vec<f64>> = vals.iter().map(|v| vec![0.0; v.data.len()]).collect();
    for (r, w) in &plan.roots {
        for (g, w) in grads[*r].iter_mut().zip(w) {
            *g += w;
        }
    }
    let mut next = vals.len();
    for step in plan.steps.iter().rev() {
        next -= step.outputs;
        let outs = &vals[next..next + step.outputs];
        let g: Vec<Vec<f64>> = (next..next + step.outputs)
            .map(|i| grads[i].clone())
            .collect();
        let ins: Vec<&Val> = step.inputs.iter().map(|&i| &vals[i]).collect();
        let gin = vjp(&step.op, &ins, outs, &g);
        for (&i, gi) in step.inputs.iter().zip(gin) {
            for (a, b) in grads[i].iter_mut().zip(gi) {
                *a += b;
            }
        }
    }
    grads.truncate(plan.leaves.len());
    grads
}
