//! `einsum` against PyTorch 2.15: values for every form of equation (explicit and implicit
//! output, diagonals, sums, transposes, batch and chained products, outer products, bilinear and
//! attention forms, `...` broadcasting, spaces, upper case labels, 0-dim operands), the error
//! texts, first and second derivatives against finite differences, and contractions reaching
//! `bmm`.
//!
//! The expected values are printed by `tests/ops/einsum_values.py` from the same inputs.

use autograd::*;

type R = Result<()>;

struct Case {
    equation: &'static str,
    shapes: &'static [&'static [usize]],
    out_shape: &'static [usize],
    values: &'static [f64],
}

/// Operand `k`'s values, as `einsum_values.py` makes them: `((7 n + 5 k + 3) % 13 - 6) / 4`.
fn values(shape: &[usize], k: usize) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| (((7 * i + 5 * k + 3) % 13) as f64 - 6.0) / 4.0)
        .collect()
}

fn operand(shape: &[usize], k: usize) -> Tensor {
    Tensor::from_vec(values(shape, k), shape).unwrap()
}

fn operands(shapes: &[&[usize]]) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, s)| operand(s, k))
        .collect()
}

fn run(equation: &str, ops: &[Tensor]) -> Result<Tensor> {
    let refs: Vec<&Tensor> = ops.iter().collect();
    einsum(equation, &refs)
}

const VALUE_CASES: &[Case] = &[
    Case {
        equation: "ij,jk->ik",
        shapes: &[&[2, 3], &[3, 4]],
        out_shape: &[2, 4],
        values: &[-0.125, 0.25, 1.4375, 0.1875, 2.625, -1.125, -1.625, -0.5],
    },
    Case {
        equation: "ij,jk",
        shapes: &[&[2, 3], &[3, 4]],
        out_shape: &[2, 4],
        values: &[-0.125, 0.25, 1.4375, 0.1875, 2.625, -1.125, -1.625, -0.5],
    },
    Case {
        equation: " i j , j k -> i k ",
        shapes: &[&[2, 3], &[3, 4]],
        out_shape: &[2, 4],
        values: &[-0.125, 0.25, 1.4375, 0.1875, 2.625, -1.125, -1.625, -0.5],
    },
    Case {
        equation: "Ab,bC->AC",
        shapes: &[&[2, 3], &[3, 2]],
        out_shape: &[2, 2],
        values: &[-0.125, 0.25, 1.9375, -1.8125],
    },
    Case {
        equation: "aB,Ba",
        shapes: &[&[2, 3], &[3, 2]],
        out_shape: &[],
        values: &[-1.9375],
    },
    Case {
        equation: "ba,ab",
        shapes: &[&[3, 2], &[2, 3]],
        out_shape: &[],
        values: &[-0.3125],
    },
    Case {
        equation: "ii->i",
        shapes: &[&[3, 3]],
        out_shape: &[3],
        values: &[-0.75, -0.25, 0.25],
    },
    Case {
        equation: "ii",
        shapes: &[&[3, 3]],
        out_shape: &[],
        values: &[-0.75],
    },
    Case {
        equation: "iji->ij",
        shapes: &[&[3, 2, 3]],
        out_shape: &[3, 2],
        values: &[-0.75, 1.25, -1.5, 0.5, 1.0, -0.25],
    },
    Case {
        equation: "iij->j",
        shapes: &[&[2, 2, 3]],
        out_shape: &[3],
        values: &[-2.0, 1.5, -1.5],
    },
    Case {
        equation: "ij->",
        shapes: &[&[2, 3]],
        out_shape: &[],
        values: &[2.25],
    },
    Case {
        equation: "ij->ji",
        shapes: &[&[2, 3]],
        out_shape: &[3, 2],
        values: &[-0.75, 1.25, 1.0, -0.25, -0.5, 1.5],
    },
    Case {
        equation: "ji",
        shapes: &[&[2, 3]],
        out_shape: &[3, 2],
        values: &[-0.75, 1.25, 1.0, -0.25, -0.5, 1.5],
    },
    Case {
        equation: "bA",
        shapes: &[&[2, 3]],
        out_shape: &[3, 2],
        values: &[-0.75, 1.25, 1.0, -0.25, -0.5, 1.5],
    },
    Case {
        equation: "ij->j",
        shapes: &[&[2, 3]],
        out_shape: &[3],
        values: &[0.5, 0.75, 1.0],
    },
    Case {
        equation: "bij,bjk->bik",
        shapes: &[&[2, 2, 3], &[2, 3, 2]],
        out_shape: &[2, 2, 2],
        values: &[
            -0.125, 0.25, 1.9375, -1.8125, -2.625, 0.0625, 0.6875, 0.0625,
        ],
    },
    Case {
        equation: "i,j->ij",
        shapes: &[&[3], &[4]],
        out_shape: &[3, 4],
        values: &[
            -0.375, 0.75, -0.5625, 0.5625, 0.5, -1.0, 0.75, -0.75, -0.25, 0.5, -0.375, 0.375,
        ],
    },
    Case {
        equation: "i,i->",
        shapes: &[&[4], &[4]],
        out_shape: &[],
        values: &[-2.6875],
    },
    Case {
        equation: "ij,ij->i",
        shapes: &[&[2, 3], &[2, 3]],
        out_shape: &[2],
        values: &[-1.75, -1.9375],
    },
    Case {
        equation: "ij,ij->ij",
        shapes: &[&[2, 1], &[2, 3]],
        out_shape: &[2, 3],
        values: &[-0.375, 0.75, -0.5625, -0.75, 1.0, -0.5],
    },
    Case {
        equation: "ab,cd->",
        shapes: &[&[2, 3], &[2, 2]],
        out_shape: &[],
        values: &[-1.125],
    },
    Case {
        equation: "ab,cd->da",
        shapes: &[&[2, 3], &[2, 2]],
        out_shape: &[2, 2],
        values: &[-0.3125, 3.125, 0.4375, -4.375],
    },
    Case {
        equation: "bn,anm,bm->ba",
        shapes: &[&[2, 3], &[4, 3, 2], &[2, 2]],
        out_shape: &[2, 4],
        values: &[
            0.25, -1.953125, -0.5, 0.140625, -3.328125, 1.359375, 4.015625, 0.171875,
        ],
    },
    Case {
        equation: "bhqd,bhkd->bhqk",
        shapes: &[&[2, 2, 3, 4], &[2, 2, 5, 4]],
        out_shape: &[2, 2, 3, 5],
        values: &[
            -2.6875, -2.1875, -0.0625, 2.875, 3.375, -0.5, -0.625, -0.75, -0.0625, -0.1875, 2.5,
            1.75, -0.625, -2.1875, -2.9375, -0.5625, 2.125, 2.375, 2.625, -2.8125, -0.6875, 1.375,
            2.625, 3.875, -3.8125, 0.0, -1.8125, -2.8125, -3.8125, 4.125, 3.125, 3.125, -2.5625,
            -2.5625, -2.5625, 3.125, 4.125, -3.8125, -2.8125, -1.8125, -2.5625, -3.8125, 3.875,
            2.625, 1.375, -0.5625, -2.4375, -2.6875, -0.5, 2.5, -0.4375, -2.9375, -2.1875, -0.625,
            1.75, 4.5625, -0.1875, -0.0625, -0.75, -0.625,
        ],
    },
    Case {
        equation: "...ij,...jk->...ik",
        shapes: &[&[2, 1, 2, 3], &[3, 3, 2]],
        out_shape: &[2, 3, 2, 2],
        values: &[
            -0.125, 0.25, 1.9375, -1.8125, 1.3125, 0.0625, -1.0625, 0.0625, 0.3125, -0.125,
            -2.4375, 1.9375, -0.875, 1.0, -1.25, 1.375, -2.625, 0.0625, 0.6875, 0.0625, 1.3125,
            -0.875, 1.8125, -1.25,
        ],
    },
    Case {
        equation: "...ij,...jk",
        shapes: &[&[2, 1, 2, 3], &[3, 3, 2]],
        out_shape: &[2, 3, 2, 2],
        values: &[
            -0.125, 0.25, 1.9375, -1.8125, 1.3125, 0.0625, -1.0625, 0.0625, 0.3125, -0.125,
            -2.4375, 1.9375, -0.875, 1.0, -1.25, 1.375, -2.625, 0.0625, 0.6875, 0.0625, 1.3125,
            -0.875, 1.8125, -1.25,
        ],
    },
    Case {
        equation: "i...->...",
        shapes: &[&[3, 2, 2]],
        out_shape: &[2, 2],
        values: &[-0.75, 1.25, 0.0, -1.25],
    },
    Case {
        equation: "...ii->...i",
        shapes: &[&[2, 3, 3]],
        out_shape: &[2, 3],
        values: &[-0.75, -0.25, 0.25, -1.25, -0.75, -0.25],
    },
    Case {
        equation: "ij,jk,kl->il",
        shapes: &[&[2, 3], &[3, 2], &[2, 4]],
        out_shape: &[2, 4],
        values: &[
            -0.0625, 0.15625, -0.03125, 0.1875, -1.09375, -0.875, -1.0625, -0.84375,
        ],
    },
    Case {
        equation: "i,i,i->i",
        shapes: &[&[3], &[3], &[3]],
        out_shape: &[3],
        values: &[0.5625, -0.25, 0.46875],
    },
    Case {
        equation: "bi,bi,bj->bj",
        shapes: &[&[2, 3], &[2, 3], &[2, 2]],
        out_shape: &[2, 2],
        values: &[2.625, -0.4375, 2.421875, -0.96875],
    },
    Case {
        equation: "",
        shapes: &[&[]],
        out_shape: &[],
        values: &[-0.75],
    },
    Case {
        equation: ",->",
        shapes: &[&[], &[]],
        out_shape: &[],
        values: &[-0.375],
    },
    Case {
        equation: "i,->i",
        shapes: &[&[3], &[]],
        out_shape: &[3],
        values: &[-0.375, 0.5, -0.25],
    },
];

const ERROR_CASES: &[(&str, &[&[usize]], &str)] = &[
    (
        "ij",
        &[&[2, 3], &[3]],
        "einsum(): more operands were provided than specified in the equation",
    ),
    (
        "ij,jk->ik",
        &[&[2, 3]],
        "einsum(): fewer operands were provided than specified in the equation",
    ),
    (
        "ij",
        &[&[2, 3, 4]],
        "einsum(): the number of subscripts in the equation (2) does not match the number of dimensions (3) for operand 0 and no ellipsis was given",
    ),
    (
        "...ijk",
        &[&[2, 3]],
        "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (2) for operand 0",
    ),
    (
        "ii",
        &[&[2, 3]],
        "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2",
    ),
    (
        "ij,jk->ik",
        &[&[2, 3], &[4, 5]],
        "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3",
    ),
    (
        "bij,bjk->bik",
        &[&[2, 2, 3], &[3, 3, 4]],
        "einsum(): subscript b has size 3 for operand 1 which does not broadcast with previously seen size 2",
    ),
    (
        "...ij,...jk->...ik",
        &[&[2, 3, 2, 3], &[5, 3, 4]],
        "einsum(): dimension 0 covered by ellipsis in operand 1has size 5 which does not broadcast with previously seen ellipsis with size 3 for the respective dimension",
    ),
    (
        "i1",
        &[&[2, 3]],
        "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]",
    ),
    (
        "i.j",
        &[&[2, 3]],
        "einsum(): found '.' for operand 0 that is not part of any ellipsis",
    ),
    (
        "i....j",
        &[&[2, 3]],
        "einsum(): found '.' for operand 0 for which an ellipsis was already found",
    ),
    (
        "ij->ii",
        &[&[2, 3]],
        "einsum(): output subscript i appears more than once in the output",
    ),
    (
        "ij->k",
        &[&[2, 3]],
        "einsum(): output subscript k does not appear in the equation for any input operand",
    ),
    (
        "ij->i.",
        &[&[2, 3]],
        "einsum(): found '.' for output that is not part of any ellipsis (...)",
    ),
    (
        "ij->......",
        &[&[2, 3]],
        "einsum(): found '.' for output but an ellipsis (...) was already found",
    ),
    (
        "ij->i->j",
        &[&[2, 3]],
        "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]",
    ),
];

#[test]
fn values_match_pytorch() -> R {
    for case in VALUE_CASES {
        let out = run(case.equation, &operands(case.shapes))?;
        assert_eq!(out.shape(), case.out_shape, "{:?}", case.equation);
        // The inputs are multiples of 1/4 and the results short sums of their products: exact.
        assert_eq!(out.to_vec::<f64>()?, case.values, "{:?}", case.equation);
    }
    Ok(())
}

#[test]
fn f32_operands_match_pytorch() -> R {
    for case in VALUE_CASES {
        let ops: Vec<Tensor> = operands(case.shapes)
            .iter()
            .map(|t| t.to_dtype(DType::F32))
            .collect::<Result<_>>()?;
        let out = run(case.equation, &ops)?;
        assert_eq!(out.dtype(), DType::F32);
        let want: Vec<f32> = case.values.iter().map(|&v| v as f32).collect();
        assert_eq!(out.to_vec::<f32>()?, want, "{:?}", case.equation);
    }
    Ok(())
}

#[test]
fn non_contiguous_operands() -> R {
    // "ij,jk->ik" with both operands transposed views: the values of the contiguous case.
    let a = Tensor::from_vec(values(&[2, 3], 0), &[2, 3])?;
    let b = Tensor::from_vec(values(&[3, 4], 1), &[3, 4])?;
    let at = a.transpose(0, 1)?.contiguous()?.transpose(0, 1)?;
    let bt = b.transpose(0, 1)?.contiguous()?.transpose(0, 1)?;
    assert!(!at.is_contiguous() && !bt.is_contiguous());
    let want = einsum("ij,jk->ik", &[&a, &b])?.to_vec::<f64>()?;
    assert_eq!(einsum("ij,jk->ik", &[&at, &bt])?.to_vec::<f64>()?, want);
    // The diagonal of a transposed view is the diagonal of its base.
    let m = operand(&[3, 3], 0);
    assert_eq!(
        einsum("ii->i", &[&m.transpose(0, 1)?])?.to_vec::<f64>()?,
        einsum("ii->i", &[&m])?.to_vec::<f64>()?
    );
    Ok(())
}

#[test]
fn error_texts_match_pytorch() {
    for &(equation, shapes, text) in ERROR_CASES {
        let err = run(equation, &operands(shapes)).unwrap_err();
        assert_eq!(err.to_string(), text, "{equation:?}");
    }
    let err = einsum("i", &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list"
    );
}

#[test]
fn diagonal_ignores_off_diagonal_infinities() -> R {
    // Taken as a view, not as a product with an identity mask: inf off the diagonal stays out.
    let m = Tensor::from_vec(vec![1.0f64, f64::INFINITY, f64::NAN, 2.0], &[2, 2])?;
    assert_eq!(einsum("ii->i", &[&m])?.to_vec::<f64>()?, vec![1.0, 2.0]);
    assert_eq!(einsum("ii", &[&m])?.item::<f64>()?, 3.0);
    Ok(())
}

/// The names of every node reachable from `t`'s grad_fn.
fn node_names(t: &Tensor) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack: Vec<graph::NodeRef> = t.grad_fn().into_iter().collect();
    while let Some(node) = stack.pop() {
        names.push(node.name().to_string());
        stack.extend(node.next_functions().into_iter().flatten().map(|e| e.node));
    }
    names
}

#[test]
fn contractions_run_through_bmm() -> R {
    for (equation, shapes) in [
        ("ij,jk->ik", &[&[2usize, 3][..], &[3, 4]][..]),
        ("bhqd,bhkd->bhqk", &[&[2, 2, 3, 4], &[2, 2, 5, 4]]),
        ("bn,anm,bm->ba", &[&[2, 3], &[4, 3, 2], &[2, 2]]),
        ("i,i->", &[&[4], &[4]]),
    ] {
        let ops: Vec<Tensor> = operands(shapes)
            .into_iter()
            .map(|t| t.requires_grad_(true))
            .collect::<Result<_>>()?;
        let names = node_names(&run(equation, &ops)?);
        assert!(
            names.iter().any(|n| n == "BmmBackward0"),
            "{equation}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n == "MulBackward0"),
            "{equation}: {names:?}"
        );
    }
    // An outer product has nothing to sum: one broadcasting product.
    let ops: Vec<Tensor> = operands(&[&[3], &[4]])
        .into_iter()
        .map(|t| t.requires_grad_(true))
        .collect::<Result<_>>()?;
    let names = node_names(&run("i,j->ij", &ops)?);
    assert!(names.iter().any(|n| n == "MulBackward0"), "{names:?}");
    Ok(())
}

#[test]
fn gradients_match_pytorch() -> R {
    // torch.einsum("bij,bjk->bik", a, b).sum().backward(): a.grad is b summed over k,
    // b.grad is a summed over i, each broadcast.
    let a = operand(&[2, 2, 3], 0).requires_grad_(true)?;
    let b = operand(&[2, 3, 2], 1).requires_grad_(true)?;
    einsum("bij,bjk->bik", &[&a, &b])?.sum()?.backward()?;
    let bv = values(&[2, 3, 2], 1);
    let av = values(&[2, 2, 3], 0);
    let want_a: Vec<f64> = (0..12)
        .map(|n| {
            let (batch, j) = (n / 6, n % 3);
            bv[batch * 6 + j * 2] + bv[batch * 6 + j * 2 + 1]
        })
        .collect();
    let want_b: Vec<f64> = (0..12)
        .map(|n| {
            let (batch, j) = (n / 6, (n % 6) / 2);
            av[batch * 6 + j] + av[batch * 6 + 3 + j]
        })
        .collect();
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, want_a);
    assert_eq!(b.grad().unwrap().to_vec::<f64>()?, want_b);
    // The diagonal's gradient: ones on the diagonal, zeros elsewhere.
    let m = operand(&[3, 3], 0).requires_grad_(true)?;
    einsum("ii", &[&m])?.backward()?;
    assert_eq!(
        m.grad().unwrap().to_vec::<f64>()?,
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    Ok(())
}

/// Values in [-1.5, -0.2] ∪ [0.2, 1.5] from `seed`.
fn arg(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let m = 0.2 + 1.3 * ((u * 2.0) % 1.0);
            if u < 0.5 { -m } else { m }
        })
        .collect();
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

macro_rules! einsum_check {
    ($($name:ident: $equation:expr, [$($shape:expr),+ $(,)?];)*) => {$(
        mod $name {
            use super::*;
            fn f(i: &[Tensor]) -> Result<Tensor> {
                run($equation, i)
            }
            fn inputs() -> Vec<Tensor> {
                let shapes: &[&[usize]] = &[$(&$shape),+];
                shapes.iter().enumerate().map(|(k, s)| arg(s, 11 + k as u64)).collect()
            }
            #[test]
            fn gradcheck() -> R {
                autograd::gradcheck(f, &inputs())
            }
            #[test]
            fn gradgradcheck() -> R {
                autograd::gradgradcheck(f, &inputs())
            }
        }
    )*};
}

einsum_check! {
    matmul: "ij,jk->ik", [[2, 3], [3, 4]];
    batch_matmul: "bij,bjk->bik", [[2, 2, 3], [2, 3, 2]];
    attention: "bhqd,bhkd->bhqk", [[1, 2, 3, 2], [1, 2, 2, 2]];
    bilinear: "bn,anm,bm->ba", [[2, 3], [2, 3, 2], [2, 2]];
    outer: "i,j->ij", [[3], [2]];
    trace: "ii", [[3, 3]];
    diagonal: "iji->ij", [[3, 2, 3]];
    sum_all: "ij->", [[2, 3]];
    transpose_implicit: "ji", [[2, 3]];
    ellipsis_broadcast: "...ij,...jk->...ik", [[2, 1, 2, 3], [3, 3, 2]];
    size_one_broadcast: "ij,ij->ij", [[2, 1], [2, 3]];
    only_one_operand_dims: "ab,cd->da", [[2, 3], [2, 2]];
    chain_of_three: "ij,jk,kl->il", [[2, 3], [3, 2], [2, 2]];
}

#[test]
fn dtypes_and_empty_dims_match_pytorch() -> R {
    // a = arange(6).reshape(2, 3), b = arange(12).reshape(3, 4), as in PyTorch:
    // einsum("ij,jk->ik", a.long(), b.long()) == [[20, 23, 26, 29], [56, 68, 80, 92]].
    let a = Tensor::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3])?;
    let b = Tensor::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4])?;
    let (al, bl) = (a.to_dtype(DType::I64)?, b.to_dtype(DType::I64)?);
    let product = einsum("ij,jk->ik", &[&al, &bl])?;
    assert_eq!(product.dtype(), DType::I64);
    assert_eq!(
        product.to_vec::<i64>()?,
        vec![20, 23, 26, 29, 56, 68, 80, 92]
    );
    assert_eq!(einsum("ii", &[&bl.narrow(1, 0, 3)?])?.item::<i64>()?, 15);
    let (ah, bh) = (a.to_dtype(DType::F16)?, b.to_dtype(DType::F16)?);
    let product = einsum("ij,jk->ik", &[&ah, &bh])?;
    assert_eq!(product.dtype(), DType::F16);
    assert_eq!(
        product.to_dtype(DType::F64)?.to_vec::<f64>()?,
        vec![20.0, 23.0, 26.0, 29.0, 56.0, 68.0, 80.0, 92.0]
    );
    // A plain product promotes (PyTorch: a[0] (f32) outer b[1] (f64) is f64, row 1 = b[1]); a
    // contraction needs one dtype (PyTorch's bmm: "expected scalar type Float but found Double").
    let b64 = b.to_dtype(DType::F64)?;
    let outer = einsum("i,j->ij", &[&a.select(0, 0)?, &b64.select(0, 1)?])?;
    assert_eq!(outer.dtype(), DType::F64);
    assert_eq!(outer.to_vec::<f64>()?[4..8], [4.0, 5.0, 6.0, 7.0]);
    assert!(einsum("ij,jk->ik", &[&a, &b64]).is_err());
    // Empty dims: a contraction over none gives zeros, an empty diagonal is empty, an empty sum 0.
    let z = einsum(
        "ij,jk->ik",
        &[
            &Tensor::ones(&[2, 0], DType::F32)?,
            &Tensor::ones(&[0, 4], DType::F32)?,
        ],
    )?;
    assert_eq!(z.shape(), &[2, 4]);
    assert_eq!(z.to_vec::<f32>()?, vec![0.0; 8]);
    assert_eq!(
        einsum("ii->i", &[&Tensor::ones(&[0, 0], DType::F32)?])?.shape(),
        &[0]
    );
    assert_eq!(
        einsum("ij->", &[&Tensor::ones(&[0, 3], DType::F32)?])?.item::<f32>()?,
        0.0
    );
    Ok(())
}
