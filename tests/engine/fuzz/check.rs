//! The checks run on each program: the library's forward values and gradients against the
//! reference, the library's gradients against central finite differences of its own forward,
//! `grad()` on random subsets of the leaves, `retain_graph` twice, `backward()` into `.grad`,
//! and (for a third of the programs) the gradient of a gradient against finite differences of
//! the reference gradient.

use autograd::{GradOptions, Result, Tensor, grad, no_grad};

use super::library;
use super::op::Plan;
use super::plan::{Rng, plan};
use super::program::Program;
use super::reference;

/// Step of the central differences.
const EPS: f64 = 1e-6;
/// Finite differences against analytic gradients: `|a - b| <= FD_TOL * (1 + |b|)`.
const FD_TOL: f64 = 1e-5;
/// Library against reference (same function, different arithmetic order).
const REF_TOL: f64 = 1e-9;

/// What was checked for one program.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) plan: Plan,
    pub(crate) finite_differences: bool,
    pub(crate) second_order: bool,
}

type Outcome<T> = std::result::Result<T, String>;

fn lib<T>(what: &str, r: Result<T>) -> Outcome<T> {
    r.map_err(|e| format!("{what}: the library returned an error: {e}"))
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) -> Outcome<()> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol * (1.0 + w.abs());
        if !ok {
            return Err(format!(
                "{what}: element {i} is {g}, expected {w} (tolerance {tol})\n got: {got:?}\nwant: {want:?}"
            ));
        }
    }
    Ok(())
}

/// A gradient as a flat vector (zeros for `None`, an unused input).
fn flat(g: &Option<Tensor>, n: usize) -> Outcome<Vec<f64>> {
    match g {
        Some(t) => lib(
            "reading a gradient",
            t.contiguous().and_then(|t| t.to_vec::<f64>()),
        ),
        None => Ok(vec![0.0; n]),
    }
}

fn grad_options(weights: &[Tensor]) -> GradOptions {
    GradOptions::new()
        .grad_outputs(weights.iter().cloned().map(Some).collect())
        .allow_unused(true)
}

/// A fresh graph: leaves at the plan's values, every value, the roots and their weights.
struct Graph {
    leaves: Vec<Tensor>,
    roots: Vec<Tensor>,
    weights: Vec<Tensor>,
}

fn build(plan: &Plan, values: &[Vec<f64>]) -> Outcome<(Graph, Vec<Tensor>)> {
    let leaves = lib("leaves", library::leaves(plan, values))?;
    let vals = lib("forward", library::forward(plan, &leaves, false))?;
    let (roots, weights) = lib("roots", library::roots(plan, &vals))?;
    Ok((
        Graph {
            leaves,
            roots,
            weights,
        },
        vals,
    ))
}

/// The library's loss at `values`, without recording.
fn library_loss(plan: &Plan, values: &[Vec<f64>]) -> Outcome<f64> {
    let _guard = no_grad();
    let leaves = lib("leaves", library::leaves(plan, values))?;
    let vals = lib("forward", library::forward(plan, &leaves, true))?;
    lib(
        "loss",
        library::loss(plan, &vals).and_then(|l| l.item::<f64>()),
    )
}

/// Central differences of `f` w.r.t. every leaf element.
fn central_differences(
    values: &[Vec<f64>],
    mut f: impl FnMut(&[Vec<f64>]) -> Outcome<f64>,
) -> Outcome<Vec<Vec<f64>>> {
    let mut out = vec![];
    let mut x = values.to_vec();
    for l in 0..values.len() {
        let mut g = vec![];
        for i in 0..values[l].len() {
            let v = values[l][i];
            x[l][i] = v + EPS;
            let hi = f(&x)?;
            x[l][i] = v - EPS;
            let lo = f(&x)?;
            x[l][i] = v;
            g.push((hi - lo) / (2.0 * EPS));
        }
        out.push(g);
    }
    Ok(out)
}

/// Runs every check on `program`.
pub(crate) fn check(program: &Program) -> Outcome<Checked> {
    let plan = plan(program);
    let values: Vec<Vec<f64>> = plan.leaves.iter().map(|l| l.1.clone()).collect();
    let sizes: Vec<usize> = values.iter().map(Vec::len).collect();
    let want = reference::gradient(&plan, &values);
    let mut rng = Rng::new(program.seed.rotate_left(17));

    // Forward values, then the full gradient twice on one retained graph.
    let (g, vals) = build(&plan, &values)?;
    let ref_vals = reference::forward(&plan, &values);
    for (i, (t, r)) in vals.iter().zip(&ref_vals).enumerate() {
        if t.shape() != r.shape.as_slice() {
            return Err(format!(
                "value {i}: shape {:?}, expected {:?}",
                t.shape(),
                r.shape
            ));
        }
        let got = lib(
            "reading a value",
            t.contiguous().and_then(|t| t.to_vec::<f64>()),
        )?;
        close(&format!("forward value {i}"), &got, &r.data, REF_TOL)?;
    }
    let first = lib(
        "grad (retain_graph)",
        grad(
            &g.roots,
            &g.leaves,
            grad_options(&g.weights).retain_graph(true),
        ),
    )?;
    let second = lib(
        "grad (second run on the retained graph)",
        grad(&g.roots, &g.leaves, grad_options(&g.weights)),
    )?;
    let mut full = vec![];
    for (l, n) in sizes.iter().enumerate() {
        let a = flat(&first[l], *n)?;
        let b = flat(&second[l], *n)?;
        if a != b {
            return Err(format!(
                "leaf {l}: the second grad() on a retained graph gave {b:?}, the first {a:?}"
            ));
        }
        close(
            &format!("grad of leaf {l} vs reference"),
            &a,
            &want[l],
            REF_TOL,
        )?;
        full.push(a);
    }
    drop((g, vals));

    // A random non-empty subset of the leaves, in a random order.
    let (g, _vals) = build(&plan, &values)?;
    let mut subset: Vec<usize> = (0..sizes.len())
        .filter(|_| rng.next_u64().is_multiple_of(2))
        .collect();
    if subset.is_empty() {
        subset.push(rng.next_u64() as usize % sizes.len());
    }
    if rng.next_u64().is_multiple_of(2) {
        subset.reverse();
    }
    let inputs: Vec<Tensor> = subset.iter().map(|&l| g.leaves[l].clone()).collect();
    let part = lib(
        "grad (subset of inputs)",
        grad(&g.roots, &inputs, grad_options(&g.weights)),
    )?;
    for (k, &l) in subset.iter().enumerate() {
        let a = flat(&part[k], sizes[l])?;
        close(
            &format!("grad of leaf {l} w.r.t. the subset {subset:?} vs the full grad"),
            &a,
            &full[l],
            1e-12,
        )?;
    }

    // `backward()` on a loss built from library ops accumulates the same into `.grad`.
    let (g, vals) = build(&plan, &values)?;
    lib(
        "backward",
        library::loss(&plan, &vals).and_then(|l| l.backward()),
    )?;
    for (l, leaf) in g.leaves.iter().enumerate() {
        let a = flat(&leaf.grad(), sizes[l])?;
        close(
            &format!(".grad of leaf {l} vs reference"),
            &a,
            &want[l],
            REF_TOL,
        )?;
    }

    // Finite differences of the library's own forward, and of the reference's.
    if plan.fd_safe {
        let fd = central_differences(&values, |x| {
            Ok(reference::loss(&plan, &reference::forward(&plan, x)))
        })?;
        for (l, fd) in fd.iter().enumerate() {
            close(
                &format!("reference grad of leaf {l} vs its finite differences"),
                &want[l],
                fd,
                FD_TOL,
            )?;
        }
        let fd = central_differences(&values, |x| library_loss(&plan, x))?;
        for (l, fd) in fd.iter().enumerate() {
            close(
                &format!("grad of leaf {l} vs finite differences"),
                &full[l],
                fd,
                FD_TOL,
            )?;
        }
    }

    // Second order: the gradient of Σ g·v, against finite differences of the reference's Σ g·v
    // (in-place ops on views included: CopySlices is differentiable under create_graph).
    let second_order = plan.fd_safe && program.seed.is_multiple_of(3);
    if second_order {
        let (g, _vals) = build(&plan, &values)?;
        let first = lib(
            "grad (create_graph)",
            grad(
                &g.roots,
                &g.leaves,
                grad_options(&g.weights).create_graph(true),
            ),
        )?;
        let v: Vec<Vec<f64>> = sizes.iter().map(|&n| rng.values(n)).collect();
        let mut s: Option<Tensor> = None;
        for (l, gl) in first.iter().enumerate() {
            close(
                &format!("create_graph grad of leaf {l} vs reference"),
                &flat(gl, sizes[l])?,
                &want[l],
                REF_TOL,
            )?;
            let Some(gl) = gl.as_ref().filter(|t| t.requires_grad()) else {
                continue;
            };
            let vt = lib("v", Tensor::from_vec(v[l].clone(), gl.shape()))?;
            let term = lib("Σ g·v", gl.mul(&vt).and_then(|t| t.sum()))?;
            s = Some(match s {
                Some(s) => lib("Σ g·v", s.add(&term))?,
                None => term,
            });
        }
        let hess_v = match s {
            Some(s) => lib(
                "grad of a grad",
                grad(&[s], &g.leaves, GradOptions::new().allow_unused(true)),
            )?,
            None => vec![None; sizes.len()],
        };
        let phi = |x: &[Vec<f64>]| -> Outcome<f64> {
            let gx = reference::gradient(&plan, x);
            Ok(gx
                .iter()
                .flatten()
                .zip(v.iter().flatten())
                .map(|(a, b)| a * b)
                .sum())
        };
        let fd = central_differences(&values, phi)?;
        for (l, fd) in fd.iter().enumerate() {
            close(
                &format!("grad of Σ grad·v for leaf {l} vs finite differences"),
                &flat(&hess_v[l], sizes[l])?,
                fd,
                FD_TOL,
            )?;
        }
    }
    Ok(Checked {
        finite_differences: plan.fd_safe,
        plan,
        second_order,
    })
}
