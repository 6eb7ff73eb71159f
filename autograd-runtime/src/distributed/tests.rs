//! Tests of the reducer over `LocalGroup`: each rank is a thread of the test.

use std::time::{Duration, Instant};

use super::*;
use crate::sync::mpsc;
use crate::sync::{Arc, Mutex};
use crate::{DType, Tensor, no_grad};

/// Rows of the global batch in the equivalence tests (divisible by 1, 2 and 4).
const GLOBAL_BATCH: usize = 8;

/// Runs `f` once per rank, each on its own thread, and returns the results in rank order.
fn run_ranks<T: Send>(groups: Vec<LocalGroup>, f: impl Fn(LocalGroup) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = groups.into_iter().map(|g| s.spawn(move || f(g))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank panicked"))
            .collect()
    })
}

/// `[w1 4x3, b1 3, w2 3x2]`, from a seed (ranks start from different values on purpose).
fn mlp_params(seed: u64) -> Vec<Tensor> {
    [&[4, 3][..], &[3], &[3, 2]]
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            Tensor::randn_seeded(shape, DType::F64, seed * 10 + i as u64)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect()
}

/// Mean squared error of `tanh(x w1 + b1) w2` against `t`.
fn mlp_loss(p: &[Tensor], x: &Tensor, t: &Tensor) -> Tensor {
    let h = x.matmul(&p[0]).unwrap().add(&p[1]).unwrap().tanh().unwrap();
    let y = h.matmul(&p[2]).unwrap();
    y.sub(t).unwrap().pow(2.0).unwrap().mean().unwrap()
}

fn batch() -> (Tensor, Tensor) {
    (
        Tensor::randn_seeded(&[GLOBAL_BATCH, 4], DType::F64, 7).unwrap(),
        Tensor::randn_seeded(&[GLOBAL_BATCH, 2], DType::F64, 8).unwrap(),
    )
}

fn shard(t: &Tensor, rank: usize, world: usize) -> Tensor {
    let rows = t.shape()[0] / world;
    t.narrow(0, rank * rows, rows).unwrap().copy().unwrap()
}

fn values(ts: &[Tensor]) -> Vec<Vec<f64>> {
    ts.iter().map(|t| t.to_vec::<f64>().unwrap()).collect()
}

fn grads(ts: &[Tensor]) -> Vec<Option<Vec<f64>>> {
    ts.iter()
        .map(|t| t.grad().map(|g| g.to_vec::<f64>().unwrap()))
        .collect()
}

fn sgd(params: &[Tensor], lr: f64) {
    let _g = no_grad();
    for p in params {
        p.sub_(&p.grad().unwrap().mul_scalar(lr).unwrap()).unwrap();
    }
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64) {
    for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
        assert!((x - y).abs() <= tol, "{x} vs {y}");
    }
}

/// One step with `world` ranks, each on its shard, against one process on the whole batch.
fn data_parallel_step_matches_single_process(world: usize) {
    let (x, t) = batch();
    // The reference: rank 0's initial values, the whole batch.
    let reference = mlp_params(0);
    mlp_loss(&reference, &x, &t).backward().unwrap();
    let reference_grads: Vec<Vec<f64>> = grads(&reference).into_iter().flatten().collect();
    sgd(&reference, 0.1);
    let reference_after = values(&reference);

    let out = run_ranks(LocalGroup::new(world), |group| {
        let rank = group.rank();
        let params = mlp_params(rank as u64); // different on purpose: DDP broadcasts rank 0's
        // 64-byte buckets: several buckets, some with two parameters.
        let options = DdpOptions::new().bucket_cap_bytes(64);
        let ddp = DistributedDataParallel::new(&params, group, options).unwrap();
        assert_eq!(ddp.buckets(), vec![vec![2], vec![1], vec![0]]);
        mlp_loss(&params, &shard(&x, rank, world), &shard(&t, rank, world))
            .backward()
            .unwrap();
        let g: Vec<Vec<f64>> = grads(&params).into_iter().flatten().collect();
        sgd(&params, 0.1);
        (g, values(&params), ddp.last_step_stats())
    });
    for (g, after, stats) in &out {
        // Bit-identical on every rank.
        assert_eq!(g, &out[0].0);
        assert_eq!(after, &out[0].1);
        assert_eq!(stats.buckets, 3);
        // The mean of the shards' mean losses is the whole batch's mean loss; the gradients
        // differ from the single process's only by the order of f64 sums over 8 rows, far below
        // 1e-12 for values of order 1.
        assert_close(g, &reference_grads, 1e-12);
        assert_close(after, &reference_after, 1e-12);
    }
}

#[test]
fn two_ranks_match_one_process_on_the_concatenated_batch() {
    data_parallel_step_matches_single_process(2);
}

#[test]
fn four_ranks_match_one_process_on_the_concatenated_batch() {
    data_parallel_step_matches_single_process(4);
}

#[test]
fn one_bucket_by_default_and_f32_parameters() {
    let out = run_ranks(LocalGroup::new(2), |group| {
        let rank = group.rank() as f32;
        let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let ddp = DistributedDataParallel::new(&[w.clone()], group, DdpOptions::new()).unwrap();
        assert_eq!(ddp.buckets(), vec![vec![0]]);
        let x = Tensor::from_vec(vec![rank, 1.0, 2.0 * rank], &[3]).unwrap();
        w.mul(&x).unwrap().sum().unwrap().backward().unwrap();
        w.grad().unwrap().to_vec::<f32>().unwrap()
    });
    assert_eq!(out, vec![vec![0.5, 1.0, 1.0]; 2]);
}

#[test]
fn no_sync_accumulates_locally_then_all_reduces_the_sum() {
    let (x, t) = batch();
    // Two micro-batches per rank: rows [0, 4) for rank 0, [4, 8) for rank 1, split in halves.
    let micro = |rank: usize, k: usize| {
        let rows = |m: &Tensor| m.narrow(0, rank * 4 + k * 2, 2).unwrap().copy().unwrap();
        (rows(&x), rows(&t))
    };
    let reference = mlp_params(0);
    let mut total: Option<Tensor> = None;
    for rank in 0..2 {
        for k in 0..2 {
            let (xs, ts) = micro(rank, k);
            let l = mlp_loss(&reference, &xs, &ts);
            total = Some(match total {
                None => l,
                Some(s) => s.add(&l).unwrap(),
            });
        }
    }
    // Each rank sums two micro-batch gradients; DDP averages over the 2 ranks.
    total.unwrap().mul_scalar(0.5).unwrap().backward().unwrap();
    let expected: Vec<Vec<f64>> = grads(&reference).into_iter().flatten().collect();

    let out = run_ranks(LocalGroup::new(2), |group| {
        let rank = group.rank();
        let params = mlp_params(0);
        let ddp = DistributedDataParallel::new(&params, group, DdpOptions::new()).unwrap();
        let local = {
            let _no_sync = ddp.no_sync();
            let (xs, ts) = micro(rank, 0);
            mlp_loss(&params, &xs, &ts).backward().unwrap();
            grads(&params)
        };
        let (xs, ts) = micro(rank, 1);
        mlp_loss(&params, &xs, &ts).backward().unwrap();
        (local, grads(&params))
    });
    // Inside no_sync the gradients stayed local: the ranks' differ.
    assert_ne!(out[0].0, out[1].0);
    for (_, synced) in &out {
        assert_eq!(synced, &out[0].1);
        let synced: Vec<Vec<f64>> = synced.iter().flatten().cloned().collect();
        assert_close(&synced, &expected, 1e-12);
    }
}

/// Parameters `[a, b, c]` of 2 elements: rank 0 uses `a`, rank 1 uses `a` and `b`, none uses
/// `c`.
fn unused_step(
    group: LocalGroup,
    params: usize,
    find_unused: bool,
) -> crate::Result<Vec<Option<Vec<f64>>>> {
    let rank = group.rank();
    let p: Vec<Tensor> = (0..params)
        .map(|_| {
            Tensor::ones(&[2], DType::F64)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect();
    let options = DdpOptions::new().find_unused_parameters(find_unused);
    let _ddp = DistributedDataParallel::new(&p, group, options)?;
    let x = Tensor::from_vec(vec![1.0 + rank as f64, 10.0], &[2])?;
    let mut loss = p[0].mul(&x)?;
    if rank == 1 {
        loss = loss.add(&p[1].mul(&x)?.mul_scalar(3.0)?)?;
    }
    loss.sum()?.backward()?;
    Ok(grads(&p))
}

#[test]
fn unused_parameters_count_as_zero_and_globally_unused_keep_no_gradient() {
    let out = run_ranks(LocalGroup::new(2), |g| unused_step(g, 3, true).unwrap());
    let expected = vec![
        Some(vec![1.5, 10.0]), // (x0 + x1) / 2
        Some(vec![3.0, 15.0]), // (0 + 3 x1) / 2: unused on rank 0 only
        None,                  // unused everywhere: untouched, as in PyTorch
    ];
    assert_eq!(out, vec![expected.clone(), expected]);
}

#[test]
fn an_unused_parameter_without_find_unused_fails_every_rank() {
    let out = run_ranks(LocalGroup::new(2), |g| unused_step(g, 2, false));
    let e0 = out[0].as_ref().unwrap_err().to_string();
    let e1 = out[1].as_ref().unwrap_err().to_string();
    assert!(
        e0.contains("parameter 1 (shape [2]) received no gradient"),
        "{e0}"
    );
    assert!(e0.contains("find_unused_parameters(true)"), "{e0}");
    assert!(e1.contains("rank(s) [0] reported an error"), "{e1}");
}

#[test]
fn a_gradient_of_an_unexpected_shape_fails_every_rank() {
    let out = run_ranks(LocalGroup::new(2), |group| {
        let rank = group.rank();
        let w = Tensor::ones(&[3], DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        if rank == 1 {
            // A hook that runs before DDP's and corrupts the gradient. `set_grad` refuses a
            // gradient of another shape, so it is stored behind its back: the reducer checks
            // what it reads all the same.
            w.register_post_accumulate_grad_hook(|t| {
                t.meta_lock().grad = Some(Tensor::zeros(&[2, 3], DType::F64).unwrap());
            })
            .unwrap();
        }
        let _ddp = DistributedDataParallel::new(&[w.clone()], group, DdpOptions::new()).unwrap();
        w.mul_scalar(2.0).unwrap().sum().unwrap().backward()
    });
    let e0 = out[0].as_ref().unwrap_err().to_string();
    let e1 = out[1].as_ref().unwrap_err().to_string();
    assert!(e0.contains("rank(s) [1] reported an error"), "{e0}");
    assert!(
        e1.contains("parameter 0 got a gradient of shape [2, 3] and dtype f64, expected shape [3]"),
        "{e1}"
    );
}

#[test]
fn parameters_that_differ_across_ranks_fail_every_rank_at_construction() {
    let out = run_ranks(LocalGroup::new(2), |group| {
        let n = 2 + group.rank();
        let w = Tensor::ones(&[n], DType::F32)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        DistributedDataParallel::new(&[w], group, DdpOptions::new()).map(drop)
    });
    for r in &out {
        let e = r.as_ref().unwrap_err().to_string();
        assert!(e.contains("the ranks' parameters differ"), "{e}");
    }
}

#[test]
fn a_rank_that_leaves_makes_the_others_fail_at_once() {
    let out = run_ranks(LocalGroup::new(2), |group| {
        let rank = group.rank();
        let w = Tensor::ones(&[2], DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let ddp = DistributedDataParallel::new(&[w.clone()], group, DdpOptions::new()).unwrap();
        if rank == 1 {
            drop(ddp); // an error in this rank's forward: it returns and its group goes away
            return Ok(Duration::ZERO);
        }
        let start = Instant::now();
        w.mul_scalar(2.0)?
            .sum()?
            .backward()
            .map(|()| start.elapsed())
    });
    let e = out[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("rank 1 left the group"), "{e}");
}

#[test]
fn a_silent_rank_makes_the_others_fail_within_the_timeout() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let (finished, wait_for_rank0) = mpsc::channel::<()>();
    let wait_for_rank0 = Mutex::new(wait_for_rank0);
    let finished = Mutex::new(finished);
    let out = run_ranks(LocalGroup::with_timeout(2, TIMEOUT), |group| {
        let rank = group.rank();
        let w = Tensor::ones(&[2], DType::F64)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let options = DdpOptions::new().timeout(TIMEOUT);
        let _ddp = DistributedDataParallel::new(&[w.clone()], group, options).unwrap();
        if rank == 1 {
            // Alive but stuck: never joins the step's all-reduce until rank 0 has given up.
            let _ = wait_for_rank0.lock().recv_timeout(Duration::from_secs(30));
            return None;
        }
        let start = Instant::now();
        let r = w.mul_scalar(2.0).unwrap().sum().unwrap().backward();
        let elapsed = start.elapsed();
        let _ = finished.lock().send(());
        Some((r, elapsed))
    });
    let (r, elapsed) = out[0].as_ref().unwrap();
    let e = r.as_ref().unwrap_err().to_string();
    assert!(e.contains("timed out"), "{e}");
    assert!(*elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

/// A `LocalGroup` that reports the length of every all-reduce it starts.
#[derive(Debug)]
struct Observed {
    inner: LocalGroup,
    started: Mutex<mpsc::Sender<usize>>,
}

impl ProcessGroup for Observed {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn world_size(&self) -> usize {
        self.inner.world_size()
    }
    fn all_reduce_sum(&self, buf: CommBuffer) -> crate::Result<CommBuffer> {
        let _ = self.started.lock().send(buf.len());
        self.inner.all_reduce_sum(buf)
    }
    fn broadcast(&self, buf: CommBuffer, root: usize) -> crate::Result<CommBuffer> {
        self.inner.broadcast(buf, root)
    }
    fn barrier(&self) -> crate::Result<()> {
        self.inner.barrier()
    }
}

/// Whether the last layer's bucket was all-reduced while backward was still computing the
/// first layer's gradient.
fn last_bucket_starts_during_backward(overlap: bool) -> bool {
    let (tx, started) = mpsc::channel();
    let group = Observed {
        inner: LocalGroup::new(1).pop().unwrap(),
        started: Mutex::new(tx),
    };
    let params = mlp_params(0);
    let options = DdpOptions::new().bucket_cap_bytes(64).overlap(overlap);
    let _ddp = DistributedDataParallel::new(&params, group, options).unwrap();
    while started.try_recv().is_ok() {} // the construction's own collectives
    let started = Mutex::new(started);
    let seen = Arc::new(Mutex::new(None));
    let (x, t) = batch();
    let z1 = x.matmul(&params[0]).unwrap();
    let seen2 = seen.clone();
    // Runs when z1's gradient is ready: after w2's and b1's, before w1's.
    z1.register_hook(move |_| {
        let wait = if overlap {
            Duration::from_secs(30)
        } else {
            Duration::from_millis(100)
        };
        *seen2.lock() = Some(started.lock().recv_timeout(wait).ok());
        None
    })
    .unwrap();
    let h = z1.add(&params[1]).unwrap().tanh().unwrap();
    let loss = h
        .matmul(&params[2])
        .unwrap()
        .sub(&t)
        .unwrap()
        .pow(2.0)
        .unwrap()
        .mean()
        .unwrap();
    loss.backward().unwrap();
    let seen = seen.lock().expect("the hook ran");
    // w2's bucket: 6 values + 1 error flag + 1 used flag.
    seen.map(|len| assert_eq!(len, 8)).is_some()
}

#[test]
fn a_full_bucket_is_all_reduced_while_backward_goes_on() {
    assert!(last_bucket_starts_during_backward(true));
    assert!(!last_bucket_starts_during_backward(false));
}

#[test]
fn dropping_the_handle_frees_the_reducer_and_removes_the_hooks() {
    let w = Tensor::ones(&[2], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let ddp = DistributedDataParallel::new(
        &[w.clone()],
        LocalGroup::new(1).pop().unwrap(),
        DdpOptions::new(),
    )
    .unwrap();
    let reducer = Arc::downgrade(&ddp.reducer);
    drop(ddp);
    assert!(
        reducer.upgrade().is_none(),
        "a reference cycle keeps the reducer alive"
    );
    w.mul_scalar(3.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
}

#[test]
fn mismatched_collectives_fail_on_every_rank() {
    let out = run_ranks(LocalGroup::new(2), |g| {
        let n = 1 + g.rank();
        g.all_reduce_sum(CommBuffer::F32(vec![1.0; n]))
    });
    for r in out {
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("does not match across ranks")
        );
    }
}
