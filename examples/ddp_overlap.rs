//! How much of DistributedDataParallel's communication hides behind backward.
//!
//! ```text
//! cargo build --release --features mpi --example ddp_overlap
//! mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo \
//!     target/release/examples/ddp_overlap
//! ```
//!
//! The large MLP (a batch of 256 rows of 1024 features -> 1024 -> 1024, f32, tanh, mean squared
//! error; 2.1 M parameters, 8.4 MB of gradients) trains on every rank; rank 0 prints the median
//! step time (forward, backward with its synchronisation, SGD) in three modes:
//!
//! * no communication: the same steps without DDP (each rank alone), the floor;
//! * all-reduce after backward: DDP with `overlap(false)`, every bucket starts when backward ends;
//! * overlapped: DDP as is, each bucket starts as soon as its gradients are in;
//!
//! and, for the DDP modes, the time spent in all-reduces per step and the fraction of it that ran
//! while backward was still running (`StepStats::hidden_fraction`). Options:
//! `--steps N` (20), `--bucket-mb M` (4; the default 25 MB would make one bucket of this model,
//! with nothing to overlap), `--threads T` (intra-op threads per rank, 1), `--batch B` (256).

use std::time::{Duration, Instant};

use autograd::distributed::{DdpOptions, DistributedDataParallel, MpiGroup, ProcessGroup};
use autograd::{no_grad, DType, Result, Tensor};

struct Config {
    steps: usize,
    bucket_mb: f64,
    threads: usize,
    batch: usize,
}

fn parse_args() -> std::result::Result<Config, String> {
    let mut c = Config {
        steps: 20,
        bucket_mb: 4.0,
        threads: 1,
        batch: 256,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = || format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--steps" => c.steps = value.parse().map_err(|_| bad())?,
            "--bucket-mb" => c.bucket_mb = value.parse().map_err(|_| bad())?,
            "--threads" => c.threads = value.parse().map_err(|_| bad())?,
            "--batch" => c.batch = value.parse().map_err(|_| bad())?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(c)
}

const WIDTH: usize = 1024;
const WARMUP: usize = 3;

fn params(seed: u64) -> Result<Vec<Tensor>> {
    let scale = 1.0 / (WIDTH as f64).sqrt();
    let mut p = Vec::new();
    for layer in 0..2u64 {
        let w = Tensor::randn(&[WIDTH, WIDTH], DType::F32, seed + layer)?.mul_scalar(scale)?;
        p.push(w.requires_grad_(true)?);
        p.push(Tensor::zeros(&[WIDTH], DType::F32)?.requires_grad_(true)?);
    }
    Ok(p)
}

fn step(p: &[Tensor], x: &Tensor, t: &Tensor) -> Result<()> {
    let h = x.matmul(&p[0])?.add(&p[1])?.tanh()?;
    let y = h.matmul(&p[2])?.add(&p[3])?;
    y.sub(t)?.pow(2.0)?.mean()?.backward()?;
    let _g = no_grad();
    for q in p {
        if let Some(g) = q.grad() {
            q.sub_(&g.mul_scalar(1e-3)?)?;
        }
        q.set_grad(None);
    }
    Ok(())
}

struct Figures {
    median: Duration,
    comm: Duration,
    hidden_fraction: f64,
    buckets: usize,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Times `steps` steps after a warm-up; with `ddp`, also its communication figures.
fn measure(
    group: &dyn ProcessGroup,
    p: &[Tensor],
    x: &Tensor,
    t: &Tensor,
    steps: usize,
    ddp: Option<&DistributedDataParallel>,
) -> Result<Figures> {
    let mut times = Vec::with_capacity(steps);
    let mut comm = Vec::new();
    let mut hidden = Vec::new();
    for i in 0..WARMUP + steps {
        group.barrier()?; // ranks start each step together
        let start = Instant::now();
        step(p, x, t)?;
        if i >= WARMUP {
            times.push(start.elapsed());
            if let Some(ddp) = ddp {
                let s = ddp.last_step_stats();
                comm.push(s.comm);
                hidden.push(s.hidden_fraction());
            }
        }
    }
    Ok(Figures {
        median: median(times),
        comm: if comm.is_empty() {
            Duration::ZERO
        } else {
            median(comm)
        },
        hidden_fraction: hidden.iter().sum::<f64>() / hidden.len().max(1) as f64,
        buckets: ddp.map_or(0, |d| d.buckets().len()),
    })
}

fn main() -> std::process::ExitCode {
    let config = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&config) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(c: &Config) -> Result<()> {
    autograd::set_num_threads(c.threads)?;
    let group = std::sync::Arc::new(MpiGroup::init()?);
    let (rank, world) = (group.rank(), group.world_size());
    let x = Tensor::randn(&[c.batch, WIDTH], DType::F32, 100 + rank as u64)?;
    let t = Tensor::randn(&[c.batch, WIDTH], DType::F32, 200 + rank as u64)?;
    let cap = (c.bucket_mb * 1024.0 * 1024.0) as usize;

    let p = params(1)?;
    let alone = measure(&*group, &p, &x, &t, c.steps, None)?;
    let mut rows = vec![("no communication", alone)];
    for (name, overlap) in [("all-reduce after backward", false), ("overlapped", true)] {
        let p = params(1)?;
        let options = DdpOptions::new().bucket_cap_bytes(cap).overlap(overlap);
        let ddp = DistributedDataParallel::new(&p, group.clone(), options)?;
        let figures = measure(&*group, &p, &x, &t, c.steps, Some(&ddp))?;
        rows.push((name, figures));
    }
    if rank == 0 {
        let grad_mb = (2 * WIDTH * WIDTH + 2 * WIDTH) as f64 * 4.0 / 1e6;
        println!(
            "ddp_overlap: {world} ranks, MLP {WIDTH}-{WIDTH}-{WIDTH} f32, batch {} per rank, \
             {grad_mb:.1} MB of gradients, buckets of {} MB, {} intra-op thread(s) per rank, \
             median of {} steps",
            c.batch, c.bucket_mb, c.threads, c.steps
        );
        println!(
            "{:<27} {:>7} {:>9} {:>13} {:>8}",
            "mode", "buckets", "step ms", "all-reduce ms", "hidden"
        );
        for (name, f) in &rows {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            if f.buckets == 0 {
                println!(
                    "{name:<27} {:>7} {:>9.1} {:>13} {:>8}",
                    "-",
                    ms(f.median),
                    "-",
                    "-"
                );
            } else {
                println!(
                    "{name:<27} {:>7} {:>9.1} {:>13.1} {:>7.0}%",
                    f.buckets,
                    ms(f.median),
                    ms(f.comm),
                    100.0 * f.hidden_fraction
                );
            }
        }
        let after = rows[1].1.median.as_secs_f64();
        let overlapped = rows[2].1.median.as_secs_f64();
        println!(
            "overlapping saves {:.1} ms per step ({:.0}% of the after-backward step time)",
            (after - overlapped) * 1e3,
            100.0 * (after - overlapped) / after
        );
    }
    group.barrier()?;
    Ok(())
}
