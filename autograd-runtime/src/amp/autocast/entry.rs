//! The op-entry hook: what an op listed in [`Op`] runs first under autocast.

use super::*;

/// The tensor arguments of an op, as the hook sees them: visited in order to find the device
/// type and the promote type, then rebuilt with each tensor cast (or not).
pub(crate) trait Args {
    /// The arguments with owned (possibly cast) tensors.
    type Owned;
    /// Calls `f` on each tensor, in order.
    fn visit(&self, f: &mut dyn FnMut(&Tensor));
    /// Rebuilds the arguments with `cast` applied to each tensor.
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self::Owned>;
}

impl Args for &Tensor {
    type Owned = Tensor;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        f(self)
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        cast(self)
    }
}

impl Args for Option<&Tensor> {
    type Owned = Option<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        if let Some(t) = self {
            f(t)
        }
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Option<Tensor>> {
        self.map(cast).transpose()
    }
}

impl Args for &[Tensor] {
    type Owned = Vec<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(f)
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
        self.iter().map(cast).collect()
    }
}

impl Args for &[&Tensor] {
    type Owned = Vec<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(|t| f(t))
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
        self.iter().map(|t| cast(t)).collect()
    }
}

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: Args),+> Args for ($($name,)+) {
            type Owned = ($($name::Owned,)+);
            #[allow(non_snake_case)]
            fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
                let ($($name,)+) = self;
                $($name.visit(f);)+
            }
            #[allow(non_snake_case)]
            fn cast(
                self,
                cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>,
            ) -> Result<Self::Owned> {
                let ($($name,)+) = self;
                Ok(($($name.cast(cast)?,)+))
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);

/// Runs `op` under autocast if a region is open for its arguments' device type: `None` (run
/// the op as it is) when none is, else the op's result from `f` called on the cast arguments.
/// With every region closed this is one thread-local load and a branch.
#[inline(always)]
pub(crate) fn dispatch<A: Args, R>(
    op: Op,
    args: A,
    f: impl FnOnce(A::Owned) -> Result<R>,
) -> Option<Result<R>> {
    if grad_mode::state().autocast() & AutogradState::AUTOCAST_ENABLED == 0 {
        return None;
    }
    dispatch_slow(op, args, f)
}

/// `op`'s entry under autocast: `crate::amp::autocast_op!(Softmax, self, |x| x.softmax(dim))`
/// returns the autocast result from the enclosing function when a region applies.
macro_rules! autocast_op {
    ($op:ident, $args:expr, $f:expr) => {
        if let Some(out) =
            $crate::amp::autocast::dispatch($crate::amp::autocast::Op::$op, $args, $f)
        {
            return out;
        }
    };
}
pub(crate) use autocast_op;

/// `op`'s entry under autocast, for ops whose re-call does not fit on one line at the op:
/// `crate::amp::autocast_entry!(layer_norm(input, normalized_shape, weight, bias, eps))` calls
/// [`entries`]`::layer_norm` and returns its result from the enclosing function when a region
/// applies.
macro_rules! autocast_entry {
    ($name:ident($($arg:expr),* $(,)?)) => {
        if let Some(out) = $crate::amp::autocast::entries::$name($($arg),*) {
            return out;
        }
    };
}
pub(crate) use autocast_entry;

/// Whether autocast on `device` casts `t` (PyTorch's `is_eligible`): floating-point, on that
/// device type, and not `f64`.
fn eligible(t: &Tensor, device: DeviceType) -> bool {
    DeviceType::of_tensor(t.device()) == Some(device)
        && t.dtype().is_floating_point()
        && t.dtype() != DType::F64
}

#[cold]
#[inline(never)]
fn dispatch_slow<A: Args, R>(
    op: Op,
    args: A,
    f: impl FnOnce(A::Owned) -> Result<R>,
) -> Option<Result<R>> {
    let (device, to_type, lower) = match plan(op, &|g| args.visit(g))? {
        Ok(plan) => plan,
        Err(e) => return Some(Err(e)),
    };
    // Autocast off for this device type while the op runs (PyTorch's ExcludeDispatchKeyGuard).
    let _exclude = Exclude::new(device);
    let cast_args = match to_type {
        None => args.cast(&mut |t| Ok(t.clone())),
        Some(to) => args.cast(&mut |t| cached_cast(to, t, device, lower)),
    };
    Some(cast_args.and_then(f))
}

/// The arguments' visitor as [`plan`] takes it: not generic, so that the decision is compiled
/// once rather than once per op signature.
type Visit<'a> = &'a dyn Fn(&mut dyn FnMut(&Tensor));

/// What autocast does to one call of `op`: the device type whose region applies, the dtype
/// eligible arguments are cast to (`None`: none is cast) and the region's lower-precision
/// dtype; `None` when no region applies.
fn plan(op: Op, visit: Visit<'_>) -> Option<Result<(DeviceType, Option<DType>, DType)>> {
    let state = bits();
    // The device type whose autocast key PyTorch's dispatcher would pick: CUDA's ranks above
    // the CPU's.
    let (mut cuda, mut cpu) = (false, false);
    visit(&mut |t| match DeviceType::of_tensor(t.device()) {
        Some(DeviceType::Cuda) => cuda = true,
        Some(DeviceType::Cpu) => cpu = true,
        None => {}
    });
    let device = if cuda && enabled_in(state, DeviceType::Cuda) {
        DeviceType::Cuda
    } else if cpu && enabled_in(state, DeviceType::Cpu) {
        DeviceType::Cpu
    } else {
        return None;
    };
    let policy = op.policy(device)?;
    let lower = dtype_in(state, device);
    let to_type = match policy {
        CastPolicy::LowerPrecisionFp => Some(lower),
        CastPolicy::Fp32 => Some(DType::F32),
        CastPolicy::Fp32SetOptDtype => {
            let mut first = None;
            visit(&mut |t| {
                first.get_or_insert_with(|| eligible(t, device));
            });
            first.unwrap_or(false).then_some(DType::F32)
        }
        CastPolicy::Promote => match promote_type(lower, device, visit) {
            Ok(t) => Some(t),
            Err(e) => return Some(Err(e)),
        },
    };
    Some(Ok((device, to_type, lower)))
}

/// PyTorch's `promote_type` over the arguments: starting from the lower-precision dtype, an
/// eligible `f32` makes it `f32`; `f64` arguments are ignored; any other floating dtype (`f16`
/// in a `bf16` region, say) is PyTorch's error.
fn promote_type(lower: DType, device: DeviceType, visit: Visit<'_>) -> Result<DType> {
    let mut current = lower;
    let mut bad = false;
    visit(&mut |t| {
        if bad || !eligible(t, device) {
            return;
        }
        let next = t.dtype();
        if current == DType::F32 || next == DType::F32 {
            current = DType::F32;
        } else if !(current == lower && next == lower) {
            bad = true;
        }
    });
    if bad {
        return Err(Error::InvalidArgument(
            "Unexpected floating ScalarType in at::autocast::prioritize".into(),
        ));
    }
    Ok(current)
}

/// PyTorch's `cached_cast`: `t` in `to` if autocast casts it, through the weight cache for a
/// parameter's lower-precision cast.
fn cached_cast(to: DType, t: &Tensor, device: DeviceType, lower: DType) -> Result<Tensor> {
    if !eligible(t, device) || t.dtype() == to {
        return Ok(t.clone());
    }
    let can_try_cache = to == lower
        && t.dtype() == DType::F32
        && t.requires_grad()
        && t.is_leaf()
        && !t.is_view()
        && CACHE_ENABLED.with(Cell::get)
        && grad_mode::is_recording()
        && NESTING.with(Cell::get) > 0;
    if !can_try_cache {
        return t.to_dtype(to);
    }
    let key = (std::sync::Arc::as_ptr(&*t.0) as usize, to);
    let version = t.version();
    let hit = CACHE.with(|c| {
        c.borrow()
            .get(&key)
            .filter(|e| e.version == version)
            .map(|e| e.cast.clone())
    });
    if let Some(cast) = hit {
        return Ok(cast);
    }
    let cast = t.to_dtype(to)?;
    let entry = CacheEntry {
        _source: t.clone(),
        version,
        cast: cast.clone(),
    };
    // The replaced entry (an older version's) is dropped after the borrow ends.
    let old = CACHE.with(|c| c.borrow_mut().insert(key, entry));
    drop(old);
    Ok(cast)
}

/// Turns autocast off for one device type until dropped, then restores that bit alone.
struct Exclude {
    device: DeviceType,
    was_enabled: bool,
}

impl Exclude {
    fn new(device: DeviceType) -> Exclude {
        let b = bits();
        replace_bits(with_enabled(b, device, false));
        Exclude {
            device,
            was_enabled: enabled_in(b, device),
        }
    }
}

impl Drop for Exclude {
    fn drop(&mut self) {
        let b = bits();
        replace_bits(with_enabled(b, self.device, self.was_enabled));
    }
}
