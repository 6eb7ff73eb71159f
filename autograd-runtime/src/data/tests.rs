//! Unit tests of the samplers: what they draw from the generators, and when.

use super::sampler::{BatchSampler, IndexSampler, batch_count};
use crate::{DType, Generator, Tensor};

/// Where a generator is: its next two `rand` f64 values.
fn probe(g: &Generator) -> Vec<f64> {
    let state = g.get_state();
    let v = Tensor::rand_with(&[2], DType::F64, g)
        .unwrap()
        .to_vec()
        .unwrap();
    g.set_state(&state);
    v
}

#[test]
fn a_shared_generator_gives_the_permutation_then_a_closing_one_at_the_end() {
    let g = Generator::new().manual_seed(3);
    let expected = Generator::new().manual_seed(3);
    let perm = expected.randperm(10);
    let mut s = IndexSampler::new(10, true, Some(g.clone()));
    assert_eq!(
        probe(&g),
        probe(&Generator::new().manual_seed(3)),
        "nothing drawn yet"
    );
    let first: Vec<usize> = s.by_ref().take(10).collect();
    assert_eq!(first, perm);
    assert_eq!(
        probe(&g),
        probe(&expected),
        "no closing draw before the end is asked for"
    );
    assert_eq!(s.next(), None);
    expected.randperm(10);
    assert_eq!(probe(&g), probe(&expected), "the closing permutation");
    assert_eq!(s.next(), None);
    assert_eq!(probe(&g), probe(&expected), "drawn once");
}

#[test]
fn batches_reach_the_samplers_end_when_pytorchs_do() {
    // A full last batch: the end (and the closing draw) comes with the call after it.
    let g = Generator::new().manual_seed(1);
    let mut b = BatchSampler::new(IndexSampler::new(6, true, Some(g.clone())), 3, false);
    b.next();
    let before = probe(&g);
    b.next();
    assert_eq!(probe(&g), before);
    assert_eq!(b.next(), None);
    assert_ne!(probe(&g), before);

    // A short last batch reaches the end while it is made; with drop_last it is dropped.
    let seq = |n, bs, drop_last| -> Vec<Vec<usize>> {
        BatchSampler::new(IndexSampler::new(n, false, None), bs, drop_last).collect()
    };
    assert_eq!(seq(5, 2, false), [vec![0, 1], vec![2, 3], vec![4]]);
    assert_eq!(seq(5, 2, true), [vec![0, 1], vec![2, 3]]);
    assert_eq!(seq(0, 2, false), Vec::<Vec<usize>>::new());
    assert_eq!((batch_count(5, 2, false), batch_count(5, 2, true)), (3, 2));
}
