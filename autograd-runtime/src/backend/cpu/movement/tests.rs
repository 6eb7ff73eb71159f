//! Unit tests of the shape and data-movement kernels.

use ndarray::{IxDyn, s};

use super::*;
use crate::backend::cpu::reduce::max_dim;
use crate::backend::cpu::tests::{arr, check, range};

// --- data movement ---------------------------------------------------------------------------

#[test]
fn to_contiguous_copies_in_logical_order() {
    let a = range(&[2, 3]);
    check(
        &to_contiguous(a.t()),
        &[3, 2],
        &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0],
    );
    check(
        &to_contiguous(a.slice(s![1.., 1..]).into_dyn()),
        &[1, 2],
        &[4.0, 5.0],
    );
    check(&to_contiguous(a.slice(s![1, 2]).into_dyn()), &[], &[5.0]);
    check(&to_contiguous(arr(&[3, 0], &[]).t()), &[0, 3], &[]);
    let row = arr(&[2], &[1.0, 2.0]);
    check(
        &to_contiguous(row.broadcast(IxDyn(&[2, 2])).expect("expand")),
        &[2, 2],
        &[1.0, 2.0, 1.0, 2.0],
    );
}

#[test]
fn index_select_and_index_add() {
    let a = range(&[3, 2]);
    check(
        &index_select(a.view(), 0, &[2, 0, 2]),
        &[3, 2],
        &[4.0, 5.0, 0.0, 1.0, 4.0, 5.0],
    );
    check(&index_select(a.view(), 1, &[1]), &[3, 1], &[1.0, 3.0, 5.0]);
    check(
        &index_select(a.t(), 1, &[2, 1]),
        &[2, 2],
        &[4.0, 2.0, 5.0, 3.0],
    );
    check(&index_select(a.view(), 0, &[]), &[0, 2], &[]);
    let g = arr(&[3, 2], &[1.0, 1.0, 10.0, 10.0, 100.0, 100.0]);
    check(
        &index_add(&[3, 2], 0, &[2, 0, 2], g.view()),
        &[3, 2],
        &[10.0, 10.0, 0.0, 0.0, 101.0, 101.0],
    );
    check(
        &index_add(&[2, 3], 1, &[2, 0, 2], g.t()),
        &[2, 3],
        &[10.0, 0.0, 101.0, 10.0, 0.0, 101.0],
    );
    check(
        &index_add(&[2, 2], 1, &[], arr(&[2, 0], &[]).view()),
        &[2, 2],
        &[0.0; 4],
    );
}

#[test]
#[should_panic(expected = "out of bounds")]
fn index_select_checks_bounds() {
    let _ = index_select(range(&[3, 2]).view(), 0, &[3]);
}

#[test]
fn cat_along_each_dim() {
    let a = range(&[2, 2]);
    let b = arr(&[2, 1], &[9.0, 8.0]);
    check(
        &cat(&[a.view(), b.view()], 1),
        &[2, 3],
        &[0.0, 1.0, 9.0, 2.0, 3.0, 8.0],
    );
    check(
        &cat(&[a.view(), b.t()], 0),
        &[3, 2],
        &[0.0, 1.0, 2.0, 3.0, 9.0, 8.0],
    );
    check(
        &cat(&[a.t(), arr(&[2, 0], &[]).view(), a.view()], 1),
        &[2, 4],
        &[0.0, 2.0, 0.0, 1.0, 1.0, 3.0, 2.0, 3.0],
    );
    check(&cat(&[arr(&[1], &[1.0]).view()], 0), &[1], &[1.0]);
}

#[test]
fn scatter_max_grad_inverts_max_dim() {
    let a = arr(&[2, 3], &[1.0, 5.0, 2.0, 7.0, -1.0, 0.0]);
    let (_, idx) = max_dim(a.view(), 1, true);
    let g = arr(&[2, 1], &[10.0, 20.0]);
    check(
        &scatter_max_grad(&[2, 3], 1, idx.view(), g.view()),
        &[2, 3],
        &[0.0, 10.0, 0.0, 20.0, 0.0, 0.0],
    );
    let (_, idx) = max_dim(a.view(), 0, false);
    let g = arr(&[3], &[1.0, 2.0, 3.0]);
    check(
        &scatter_max_grad(&[2, 3], 0, idx.view(), g.view()),
        &[2, 3],
        &[0.0, 2.0, 3.0, 1.0, 0.0, 0.0],
    );
    let expanded = arr(&[], &[4.0]);
    let g = expanded.broadcast(IxDyn(&[3])).expect("expand");
    check(
        &scatter_max_grad(&[2, 3], 0, idx.view(), g),
        &[2, 3],
        &[0.0, 4.0, 4.0, 4.0, 0.0, 0.0],
    );
}
