//! How much of DistributedDataParallel's communication hides behind backward.
//!
//! ```text
//! cargo build --release --features mpi -p harnesses --example ddp_overlap
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
//! while backward was still running (`StepStats::hidden_fraction`). The modes take turns, `--steps`
//! steps each, for `--rounds` rounds, so that a machine whose load drifts treats them alike.
//! Options: `--rounds R` (5), `--steps N` (10), `--bucket-mb M` (4; the default 25 MB would make
//! one bucket of this model, with nothing to overlap), `--threads T` (intra-op threads per rank,
//! 1), `--batch B` (256).

use std::time::{Duration, Instant};

use autograd::distributed::{DdpOptions, DistributedDataParallel, MpiGroup, ProcessGroup};
use autograd::{DType, Result, Tensor, no_grad};

struct Config {
    rounds: usize,
    steps: usize,
    bucket_mb: f64,
    threads: usize,
    batch: usize,
}

fn parse_args() -> std::result::Result<Config, String> {
    let mut c = Config {
        rounds: 5,
        steps: 10,
        bucket_mb: 4.0,
        threads: 1,
        batch: 256,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = || format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--rounds" => c.rounds = value.parse().map_err(|_| bad())?,
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
        let w =
            Tensor::randn_seeded(&[WIDTH, WIDTH], DType::F32, seed + layer)?.mul_scalar(scale)?;
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
        q.set_grad(None)?;
    }
    Ok(())
}

/// Step times and communication figures of one mode.
#[derive(Default)]
struct Figures {
    times: Vec<Duration>,
    comm: Vec<Duration>,
    hidden: Vec<f64>,
    buckets: usize,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Runs `steps` steps (after `warmup` untimed ones) and adds their figures to `f`.
fn measure(
    group: &dyn ProcessGroup,
    p: &[Tensor],
    batch: (&Tensor, &Tensor),
    (warmup, steps): (usize, usize),
    ddp: Option<&DistributedDataParallel>,
    f: &mut Figures,
) -> Result<()> {
    for i in 0..warmup + steps {
        group.barrier()?; // ranks start each step together
        let start = Instant::now();
        step(p, batch.0, batch.1)?;
        if i >= warmup {
            f.times.push(start.elapsed());
            if let Some(ddp) = ddp {
                let s = ddp.last_step_stats();
                f.comm.push(s.comm);
                f.hidden.push(s.hidden_fraction());
                f.buckets = s.buckets;
            }
        }
    }
    Ok(())
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
    let x = Tensor::randn_seeded(&[c.batch, WIDTH], DType::F32, 100 + rank as u64)?;
    let t = Tensor::randn_seeded(&[c.batch, WIDTH], DType::F32, 200 + rank as u64)?;
    let cap = (c.bucket_mb * 1024.0 * 1024.0) as usize;

    // One replica per mode; each DDP hooks only its own replica's parameters.
    let alone = params(1)?;
    let after = params(1)?;
    let overlapped = params(1)?;
    let options = DdpOptions::new().bucket_cap_bytes(cap);
    let ddp_after =
        DistributedDataParallel::new(&after, group.clone(), options.clone().overlap(false))?;
    let ddp_overlapped = DistributedDataParallel::new(&overlapped, group.clone(), options)?;
    let modes: [(&str, &[Tensor], Option<&DistributedDataParallel>); 3] = [
        ("no communication", &alone, None),
        ("all-reduce after backward", &after, Some(&ddp_after)),
        ("overlapped", &overlapped, Some(&ddp_overlapped)),
    ];
    let mut figures: Vec<Figures> = modes.iter().map(|_| Figures::default()).collect();
    for round in 0..c.rounds {
        let warmup = if round == 0 { WARMUP } else { 1 };
        for ((_, p, ddp), f) in modes.iter().zip(&mut figures) {
            measure(&*group, p, (&x, &t), (warmup, c.steps), *ddp, f)?;
        }
    }

    if rank == 0 {
        let grad_mb = (2 * WIDTH * WIDTH + 2 * WIDTH) as f64 * 4.0 / 1e6;
        println!(
            "ddp_overlap: {world} ranks, MLP {WIDTH}-{WIDTH}-{WIDTH} f32, batch {} per rank, \
             {grad_mb:.1} MB of gradients, buckets of {} MB, {} intra-op thread(s) per rank, \
             median of {} steps in {} rounds",
            c.batch,
            c.bucket_mb,
            c.threads,
            c.steps * c.rounds,
            c.rounds
        );
        println!(
            "{:<27} {:>7} {:>9} {:>13} {:>8}",
            "mode", "buckets", "step ms", "all-reduce ms", "hidden"
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let medians: Vec<Duration> = figures.iter().map(|f| median(f.times.clone())).collect();
        for (((name, _, _), f), step) in modes.iter().zip(&figures).zip(&medians) {
            if f.buckets == 0 {
                println!(
                    "{name:<27} {:>7} {:>9.1} {:>13} {:>8}",
                    "-",
                    ms(*step),
                    "-",
                    "-"
                );
            } else {
                let hidden = f.hidden.iter().sum::<f64>() / f.hidden.len().max(1) as f64;
                println!(
                    "{name:<27} {:>7} {:>9.1} {:>13.1} {:>7.0}%",
                    f.buckets,
                    ms(*step),
                    ms(median(f.comm.clone())),
                    100.0 * hidden
                );
            }
        }
        let (after, overlapped) = (medians[1].as_secs_f64(), medians[2].as_secs_f64());
        println!(
            "overlapping saves {:.1} ms per step ({:.0}% of the after-backward step time)",
            (after - overlapped) * 1e3,
            100.0 * (after - overlapped) / after
        );
    }
    group.barrier()?;
    Ok(())
}
