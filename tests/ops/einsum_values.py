"""Prints the expected values of tests/ops/einsum.rs from PyTorch (2.15, CPU, float64).

Operand k's element at flat index n is ((7 n + 5 k + 3) % 13 - 6) / 4: exact in binary, so the
products and sums in the expected values are exact too. Run with
`python tests/ops/einsum_values.py` and paste the output into tests/ops/einsum.rs.
"""
import torch

VALUE_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    ("aB,Ba", [(2, 3), (3, 2)]),
    ("ba,ab", [(3, 2), (2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iji->ij", [(3, 2, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("bA", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("ab,cd->", [(2, 3), (2, 2)]),
    ("ab,cd->da", [(2, 3), (2, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("i...->...", [(3, 2, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 4)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("bi,bi,bj->bj", [(2, 3), (2, 3), (2, 2)]),
    ("", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
]

ERROR_CASES = [
    ("ij", [(2, 3), (3,)]),
    ("ij,jk->ik", [(2, 3)]),
    ("ij", [(2, 3, 4)]),
    ("...ijk", [(2, 3)]),
    ("ii", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (4, 5)]),
    ("bij,bjk->bik", [(2, 2, 3), (3, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 2, 3), (5, 3, 4)]),
    ("i1", [(2, 3)]),
    ("i.j", [(2, 3)]),
    ("i....j", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ij->k", [(2, 3)]),
    ("ij->i.", [(2, 3)]),
    ("ij->......", [(2, 3)]),
    ("ij->i->j", [(2, 3)]),
]


def operand(shape, k):
    n = 1
    for s in shape:
        n *= s
    v = [((7 * i + 5 * k + 3) % 13 - 6) / 4 for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape)


def rust_f64(x):
    s = repr(float(x))
    return s if ("." in s or "e" in s or "inf" in s or "nan" in s) else s + ".0"


def rust_shape(shape):
    return "&[" + ", ".join(str(s) for s in shape) + "]"


print("const VALUE_CASES: &[Case] = &[")
for eq, shapes in VALUE_CASES:
    ops = [operand(s, k) for k, s in enumerate(shapes)]
    r = torch.einsum(eq, *ops)
    print("    Case {")
    print(f"        equation: {eq!r},".replace("'", '"'))
    print(f"        shapes: &[{', '.join(rust_shape(s) for s in shapes)}],")
    print(f"        out_shape: {rust_shape(r.shape)},")
    print(f"        values: &[{', '.join(rust_f64(x) for x in r.flatten().tolist())}],")
    print("    },")
print("];")
print()
print("const ERROR_CASES: &[(&str, &[&[usize]], &str)] = &[")
for eq, shapes in ERROR_CASES:
    ops = [operand(s, k) for k, s in enumerate(shapes)]
    try:
        torch.einsum(eq, *ops)
        raise SystemExit(f"{eq} did not fail")
    except RuntimeError as e:
        msg = str(e).replace("\\", "\\\\").replace('"', '\\"')
    eqs = eq.replace('"', '\\"')
    print(f'    ("{eqs}", &[{", ".join(rust_shape(s) for s in shapes)}], "{msg}"),')
print("];")
