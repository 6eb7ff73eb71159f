//! What every corpus replay shares: the programs the environment selects (`CORPUS_ID`,
//! `CORPUS_FAMILY`, `CORPUS_SHOW`, `CORPUS_NO_ALLOW`), and a quiet run (no panic messages from
//! programs that panic, which are reported as failures; no warnings PyTorch's generators
//! ignored too).

use std::panic::{self, PanicHookInfo};

/// The environment's selection.
pub(crate) struct Selection {
    /// `CORPUS_ID=<n>`: replay program `n` only, and print it in full.
    pub(crate) only_id: Option<usize>,
    /// `CORPUS_FAMILY=<name>`: replay one family only.
    only_family: Option<String>,
    /// `CORPUS_SHOW=<k>`: print the first `k` failing programs (default 15).
    pub(crate) show: usize,
    /// Whether allow-listed programs are replayed apart (not with `CORPUS_ID` or
    /// `CORPUS_NO_ALLOW=1`).
    pub(crate) use_allow_list: bool,
}

impl Selection {
    pub(crate) fn from_env() -> Selection {
        let only_id = std::env::var("CORPUS_ID").ok().map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("CORPUS_ID={v} is not a number"))
        });
        let show = std::env::var("CORPUS_SHOW")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(15);
        Selection {
            only_id,
            only_family: std::env::var("CORPUS_FAMILY").ok(),
            show,
            use_allow_list: only_id.is_none() && std::env::var_os("CORPUS_NO_ALLOW").is_none(),
        }
    }

    /// The selected items of a corpus, by each one's program id and family.
    pub(crate) fn pick<'a, T>(
        &self,
        items: &'a [T],
        id: impl Fn(&T) -> usize,
        family: impl Fn(&T) -> &str,
    ) -> Vec<&'a T> {
        items
            .iter()
            .filter(|t| self.only_id.is_none_or(|n| id(t) == n))
            .filter(|t| self.only_family.as_deref().is_none_or(|f| family(t) == f))
            .collect()
    }
}

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Silences panic messages until dropped (then the previous hook is back), and reports the
/// autograd warnings other than the non-leaf `.grad` access PyTorch's generators made on
/// purpose.
pub(crate) struct Quiet {
    hook: Option<Hook>,
}

impl Quiet {
    pub(crate) fn new() -> Quiet {
        autograd::set_warning_handler(Some(Box::new(|w: &str| {
            if !w.contains("is not a leaf Tensor is being accessed") {
                eprintln!("autograd warning: {w}");
            }
        })));
        let hook = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        Quiet { hook: Some(hook) }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        if let Some(hook) = self.hook.take() {
            panic::set_hook(hook);
        }
    }
}
