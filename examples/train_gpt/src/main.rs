//! The second main job: a character-level GPT learns Shakespeare.
//!
//! ```text
//! cargo run --release -p train-gpt                        # about a minute on 2 cores
//! cargo run --release -p train-gpt -- --help              # every option
//! cargo run --release -p train-gpt -- --steps 2000 --n-layer 4 --n-embd 128
//! cargo run --release -p train-gpt -- --steps 300 --save target/train_gpt/ck.safetensors
//! cargo run --release -p train-gpt -- --steps 600 --resume target/train_gpt/ck.safetensors
//! cargo run --release -p train-gpt --features cuda -- --device cuda:0
//! cargo run --release -p train-gpt -- --autocast bf16          # mixed precision (CPU: bf16, f16)
//! ```
//!
//! * Data (`data.rs`): the embedded Shakespeare text, one token per character, the first 90%
//!   for training; each step draws `--batch-size` random windows of `--block-size` characters
//!   (PyTorch's `torch.randint` stream, from `--seed`).
//! * Model (`model.rs`): GPT-2's layout with nanoGPT's names, declared with
//!   `#[derive(Module)]`; weight tying; GPT-2's initialisation after `manual_seed(--seed)`,
//!   PyTorch's weights for the same seed.
//! * Optimizer: AdamW, the learning rate warmed up linearly over the first 5% of
//!   `--decay-steps` and then annealed on a cosine to a tenth.
//! * Output: a progress bar (plain lines when stdout is not a terminal), the validation loss
//!   every `--eval-interval` steps, then a generated sample (`--temperature`, `--top-k`),
//!   tokens/s, and the loss plot (`--plot`).
//! * Checkpoints: `--save` writes the model, AdamW's state and the step reached; `--resume`
//!   continues from it with the same batches a straight run would have drawn.

use std::f64::consts::PI;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use autograd::amp::{AutocastGuard, GradScaler, GradScalerOptions, autocast};
use autograd::nn::Module;
use autograd::optim::{AdamOptions, AdamW, Optimizer};
use autograd::{DType, Device, Error, Generator, Result, StateDict, manual_seed, no_grad};
use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use train_gpt::model::Sampling;
use train_gpt::{Config, Corpus, Gpt, data};

mod plot;

/// Trains a character-level GPT on the embedded Shakespeare and prints what it writes.
///
/// By default a 2-layer, 4-head, 64-wide model with a 64-character context, 1500 AdamW steps of
/// 16 windows: about a minute on 2 cores, enough for words, names and line structure.
#[derive(Clone, Debug, Parser)]
#[command(name = "train_gpt", version, about, long_about)]
struct Args {
    /// Optimizer steps (with `--resume`: the step to train up to).
    #[arg(long, default_value_t = 1500)]
    steps: usize,
    /// Windows per batch.
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
    /// Characters of context.
    #[arg(long, default_value_t = 64)]
    block_size: usize,
    /// Transformer blocks.
    #[arg(long, default_value_t = 2)]
    n_layer: usize,
    /// Attention heads (must divide `--n-embd`).
    #[arg(long, default_value_t = 4)]
    n_head: usize,
    /// Width of the residual stream.
    #[arg(long, default_value_t = 64)]
    n_embd: usize,
    /// Peak learning rate.
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Steps of the learning-rate schedule: warm-up over the first 5%, then a cosine down to a
    /// tenth of `--lr` at this step (and flat after). Independent of `--steps`, so that a run
    /// stopped early and resumed follows the same schedule as a straight one.
    #[arg(long, default_value_t = 1500)]
    decay_steps: usize,
    /// AdamW's decoupled weight decay.
    #[arg(long, default_value_t = 0.1)]
    weight_decay: f64,
    /// Steps between validation-loss estimates.
    #[arg(long, default_value_t = 300)]
    eval_interval: usize,
    /// Batches averaged for each validation-loss estimate.
    #[arg(long, default_value_t = 20)]
    eval_batches: usize,
    /// Seeds the weights (as `torch.manual_seed`), the batches and the sample.
    #[arg(long, default_value_t = 1337)]
    seed: u64,
    /// Threads of the CPU kernels' pool (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// `cpu`, `virtual:N` or `cuda:N` (a build with the feature `cuda`).
    #[arg(long, default_value = "cpu")]
    device: Device,
    /// Characters to generate at the end.
    #[arg(long, default_value_t = 400)]
    sample_len: usize,
    /// The text the sample continues.
    #[arg(long, default_value = "ROMEO:\n")]
    prompt: String,
    /// Sampling temperature (logits divided by it).
    #[arg(long, default_value_t = 0.8)]
    temperature: f64,
    /// Draw only among the k most likely characters (0: all).
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Where to draw the losses: a `.png` or `.svg` path.
    #[arg(long, default_value = "target/train_gpt/loss.png")]
    plot: PathBuf,
    /// Write a checkpoint here at the end.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Continue from this checkpoint (written with the same model options).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
    /// Mixed precision: run the forward passes and the loss under autocast in this dtype
    /// (`bf16` or `f16`), as PyTorch's `torch.autocast(device_type, dtype)` around them, the
    /// backward pass outside; with `f16` the loss is scaled by a `GradScaler`, as nanoGPT does.
    #[arg(long, value_parser = parse_autocast)]
    autocast: Option<DType>,
}

/// `--autocast`'s values.
fn parse_autocast(s: &str) -> std::result::Result<DType, String> {
    match s {
        "bf16" | "bfloat16" => Ok(DType::BF16),
        "f16" | "float16" => Ok(DType::F16),
        _ => Err(format!("expected bf16 or f16, got {s:?}")),
    }
}

/// The autocast region of `--autocast` (none without it).
fn autocast_region(args: &Args) -> Result<Option<AutocastGuard>> {
    args.autocast
        .map(|dtype| autocast(args.device, dtype))
        .transpose()
}

/// `println!` that does not panic when stdout is closed early.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train_gpt: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    if let Some(n) = args.threads {
        autograd::set_num_threads(n)?;
    }
    let corpus = Corpus::shakespeare();
    let config = Config {
        vocab_size: corpus.vocab_size(),
        block_size: args.block_size,
        n_layer: args.n_layer,
        n_head: args.n_head,
        n_embd: args.n_embd,
    };
    check(args)?;
    manual_seed(args.seed);
    let mut model = Gpt::new(config)?;
    model.to(args.device)?;
    let mut opt = AdamW::new(
        model.parameters(),
        AdamOptions::adamw()
            .lr(args.lr)
            .weight_decay(args.weight_decay),
    )?;
    // f16's small gradients need loss scaling (nanoGPT's `GradScaler(enabled=dtype == float16)`).
    let mut scaler = match args.autocast {
        Some(DType::F16) => {
            let device_type = if matches!(args.device, Device::Cuda(_)) {
                "cuda"
            } else {
                "cpu"
            };
            Some(GradScaler::new(
                GradScalerOptions::default().device(device_type),
            )?)
        }
        _ => None,
    };
    let batches = Generator::new().manual_seed(args.seed);
    let mut start = 0;
    if let Some(path) = &args.resume {
        start = resume(path, &describe(&config), &mut model, &mut opt)?;
        // Draw the batches the saved run took, so the rest of the stream is a straight run's.
        for _ in 0..start {
            data::offsets(&corpus.train, args.block_size, args.batch_size, &batches)?;
        }
    }
    say!(
        "train_gpt: {} parameters, {} layers x {} heads x {} wide, context {}, on {}; steps {}..{}",
        model.parameter_count(),
        args.n_layer,
        args.n_head,
        args.n_embd,
        args.block_size,
        args.device,
        start,
        args.steps
    );
    let bar = progress(args, start);
    let (mut train_curve, mut val_curve) = (Vec::new(), Vec::new());
    let mut train_seconds = 0.0;
    let began = Instant::now();
    for step in start..args.steps {
        let step_began = Instant::now();
        set_lr(&mut opt, args, step);
        let offsets = data::offsets(&corpus.train, args.block_size, args.batch_size, &batches)?;
        let (x, y) = data::batch(&corpus.train, &offsets, args.block_size)?;
        let loss = {
            let _autocast = autocast_region(args)?;
            model.loss(&x.to(args.device)?, &y.to(args.device)?)?
        };
        opt.zero_grad();
        match &mut scaler {
            Some(scaler) => {
                scaler.scale(&loss)?.backward()?;
                scaler.step(&mut opt)?;
                scaler.update(None)?;
            }
            None => {
                loss.backward()?;
                opt.step()?;
            }
        }
        let loss = loss.to(Device::Cpu)?.item::<f32>()? as f64;
        train_seconds += step_began.elapsed().as_secs_f64();
        train_curve.push((step + 1, loss));
        if (step + 1).is_multiple_of(args.eval_interval) || step + 1 == args.steps {
            let val = validation_loss(&model, &corpus, args)?;
            val_curve.push((step + 1, val));
            report(
                &bar,
                format!("step {:>5}: train {loss:.4}, val {val:.4}", step + 1),
            );
        }
        if let Some(bar) = &bar {
            bar.set_message(format!("loss {loss:.4}"));
            bar.inc(1);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let seconds = began.elapsed().as_secs_f64();
    let tokens = (args.steps - start) * args.batch_size * args.block_size;
    if let Some(&(_, val)) = val_curve.last() {
        say!("validation loss {val:.6} after {} steps", args.steps);
    }
    say!(
        "{:.1} s in all, {:.0} tokens/s in the training steps ({} tokens per step)",
        seconds,
        tokens as f64 / train_seconds.max(1e-9),
        args.batch_size * args.block_size
    );
    // A prompt of characters the text never uses starts from a new line instead.
    let mut prompt = corpus.encode(&args.prompt);
    if prompt.is_empty() {
        prompt = corpus.encode("\n");
    }
    let sample = model.generate(
        &prompt,
        args.sample_len,
        Sampling {
            temperature: args.temperature,
            top_k: (args.top_k > 0).then_some(args.top_k),
        },
        &Generator::new().manual_seed(args.seed),
    )?;
    say!("--- sample ---\n{}\n--------------", corpus.decode(&sample));
    if let Some(path) = &args.save {
        save(path, &describe(&config), &model, &opt, args.steps)?;
        say!("checkpoint: {}", path.display());
    }
    let title = format!("char-level GPT on Shakespeare ({} steps)", args.steps);
    match plot::draw(&args.plot, &title, &train_curve, &val_curve) {
        Ok(()) => say!("loss plot: {}", args.plot.display()),
        Err(e) => eprintln!(
            "train_gpt: cannot write the plot {}: {e}",
            args.plot.display()
        ),
    }
    Ok(())
}

/// Options that would make no model or no step: clear errors instead of panics later.
fn check(args: &Args) -> Result<()> {
    let sizes = [
        ("--batch-size", args.batch_size),
        ("--block-size", args.block_size),
        ("--n-layer", args.n_layer),
        ("--n-head", args.n_head),
        ("--n-embd", args.n_embd),
        ("--eval-interval", args.eval_interval),
        ("--eval-batches", args.eval_batches),
        ("--decay-steps", args.decay_steps),
    ];
    if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
        return Err(Error::msg(format!("{name} must be at least 1")));
    }
    if !args.n_embd.is_multiple_of(args.n_head) {
        return Err(Error::msg(format!(
            "--n-head {} does not divide --n-embd {}",
            args.n_head, args.n_embd
        )));
    }
    if !(args.temperature > 0.0 && args.temperature.is_finite()) {
        return Err(Error::msg("--temperature must be a positive number"));
    }
    Ok(())
}

/// Linear warm-up over the first 5% of `--decay-steps`, then a cosine from `--lr` to `--lr / 10`
/// at `--decay-steps`, flat after.
fn set_lr(opt: &mut AdamW, args: &Args, step: usize) {
    let warmup = (args.decay_steps / 20).max(1);
    let min = args.lr / 10.0;
    let lr = if step < warmup {
        args.lr * (step + 1) as f64 / warmup as f64
    } else if step >= args.decay_steps {
        min
    } else {
        let progress = (step - warmup) as f64 / (args.decay_steps - warmup).max(1) as f64;
        min + 0.5 * (args.lr - min) * (1.0 + (PI * progress).cos())
    };
    for group in opt.param_groups_mut() {
        group.set_lr(lr);
    }
}

/// The mean loss of `--eval-batches` random validation windows (from a generator of their own,
/// so evaluating does not move the training batches).
fn validation_loss(model: &Gpt, corpus: &Corpus, args: &Args) -> Result<f64> {
    let _no_grad = no_grad();
    let _autocast = autocast_region(args)?;
    let g = Generator::new().manual_seed(args.seed ^ 0x5eed);
    let mut total = 0.0;
    for _ in 0..args.eval_batches {
        let offsets = data::offsets(&corpus.val, args.block_size, args.batch_size, &g)?;
        let (x, y) = data::batch(&corpus.val, &offsets, args.block_size)?;
        let loss = model.loss(&x.to(args.device)?, &y.to(args.device)?)?;
        total += loss.to(Device::Cpu)?.item::<f32>()? as f64;
    }
    Ok(total / args.eval_batches as f64)
}

/// A bar on a terminal; `None` when output is piped (plain lines then) or `--quiet`.
fn progress(args: &Args, start: usize) -> Option<ProgressBar> {
    if args.quiet || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(
        Some((args.steps - start.min(args.steps)) as u64),
        ProgressDrawTarget::stdout(),
    );
    bar.set_style(
        ProgressStyle::with_template("[{bar:30.cyan/blue}] {pos:>5}/{len:5} {per_sec} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    Some(bar)
}

/// A line above the bar, or on its own without one.
fn report(bar: &Option<ProgressBar>, line: String) {
    match bar {
        Some(bar) => bar.println(line),
        None => say!("{line}"),
    }
}

/// The model options a checkpoint must share with the run that resumes it.
fn describe(config: &Config) -> String {
    format!(
        "vocab={} block={} layers={} heads={} embd={}",
        config.vocab_size, config.block_size, config.n_layer, config.n_head, config.n_embd
    )
}

fn save(path: &Path, config: &str, model: &Gpt, opt: &AdamW, step: usize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
    }
    let mut dict = StateDict::new();
    dict.extend_prefixed("model", model.state_dict());
    dict.extend_prefixed("optimizer", opt.state_dict()?);
    dict.set_metadata("step", step.to_string());
    dict.set_metadata("config", config);
    dict.save(path)
}

/// Loads a checkpoint into `model` and `opt`; the step it reached.
fn resume(path: &Path, config: &str, model: &mut Gpt, opt: &mut AdamW) -> Result<usize> {
    let dict = StateDict::load(path)?;
    let saved = dict.metadata("config").unwrap_or("none");
    if saved != config {
        return Err(Error::msg(format!(
            "{} was written by a model with other options: it has `{saved}`, this run `{config}`",
            path.display()
        )));
    }
    model.load_state_dict(&dict.sub_dict("model"))?;
    opt.load_state_dict(&dict.sub_dict("optimizer"))?;
    dict.metadata("step")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::msg(format!("{} has no `step`", path.display())))
}
