//! [`vmap`]: a function mapped over a batch dimension, one call per sample.

use super::{Body, Tree, tree_spec};
use crate::{Error, Result, Tensor};

/// `vmap`'s `in_dims` and `out_dims` (PyTorch's int or tuple): one dimension for every input
/// (or output), or one per input (output), `None` for one that is not mapped. Dimensions may
/// be negative, counting from the end. Made from an [`isize`] or from an array, slice or `Vec`
/// of `Option<isize>`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::Dims;
/// assert_eq!(Dims::from(0), Dims::All(0));
/// assert_eq!(Dims::from([Some(1), None]), Dims::Each(vec![Some(1), None]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dims {
    /// The same dimension for every input or output.
    All(isize),
    /// One per input or output; `None`: not mapped.
    Each(Vec<Option<isize>>),
}

impl From<isize> for Dims {
    fn from(dim: isize) -> Dims {
        Dims::All(dim)
    }
}

impl<const N: usize> From<[Option<isize>; N]> for Dims {
    fn from(dims: [Option<isize>; N]) -> Dims {
        Dims::Each(dims.to_vec())
    }
}

impl From<&[Option<isize>]> for Dims {
    fn from(dims: &[Option<isize>]) -> Dims {
        Dims::Each(dims.to_vec())
    }
}

impl From<Vec<Option<isize>>> for Dims {
    fn from(dims: Vec<Option<isize>>) -> Dims {
        Dims::Each(dims)
    }
}

impl Dims {
    /// One entry per item of `n`, or `None` when the counts differ.
    fn each(&self, n: usize) -> Option<Vec<Option<isize>>> {
        match self {
            Dims::All(d) => Some(vec![Some(*d); n]),
            Dims::Each(v) if v.len() == n => Some(v.clone()),
            Dims::Each(_) => None,
        }
    }

    /// Python's repr: `0`, `(0, None)`, `(0,)`.
    fn repr(&self) -> String {
        match self {
            Dims::All(d) => d.to_string(),
            Dims::Each(v) => {
                let items: Vec<String> = v
                    .iter()
                    .map(|d| d.map_or("None".to_string(), |d| d.to_string()))
                    .collect();
                match items.len() {
                    1 => format!("({},)", items[0]),
                    _ => format!("({})", items.join(", ")),
                }
            }
        }
    }

    /// PyTorch's `TreeSpec` text for these dims.
    fn spec(&self) -> String {
        match self {
            Dims::All(_) => "*".to_string(),
            Dims::Each(v) => tree_spec(v.len()),
        }
    }
}

/// `f` mapped over a dimension of its inputs (`torch.func.vmap(f, in_dims, out_dims)`).
///
/// Input `i` is mapped along `in_dims[i]` (all inputs along the same dimension for a single
/// number; `None`: passed whole to every call); all mapped dimensions must have the same size
/// `B`. The result has, per output of `f`, the `B` results stacked along `out_dims[j]` (`None`:
/// an output that is the same for every sample, returned once).
///
/// **This calls `f` once per sample** (`B` calls, each on the inputs' slices at that index) and
/// stacks the results, where PyTorch calls `f` once with batched tensors: values and gradients
/// agree for functions without side effects or randomness, and transforms nest freely
/// (`vmap(grad(f, 0), 0, 0)` gives per-sample gradients), at the cost of a call per sample. For
/// `B = 0`, `f` runs once on zeros of a sample's shape, to learn its outputs' shapes.
/// `chunk_size` and `randomness` are not offered.
///
/// # Errors
///
/// PyTorch's (naming the function `f`): `vmap(f)(<inputs>): got no inputs. ...`; ``vmap(f,
/// in_dims=(0,), ...)(<inputs>): in_dims is not compatible with the structure of `inputs`.
/// ...``; `vmap(f, in_dims=(0, 2), ...)(<inputs>): Got in_dim=2 for some input, but that input
/// is a Tensor of dimensionality 2 so expected in_dim to satisfy -2 <= in_dim < 2.`; `vmap:
/// Expected at least one Tensor to vmap over`; `vmap: Expected all tensors to have the same
/// size in the mapped dimension, got sizes [2, 3] for the mapped dimension`; ``vmap(f, ...,
/// out_dims=(0,))(<inputs>): out_dims is not compatible with the structure of `outputs`. ...``;
/// `Dimension out of range (expected to be in range of [-1, 0], but got 1)` for an out_dim;
/// ``vmap(f, ...): `f` can not return a BatchedTensor when out_dim is None`` for an output that
/// differs between samples (PyTorch: that depends on the mapped inputs); and any error of `f`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// let w = Tensor::from_vec(vec![1.0f64, 0.0, -1.0], &[3])?;
/// // a dot product per row of x, w shared by every call
/// let dot = |a: &[Tensor]| a[0].mul(&a[1])?.sum();
/// let y = func::vmap(dot, [Some(0), None], 0)(&[x.clone(), w.clone()])?;
/// assert_eq!(y.to_vec::<f64>()?, [-2.0, -2.0]);
/// // per-sample gradients: the gradient of each row's dot product with respect to the row
/// let g = func::vmap(func::grad(dot, 0), [Some(0), None], 0)(&[x, w])?;
/// assert_eq!(g.to_vec::<f64>()?, [1.0, 0.0, -1.0, 1.0, 0.0, -1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn vmap<F, O>(
    mut f: F,
    in_dims: impl Into<Dims>,
    out_dims: impl Into<Dims>,
) -> impl FnMut(&[Tensor]) -> Result<O::Map<Tensor>>
where
    F: FnMut(&[Tensor]) -> Result<O>,
    O: Tree,
{
    let (in_dims, out_dims) = (in_dims.into(), out_dims.into());
    move |args| {
        let outputs = vmap_core(&mut |a| Ok(f(a)?.into_tensors()), args, &in_dims, &out_dims)?;
        Ok(O::rebuild(outputs))
    }
}

/// `vmap`'s work: the stacked outputs.
fn vmap_core(f: Body<'_>, args: &[Tensor], in_dims: &Dims, out_dims: &Dims) -> Result<Vec<Tensor>> {
    if args.is_empty() {
        return Err(Error::msg(
            "vmap(f)(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying \
             to vmap over a function with no inputs. The latter is unsupported.",
        ));
    }
    let Some(dims) = in_dims.each(args.len()) else {
        return Err(Error::msg(format!(
            "vmap(f, in_dims={}, ...)(<inputs>): in_dims is not compatible with the structure of \
             `inputs`. in_dims has structure {} but inputs has structure {}.",
            in_dims.repr(),
            in_dims.spec(),
            tree_spec(args.len())
        )));
    };
    let mut mapped: Vec<Option<usize>> = Vec::with_capacity(args.len());
    let mut sizes = Vec::new();
    for (x, d) in args.iter().zip(dims) {
        let Some(d) = d else {
            mapped.push(None);
            continue;
        };
        let rank = x.ndim() as isize;
        if d < -rank || d >= rank {
            return Err(Error::msg(format!(
                "vmap(f, in_dims={}, ...)(<inputs>): Got in_dim={d} for some input, but that \
                 input is a Tensor of dimensionality {rank} so expected in_dim to satisfy \
                 -{rank} <= in_dim < {rank}.",
                in_dims.repr()
            )));
        }
        let d = if d < 0 { d + rank } else { d } as usize;
        sizes.push(x.shape()[d]);
        mapped.push(Some(d));
    }
    let Some(&batch) = sizes.first() else {
        return Err(Error::msg(
            "vmap: Expected at least one Tensor to vmap over",
        ));
    };
    if sizes.iter().any(|&s| s != batch) {
        return Err(Error::msg(format!(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes \
             {sizes:?} for the mapped dimension"
        )));
    }
    // per_sample[b][output]
    let mut per_sample: Vec<Vec<Tensor>> = Vec::with_capacity(batch);
    let mut is_tuple = false;
    for b in 0..batch.max(1) {
        let sample = args
            .iter()
            .zip(&mapped)
            .map(|(x, d)| match *d {
                None => Ok(x.clone()),
                Some(d) if batch > 0 => x.select(d, b),
                Some(d) => {
                    let mut shape = x.shape().to_vec();
                    shape.remove(d);
                    Tensor::zeros(&shape, x.dtype())?.to(x.device())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let (outputs, tuple) = f(&sample)?;
        if per_sample
            .first()
            .is_some_and(|first| first.len() != outputs.len())
        {
            return Err(Error::msg(
                "vmap(f, ...): `f` returned a different number of outputs for another sample",
            ));
        }
        is_tuple = tuple;
        per_sample.push(outputs);
    }
    let n_out = per_sample[0].len();
    let odims = match out_dims.each(n_out) {
        Some(d) if is_tuple || matches!(out_dims, Dims::All(_)) || n_out == 1 => d,
        _ => {
            let outputs_spec = if is_tuple {
                tree_spec(n_out)
            } else {
                "*".to_string()
            };
            return Err(Error::msg(format!(
                "vmap(f, ..., out_dims={})(<inputs>): out_dims is not compatible with the \
                 structure of `outputs`. out_dims has structure {} but outputs has structure {}.",
                out_dims.repr(),
                out_dims.spec(),
                outputs_spec
            )));
        }
    };
    (0..n_out)
        .map(|j| {
            let samples: Vec<Tensor> = per_sample.iter().map(|s| s[j].clone()).collect();
            stack_output(samples, odims[j], batch)
        })
        .collect()
}

/// One output's samples stacked along `dim` (`None`: the output, the same for every sample).
fn stack_output(samples: Vec<Tensor>, dim: Option<isize>, batch: usize) -> Result<Tensor> {
    let first = &samples[0];
    let Some(dim) = dim else {
        for other in &samples[1..] {
            if other.shape() != first.shape() || !other.eq(first)?.all()?.item::<bool>()? {
                return Err(Error::msg(
                    "vmap(f, ...): `f` can not return a BatchedTensor when out_dim is None",
                ));
            }
        }
        return Ok(first.clone());
    };
    let rank = first.ndim() as isize;
    if dim < -(rank + 1) || dim > rank {
        return Err(Error::DimOutOfRange {
            dim,
            min: -(rank + 1),
            max: rank,
        });
    }
    let dim = if dim < 0 { dim + rank + 1 } else { dim } as usize;
    if batch == 0 {
        let mut shape = first.shape().to_vec();
        shape.insert(dim, 0);
        return Tensor::zeros(&shape, first.dtype())?.to(first.device());
    }
    Tensor::stack(&samples, dim)
}
