//! Reporting during training: an `indicatif` bar per epoch on a terminal, one plain line per
//! epoch otherwise (CI logs), nothing with `--quiet`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::train::EpochStats;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Bar,
    Lines,
    Quiet,
}

impl Mode {
    /// A bar when stdout is a terminal, plain lines when it is a pipe or file.
    pub(crate) fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stdout().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// Shows the progress of one run.
#[derive(Debug)]
pub(crate) struct Progress {
    mode: Mode,
    epochs: usize,
    /// The current epoch's bar (`Mode::Bar` only).
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(crate) fn new(mode: Mode, epochs: usize) -> Progress {
        Progress {
            mode,
            epochs,
            bar: None,
        }
    }

    /// Starts epoch `epoch` (1-based) over `samples` training examples.
    pub(crate) fn start_epoch(&mut self, epoch: usize, samples: usize) {
        if self.mode != Mode::Bar {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(samples as u64), ProgressDrawTarget::stdout());
        let width = self.epochs.to_string().len();
        bar.set_style(
            ProgressStyle::with_template(
                "epoch {prefix} [{bar:28.cyan/blue}] {pos:>6}/{len:6} {msg}",
            )
            .expect("invariant: the template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(format!("{epoch:>width$}/{}", self.epochs));
        bar.enable_steady_tick(Duration::from_millis(100));
        self.bar = Some(bar);
    }

    /// After a mini-batch: `seen` examples so far this epoch, their mean loss and accuracy.
    pub(crate) fn batch(&self, seen: usize, loss: f64, accuracy: f64, samples_per_s: f64) {
        if let Some(bar) = &self.bar {
            bar.set_position(seen as u64);
            bar.set_message(format!(
                "loss {loss:.4}  acc {:5.1}%  {} samples/s",
                100.0 * accuracy,
                thousands(samples_per_s)
            ));
        }
    }

    /// Ends the epoch: the bar stays on screen with the test figures added, or one line.
    pub(crate) fn end_epoch(&mut self, s: &EpochStats) {
        let summary = format!(
            "train loss {:.4} acc {:5.1}% | test loss {:.4} acc {:5.1}% | {} samples/s",
            s.train_loss,
            100.0 * s.train_accuracy,
            s.test_loss,
            100.0 * s.test_accuracy,
            thousands(s.samples_per_s)
        );
        match self.mode {
            Mode::Bar => {
                if let Some(bar) = self.bar.take() {
                    bar.finish_with_message(summary);
                }
            }
            Mode::Lines => {
                let width = self.epochs.to_string().len();
                say!("epoch {:>width$}/{}  {summary}", s.epoch, self.epochs);
            }
            Mode::Quiet => {}
        }
    }
}

/// `12345.6` as `12,346`.
pub(crate) fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1234567.8), "1,234,568");
    }

    #[test]
    fn quiet_wins() {
        assert_eq!(Mode::detect(true), Mode::Quiet);
    }
}
