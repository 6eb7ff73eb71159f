//! The part every optimizer shares: its groups and per-parameter state, the checks of its
//! constructor, and `step`'s choice between the fused kernel and the op-by-op path.

use std::fmt;

use super::fused_step::{self, StepTensors, Update};
use super::{GroupOptions, ParamGroup};
use crate::{Error, Result, Tensor, no_grad};

/// One optimization algorithm: its options, its per-parameter state and its two paths.
pub(crate) trait Algorithm: fmt::Debug + Send + Sync + 'static {
    /// The options of a group.
    type Options: GroupOptions;
    /// The state of one parameter.
    type State: fmt::Debug + Send + Sync;

    /// Whether a parameter's state is made when the optimizer is built (Adagrad) rather than
    /// at its first step.
    const EAGER_STATE: bool = false;

    /// The state of parameter `p` before its first step.
    fn init_state(p: &Tensor, o: &Self::Options) -> Result<Self::State>;

    /// One step of one parameter with tensor ops (any device).
    fn step_ops(p: &Tensor, g: &Tensor, s: &mut Self::State, o: &Self::Options) -> Result<()>;

    /// Advances `s`'s step count and returns the coefficients of this step for the fused
    /// kernel, and the state tensors in the order the kernel takes them.
    fn fused_update<'s>(
        p: &Tensor,
        s: &'s mut Self::State,
        o: &Self::Options,
    ) -> Result<(Update, Vec<&'s Tensor>)>;

    /// Whether the group asked for the fused kernel (`Some(true)`), the op-by-op path
    /// (`Some(false)`) or whichever applies (`None`).
    fn fused(o: &Self::Options) -> Option<bool>;

    /// The state's tensors under PyTorch's names (`step` a 0-dim `f32` tensor).
    fn save_state(s: &Self::State) -> Vec<(&'static str, Tensor)>;

    /// A state read back from `get` (PyTorch's names), for parameter `p`; `Ok(None)` if `get`
    /// has nothing for this parameter.
    fn load_state(
        get: &dyn Fn(&str) -> Option<Tensor>,
        p: &Tensor,
        o: &Self::Options,
    ) -> std::result::Result<Option<Self::State>, String>;
}

/// An optimizer's groups and state.
#[derive(Debug)]
pub(crate) struct Core<A: Algorithm> {
    /// The groups, as built or loaded.
    pub(crate) groups: Vec<ParamGroup<A::Options>>,
    /// `state[group][i]`: the state of the group's `i`-th parameter, `None` before its first
    /// step.
    pub(crate) state: Vec<Vec<Option<A::State>>>,
}

impl<A: Algorithm> Core<A> {
    /// Checks the groups as PyTorch's constructor does, then makes eager state.
    pub(crate) fn new(groups: Vec<ParamGroup<A::Options>>) -> Result<Core<A>> {
        if groups.iter().all(|g| g.params.is_empty()) {
            return Err(Error::InvalidArgument(
                "optimizer got an empty parameter list".into(),
            ));
        }
        let mut seen: Vec<&Tensor> = Vec::new();
        for g in &groups {
            g.options.validate()?;
            for p in &g.params {
                if !p.is_leaf() {
                    return Err(Error::InvalidArgument(
                        "can't optimize a non-leaf Tensor".into(),
                    ));
                }
                if seen.iter().any(|q| q.is_same(p)) {
                    return Err(Error::InvalidArgument(
                        "some parameters appear in more than one parameter group".into(),
                    ));
                }
            }
            seen.extend(g.params.iter());
        }
        let mut state = Vec::with_capacity(groups.len());
        for g in &groups {
            let mut s = Vec::with_capacity(g.params.len());
            for p in &g.params {
                s.push(if A::EAGER_STATE {
                    let _guard = no_grad();
                    Some(A::init_state(p, &g.options)?)
                } else {
                    None
                });
            }
            state.push(s);
        }
        Ok(Core { groups, state })
    }

    /// One step of every group (see [`Optimizer::step`](super::Optimizer::step)).
    pub(crate) fn step(&mut self) -> Result<()> {
        let _guard = no_grad();
        for (group, states) in self.groups.iter().zip(self.state.iter_mut()) {
            let o = &group.options;
            let mut work: Vec<(&Tensor, Tensor, &mut A::State)> = Vec::new();
            for (p, slot) in group.params.iter().zip(states.iter_mut()) {
                let Some(g) = p.grad() else { continue };
                check_grad(p, &g)?;
                if slot.is_none() {
                    *slot = Some(A::init_state(p, o)?);
                }
                let s = slot.as_mut().expect("invariant: the state was just made");
                work.push((p, g, s));
            }
            if work.is_empty() {
                continue;
            }
            let (dtype, device) = (work[0].0.dtype(), work[0].0.device());
            let fusable = work
                .iter()
                .all(|(p, g, _)| fused_step::can_fuse(p, g, dtype, device))
                && fused_step::distinct_storages(work.iter().map(|(p, _, _)| *p));
            match choose(A::fused(o), fusable) {
                Path::Refuse => {
                    return Err(Error::InvalidArgument(
                        "`fused=True` requires all the params to be contiguous floating point \
                         Tensors of one dtype on the CPU or on one CUDA device"
                            .into(),
                    ));
                }
                Path::Ops => run_ops::<A>(work, o)?,
                Path::Fused => run_fused::<A>(work, o)?,
            }
        }
        Ok(())
    }
}

/// The way a group steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// One tensor op per arithmetic step and parameter.
    Ops,
    /// One fused kernel over the group.
    Fused,
    /// `fused: Some(true)` where the fused kernel cannot run: an error.
    Refuse,
}

/// The path of a group whose option is `fused`, whose tensors the fused kernel can take or not
/// (`fusable`): the fused kernel by default wherever it applies, on the CPU and on CUDA.
pub(crate) fn choose(fused: Option<bool>, fusable: bool) -> Path {
    match fused {
        Some(false) => Path::Ops,
        Some(true) if fusable => Path::Fused,
        Some(true) => Path::Refuse,
        None if fusable => Path::Fused,
        None => Path::Ops,
    }
}

/// The op-by-op path, one parameter after the other.
fn run_ops<A: Algorithm>(
    work: Vec<(&Tensor, Tensor, &mut A::State)>,
    o: &A::Options,
) -> Result<()> {
    for (p, g, s) in work {
        A::step_ops(p, &g, s, o)?;
    }
    Ok(())
}

/// The fused path: one kernel call for the whole group.
fn run_fused<A: Algorithm>(
    work: Vec<(&Tensor, Tensor, &mut A::State)>,
    o: &A::Options,
) -> Result<()> {
    let mut sets = Vec::with_capacity(work.len());
    for (p, g, s) in work {
        let (update, state) = A::fused_update(p, s, o)?;
        sets.push(StepTensors {
            param: p,
            grad: g,
            state,
            update,
        });
    }
    fused_step::run(&sets)
}

/// Refuses a gradient that does not match its parameter.
fn check_grad(p: &Tensor, g: &Tensor) -> Result<()> {
    if g.shape() != p.shape() {
        return Err(Error::InvalidArgument(format!(
            "the gradient's shape {:?} differs from its parameter's {:?}",
            g.shape(),
            p.shape()
        )));
    }
    if g.dtype() != p.dtype() || g.device() != p.device() {
        return Err(Error::InvalidArgument(format!(
            "the gradient ({:?} on {}) differs from its parameter ({:?} on {}) in dtype or device",
            g.dtype(),
            g.device(),
            p.dtype(),
            p.device()
        )));
    }
    Ok(())
}

/// Implements an optimizer type whose one field `core` is a [`Core`]: its constructors `new`
/// and `with_groups`, its typed group accessors, and [`Optimizer`](super::Optimizer) (`$name` is
/// PyTorch's class name, for `load_state_dict`'s errors). `$errors` documents `new`'s errors;
/// `prepare`, if given, adjusts the groups' options before they are checked (AdamW forces
/// decoupled weight decay).
macro_rules! impl_optimizer {
    ($ty:ident, $options:ty, $name:literal, $errors:literal) => {
        $crate::optim::base::impl_optimizer!($ty, $options, $name, $errors, prepare = |_| {});
    };
    ($ty:ident, $options:ty, $name:literal, $errors:literal, prepare = $prepare:expr) => {
        impl $ty {
            #[doc = concat!(stringify!($ty), " over `params`, one group with `options`.")]
            ///
            /// # Errors
            ///
            #[doc = $errors]
            pub fn new(
                params: impl IntoIterator<Item = $crate::Tensor>,
                options: $options,
            ) -> $crate::Result<$ty> {
                $ty::with_groups(vec![$crate::optim::ParamGroup::new(params, options)])
            }

            #[doc = concat!(stringify!($ty), " over several groups, each with its own options.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`", stringify!($ty), "::new`], and `\"some parameters appear \
                in more than one parameter group\"`.")]
            pub fn with_groups(
                mut groups: Vec<$crate::optim::ParamGroup<$options>>,
            ) -> $crate::Result<$ty> {
                let prepare: fn(&mut [$crate::optim::ParamGroup<$options>]) = $prepare;
                prepare(&mut groups);
                Ok($ty {
                    core: $crate::optim::base::Core::new(groups)?,
                })
            }

            /// The parameter groups with their typed options.
            pub fn groups(&self) -> &[$crate::optim::ParamGroup<$options>] {
                &self.core.groups
            }

            /// The parameter groups, mutably (to change a group's options).
            pub fn groups_mut(&mut self) -> &mut [$crate::optim::ParamGroup<$options>] {
                &mut self.core.groups
            }
        }

        impl $crate::optim::Optimizer for $ty {
            fn step(&mut self) -> $crate::Result<()> {
                self.core.step()
            }
            fn param_groups(&self) -> Vec<&dyn $crate::optim::AnyParamGroup> {
                self.core
                    .groups
                    .iter()
                    .map(|g| g as &dyn $crate::optim::AnyParamGroup)
                    .collect()
            }
            fn param_groups_mut(&mut self) -> Vec<&mut dyn $crate::optim::AnyParamGroup> {
                self.core
                    .groups
                    .iter_mut()
                    .map(|g| g as &mut dyn $crate::optim::AnyParamGroup)
                    .collect()
            }
            fn state_dict(&self) -> $crate::Result<$crate::StateDict> {
                self.core.state_dict()
            }
            fn load_state_dict(&mut self, dict: &$crate::StateDict) -> $crate::Result<()> {
                self.core.load_state_dict(dict, $name)
            }
        }
    };
}
pub(crate) use impl_optimizer;
