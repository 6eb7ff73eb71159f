//! `--save` and `--resume`: one safetensors file holding the model's and the optimizer's state
//! dictionaries (under `model.` and `optimizer.`, PyTorch's key names below those), and in its
//! metadata the epoch reached, the shuffling generator's state, the per-epoch figures so far (for
//! the plot) and the options that must match to resume.
//!
//! Resuming restores all of it, so on the CPU `--epochs 6 --resume` of a 3-epoch checkpoint
//! trains the same weights as a straight 6-epoch run, bit for bit: the parameters and Adam's
//! moments are saved exactly (f32), the next shuffle continues the saved stream, and the
//! learning-rate schedule is replayed to the saved step.
//!
//! In PyTorch: `state = safetensors.torch.load_file(path)`, then
//! `model.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})`.

use std::path::Path;

use autograd::nn::Module;
use autograd::optim::Optimizer;
use autograd::{Error, StateDict};

use crate::RunError;
use crate::train::EpochStats;

/// What a checkpoint restores besides the model and optimizer state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Resumed {
    /// The last epoch the saved run trained (the resumed run starts at the next).
    pub(crate) epoch: usize,
    /// The shuffling generator's state after that epoch.
    pub(crate) rng_state: u64,
    /// Optimizer steps taken (the learning-rate schedule's position).
    pub(crate) steps: u64,
    /// The saved run's per-epoch figures.
    pub(crate) history: Vec<EpochStats>,
}

/// Writes the checkpoint. `config` names the options a resumed run must share (`run_config`).
pub(crate) fn save(
    path: &Path,
    model: &dyn Module,
    optimizer: &dyn Optimizer,
    resumed: &Resumed,
    config: &str,
) -> Result<(), RunError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| RunError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut dict = StateDict::new();
    dict.extend_prefixed("model", model.state_dict());
    dict.extend_prefixed("optimizer", optimizer.state_dict()?);
    dict.set_metadata("epoch", resumed.epoch.to_string());
    dict.set_metadata("rng_state", resumed.rng_state.to_string());
    dict.set_metadata("steps", resumed.steps.to_string());
    dict.set_metadata("config", config);
    // One row per epoch, `;`-separated, its six numbers `,`-separated in Rust's shortest
    // round-tripping form (`{:?}`), so that they read back bit for bit.
    let history: Vec<String> = resumed
        .history
        .iter()
        .map(|s| {
            format!(
                "{},{:?},{:?},{:?},{:?},{:?}",
                s.epoch,
                s.train_loss,
                s.train_accuracy,
                s.test_loss,
                s.test_accuracy,
                s.samples_per_s
            )
        })
        .collect();
    dict.set_metadata("history", history.join(";"));
    dict.save(path)?;
    Ok(())
}

/// Reads the checkpoint at `path`: what it restores besides the state dictionaries, and the
/// dictionaries (for [`restore`]).
///
/// # Errors
///
/// The file's errors and a checkpoint written with other options than `config`.
pub(crate) fn read(path: &Path, config: &str) -> Result<(Resumed, StateDict), RunError> {
    let dict = StateDict::load(path)?;
    let bad = |what: &str| {
        Error::msg(format!(
            "{} is not a checkpoint of this job: {what}",
            path.display()
        ))
    };
    let saved_config = dict.metadata("config").ok_or_else(|| bad("no `config`"))?;
    if saved_config != config {
        return Err(Error::msg(format!(
            "{} was written by a run with other options: it has `{saved_config}`, this run \
             `{config}`",
            path.display()
        ))
        .into());
    }
    let number = |key: &str| -> Result<u64, Error> {
        dict.metadata(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(&format!("no `{key}`")))
    };
    let epoch = number("epoch")? as usize;
    let rng_state = number("rng_state")?;
    let steps = number("steps")?;
    let history_text = dict
        .metadata("history")
        .ok_or_else(|| bad("no `history`"))?;
    let history = history_text
        .split(';')
        .filter(|row| !row.is_empty())
        .map(|row| {
            let v: Vec<f64> = row.split(',').filter_map(|x| x.parse().ok()).collect();
            match v[..] {
                [
                    e,
                    train_loss,
                    train_accuracy,
                    test_loss,
                    test_accuracy,
                    samples_per_s,
                ] => Ok(EpochStats {
                    epoch: e as usize,
                    train_loss,
                    train_accuracy,
                    test_loss,
                    test_accuracy,
                    samples_per_s,
                }),
                _ => Err(bad("a `history` row is not 6 numbers")),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let resumed = Resumed {
        epoch,
        rng_state,
        steps,
        history,
    };
    Ok((resumed, dict))
}

/// Loads `dict`'s model and optimizer state into `model` and `optimizer`, in place.
///
/// # Errors
///
/// `load_state_dict`'s errors (missing keys, other shapes), in PyTorch's words.
pub(crate) fn restore(
    dict: &StateDict,
    model: &mut dyn Module,
    optimizer: &mut dyn Optimizer,
) -> Result<(), RunError> {
    model.load_state_dict(&dict.sub_dict("model"))?;
    optimizer.load_state_dict(&dict.sub_dict("optimizer"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use autograd::Device;
    use autograd::optim::lr_scheduler::CosineAnnealingLR;
    use autograd::optim::{Adam, AdamOptions};

    use super::*;
    use crate::data::{DataSource, load as load_data};
    use crate::model::{Activation, Model};
    use crate::progress::{Mode, Progress};
    use crate::train::Trainer;

    const EPOCHS: usize = 4;

    /// A trainer as `main` builds one: a small MLP, Adam, a cosine schedule over `EPOCHS`.
    fn trainer(init_seed: u64) -> Trainer {
        let data = load_data(&DataSource::Digits).unwrap();
        let model = Model::mlp(&[64, 16, 10], Activation::Relu, init_seed, Device::Cpu).unwrap();
        let mut opt: Box<dyn Optimizer> =
            Box::new(Adam::new(model.parameters(), AdamOptions::default().lr(1e-2)).unwrap());
        let steps = EPOCHS * data.train.len().div_ceil(64);
        let sched = CosineAnnealingLR::new(opt.as_mut(), steps, 0.0).unwrap();
        Trainer::new(model, opt, &data, Device::Cpu, 64, 5, None)
            .unwrap()
            .with_label_smoothing(0.1)
            .unwrap()
            .with_scheduler(Box::new(sched))
    }

    fn train(t: &mut Trainer, epochs: std::ops::RangeInclusive<usize>) -> Vec<EpochStats> {
        let mut progress = Progress::new(Mode::Quiet, EPOCHS);
        epochs.map(|e| t.epoch(e, &mut progress).unwrap()).collect()
    }

    fn weights(t: &Trainer) -> Vec<Vec<f32>> {
        t.model
            .parameters()
            .iter()
            .map(|p| p.to_vec::<f32>().unwrap())
            .collect()
    }

    #[test]
    fn resuming_a_checkpoint_continues_the_run_bit_for_bit() {
        let mut straight = trainer(1);
        let straight_stats = train(&mut straight, 1..=EPOCHS);

        let dir = std::env::temp_dir().join(format!("train-mlp-resume-{}", std::process::id()));
        let path = dir.join("run.safetensors");
        let mut first = trainer(1);
        let history = train(&mut first, 1..=2);
        let state = Resumed {
            epoch: 2,
            rng_state: first.rng_state(),
            steps: first.steps(),
            history,
        };
        save(
            &path,
            &first.model,
            first.optimizer.as_ref(),
            &state,
            "test",
        )
        .unwrap();

        // Another initialisation: everything that matters comes from the file.
        let mut resumed = trainer(2);
        let (saved, dict) = read(&path, "test").unwrap();
        assert_eq!(saved, state);
        resumed.fast_forward(saved.rng_state, saved.steps).unwrap();
        restore(&dict, &mut resumed.model, resumed.optimizer.as_mut()).unwrap();
        let rest = train(&mut resumed, 3..=EPOCHS);

        assert_eq!(weights(&resumed), weights(&straight));
        // Every figure but the wall-clock speed.
        let figures = |s: &[EpochStats]| {
            s.iter()
                .map(|s| {
                    (
                        s.epoch,
                        s.train_loss,
                        s.train_accuracy,
                        s.test_loss,
                        s.test_accuracy,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(figures(&rest), figures(&straight_stats[2..]));
        assert_eq!(resumed.optimizer.lrs(), straight.optimizer.lrs());

        let err = read(&path, "other options").unwrap_err().to_string();
        assert!(
            err.contains("was written by a run with other options"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
