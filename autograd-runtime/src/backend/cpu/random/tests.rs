//! Unit tests of the random-number kernel.

use super::*;
use crate::backend::cpu::tests::assert_standard;

// --- random numbers --------------------------------------------------------------------------

#[test]
fn randn_is_deterministic_and_standard_normal() {
    let a = randn::<f64>(&[100, 100], 42);
    assert_standard(&a);
    assert_eq!(a, randn::<f64>(&[100, 100], 42));
    assert_ne!(a, randn::<f64>(&[100, 100], 43));
    let n = a.len() as f64;
    let mean = a.sum() / n;
    let std = (a.mapv(|x| (x - mean) * (x - mean)).sum() / n).sqrt();
    assert!(mean.abs() < 0.03, "mean {mean}");
    assert!((std - 1.0).abs() < 0.03, "std {std}");
    let within_one = a.iter().filter(|x| x.abs() < 1.0).count() as f64 / n;
    assert!(
        (within_one - 0.6827).abs() < 0.02,
        "P(|x| < 1) = {within_one}"
    );
    let odd = randn::<f32>(&[3], 42);
    let wide = randn::<f64>(&[4], 42);
    for (x, y) in odd.iter().zip(&wide) {
        assert_eq!(*x, *y as f32);
    }
    assert_eq!(randn::<f64>(&[0, 5], 1).shape(), &[0, 5]);
    assert!(randn::<f64>(&[], 1).first().is_some_and(|x| x.is_finite()));
}
