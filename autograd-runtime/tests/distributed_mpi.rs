//! Data-parallel training over real MPI: this test binary launches itself with
//! `mpirun -np N` (oversubscribed, loopback TCP only), each copy runs one scenario as one rank
//! and checks its own results, and the launcher checks every rank's verdict.
//!
//! Skips with a printed reason where `mpirun` is absent. Needs `--features mpi`:
//! `cargo test -p autograd-runtime --features mpi --test distributed_mpi`.

use std::process::{Command, ExitCode, Output};
use std::time::{Duration, Instant};

use autograd_runtime::distributed::{
    CommBuffer, DdpOptions, DistributedDataParallel, MpiGroup, ProcessGroup,
};
use autograd_runtime::{DType, Result, Tensor, no_grad};

/// Set (to the scenario's name) in the environment of the copies `mpirun` starts.
const SCENARIO_VAR: &str = "AUTOGRAD_MPI_SCENARIO";
/// Rows of the global batch (divisible by 1, 2 and 4).
const GLOBAL_BATCH: usize = 16;
/// Collective timeout in the failure scenarios.
const FAILURE_TIMEOUT: Duration = Duration::from_secs(3);
/// The launcher gives up on an `mpirun` after this long (a hang is a failure).
const JOB_LIMIT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    if let Ok(scenario) = std::env::var(SCENARIO_VAR) {
        return worker(&scenario);
    }
    launcher()
}

// ----- the launcher --------------------------------------------------------------------------

fn launcher() -> ExitCode {
    let Some(mpirun) = find_mpirun() else {
        println!(
            "skipped: `mpirun` not found (install OpenMPI: apt-get install openmpi-bin libopenmpi-dev)"
        );
        println!("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        return ExitCode::SUCCESS;
    };
    type Check = fn(&Job) -> std::result::Result<(), String>;
    let cases: [(&str, usize, Check); 6] = [
        ("step", 2, every_rank_ok),
        ("step", 4, every_rank_ok),
        ("mlp_f32", 2, every_rank_ok),
        ("no_sync", 2, every_rank_ok),
        ("unused", 2, every_rank_ok),
        ("silent_rank", 2, silent_rank_times_out),
    ];
    let mut passed = 0;
    let mut failed = 0;
    let mut run_case = |name: &str, np: usize, check: Check| {
        let job = run_job(&mpirun, name, np);
        match check(&job) {
            Ok(()) => {
                println!(
                    "test mpirun -np {np} {name} ... ok ({:.1} s)",
                    job.took.as_secs_f64()
                );
                passed += 1;
            }
            Err(why) => {
                println!("test mpirun -np {np} {name} ... FAILED: {why}");
                println!("--- output\n{}", job.text);
                failed += 1;
            }
        }
    };
    for (name, np, check) in cases {
        run_case(name, np, check);
    }
    run_case("dead_rank", 2, dead_rank_ends_the_job);
    println!(
        "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn find_mpirun() -> Option<String> {
    let ok = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| "mpirun".to_string())
}

struct Job {
    np: usize,
    status: Option<i32>,
    text: String,
    took: Duration,
}

fn run_job(mpirun: &str, scenario: &str, np: usize) -> Job {
    let exe = std::env::current_exe().expect("the test binary's path");
    let start = Instant::now();
    // `timeout` bounds a hang; OpenMPI's options: as root, more ranks than cores, loopback TCP.
    let output: Output = Command::new("timeout")
        .arg(JOB_LIMIT.as_secs().to_string())
        .arg(mpirun)
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ])
        .args([
            "--mca",
            "btl",
            "self,tcp",
            "--mca",
            "btl_tcp_if_include",
            "lo",
        ])
        .args(["--mca", "oob_tcp_if_include", "lo"])
        .arg("-x")
        .arg(SCENARIO_VAR)
        .arg(&exe)
        .env(SCENARIO_VAR, scenario)
        // One intra-op thread per rank: up to 4 ranks share this machine.
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("run mpirun");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Job {
        np,
        status: output.status.code(),
        text,
        took: start.elapsed(),
    }
}

fn every_rank_ok(job: &Job) -> std::result::Result<(), String> {
    if job.status != Some(0) {
        return Err(format!("mpirun exited with {:?}", job.status));
    }
    for rank in 0..job.np {
        if !job.text.contains(&format!("rank {rank}: OK")) {
            return Err(format!("rank {rank} did not report OK"));
        }
    }
    Ok(())
}

fn silent_rank_times_out(job: &Job) -> std::result::Result<(), String> {
    if job.took >= JOB_LIMIT {
        return Err("the job hung".into());
    }
    if !job.text.contains("rank 0: OK") {
        return Err("rank 0 did not report its timeout".into());
    }
    Ok(())
}

/// A rank that dies (exits without finalising MPI) in the middle of training: the surviving
/// rank must not hang. Either OpenMPI's runtime aborts the job when it sees the rank die, or the
/// survivor's collective times out; both end the job with a failure status well before the
/// launcher's limit.
fn dead_rank_ends_the_job(job: &Job) -> std::result::Result<(), String> {
    if job.took >= JOB_LIMIT || job.status == Some(124) {
        return Err("the job hung".into());
    }
    if job.status == Some(0) {
        return Err("the job reported success although a rank died".into());
    }
    let how = if job.text.contains("rank 0: timed out") {
        "rank 0 timed out"
    } else {
        "mpirun aborted the job"
    };
    println!(
        "  dead_rank: {how}, exit status {:?}, {:.1} s",
        job.status,
        job.took.as_secs_f64()
    );
    Ok(())
}

// ----- the ranks -----------------------------------------------------------------------------

fn worker(scenario: &str) -> ExitCode {
    let timeout = match scenario {
        "silent_rank" | "dead_rank" => FAILURE_TIMEOUT,
        _ => Duration::from_secs(60),
    };
    let group = match MpiGroup::init_with_timeout(timeout) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("cannot initialise MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rank = group.rank();
    let outcome = match scenario {
        "step" => step(group, DType::F64),
        "mlp_f32" => step(group, DType::F32),
        "no_sync" => no_sync(group),
        "unused" => unused(group),
        "silent_rank" => silent_rank(group),
        "dead_rank" => dead_rank(group),
        other => Err(format!("unknown scenario {other}")),
    };
    match outcome {
        Ok(note) => {
            println!("rank {rank}: OK {note}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            println!("rank {rank}: FAILED {why}");
            ExitCode::FAILURE
        }
    }
}

type Outcome = std::result::Result<String, String>;

fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// `[w1 8x16, b1 16, w2 16x4, b2 4]` of `dtype`, from a seed.
fn mlp_params(seed: u64, dtype: DType) -> Result<Vec<Tensor>> {
    [&[8, 16][..], &[16], &[16, 4], &[4]]
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            Tensor::randn_seeded(shape, dtype, seed * 10 + i as u64)?.requires_grad_(true)
        })
        .collect()
}

fn mlp_loss(p: &[Tensor], x: &Tensor, t: &Tensor) -> Result<Tensor> {
    let h = x.matmul(&p[0])?.add(&p[1])?.tanh()?;
    let y = h.matmul(&p[2])?.add(&p[3])?;
    y.sub(t)?.pow(2.0)?.mean()
}

fn batch(dtype: DType) -> Result<(Tensor, Tensor)> {
    Ok((
        Tensor::randn_seeded(&[GLOBAL_BATCH, 8], dtype, 7)?,
        Tensor::randn_seeded(&[GLOBAL_BATCH, 4], dtype, 8)?,
    ))
}

fn rows(t: &Tensor, start: usize, len: usize) -> Result<Tensor> {
    t.narrow(0, start, len)?.copy()
}

fn to_f64(t: &Tensor) -> Result<Vec<f64>> {
    t.to_dtype(DType::F64)?.to_vec::<f64>()
}

fn flat_grads(params: &[Tensor]) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for p in params {
        out.extend(to_f64(
            &p.grad()
                .ok_or_else(|| autograd_runtime::Error::msg("no grad"))?,
        )?);
    }
    Ok(out)
}

fn flat_values(params: &[Tensor]) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for p in params {
        out.extend(to_f64(p)?);
    }
    Ok(out)
}

fn sgd(params: &[Tensor], lr: f64) -> Result<()> {
    let _g = no_grad();
    for p in params {
        if let Some(g) = p.grad() {
            p.sub_(&g.mul_scalar(lr)?)?;
        }
    }
    Ok(())
}

/// Checks that `values` are bit-identical on every rank: rank 0's are broadcast and compared.
fn same_on_every_rank(group: &dyn ProcessGroup, values: &[f64]) -> std::result::Result<(), String> {
    let theirs = group
        .broadcast(CommBuffer::F64(values.to_vec()), 0)
        .map_err(fail)?;
    let CommBuffer::F64(theirs) = theirs else {
        return Err("broadcast changed the dtype".into());
    };
    let differ = theirs
        .iter()
        .zip(values)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    if differ == 0 {
        Ok(())
    } else {
        Err(format!("{differ} values differ from rank 0's"))
    }
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// One step on this rank's shard vs one process on the whole batch (computed here too).
fn step(group: MpiGroup, dtype: DType) -> Outcome {
    let (rank, world) = (group.rank(), group.world_size());
    let (x, t) = batch(dtype).map_err(fail)?;
    let reference = mlp_params(0, dtype).map_err(fail)?;
    mlp_loss(&reference, &x, &t)
        .and_then(|l| l.backward())
        .map_err(fail)?;
    let reference_grads = flat_grads(&reference).map_err(fail)?;
    sgd(&reference, 0.1).map_err(fail)?;
    let reference_after = flat_values(&reference).map_err(fail)?;

    // Every rank starts from other values: DDP must broadcast rank 0's.
    let params = mlp_params(rank as u64, dtype).map_err(fail)?;
    let options = DdpOptions::new().bucket_cap_bytes(256); // several buckets
    let ddp = DistributedDataParallel::new(&params, group, options).map_err(fail)?;
    let n = GLOBAL_BATCH / world;
    let loss = mlp_loss(
        &params,
        &rows(&x, rank * n, n).map_err(fail)?,
        &rows(&t, rank * n, n).map_err(fail)?,
    )
    .map_err(fail)?;
    loss.backward().map_err(fail)?;
    let grads = flat_grads(&params).map_err(fail)?;
    sgd(&params, 0.1).map_err(fail)?;
    let after = flat_values(&params).map_err(fail)?;
    same_on_every_rank(&**ddp.group(), &grads)?;
    same_on_every_rank(&**ddp.group(), &after)?;
    // Only the order of the sums over the batch differs from the single process: relative
    // rounding of a few ulps of the dtype on values of order 1.
    let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
    let (dg, dp) = (
        max_diff(&grads, &reference_grads),
        max_diff(&after, &reference_after),
    );
    if dg > tol || dp > tol {
        return Err(format!(
            "differs from one process: grads by {dg:e}, params by {dp:e}"
        ));
    }
    Ok(format!(
        "{} buckets, bit-identical on {world} ranks, max |diff| vs one process: grads {dg:e}, params {dp:e}",
        ddp.buckets().len()
    ))
}

/// Two micro-batches, the first under `no_sync`.
fn no_sync(group: MpiGroup) -> Outcome {
    let (rank, world) = (group.rank(), group.world_size());
    let (x, t) = batch(DType::F64).map_err(fail)?;
    let per_rank = GLOBAL_BATCH / world;
    let micro = |k: usize| -> Result<(Tensor, Tensor)> {
        let start = rank * per_rank + k * per_rank / 2;
        Ok((
            rows(&x, start, per_rank / 2)?,
            rows(&t, start, per_rank / 2)?,
        ))
    };
    // Reference: the sum of every rank's two micro-batch losses, over the world size.
    let reference = mlp_params(0, DType::F64).map_err(fail)?;
    let mut total = Tensor::scalar(0.0f64);
    for r in 0..world {
        for k in 0..2 {
            let start = r * per_rank + k * per_rank / 2;
            let l = mlp_loss(
                &reference,
                &rows(&x, start, per_rank / 2).map_err(fail)?,
                &rows(&t, start, per_rank / 2).map_err(fail)?,
            )
            .map_err(fail)?;
            total = total.add(&l).map_err(fail)?;
        }
    }
    total
        .mul_scalar(1.0 / world as f64)
        .and_then(|l| l.backward())
        .map_err(fail)?;
    let expected = flat_grads(&reference).map_err(fail)?;

    let params = mlp_params(0, DType::F64).map_err(fail)?;
    let ddp = DistributedDataParallel::new(&params, group, DdpOptions::new()).map_err(fail)?;
    {
        let _local = ddp.no_sync();
        let (xs, ts) = micro(0).map_err(fail)?;
        mlp_loss(&params, &xs, &ts)
            .and_then(|l| l.backward())
            .map_err(fail)?;
    }
    let local = flat_grads(&params).map_err(fail)?;
    // Every rank learns whether any rank's local gradients differ from rank 0's.
    let differs = same_on_every_rank(&**ddp.group(), &local).is_err();
    let ranks_differing = ddp
        .group()
        .all_reduce_sum(CommBuffer::F64(vec![f64::from(u8::from(differs))]))
        .map_err(fail)?;
    if ranks_differing == CommBuffer::F64(vec![0.0]) {
        return Err("gradients were synchronised inside no_sync".into());
    }
    let (xs, ts) = micro(1).map_err(fail)?;
    mlp_loss(&params, &xs, &ts)
        .and_then(|l| l.backward())
        .map_err(fail)?;
    let synced = flat_grads(&params).map_err(fail)?;
    same_on_every_rank(&**ddp.group(), &synced)?;
    let d = max_diff(&synced, &expected);
    if d > 1e-12 {
        return Err(format!(
            "accumulated gradients differ from one process by {d:e}"
        ));
    }
    Ok(format!(
        "local inside no_sync, then synchronised; max |diff| {d:e}"
    ))
}

/// Rank 0 uses `a`; rank 1 uses `a` and `b`; no rank uses `c`.
fn unused(group: MpiGroup) -> Outcome {
    let rank = group.rank();
    let p: Vec<Tensor> = (0..3)
        .map(|_| Tensor::ones(&[2], DType::F64)?.requires_grad_(true))
        .collect::<Result<_>>()
        .map_err(fail)?;
    let options = DdpOptions::new().find_unused_parameters(true);
    let _ddp = DistributedDataParallel::new(&p, group, options).map_err(fail)?;
    let x = Tensor::from_vec(vec![1.0 + rank as f64, 10.0], &[2]).map_err(fail)?;
    let mut loss = p[0].mul(&x).map_err(fail)?;
    if rank == 1 {
        let b = p[1].mul(&x).and_then(|b| b.mul_scalar(3.0)).map_err(fail)?;
        loss = loss.add(&b).map_err(fail)?;
    }
    loss.sum().and_then(|l| l.backward()).map_err(fail)?;
    let got: Vec<Option<Vec<f64>>> = p
        .iter()
        .map(|t| t.grad().map(|g| g.to_vec::<f64>().unwrap_or_default()))
        .collect();
    let expected = vec![Some(vec![1.5, 10.0]), Some(vec![3.0, 15.0]), None];
    if got != expected {
        return Err(format!("gradients {got:?}, expected {expected:?}"));
    }
    Ok("locally unused: zeros; unused everywhere: no gradient".into())
}

/// Rank 1 stays alive but never joins the step: rank 0 must fail within the timeout.
fn silent_rank(group: MpiGroup) -> Outcome {
    let rank = group.rank();
    let w = Tensor::ones(&[4], DType::F32)
        .and_then(|w| w.requires_grad_(true))
        .map_err(fail)?;
    let options = DdpOptions::new().timeout(FAILURE_TIMEOUT * 2);
    let ddp = DistributedDataParallel::new(&[w.clone()], group, options).map_err(fail)?;
    if rank != 0 {
        // Stuck (e.g. in a long data load) past rank 0's timeout, then gone without finalising.
        std::thread::sleep(FAILURE_TIMEOUT * 2);
        println!("rank {rank}: OK (was silent)");
        std::process::exit(0);
    }
    let start = Instant::now();
    let result = w
        .mul_scalar(2.0)
        .and_then(|y| y.sum())
        .and_then(|l| l.backward());
    let took = start.elapsed();
    std::mem::forget(ddp); // its group is broken: do not wait for the communication thread
    match result {
        Ok(()) => Err("backward succeeded without rank 1".into()),
        Err(e) if e.to_string().contains("timed out") && took < FAILURE_TIMEOUT * 2 => {
            println!(
                "rank 0: OK backward failed after {:.1} s: {e}",
                took.as_secs_f64()
            );
            // MPI is not finalised after a timed-out collective (it could hang): exit directly.
            std::process::exit(0);
        }
        Err(e) => Err(format!("after {took:?}: {e}")),
    }
}

/// Rank 1 dies before its step's all-reduce.
fn dead_rank(group: MpiGroup) -> Outcome {
    let rank = group.rank();
    let w = Tensor::ones(&[4], DType::F32)
        .and_then(|w| w.requires_grad_(true))
        .map_err(fail)?;
    let options = DdpOptions::new().timeout(FAILURE_TIMEOUT * 2);
    let ddp = DistributedDataParallel::new(&[w.clone()], group, options).map_err(fail)?;
    if rank != 0 {
        eprintln!("rank {rank}: dying on purpose");
        std::process::exit(3);
    }
    let result = w
        .mul_scalar(2.0)
        .and_then(|y| y.sum())
        .and_then(|l| l.backward());
    std::mem::forget(ddp);
    match result {
        Ok(()) => Err("backward succeeded without rank 1".into()),
        Err(e) => {
            println!("rank 0: timed out as expected: {e}");
            std::process::exit(1);
        }
    }
}
