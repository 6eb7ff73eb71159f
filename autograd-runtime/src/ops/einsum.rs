//! `einsum`: Einstein summation over one or more operands (PyTorch's `torch.einsum`), composed
//! from recorded ops, so its first and second derivatives come from theirs.
//!
//! The equation is parsed as PyTorch parses it: labels `[a-zA-Z]` (upper case before lower case
//! in an implicit output), at most one `...` per operand and in the output, spaces ignored.
//! Every operand is then brought to one common dimension order, the output's dims followed by
//! the summed ones: a repeated label becomes a diagonal, a missing label a dim of size 1. The
//! operands are contracted left to right, two at a time; a dim that only one of the two
//! still holds (and no later operand has) is summed first, and the product of a pair over the
//! dims both sum is one `bmm` on `[shared, left-only, summed] x [shared, summed, right-only]`
//! (PyTorch's `sumproduct_pair`), so a large contraction is a matrix product, not an
//! element-wise product followed by a sum.

use crate::graph::copy_slices::StridedGeometry;
use crate::layout::{Dims, Layout, contiguous_strides};
use crate::{Error, Result, Tensor};

/// Letters per case: labels `A..=Z` are `0..26`, `a..=z` are `26..52`.
const LETTERS: usize = 26;
/// Number of distinct labels.
const LABELS: usize = 2 * LETTERS;

/// One subscript of an operand: a label or the ellipsis.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subscript {
    Label(usize),
    Ellipsis,
}

/// The label index of `c`, an ASCII letter.
fn label_index(c: u8) -> usize {
    if c.is_ascii_uppercase() {
        usize::from(c - b'A')
    } else {
        usize::from(c - b'a') + LETTERS
    }
}

/// The letter of label index `s`.
fn label_char(s: usize) -> char {
    // `s < LABELS`, so both casts stay within ASCII letters.
    if s < LETTERS {
        char::from(b'A' + s as u8)
    } else {
        char::from(b'a' + (s - LETTERS) as u8)
    }
}

fn invalid_subscript(index: usize) -> Error {
    Error::msg(format!(
        "einsum(): invalid subscript given at index {index} in the equation string, subscripts must be in [a-zA-Z]"
    ))
}

fn size_error(message: String) -> Error {
    Error::SizeMismatch {
        op: "einsum",
        message,
    }
}

/// The subscripts of each operand, from the equation's left-hand side.
fn parse_inputs(lhs: &[u8], num_ops: usize) -> Result<Vec<Vec<Subscript>>> {
    let mut subscripts: Vec<Vec<Subscript>> = vec![Vec::new(); num_ops];
    let mut ellipsis_seen = false;
    let mut op = 0;
    let mut i = 0;
    while i < lhs.len() {
        match lhs[i] {
            b' ' => {}
            b'.' => {
                if ellipsis_seen {
                    return Err(Error::msg(format!(
                        "einsum(): found '.' for operand {op} for which an ellipsis was already found"
                    )));
                }
                if !(i + 2 < lhs.len() && lhs[i + 1] == b'.' && lhs[i + 2] == b'.') {
                    return Err(Error::msg(format!(
                        "einsum(): found '.' for operand {op} that is not part of any ellipsis"
                    )));
                }
                i += 2;
                subscripts[op].push(Subscript::Ellipsis);
                ellipsis_seen = true;
            }
            b',' => {
                op += 1;
                if op >= num_ops {
                    return Err(Error::msg(
                        "einsum(): fewer operands were provided than specified in the equation",
                    ));
                }
                ellipsis_seen = false;
            }
            c if c.is_ascii_alphabetic() => subscripts[op].push(Subscript::Label(label_index(c))),
            _ => return Err(invalid_subscript(i)),
        }
        i += 1;
    }
    if op != num_ops - 1 {
        return Err(Error::msg(
            "einsum(): more operands were provided than specified in the equation",
        ));
    }
    Ok(subscripts)
}

/// Where every label and the ellipsis dims sit in the common dimension order: the output's dims
/// first (`out_dims` of them), then the summed ones (`total_dims` in all).
struct Alignment {
    /// The position of each label, `None` for labels the equation does not use.
    label_pos: [Option<usize>; LABELS],
    /// The position of the first ellipsis dim.
    ellipsis_pos: usize,
    /// The number of output dims.
    out_dims: usize,
    /// The number of dims in all.
    total_dims: usize,
}

/// The common dimension order, from the right-hand side when there is one (`rhs` with its byte
/// offset in the equation) and else PyTorch's implicit output: the ellipsis dims, then the labels
/// used once, upper case before lower case, each alphabetically.
fn align(
    rhs: Option<(&[u8], usize)>,
    label_count: &[usize; LABELS],
    ellipsis_dims: usize,
) -> Result<Alignment> {
    let mut label_pos = [None; LABELS];
    let mut next = 0;
    let mut ellipsis_pos = 0;
    let ellipsis_in_output;
    match rhs {
        None => {
            next = ellipsis_dims;
            ellipsis_in_output = true;
            for (label, &count) in label_count.iter().enumerate() {
                if count == 1 {
                    label_pos[label] = Some(next);
                    next += 1;
                }
            }
        }
        Some((rhs, offset)) => {
            let mut seen = false;
            let mut i = 0;
            while i < rhs.len() {
                match rhs[i] {
                    b' ' => {}
                    b'.' => {
                        if seen {
                            return Err(Error::msg(
                                "einsum(): found '.' for output but an ellipsis (...) was already found",
                            ));
                        }
                        if !(i + 2 < rhs.len() && rhs[i + 1] == b'.' && rhs[i + 2] == b'.') {
                            return Err(Error::msg(
                                "einsum(): found '.' for output that is not part of any ellipsis (...)",
                            ));
                        }
                        i += 2;
                        ellipsis_pos = next;
                        next += ellipsis_dims;
                        seen = true;
                    }
                    c if c.is_ascii_alphabetic() => {
                        let label = label_index(c);
                        if label_pos[label].is_some() {
                            return Err(Error::msg(format!(
                                "einsum(): output subscript {} appears more than once in the output",
                                char::from(c)
                            )));
                        }
                        if label_count[label] == 0 {
                            return Err(Error::msg(format!(
                                "einsum(): output subscript {} does not appear in the equation for any input operand",
                                char::from(c)
                            )));
                        }
                        label_pos[label] = Some(next);
                        next += 1;
                    }
                    _ => return Err(invalid_subscript(offset + i)),
                }
                i += 1;
            }
            ellipsis_in_output = seen;
        }
    }
    let out_dims = next;
    if !ellipsis_in_output {
        ellipsis_pos = next;
        next += ellipsis_dims;
    }
    for (label, &count) in label_count.iter().enumerate() {
        if count > 0 && label_pos[label].is_none() {
            label_pos[label] = Some(next);
            next += 1;
        }
    }
    Ok(Alignment {
        label_pos,
        ellipsis_pos,
        out_dims,
        total_dims: next,
    })
}

/// `x`'s diagonal over dims `d0 < d1` of equal size, put at `d0` (`d1` removed): PyTorch's
/// `x.diagonal(0, d0, d1).movedim(-1, d0)`. Read through `as_strided`, so it is recorded and its
/// gradient (zeros with the diagonal filled in) is recorded too.
fn diagonal(x: &Tensor, d0: usize, d1: usize) -> Result<Tensor> {
    let base = Layout::contiguous(x.shape());
    let mut shape: Dims = base.shape.clone();
    let mut strides: Dims = contiguous_strides(x.shape());
    strides[d0] += strides[d1];
    shape.remove(d1);
    strides.remove(d1);
    let geometry = StridedGeometry {
        base,
        view: Layout {
            shape,
            strides,
            offset: 0,
        },
    };
    x.as_strided(&geometry)
}

/// `left * right` summed over `sum_dims` (kept as dims of size 1), both operands having the same
/// number of dims, each of size 1 or the shared size: one `bmm` (PyTorch's `sumproduct_pair`).
fn sum_product_pair(left: &Tensor, right: &Tensor, sum_dims: &[usize]) -> Result<Tensor> {
    if sum_dims.is_empty() {
        return left.mul(right);
    }
    let mut left = left.clone();
    let mut right = right.clone();
    // Dims in both operands and the output, only in the left one (and the output), only in the
    // right one; with the products of their sizes.
    let (mut lro, mut lo, mut ro) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lro_size, mut lo_size, mut ro_size, mut sum_size) = (1, 1, 1, 1);
    for d in 0..left.ndim() {
        let (nl, nr) = (left.shape()[d], right.shape()[d]);
        let (sl, sr) = (nl != 1, nr != 1);
        if sl && sr && nl != nr {
            // Ruled out by `einsum`'s size checks; PyTorch's `sumproduct_pair` text.
            return Err(size_error(
                "non-broadcast dimensions must match".to_string(),
            ));
        }
        if sum_dims.contains(&d) {
            if sl && sr {
                sum_size *= nl;
            } else if sl {
                left = left.sum_dims(&[d], true)?;
            } else if sr {
                right = right.sum_dims(&[d], true)?;
            }
        } else if sl && sr {
            lro.push(d);
            lro_size *= nl;
        } else if sl {
            lo.push(d);
            lo_size *= nl;
        } else {
            ro.push(d);
            ro_size *= nr;
        }
    }
    // left: [lro, lo, summed] (the `ro` dims are 1 there), right: [lro, summed, ro] (the `lo`
    // dims are 1 there); the product is [lro, lo, ro], viewed with 1s for the summed dims and
    // permuted back.
    let left_perm: Vec<usize> = [&lro, &lo, sum_dims, &ro].concat();
    let right_perm: Vec<usize> = [&lro, sum_dims, &ro, &lo].concat();
    let out_order = &left_perm;
    let out_shape: Vec<usize> = out_order
        .iter()
        .map(|&d| {
            if sum_dims.contains(&d) {
                1
            } else if lo.contains(&d) {
                left.shape()[d]
            } else {
                right.shape()[d].max(left.shape()[d])
            }
        })
        .collect();
    let mut inverse = vec![0; out_order.len()];
    for (i, &d) in out_order.iter().enumerate() {
        inverse[d] = i;
    }
    let left = left
        .permute(&left_perm)?
        .reshape(&[lro_size, lo_size, sum_size])?;
    let right = right
        .permute(&right_perm)?
        .reshape(&[lro_size, sum_size, ro_size])?;
    left.bmm(&right)?.reshape(&out_shape)?.permute(&inverse)
}

/// Einstein summation over `operands` as `equation` spells it (PyTorch's `torch.einsum`).
///
/// `equation` names each operand's dims with letters (`a-z`, `A-Z`), operands separated by
/// commas, and optionally the output's dims after `->`. Labels in the output are kept, the others
/// summed over; a label repeated within one operand takes its diagonal (`"ii->i"`); `...` stands
/// for the dims no label names, broadcast across operands (`"...ij,...jk->...ik"`); dims of size
/// 1 broadcast against the same label's size in other operands. Without `->` the output is the
/// `...` dims followed by the labels that appear once, upper case letters first, each in
/// alphabetical order (`"ij,jk"` is a matrix product, `"ji"` a transpose, `"ii"` the trace).
/// Spaces are ignored.
///
/// The operands are contracted left to right, two at a time, each pair through one batched
/// matrix product (`bmm`); the result is recorded as those ops, so it has first and second
/// derivatives. The operands' dtypes follow the ops': a contraction needs equal dtypes (as
/// PyTorch's `bmm`), a plain product promotes.
///
/// # Errors
///
/// PyTorch's texts, all starting with `einsum(): `, for: no operands, more or fewer operands
/// than the equation names (`more operands were provided than specified in the equation`), a
/// character that is not a letter, a misplaced `.`, an operand whose dimension count does not
/// match its subscripts (`the number of subscripts in the equation (2) does not match the number
/// of dimensions (3) for operand 0 and no ellipsis was given`), an output subscript repeated or
/// not among the inputs, a repeated label with two sizes (`subscript i is repeated for operand 0
/// but the sizes don't match, 3 != 2`), a label (`subscript j has size 4 for operand 1 which does
/// not broadcast with previously seen size 3`) or an ellipsis dimension whose sizes do not
/// broadcast; the errors of the ops it runs (a dtype mismatch in `bmm`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{Tensor, einsum};
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// let b = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2])?;
/// // A matrix product, explicit and implicit.
/// let c = einsum("ij,jk->ik", &[&a, &b])?;
/// assert_eq!(c.to_vec::<f64>()?, vec![4.0, 5.0, 10.0, 11.0]);
/// assert_eq!(einsum("ij,jk", &[&a, &b])?.to_vec::<f64>()?, c.to_vec::<f64>()?);
/// // The trace, a transpose, a sum, the diagonal.
/// assert_eq!(einsum("ii", &[&c])?.item::<f64>()?, 15.0);
/// assert_eq!(einsum("ij->ji", &[&a])?.shape(), &[3, 2]);
/// assert_eq!(einsum("ij->", &[&a])?.item::<f64>()?, 21.0);
/// assert_eq!(einsum("ii->i", &[&c])?.to_vec::<f64>()?, vec![4.0, 11.0]);
/// // Batched, with `...` broadcasting the leading dims.
/// let x = Tensor::ones(&[4, 1, 2, 3], autograd_runtime::DType::F32)?;
/// let y = Tensor::ones(&[5, 3, 2], autograd_runtime::DType::F32)?;
/// assert_eq!(einsum("...ij,...jk->...ik", &[&x, &y])?.shape(), &[4, 5, 2, 2]);
/// // Gradients flow to every operand.
/// let w = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let v = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?;
/// einsum("i,j->", &[&w, &v])?.backward()?;
/// assert_eq!(w.grad().unwrap().to_vec::<f64>()?, vec![7.0, 7.0]);
/// // Errors in PyTorch's words.
/// assert_eq!(
///     einsum("ij", &[&a, &b]).unwrap_err().to_string(),
///     "einsum(): more operands were provided than specified in the equation"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
    crate::amp::autocast_entry!(einsum(equation, operands));
    if operands.is_empty() {
        return Err(Error::msg(
            "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list",
        ));
    }
    let num_ops = operands.len();
    let bytes = equation.as_bytes();
    let arrow = equation.find("->");
    let lhs = &bytes[..arrow.unwrap_or(bytes.len())];
    let subscripts = parse_inputs(lhs, num_ops)?;

    // How many operands use each label, and how many dims the widest `...` covers.
    let mut label_count = [0usize; LABELS];
    let mut ellipsis_dims = 0;
    for (i, (subs, op)) in subscripts.iter().zip(operands).enumerate() {
        let ndim = op.ndim();
        let has_ellipsis = subs.contains(&Subscript::Ellipsis);
        let labels = subs.len() - usize::from(has_ellipsis);
        for s in subs {
            if let Subscript::Label(l) = *s {
                label_count[l] += 1;
            }
        }
        if has_ellipsis {
            if labels > ndim {
                return Err(size_error(format!(
                    "einsum(): the number of subscripts in the equation ({labels}) is more than the number of dimensions ({ndim}) for operand {i}"
                )));
            }
            ellipsis_dims = ellipsis_dims.max(ndim - labels);
        } else if labels != ndim {
            return Err(size_error(format!(
                "einsum(): the number of subscripts in the equation ({labels}) does not match the number of dimensions ({ndim}) for operand {i} and no ellipsis was given"
            )));
        }
    }

    let rhs = arrow.map(|a| (&bytes[a + 2..], a + 2));
    let Alignment {
        label_pos,
        ellipsis_pos,
        out_dims,
        total_dims,
    } = align(rhs, &label_count, ellipsis_dims)?;
    let pos = |l: usize| label_pos[l].unwrap_or(0);

    // Bring every operand to the common order: sizes checked, diagonals taken, missing dims
    // added; `dim_counts` counts the operands in which each dim has a size other than 1.
    let mut label_size = [1usize; LABELS];
    let mut ellipsis_sizes = vec![1usize; ellipsis_dims];
    let mut dim_counts = vec![0usize; total_dims];
    let mut ops: Vec<Tensor> = Vec::with_capacity(num_ops);
    for (i, (subs, &operand)) in subscripts.iter().zip(operands).enumerate() {
        let mut op = operand.clone();
        let mut perm: Vec<Option<usize>> = vec![None; total_dims];
        let mut dim = 0;
        for s in subs {
            match *s {
                Subscript::Ellipsis => {
                    let covered = operand.ndim() - (subs.len() - 1);
                    for j in ellipsis_dims - covered..ellipsis_dims {
                        let n = op.shape()[dim];
                        if n != 1 {
                            if ellipsis_sizes[j] != 1 && ellipsis_sizes[j] != n {
                                // PyTorch's text has no space before "has".
                                return Err(size_error(format!(
                                    "einsum(): dimension {dim} covered by ellipsis in operand {i}has size {n} which does not broadcast with previously seen ellipsis with size {} for the respective dimension",
                                    ellipsis_sizes[j]
                                )));
                            }
                            ellipsis_sizes[j] = n;
                            dim_counts[ellipsis_pos + j] += 1;
                        }
                        perm[ellipsis_pos + j] = Some(dim);
                        dim += 1;
                    }
                }
                Subscript::Label(l) => match perm[pos(l)] {
                    None => {
                        let n = op.shape()[dim];
                        if n != 1 {
                            if label_size[l] != 1 && label_size[l] != n {
                                return Err(size_error(format!(
                                    "einsum(): subscript {} has size {n} for operand {i} which does not broadcast with previously seen size {}",
                                    label_char(l),
                                    label_size[l]
                                )));
                            }
                            label_size[l] = n;
                            dim_counts[pos(l)] += 1;
                        }
                        perm[pos(l)] = Some(dim);
                        dim += 1;
                    }
                    Some(prev) => {
                        let (n, m) = (op.shape()[dim], op.shape()[prev]);
                        if n != m {
                            return Err(size_error(format!(
                                "einsum(): subscript {} is repeated for operand {i} but the sizes don't match, {n} != {m}",
                                label_char(l)
                            )));
                        }
                        op = diagonal(&op, prev, dim)?;
                    }
                },
            }
        }
        let mut permutation = Vec::with_capacity(total_dims);
        for p in perm {
            match p {
                Some(d) => permutation.push(d),
                None => {
                    op = op.unsqueeze(dim as isize)?;
                    permutation.push(dim);
                    dim += 1;
                }
            }
        }
        ops.push(op.permute(&permutation)?);
    }

    // Contract left to right: the product so far with the next operand.
    let mut ops = ops.into_iter();
    let mut result = ops
        .next()
        .ok_or_else(|| Error::msg("internal error: einsum without operands"))?;
    for mut b in ops {
        let mut a = result;
        let mut sum_dims = Vec::new();
        let mut a_sum = Vec::new();
        let mut b_sum = Vec::new();
        for (d, count) in dim_counts.iter_mut().enumerate().skip(out_dims) {
            let (na, nb) = (a.shape()[d], b.shape()[d]);
            if na != 1 && nb != 1 {
                *count = count.saturating_sub(1);
                if *count == 1 {
                    // No later operand holds the dim: this product sums it.
                    sum_dims.push(d);
                    *count = 0;
                }
            } else if *count == 1 {
                // Only one of the pair holds the dim: sum it out of that one first.
                if na != 1 {
                    a_sum.push(d);
                    *count = 0;
                } else if nb != 1 {
                    b_sum.push(d);
                    *count = 0;
                }
            }
        }
        if !a_sum.is_empty() {
            a = a.sum_dims(&a_sum, true)?;
        }
        if !b_sum.is_empty() {
            b = b.sum_dims(&b_sum, true)?;
        }
        result = sum_product_pair(&a, &b, &sum_dims)?;
    }

    if total_dims == out_dims {
        return Ok(result);
    }
    if num_ops > 1 {
        // The summed dims are all of size 1 by now.
        let shape = result.shape()[..out_dims].to_vec();
        result.reshape(&shape)
    } else {
        let dims: Vec<usize> = (out_dims..total_dims).collect();
        result.sum_dims(&dims, false)
    }
}
