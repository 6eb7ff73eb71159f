//! The command line: every option, its default, and the parsers that turn bad values into
//! clap's usage errors (exit code 2) instead of panics.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use autograd::Device;
use clap::Parser;

use crate::data::DataSource;
use crate::model::{Activation, ActivationCheckpoint, ModelKind};

/// `--optimizer`: `autograd::optim`'s optimizers the job offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OptimizerKind {
    /// Stochastic gradient descent with (heavy-ball) momentum.
    Sgd,
    /// Adam (Kingma and Ba, 2015), β = (0.9, 0.999), ε = 1e-8.
    Adam,
}

/// `--schedule`: how the learning rate moves over the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Schedule {
    /// The same learning rate throughout.
    Constant,
    /// Cosine annealing from `--lr` to 0 over all the run's steps (`CosineAnnealingLR`).
    Cosine,
}

/// Trains a classifier with this crate's autograd engine, `autograd::nn` and `autograd::optim`.
///
/// By default: the embedded 8x8 handwritten digits (1,797 images, 20% held out), a 64-128-64-10
/// ReLU network, Adam, 20 epochs of mini-batches of 32, on the CPU (`--model cnn`: a small
/// convolutional network, 30 epochs of mini-batches of 64, lr 3e-3 annealed on a cosine, label
/// smoothing 0.1). Prints a progress bar (plain lines when stdout is not a terminal), the final test
/// accuracy, the wall time split into forward, backward and optimizer, and writes a loss plot.
#[derive(Clone, Debug, Parser)]
#[command(name = "train_mlp", version, about, long_about)]
pub(crate) struct Args {
    /// Data set: `digits` (embedded 8x8 digits), `iris` (embedded Iris flowers) or `mnist:DIR`
    /// (MNIST's IDX files in DIR: train-images-idx3-ubyte, train-labels-idx1-ubyte,
    /// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each possibly gzipped as `NAME.gz`).
    #[arg(long, default_value = "digits", value_name = "SET")]
    pub(crate) data: DataSource,

    /// The network: `mlp` (linear layers of `--hidden` widths) or `cnn` (two 3x3 convolutions
    /// with max pooling and a linear layer, for 8x8 images).
    #[arg(long, value_enum, default_value_t = ModelKind::Mlp)]
    pub(crate) model: ModelKind,

    /// Passes over the training set (with `--resume`: the epoch to train up to) [default: 20,
    /// cnn 30].
    #[arg(long, value_parser = positive_usize)]
    pub(crate) epochs: Option<usize>,

    /// Examples per mini-batch (the last batch of an epoch may be smaller) [default: 32, cnn 64].
    #[arg(long, value_parser = positive_usize, value_name = "N")]
    pub(crate) batch_size: Option<usize>,

    /// Learning rate [default: 1e-3, cnn 3e-3].
    #[arg(long, value_parser = positive_f64)]
    pub(crate) lr: Option<f64>,

    /// Learning-rate schedule [default: constant, cnn cosine].
    #[arg(long, value_enum)]
    pub(crate) schedule: Option<Schedule>,

    /// Label smoothing of the cross-entropy, in [0, 1) [default: 0, cnn 0.1].
    #[arg(long, value_parser = unit_interval, value_name = "EPS")]
    pub(crate) label_smoothing: Option<f64>,

    /// Optimizer.
    #[arg(long, value_enum, default_value_t = OptimizerKind::Adam)]
    pub(crate) optimizer: OptimizerKind,

    /// Momentum of `--optimizer sgd`, in [0, 1) (ignored by Adam).
    #[arg(long, default_value_t = 0.9, value_parser = momentum)]
    pub(crate) momentum: f64,

    /// Hidden layer widths, comma-separated, input side first.
    #[arg(long, default_value = "128,64", value_name = "SIZES")]
    pub(crate) hidden: HiddenSizes,

    /// Non-linearity after each hidden layer.
    #[arg(long, value_enum, default_value_t = Activation::Relu)]
    pub(crate) activation: Activation,

    /// Activation checkpointing of the MLP's hidden blocks (each linear layer and its
    /// activation): `none`, `reentrant` or `non-reentrant` (`autograd::checkpoint` with
    /// `use_reentrant` true or false). The backward recomputes each block's activations (one
    /// more forward per step); the weights are the same bit for bit.
    #[arg(long, value_enum, default_value_t = ActivationCheckpoint::None, value_name = "MODE")]
    pub(crate) activation_checkpoint: ActivationCheckpoint,

    /// Seed of the weight initialisation and of the per-epoch shuffles (the digits test split
    /// is fixed whatever the seed).
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,

    /// Threads of the CPU kernels' pool (default: one per core).
    #[arg(long, value_parser = positive_usize, value_name = "N")]
    pub(crate) threads: Option<usize>,

    /// Device to train on: `cpu`, `virtual:N` (host memory scheduled as an accelerator, with
    /// its own engine thread) or `cuda:N` (an NVIDIA GPU with its driver, in a build with the
    /// feature `cuda`; without them the run stops with an error).
    #[arg(long, default_value = "cpu", value_name = "DEVICE")]
    pub(crate) device: DeviceArg,

    /// Where to draw train/test loss and accuracy per epoch: a `.png` or `.svg` path.
    #[arg(long, default_value = "target/train_mlp/loss.png", value_name = "PATH")]
    pub(crate) plot: PlotPath,

    /// Write the backward graph of one training step's loss in Graphviz DOT to PATH
    /// (render with `dot -Tpng PATH -o graph.png`).
    #[arg(
        long,
        default_value = "target/train_mlp/graph.dot",
        value_name = "PATH"
    )]
    pub(crate) graph: Option<PathBuf>,

    /// After training, write a checkpoint to PATH (safetensors: model, optimizer state, epoch and
    /// the shuffling generator's state).
    #[arg(long, value_name = "PATH")]
    pub(crate) save: Option<PathBuf>,

    /// Start from a checkpoint `--save` wrote, at the epoch after its last, and train up to
    /// `--epochs` (the other options must be those of the run that wrote it).
    #[arg(long, value_name = "PATH")]
    pub(crate) resume: Option<PathBuf>,

    /// Profile the last epoch with the autograd profiler and print its table of nodes.
    #[arg(long)]
    pub(crate) profile: bool,

    /// Print only the final summary: no progress bar or per-epoch lines.
    #[arg(long, short)]
    pub(crate) quiet: bool,

    /// Data-parallel training over MPI: launch with `mpirun -np N`; each rank trains on 1/N of
    /// every batch and rank 0 reports (needs the cargo feature `mpi`).
    #[cfg(feature = "mpi")]
    #[arg(long)]
    pub(crate) ddp: bool,
}

impl Args {
    /// `--epochs`, or the model's default.
    pub(crate) fn epochs(&self) -> usize {
        self.epochs.unwrap_or(match self.model {
            ModelKind::Mlp => 20,
            ModelKind::Cnn => 30,
        })
    }

    /// `--batch-size`, or the model's default.
    pub(crate) fn batch_size(&self) -> usize {
        self.batch_size.unwrap_or(match self.model {
            ModelKind::Mlp => 32,
            ModelKind::Cnn => 64,
        })
    }

    /// `--lr`, or the model's default.
    pub(crate) fn lr(&self) -> f64 {
        self.lr.unwrap_or(match self.model {
            ModelKind::Mlp => 1e-3,
            ModelKind::Cnn => 3e-3,
        })
    }

    /// `--schedule`, or the model's default.
    pub(crate) fn schedule(&self) -> Schedule {
        self.schedule.unwrap_or(match self.model {
            ModelKind::Mlp => Schedule::Constant,
            ModelKind::Cnn => Schedule::Cosine,
        })
    }

    /// `--label-smoothing`, or the model's default.
    pub(crate) fn label_smoothing(&self) -> f64 {
        self.label_smoothing.unwrap_or(match self.model {
            ModelKind::Mlp => 0.0,
            ModelKind::Cnn => 0.1,
        })
    }
}

fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a positive integer")),
    }
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a finite number above 0".into()),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn unit_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        Ok(_) => Err("must be in [0, 1)".into()),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn momentum(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        Ok(_) => Err("must be in [0, 1)".into()),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// `--hidden`: one or more positive layer widths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HiddenSizes(pub(crate) Vec<usize>);

impl FromStr for HiddenSizes {
    type Err = String;

    fn from_str(s: &str) -> Result<HiddenSizes, String> {
        let sizes = s
            .split(',')
            .map(|part| match part.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "`{}` is not a layer width: expected positive integers separated by \
                     commas, e.g. 128,64",
                    part.trim()
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HiddenSizes(sizes))
    }
}

impl fmt::Display for HiddenSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// `--device`, parsed into the library's [`Device`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceArg(pub(crate) Device);

impl FromStr for DeviceArg {
    type Err = String;

    fn from_str(s: &str) -> Result<DeviceArg, String> {
        s.parse::<Device>()
            .map(DeviceArg)
            .map_err(|e| e.to_string())
    }
}

/// `--plot`: a path ending in `.png` or `.svg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlotPath {
    pub(crate) path: PathBuf,
    pub(crate) format: PlotFormat,
}

/// The file format of the plot, from the extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlotFormat {
    Png,
    Svg,
}

impl FromStr for PlotPath {
    type Err = String;

    fn from_str(s: &str) -> Result<PlotPath, String> {
        let path = PathBuf::from(s);
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("png") => PlotFormat::Png,
            Some("svg") => PlotFormat::Svg,
            _ => return Err(format!("`{s}` must end in .png or .svg")),
        };
        Ok(PlotPath { path, format })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("train_mlp").chain(args.iter().copied()))
    }

    fn rejects(args: &[&str], needle: &str) {
        let err = parse(args).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ValueValidation, "{args:?}: {err}");
        let text = err.to_string();
        assert!(text.contains(needle), "{args:?}: `{needle}` not in {text}");
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.data, DataSource::Digits);
        assert_eq!(a.model, ModelKind::Mlp);
        assert_eq!((a.epochs(), a.batch_size(), a.lr()), (20, 32, 1e-3));
        assert_eq!(
            (a.schedule(), a.label_smoothing()),
            (Schedule::Constant, 0.0)
        );
        assert_eq!((a.save, a.resume), (None, None));
        let cnn = parse(&["--model", "cnn"]).unwrap();
        assert_eq!((cnn.epochs(), cnn.batch_size(), cnn.lr()), (30, 64, 3e-3));
        assert_eq!(
            (cnn.schedule(), cnn.label_smoothing()),
            (Schedule::Cosine, 0.1)
        );
        assert_eq!(a.optimizer, OptimizerKind::Adam);
        assert_eq!(a.hidden, HiddenSizes(vec![128, 64]));
        assert_eq!(a.activation, Activation::Relu);
        assert_eq!(a.activation_checkpoint, ActivationCheckpoint::None);
        assert_eq!(a.device, DeviceArg(Device::Cpu));
        assert_eq!(a.plot.path, PathBuf::from("target/train_mlp/loss.png"));
        assert_eq!(a.plot.format, PlotFormat::Png);
        assert_eq!(
            (a.threads, a.graph, a.profile, a.quiet),
            (
                None,
                Some(PathBuf::from("target/train_mlp/graph.dot")),
                false,
                false
            )
        );
    }

    #[test]
    fn every_option_parses() {
        let a = parse(&[
            "--data",
            "mnist:/tmp/m",
            "--epochs",
            "3",
            "--batch-size",
            "128",
            "--lr",
            "0.05",
            "--optimizer",
            "sgd",
            "--momentum",
            "0",
            "--hidden",
            "256, 32,8",
            "--activation",
            "tanh",
            "--seed",
            "7",
            "--threads",
            "2",
            "--device",
            "virtual:1",
            "--plot",
            "out/x.SVG",
            "--graph",
            "g.dot",
            "--profile",
            "--quiet",
            "--model",
            "cnn",
            "--schedule",
            "constant",
            "--label-smoothing",
            "0.2",
            "--save",
            "a.safetensors",
            "--resume",
            "b.safetensors",
            "--activation-checkpoint",
            "non-reentrant",
        ])
        .unwrap();
        assert_eq!(a.activation_checkpoint, ActivationCheckpoint::NonReentrant);
        assert_eq!(
            parse(&["--activation-checkpoint", "reentrant"])
                .unwrap()
                .activation_checkpoint,
            ActivationCheckpoint::Reentrant
        );
        assert_eq!(a.model, ModelKind::Cnn);
        assert_eq!(
            (a.schedule(), a.label_smoothing()),
            (Schedule::Constant, 0.2)
        );
        assert_eq!(a.save, Some(PathBuf::from("a.safetensors")));
        assert_eq!(a.resume, Some(PathBuf::from("b.safetensors")));
        assert_eq!(a.data, DataSource::Mnist("/tmp/m".into()));
        assert_eq!(
            (a.epochs(), a.batch_size(), a.lr(), a.momentum),
            (3, 128, 0.05, 0.0)
        );
        assert_eq!(a.optimizer, OptimizerKind::Sgd);
        assert_eq!(a.hidden.0, [256, 32, 8]);
        assert_eq!(a.activation, Activation::Tanh);
        assert_eq!((a.seed, a.threads), (7, Some(2)));
        assert_eq!(a.device.0, Device::Virtual(1));
        assert_eq!(a.plot.format, PlotFormat::Svg);
        assert_eq!(a.graph, Some(PathBuf::from("g.dot")));
        assert!(a.profile && a.quiet);
        assert_eq!(
            parse(&["--device", "cuda:0"]).unwrap().device.0,
            Device::Cuda(0)
        );
        assert_eq!(
            parse(&["--activation", "sigmoid"]).unwrap().activation,
            Activation::Sigmoid
        );
        assert!(parse(&["-q"]).unwrap().quiet);
    }

    #[test]
    fn bad_values_are_usage_errors() {
        rejects(&["--hidden", "12,x"], "`x` is not a layer width");
        rejects(&["--hidden", "12,,4"], "`` is not a layer width");
        rejects(&["--hidden", "0"], "`0` is not a layer width");
        rejects(&["--batch-size", "0"], "must be at least 1");
        rejects(&["--batch-size", "3.5"], "`3.5` is not a positive integer");
        rejects(&["--epochs", "many"], "`many` is not a positive integer");
        rejects(&["--threads", "0"], "must be at least 1");
        rejects(&["--lr", "0"], "above 0");
        rejects(&["--lr", "inf"], "above 0");
        rejects(&["--momentum", "1"], "[0, 1)");
        rejects(&["--label-smoothing", "1"], "[0, 1)");
        rejects(
            &["--device", "gpu"],
            "Expected one of cpu, cuda, virtual device type at start of device string: gpu",
        );
        rejects(
            &["--device", "cuda:one"],
            "Invalid device string: 'cuda:one'",
        );
        rejects(&["--data", "mnist"], "needs its directory");
        rejects(&["--plot", "loss.jpg"], "must end in .png or .svg");
        let err = parse(&["--activation-checkpoint", "yes"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidValue);
        assert!(
            err.to_string()
                .contains("[possible values: none, reentrant, non-reentrant]"),
            "{err}"
        );
        let err = parse(&["--optimizer", "rmsprop"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidValue);
        assert!(
            err.to_string().contains("[possible values: sgd, adam]"),
            "{err}"
        );
        assert_eq!(
            parse(&["--frobnicate"]).unwrap_err().kind(),
            ErrorKind::UnknownArgument
        );
    }

    #[test]
    fn help_documents_every_option() {
        let help = Args::command().render_long_help().to_string();
        for flag in [
            "--data",
            "--epochs",
            "--batch-size",
            "--lr",
            "--optimizer",
            "--momentum",
            "--hidden",
            "--activation",
            "--seed",
            "--threads",
            "--device",
            "--plot",
            "--graph",
            "--profile",
            "--quiet",
            "--model",
            "--schedule",
            "--label-smoothing",
            "--save",
            "--resume",
            "--activation-checkpoint",
        ] {
            assert!(help.contains(flag), "{flag} missing from --help");
        }
        assert!(help.contains("virtual:N"), "{help}");
        assert!(help.contains("[default: 128,64]"), "{help}");
    }
}
