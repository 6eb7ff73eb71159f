//! The random state a checkpointed region restores when it is recomputed (PyTorch's
//! `preserve_rng_state`: `get_rng_state()` before the forward, `fork_rng` + `set_rng_state()`
//! around the recomputation).
//!
//! The random draws made inside a forward are those of [`Dropout`](crate::nn::Dropout), each a
//! mask drawn from the global generator: a draw is the generator's state just before it. A
//! checkpoint *records* the states its region draws from, in order, and its recomputation
//! *replays* them: the `k`-th draw of the recomputation draws from a copy of the `k`-th recorded
//! state, so every dropout layer draws the mask it drew in the forward. Replayed draws do not
//! advance the global generator, so the recomputation leaves the random state as it found it, as
//! `fork_rng` does: a run with checkpoints draws exactly the masks a run without them draws.
//!
//! Recording and replaying nest (checkpoints inside checkpoints): a draw is served by the innermost
//! replay, else made live, and is recorded by every recording opened above that replay.

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::random::GeneratorState;
use crate::sync::Arc;

/// One random draw: the generator's state it started from.
pub(crate) type Draw = GeneratorState;

/// The draws of one region, in order (what PyTorch's saved RNG state stands for).
#[derive(Clone, Debug, Default)]
pub(crate) struct RngState(Arc<[Draw]>);

enum Frame {
    Record(Vec<Draw>),
    Replay { draws: RngState, next: usize },
}

thread_local! {
    /// The recordings and replays open on this thread, innermost last.
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// The next random draw: `live()` (which advances the caller's sequence) unless a replay is open
/// on this thread, whose next recorded draw is returned instead; every recording above the
/// replay (or every recording, without one) records it.
pub(crate) fn next_draw(live: impl FnOnce() -> Draw) -> Draw {
    FRAMES.with(|frames| {
        let mut frames = frames.borrow_mut();
        if frames.is_empty() {
            drop(frames);
            return live();
        }
        let replay = frames
            .iter()
            .rposition(|f| matches!(f, Frame::Replay { .. }));
        let replayed = replay.and_then(|i| match &mut frames[i] {
            Frame::Replay { draws, next } => {
                let v = draws.0.get(*next).cloned();
                *next += 1;
                v
            }
            Frame::Record(_) => None,
        });
        // A recomputation that draws more than its forward did draws live.
        let value = replayed.unwrap_or_else(live);
        let first_recorder = replay.map_or(0, |i| i + 1);
        for frame in &mut frames[first_recorder..] {
            if let Frame::Record(draws) = frame {
                draws.push(value.clone());
            }
        }
        value
    })
}

/// Records this thread's draws until [`Recording::finish`] (or drop, which discards them).
pub(crate) struct Recording {
    /// The frame's position, to check that recordings and replays close in order.
    depth: usize,
    finished: bool,
    /// Frames are per thread: the guard stays on the thread that opened it.
    _not_send: PhantomData<*const ()>,
}

impl Recording {
    pub(crate) fn start() -> Recording {
        let depth = FRAMES.with(|f| {
            let mut f = f.borrow_mut();
            f.push(Frame::Record(Vec::new()));
            f.len()
        });
        Recording {
            depth,
            finished: false,
            _not_send: PhantomData,
        }
    }

    /// The draws made since [`Recording::start`].
    pub(crate) fn finish(mut self) -> RngState {
        self.finished = true;
        match pop(self.depth) {
            Some(Frame::Record(draws)) => RngState(draws.into()),
            _ => RngState::default(),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.finished {
            pop(self.depth);
        }
    }
}

/// Serves `draws` to this thread's draws until dropped.
pub(crate) struct Replay {
    depth: usize,
    _not_send: PhantomData<*const ()>,
}

impl Replay {
    pub(crate) fn start(draws: &RngState) -> Replay {
        let depth = FRAMES.with(|f| {
            let mut f = f.borrow_mut();
            f.push(Frame::Replay {
                draws: draws.clone(),
                next: 0,
            });
            f.len()
        });
        Replay {
            depth,
            _not_send: PhantomData,
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        pop(self.depth);
    }
}

/// Pops the frame a guard pushed at `depth` (guards are dropped in reverse order of creation on
/// their thread: they are neither `Send` nor leaked by this crate).
fn pop(depth: usize) -> Option<Frame> {
    FRAMES.with(|f| {
        let mut f = f.borrow_mut();
        debug_assert_eq!(f.len(), depth, "checkpoint RNG frames closed out of order");
        if f.len() >= depth { f.pop() } else { None }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_serves_recorded_draws_and_nested_recordings_see_them() {
        let g = crate::Generator::new().manual_seed(0);
        let states: Vec<Draw> = (0..4)
            .map(|_| {
                let s = g.get_state();
                g.fill_uniform_f64(&mut [0.0], 0.0, 1.0);
                s
            })
            .collect();
        g.manual_seed(0);
        let live = || {
            let s = g.get_state();
            g.fill_uniform_f64(&mut [0.0], 0.0, 1.0);
            s
        };
        let rec = Recording::start();
        let a = next_draw(live);
        let b = next_draw(live);
        let state = rec.finish();
        assert_eq!((&a, &b), (&states[0], &states[1]));
        {
            let _replay = Replay::start(&state);
            let inner = Recording::start();
            assert_eq!(next_draw(live), states[0]);
            assert_eq!(next_draw(live), states[1]);
            // Past the recorded draws: live again, from where the generator stands.
            assert_eq!(next_draw(live), states[2]);
            assert_eq!(&*inner.finish().0, &states[..3]);
        }
        assert_eq!(next_draw(live), states[3]);
    }
}
