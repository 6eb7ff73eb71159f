//! The main job: trains a classifier with this crate's autograd, `autograd::nn` and
//! `autograd::optim`.
//!
//! ```text
//! cargo run --release -p train-mlp                      # 8x8 digits, a few seconds
//! cargo run --release -p train-mlp -- --help            # every option
//! cargo run --release -p train-mlp -- --data mnist:DIR --epochs 5 --batch-size 128
//! cargo run --release -p train-mlp -- --model cnn       # a small CNN, ≥ 98.5%
//! cargo run --release -p train-mlp -- --epochs 3 --save target/train_mlp/ck.safetensors
//! cargo run --release -p train-mlp -- --epochs 6 --resume target/train_mlp/ck.safetensors
//! cargo run --release -p train-mlp -- --graph target/train_mlp/step.dot --profile
//! cargo run --release -p train-mlp --features cuda -- --device cuda:0   # on a GPU
//! cargo build --release -p train-mlp --features mpi &&
//!     mpirun -np 2 target/release/train_mlp --ddp       # data-parallel, 2 processes
//! ```
//!
//! * Data (`data.rs`): by default UCI's 8×8 handwritten digits (1,797 images, 64
//!   pixels 0–16 scaled to 0–1, 10 classes; the library's `autograd::data::datasets::Digits`,
//!   see `autograd-runtime/data/README.md`), a fixed seeded 20% held out; `--data iris` the Iris
//!   flowers; `--data mnist:DIR` MNIST from its IDX files (`autograd::data::datasets::Mnist`).
//! * Model (`model.rs`): an `nn::Sequential` of `nn::Linear` layers of `--hidden` widths with
//!   `--activation` between them, or (`--model cnn`) `nn::Conv2d`, `nn::MaxPool2d`, `nn::Flatten`
//!   and `nn::Linear`; f32, on `--device` (`cpu`, `virtual:N`, `cuda:N`). With
//!   `--activation-checkpoint reentrant|non-reentrant`, each hidden block of the MLP runs inside
//!   `autograd::checkpoint` (its activations recomputed in the backward, the same weights).
//! * Loss (`loss.rs`): softmax cross-entropy as one `#[differentiable(derive)]` op, against
//!   one-hot targets, label-smoothed with `--label-smoothing`.
//! * Optimizers: `autograd::optim`'s `Sgd` (momentum) and `Adam`, and `CosineAnnealingLR` for
//!   `--schedule cosine`.
//! * Training (`train.rs`): mini-batches reshuffled every epoch from `--seed`; the wall time is
//!   split into forward, backward, optimizer, batching and evaluation.
//! * Checkpoints (`checkpoint.rs`): `--save` writes model, optimizer state, epoch and the
//!   shuffling generator's state as safetensors; `--resume` continues from it.
//! * Output (`progress.rs`, `plot.rs`, `inspect.rs`): an `indicatif` bar per epoch on a terminal,
//!   plain lines otherwise; a loss/accuracy plot (PNG or SVG); optionally the DOT graph of one
//!   step (`--graph`) and the autograd profiler's table of the last epoch (`--profile`).
//! * Data-parallel (`parallel.rs`, cargo feature `mpi`): `--ddp` under `mpirun -np N`; every
//!   rank trains on 1/N of each mini-batch through `autograd::distributed`, and rank 0 reports.

/// `println!`, except that it does not panic when stdout is closed early (`train_mlp | head -3`): the
/// output is dropped and the run goes on.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod checkpoint;
mod cli;
mod data;
mod inspect;
mod loss;
mod model;
mod parallel;
mod plot;
mod progress;
mod rng;
mod train;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use autograd::nn::Module;
use autograd::optim::lr_scheduler::CosineAnnealingLR;
use autograd::optim::{Adam, AdamOptions, Optimizer, Sgd, SgdOptions};
use autograd::{DType, Device, Tensor};
use clap::Parser;

use crate::checkpoint::Resumed;
use crate::cli::{Args, OptimizerKind, Schedule};
use crate::model::{Model, ModelKind};
use crate::progress::{Mode, Progress, thousands};
use crate::train::{EpochStats, Trainer};

/// The Chrome trace of `--profile` goes here.
const TRACE_PATH: &str = "target/train_mlp/profile.json";
/// Mixed into `--seed` for the shuffles, so they do not reuse the first layer's weight stream.
const SHUFFLE_SEED: u64 = 0x5f1f_f1e5;

/// Why a run failed (printed as `error: ...`, exit code 1).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error(transparent)]
    Autograd(#[from] autograd::Error),
    #[error(transparent)]
    Data(#[from] data::DataError),
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn main() -> ExitCode {
    // Usage errors (bad values, unknown flags) are reported by clap with exit code 2.
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if !cfg!(feature = "cuda") && matches!(args.device.0, Device::Cuda(_)) {
                eprintln!(
                    "hint: CUDA support is this program's feature `cuda`: \
                     cargo run --release -p train-mlp --features cuda -- --device {}",
                    args.device.0
                );
            }
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), RunError> {
    if let Some(n) = args.threads {
        autograd::set_num_threads(n)?;
    }
    let device = args.device.0;
    // Fail before loading any data if the device cannot hold tensors (e.g. CUDA missing).
    Tensor::zeros(&[1], DType::F32)?.to(device)?;

    // `--ddp`: join the MPI job first; only rank 0 prints and writes files.
    let group = parallel::join(args)?;
    let rank = group.as_ref().map_or(0, parallel::rank);
    let lead = rank == 0;

    let data = data::load(&args.data)?;
    let sizes: Vec<usize> = std::iter::once(data.features)
        .chain(args.hidden.0.iter().copied())
        .chain(std::iter::once(data.classes))
        .collect();
    let mut model = match args.model {
        ModelKind::Mlp => Model::mlp(&sizes, args.activation, args.seed, device)?,
        ModelKind::Cnn => Model::cnn(data.features, data.classes, args.seed, device)?,
    };
    model.set_activation_checkpoint(args.activation_checkpoint)?;
    let (lr, batch_size, epochs) = (args.lr(), args.batch_size(), args.epochs());
    let mut optimizer: Box<dyn Optimizer> = match args.optimizer {
        OptimizerKind::Sgd => Box::new(Sgd::new(
            model.parameters(),
            SgdOptions::default().lr(lr).momentum(args.momentum),
        )?),
        OptimizerKind::Adam => Box::new(Adam::new(
            model.parameters(),
            AdamOptions::default().lr(lr),
        )?),
    };
    let optimizer_name = match args.optimizer {
        OptimizerKind::Sgd => format!("sgd lr {lr} momentum {}", args.momentum),
        OptimizerKind::Adam => format!("adam lr {lr}"),
    };
    let mut optimizer_desc = optimizer_name.clone();
    // The learning-rate schedule runs over every step of `--epochs` (on resume, of the whole
    // run); its scheduler is made before a checkpoint's optimizer state is loaded.
    let batches_per_epoch = data.train.len().div_ceil(batch_size);
    let scheduler = match args.schedule() {
        Schedule::Constant => None,
        Schedule::Cosine => {
            optimizer_desc.push_str(", cosine schedule");
            Some(CosineAnnealingLR::new(
                optimizer.as_mut(),
                epochs * batches_per_epoch,
                0.0,
            )?)
        }
    };
    if args.label_smoothing() > 0.0 {
        optimizer_desc.push_str(&format!(", label smoothing {}", args.label_smoothing()));
    }
    let config = run_config(args);
    let resumed = args
        .resume
        .as_deref()
        .map(|path| checkpoint::read(path, &config))
        .transpose()?;
    if let Some((saved, _)) = &resumed
        && saved.epoch >= epochs
    {
        return Err(autograd::Error::msg(format!(
            "the checkpoint has trained {} epochs already: ask for more with --epochs",
            saved.epoch
        ))
        .into());
    }
    let mode = if lead {
        Mode::detect(args.quiet)
    } else {
        Mode::Quiet
    };
    if mode != Mode::Quiet {
        say!(
            "data:  {}: {} train / {} test, {} features, {} classes ({})",
            data.name,
            data.train.len(),
            data.test.len(),
            data.features,
            data.classes,
            data.split_note
        );
        say!(
            "model: {}, {} parameters, f32 on {device}, {} CPU threads",
            model.description(),
            thousands(model.parameter_count() as f64),
            autograd::num_threads()
        );
        say!(
            "train: {optimizer_desc}, batch {batch_size}, {} epochs, seed {}",
            epochs,
            args.seed
        );
    }
    let mut trainer = Trainer::new(
        model,
        optimizer,
        &data,
        device,
        batch_size,
        args.seed ^ SHUFFLE_SEED,
        args.graph.clone().filter(|_| lead),
    )?
    .with_label_smoothing(args.label_smoothing())?;
    if let Some(scheduler) = scheduler {
        trainer = trainer.with_scheduler(Box::new(scheduler));
    }
    let mut history: Vec<EpochStats> = Vec::with_capacity(epochs);
    let mut first_epoch = 1;
    if let (Some((saved, dict)), Some(path)) = (&resumed, &args.resume) {
        trainer.fast_forward(saved.rng_state, saved.steps)?;
        checkpoint::restore(dict, &mut trainer.model, trainer.optimizer.as_mut())?;
        history.clone_from(&saved.history);
        first_epoch = saved.epoch + 1;
        if mode != Mode::Quiet {
            say!(
                "resume: {} after epoch {}, training epochs {first_epoch} to {}",
                path.display(),
                saved.epoch,
                epochs
            );
        }
    }
    if let Some(group) = group {
        trainer = trainer.data_parallel(group)?;
        let (_, world) = trainer.rank_and_world();
        if mode != Mode::Quiet {
            say!(
                "ddp:   {world} ranks over MPI, each trains on 1/{world} of every batch of \
                 {batch_size}"
            );
        }
    }

    let mut progress = Progress::new(mode, epochs);
    let mut profile = None;
    let start = Instant::now();
    for epoch in first_epoch..=epochs {
        let stats = if args.profile && epoch == epochs {
            let (stats, prof) = inspect::profile(|| trainer.epoch(epoch, &mut progress));
            profile = Some(prof);
            stats?
        } else {
            trainer.epoch(epoch, &mut progress)?
        };
        history.push(stats);
    }
    let wall = start.elapsed();
    let (_, world) = trainer.rank_and_world();
    if world > 1 {
        let identical = trainer.parameters_identical_across_ranks()?;
        if lead {
            say!(
                "ddp: parameters bit-identical on all {world} ranks: {}",
                if identical { "yes" } else { "NO" }
            );
        }
        if !identical {
            return Err(autograd::Error::msg("the ranks' parameters diverged").into());
        }
    }
    if !lead {
        return Ok(());
    }
    if let Some(path) = &args.save {
        let state = Resumed {
            epoch: epochs,
            rng_state: trainer.rng_state(),
            steps: trainer.steps(),
            history: history.clone(),
        };
        checkpoint::save(
            path,
            &trainer.model,
            trainer.optimizer.as_ref(),
            &state,
            &config,
        )?;
    }

    let last = history.last().expect("invariant: --epochs is at least 1");
    let (correct, total) = trainer.test_counts()?;
    let t = &trainer.timings;
    let secs = |d: Duration| d.as_secs_f64();
    let share = |d: Duration| 100.0 * secs(d) / secs(wall).max(1e-9);
    say!(
        "test accuracy {:.1}% ({correct}/{total}), test loss {:.4}, train loss {:.4} after {} epoch{}",
        100.0 * last.test_accuracy,
        last.test_loss,
        last.train_loss,
        last.epoch,
        if last.epoch == 1 { "" } else { "s" }
    );
    say!(
        "wall time {:.2} s: forward {:.2} s ({:.0}%), backward {:.2} s ({:.0}%), optimizer {:.2} s \
         ({:.0}%), batching {:.2} s, evaluation {:.2} s, other {:.2} s",
        secs(wall),
        secs(t.forward),
        share(t.forward),
        secs(t.backward),
        share(t.backward),
        secs(t.optimizer),
        share(t.optimizer),
        secs(t.batching),
        secs(t.evaluation),
        secs(wall.saturating_sub(t.total())),
    );

    if let Some(path) = &args.graph {
        say!(
            "graph: {} (one training step; render with `dot -Tsvg {} -o graph.svg`)",
            path.display(),
            path.display()
        );
    }
    if let Some(prof) = &profile {
        say!("profile of epoch {} (backward nodes):", epochs);
        say!("{}", inspect::table(prof));
        inspect::write_trace(prof, Path::new(TRACE_PATH))?;
        say!("profile: {TRACE_PATH} (Chrome trace: chrome://tracing or ui.perfetto.dev)");
    }
    let title = format!(
        "{} · {} · {optimizer_name} · test accuracy {:.1}%",
        args.data,
        trainer.model.description(),
        100.0 * last.test_accuracy
    );
    plot::draw(&args.plot, &title, &history)?;
    say!("plot: {}", args.plot.path.display());
    if let Some(path) = &args.save {
        say!(
            "saved: {} (model, optimizer, epoch {}; continue with --resume)",
            path.display(),
            epochs
        );
    }
    Ok(())
}

/// The options a resumed run must share with the run that saved the checkpoint: everything
/// that shapes the model, the data order or the updates (not `--epochs`, the device, the
/// output options).
fn run_config(args: &Args) -> String {
    format!(
        "data {} model {:?} hidden {} activation {:?} optimizer {:?} lr {} momentum {} batch {} \
         schedule {:?} label-smoothing {} seed {}",
        args.data,
        args.model,
        args.hidden,
        args.activation,
        args.optimizer,
        args.lr(),
        args.momentum,
        args.batch_size(),
        args.schedule(),
        args.label_smoothing(),
        args.seed
    )
}
