//! The fused row kernels (`softmax.rs`, `norm.rs`) against plain `f64` formulas, and their bits
//! on 1 to 8 threads.

use super::norm;
use super::softmax::{self, Mask};
use crate::backend::NormSpec;

/// Values of very different magnitudes from an integer hash, so that any change of summation
/// order changes the bits.
fn data(len: usize, seed: u64) -> Vec<f64> {
    (0..len as u64)
        .map(|i| {
            let k = (i ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (k as f64 / 16_777_216.0 - 0.5) * if i % 7 == 0 { 8.0 } else { 1.0 }
        })
        .collect()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol * (1.0 + w.abs()) || (g.is_nan() && w.is_nan()) || g == w;
        assert!(ok, "{what}[{i}]: {g} vs {w}");
    }
}

/// Softmax of one row with entries `-inf` where masked (`None` when every entry is).
fn softmax_ref(row: &[f64], log: bool) -> Option<Vec<f64>> {
    let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return None;
    }
    let total: f64 = row.iter().map(|x| (x - m).exp()).sum();
    Some(
        row.iter()
            .map(|x| {
                if log {
                    (x - m) - total.ln()
                } else {
                    (x - m).exp() / total
                }
            })
            .collect(),
    )
}

#[test]
fn masked_softmax_matches_the_formula() {
    let (b, l, s) = (3, 4, 5);
    let x = data(b * l * s, 1);
    // An additive mask [l, s] broadcast over the batch, with one row masked throughout.
    let mut m = data(l * s, 2);
    m[s..2 * s].fill(f64::NEG_INFINITY);
    m[3] = f64::NEG_INFINITY;
    let shape = [b, l, s];
    for log in [false, true] {
        let add = Mask::Add {
            data: &m,
            offset: 0,
            strides: &[0, s, 1],
            shape: &shape,
        };
        let got = softmax::softmax_masked(&x, &shape, add, log, true);
        let causal =
            softmax::softmax_masked(&x, &shape, Mask::Causal { rows_per_matrix: l }, log, true);
        let plain = softmax::softmax_masked(&x, &shape, Mask::None, log, false);
        for r in 0..b * l {
            let xr = &x[r * s..(r + 1) * s];
            let i = r % l;
            let masked: Vec<f64> = xr.iter().zip(&m[i * s..]).map(|(x, m)| x + m).collect();
            let want = softmax_ref(&masked, log).unwrap_or_else(|| vec![0.0; s]);
            close(&got[r * s..(r + 1) * s], &want, 1e-14, "additive mask");
            let tri: Vec<f64> = xr
                .iter()
                .enumerate()
                .map(|(j, &x)| if j <= i { x } else { f64::NEG_INFINITY })
                .collect();
            let want = softmax_ref(&tri, log).expect("a causal row keeps a key");
            close(&causal[r * s..(r + 1) * s], &want, 1e-14, "causal");
            let want = softmax_ref(xr, log).expect("unmasked");
            close(&plain[r * s..(r + 1) * s], &want, 1e-14, "no mask");
        }
    }
    // Without `safe`, a row masked throughout is NaN, as softmax's.
    let mut all = vec![f64::NEG_INFINITY; 4];
    all[..2].fill(0.0);
    let y = softmax::softmax_masked(&all, &[2, 2], Mask::None, false, false);
    assert_eq!(&y[..2], &[0.5, 0.5]);
    assert!(y[2..].iter().all(|v| v.is_nan()));
    let y = softmax::softmax_masked(&all, &[2, 2], Mask::None, false, true);
    assert_eq!(&y[2..], &[0.0, 0.0]);
}

#[test]
fn softmax_backward_matches_the_formula_over_any_dim() {
    let shape = [3, 4, 5];
    let (g, y0) = (data(60, 3), data(60, 4));
    for dim in 0..3 {
        let (outer, len, inner) = super::split_dims(&shape, dim);
        for log in [false, true] {
            let y: Vec<f64> = if log {
                y0.iter().map(|v| v - 2.0).collect()
            } else {
                y0.clone()
            };
            let got = softmax::softmax_backward(&g, &y, &shape, dim, log);
            let mut want = vec![0.0; 60];
            for o in 0..outer {
                for c in 0..inner {
                    let at = |k: usize| (o * len + k) * inner + c;
                    let sum: f64 = (0..len)
                        .map(|k| if log { g[at(k)] } else { g[at(k)] * y[at(k)] })
                        .sum();
                    for k in 0..len {
                        let i = at(k);
                        want[i] = if log {
                            g[i] - y[i].exp() * sum
                        } else {
                            y[i] * (g[i] - sum)
                        };
                    }
                }
            }
            close(&got, &want, 1e-14, &format!("dim {dim} log {log}"));
        }
    }
}

/// Layer (or RMS) norm of the rows of `x` in plain `f64`, and its gradients for `g`.
#[allow(clippy::type_complexity)]
fn norm_ref(
    x: &[f64],
    g: &[f64],
    w: &[f64],
    b: &[f64],
    n: usize,
    eps: f64,
    centre: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut y, mut dx) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    let (mut dw, mut db) = (vec![0.0; n], vec![0.0; n]);
    for r in 0..x.len() / n {
        let (xr, gr) = (&x[r * n..(r + 1) * n], &g[r * n..(r + 1) * n]);
        let mean = if centre {
            xr.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        let var = xr.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        let xhat: Vec<f64> = xr.iter().map(|v| (v - mean) * rstd).collect();
        let gw: Vec<f64> = gr.iter().zip(w).map(|(g, w)| g * w).collect();
        let a = if centre {
            gw.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        let c = gw.iter().zip(&xhat).map(|(g, h)| g * h).sum::<f64>() / n as f64;
        for j in 0..n {
            y[r * n + j] = xhat[j] * w[j] + b[j];
            dx[r * n + j] = rstd * (gw[j] - a - xhat[j] * c);
            dw[j] += gr[j] * xhat[j];
            db[j] += gr[j];
        }
    }
    (y, dx, dw, db)
}

#[test]
fn layer_and_rms_norm_match_the_formulas() {
    let (rows, n) = (7, 300); // rows longer than a pairwise leaf
    let (x, g) = (data(rows * n, 5), data(rows * n, 6));
    let (w, b) = (data(n, 7), data(n, 8));
    for centre in [true, false] {
        let spec = NormSpec {
            n,
            eps: 1e-5,
            centre,
        };
        let (y, dx, dw, db) = norm_ref(&x, &g, &w, &b, n, spec.eps, centre);
        let got = norm::forward(&x, Some(&w), Some(&b), spec);
        close(&got, &y, 1e-12, "norm forward");
        let [gx, gw, gb] = norm::backward(&g, &x, Some(&w), spec, [true, true, true]);
        close(&gx.expect("dx"), &dx, 1e-11, "norm dx");
        close(&gw.expect("dw"), &dw, 1e-11, "norm dw");
        close(&gb.expect("db"), &db, 1e-11, "norm db");
        // Only what is asked for is computed.
        let [gx, gw, gb] = norm::backward(&g, &x, None, spec, [false, true, false]);
        assert!(gx.is_none() && gb.is_none());
        close(&gw.expect("dw"), &dw, 1e-11, "norm dw alone");
    }
}

/// Runs `f` on a private rayon pool of `threads` threads (what `set_num_threads` does).
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a test pool")
        .install(f)
}

#[test]
fn fused_row_kernels_give_the_same_bits_whatever_the_thread_count() {
    // Several chunks of rows each way (a grain is 32,768 elements).
    let (rows, n) = (1_031, 127);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let f32s = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
    let (x, g) = (f32s(data(rows * n, 9)), f32s(data(rows * n, 10)));
    let (w, b) = (f32s(data(n, 11)), f32s(data(n, 12)));
    let mask = f32s(data(n, 13));
    let shape = [rows, n];
    let run = || {
        let spec = NormSpec {
            n,
            eps: 1e-5,
            centre: true,
        };
        let [dx, dw, db] = norm::backward(&g, &x, Some(&w), spec, [true; 3]);
        let add = Mask::Add {
            data: &mask,
            offset: 0,
            strides: &[0, 1],
            shape: &shape,
        };
        [
            bits(&norm::forward(&x, Some(&w), Some(&b), spec)),
            bits(&dx.expect("dx")),
            bits(&dw.expect("dw")),
            bits(&db.expect("db")),
            bits(&softmax::softmax_masked(&x, &shape, add, false, true)),
            bits(&softmax::softmax_masked(
                &x[..11 * 93 * n],
                &[11, 93, n],
                Mask::Causal {
                    rows_per_matrix: 93,
                },
                true,
                true,
            )),
            bits(&softmax::softmax_backward(&g, &x, &shape, 1, false)),
            bits(&softmax::softmax_backward(&g, &x, &shape, 0, true)),
        ]
    };
    let one = on_threads(1, run);
    for threads in [2, 3, 8] {
        assert!(
            on_threads(threads, run) == one,
            "fused row kernels differ between 1 and {threads} threads"
        );
    }
}
