//! Random numbers as PyTorch's CPU generator (`CPUGeneratorImpl`): mt19937 seeded as
//! `at::mt19937`, and PyTorch's transforms from its 32- and 64-bit draws to uniform and normal
//! samples, so the same seed gives PyTorch's CPU values.
//!
//! One global generator ([`manual_seed`], [`initial_seed`], [`seed`], [`default_generator`])
//! serves every seedless constructor (`Tensor::randn`, `Tensor::rand`, the `nn::init` functions
//! and every layer's default initialisation); an explicit [`Generator`] gives an independent
//! stream.
//!
//! ```
//! use autograd_runtime::{DType, Tensor, manual_seed};
//! manual_seed(0);
//! let x = Tensor::randn(&[3], DType::F32)?.to_vec::<f32>()?;
//! assert_eq!(x, vec![1.5409961, -0.29342890, -2.1787894]); // torch.manual_seed(0); torch.randn(3)
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! What matches PyTorch bit for bit (checked against PyTorch 2.15 on x86-64 Linux): the
//! mt19937 stream, `rand`/`uniform_` in f32 and f64, `randn`/`normal_` in f64 and in f32 below
//! 16 elements (PyTorch's scalar Box-Muller in double, whose `log1p`/`sin`/`cos` this crate takes
//! from the same C library), `randn`/`normal_` in f32 from 16 elements (PyTorch's AVX2 path,
//! whose Cephes polynomials are reproduced here operation by operation), `randperm`, and the
//! `bernoulli_` stream of PyTorch's portable kernel.

use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

/// PyTorch's default seed of a new generator (`default_rng_seed_val`).
const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// The number of 32-bit words of mt19937's state.
const MT_N: usize = 624;
/// mt19937's middle offset.
const MT_M: usize = 397;

/// mt19937 as `at::mt19937`: seeded from the low 32 bits of the seed with the standard
/// initialisation, tempered output.
#[derive(Clone, Debug, PartialEq)]
struct Mt19937 {
    state: Box<[u32; MT_N]>,
    /// The index of the next word to temper; `MT_N` means the state must be twisted first.
    next: usize,
}

impl Mt19937 {
    fn new(seed: u64) -> Self {
        let mut state = Box::new([0u32; MT_N]);
        state[0] = (seed & 0xffff_ffff) as u32;
        for j in 1..MT_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Self { state, next: MT_N }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        let s = &mut self.state;
        for i in 0..MT_N {
            let y = (s[i] & UPPER) | (s[(i + 1) % MT_N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            s[i] = s[(i + MT_M) % MT_N] ^ (y >> 1) ^ mag;
        }
        self.next = 0;
    }

    fn next_u32(&mut self) -> u32 {
        if self.next >= MT_N {
            self.twist();
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// The state of a CPU generator: the engine plus the cached second normal sample of the scalar
/// Box-Muller path (`next_double_normal_sample`).
#[derive(Clone, Debug, PartialEq)]
struct CpuGenerator {
    initial_seed: u64,
    engine: Mt19937,
    next_double_normal: Option<f64>,
}

impl CpuGenerator {
    fn new(seed: u64) -> Self {
        Self {
            initial_seed: seed,
            engine: Mt19937::new(seed),
            next_double_normal: None,
        }
    }

    /// PyTorch's `random()`: 32 random bits.
    fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// PyTorch's `random64()`: two draws, the first in the high half.
    fn random64(&mut self) -> u64 {
        let hi = self.random();
        let lo = self.random();
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 random bits.
    fn unit_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 random bits.
    fn unit_f64(&mut self) -> f64 {
        (self.random64() & ((1 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `normal_distribution<double>(mean, std)`: Box-Muller with the second sample cached.
    fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(z) = self.next_double_normal.take() {
            return z.mul_add(std, mean);
        }
        let u1 = self.unit_f64();
        let u2 = self.unit_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }
}

/// A source of random numbers, PyTorch's `torch.Generator` on the CPU: a handle (clones share
/// the stream) to mt19937 and its cached normal sample.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Generator, Tensor};
/// let g = Generator::new().manual_seed(0);
/// let a = Tensor::rand_with(&[2], DType::F64, &g)?.to_vec::<f64>()?;
/// assert_eq!(a, vec![0.9700530018065531, 0.707819864399788]); // torch.rand(2, dtype=float64)
/// assert_eq!(g.initial_seed(), 0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct Generator {
    inner: Arc<Mutex<CpuGenerator>>,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("initial_seed", &self.initial_seed())
            .finish_non_exhaustive()
    }
}

/// A snapshot of a [`Generator`]'s state ([`Generator::get_state`]), to restore with
/// [`Generator::set_state`].
#[derive(Clone, PartialEq)]
pub struct GeneratorState(CpuGenerator);

impl std::fmt::Debug for GeneratorState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratorState")
            .field("initial_seed", &self.0.initial_seed)
            .finish_non_exhaustive()
    }
}

impl Default for Generator {
    fn default() -> Self {
        Self::new()
    }
}

impl Generator {
    /// A generator seeded with PyTorch's default seed (67280421310721), as `torch.Generator()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Generator;
    /// assert_eq!(Generator::new().initial_seed(), 67280421310721);
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(CpuGenerator::new(DEFAULT_SEED))),
        }
    }

    /// Locks the state; a panic while it was held cannot leave it inconsistent (every update
    /// is a plain store), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, CpuGenerator> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reseeds the generator (PyTorch's `manual_seed`) and returns it, so
    /// `Generator::new().manual_seed(s)` reads as `torch.Generator().manual_seed(s)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(7);
    /// let a = Tensor::randn_with(&[4], DType::F64, &g)?.to_vec::<f64>()?;
    /// g.manual_seed(7);
    /// assert_eq!(a, Tensor::randn_with(&[4], DType::F64, &g)?.to_vec::<f64>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn manual_seed(&self, seed: u64) -> Generator {
        *self.lock() = CpuGenerator::new(seed);
        self.clone()
    }

    /// The seed the generator was last seeded with (PyTorch's `initial_seed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Generator;
    /// assert_eq!(Generator::new().manual_seed(3).initial_seed(), 3);
    /// ```
    pub fn initial_seed(&self) -> u64 {
        self.lock().initial_seed
    }

    /// Reseeds the generator from a non-deterministic source and returns that seed (PyTorch's
    /// `seed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Generator;
    /// let g = Generator::new();
    /// let s = g.seed();
    /// assert_eq!(g.initial_seed(), s);
    /// ```
    pub fn seed(&self) -> u64 {
        let s = nondeterministic_seed();
        self.manual_seed(s);
        s
    }

    /// A snapshot of the generator's state (PyTorch's `get_state`, as an opaque value).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(1);
    /// let state = g.get_state();
    /// let a = Tensor::rand_with(&[3], DType::F32, &g)?.to_vec::<f32>()?;
    /// g.set_state(&state);
    /// assert_eq!(a, Tensor::rand_with(&[3], DType::F32, &g)?.to_vec::<f32>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn get_state(&self) -> GeneratorState {
        GeneratorState(self.lock().clone())
    }

    /// Restores a state taken by [`get_state`](Generator::get_state) (PyTorch's `set_state`).
    ///
    /// # Examples
    ///
    /// See [`get_state`](Generator::get_state).
    pub fn set_state(&self, state: &GeneratorState) {
        *self.lock() = state.0.clone();
    }

    /// Fills `out` with samples uniform in `[from, to)` as PyTorch's `uniform_` on an f32
    /// tensor.
    pub(crate) fn fill_uniform_f32(&self, out: &mut [f32], from: f64, to: f64) {
        let (from, to) = (from as f32, to as f32);
        let mut g = self.lock();
        for x in out {
            *x = uniform_f32(g.random(), from, to);
        }
    }

    /// Fills `out` with samples uniform in `[from, to)` as PyTorch's `uniform_` on an f64
    /// tensor.
    pub(crate) fn fill_uniform_f64(&self, out: &mut [f64], from: f64, to: f64) {
        let mut g = self.lock();
        for x in out {
            let u = (g.random64() & ((1 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64);
            *x = u.mul_add(to - from, from);
        }
    }

    /// Fills `out` with `N(mean, std²)` samples as PyTorch's `normal_` on an f32 tensor
    /// (`contiguous` picks PyTorch's vectorised path from 16 elements).
    pub(crate) fn fill_normal_f32(&self, out: &mut [f32], mean: f64, std: f64, contiguous: bool) {
        let mut g = self.lock();
        if out.len() < 16 || !contiguous {
            for x in out {
                *x = g.normal_f64(mean, std) as f32;
            }
            return;
        }
        let (mean, std) = (mean as f32, std as f32);
        for x in out.iter_mut() {
            *x = g.unit_f32();
        }
        let n = out.len();
        for chunk in out.chunks_exact_mut(16) {
            normal_fill_16_f32(chunk, mean, std);
        }
        if !n.is_multiple_of(16) {
            let tail = &mut out[n - 16..];
            for x in tail.iter_mut() {
                *x = g.unit_f32();
            }
            normal_fill_16_f32(tail, mean, std);
        }
    }

    /// Fills `out` with `N(mean, std²)` samples as PyTorch's `normal_` on an f64 tensor
    /// (`contiguous` picks PyTorch's vectorised path from 16 elements).
    pub(crate) fn fill_normal_f64(&self, out: &mut [f64], mean: f64, std: f64, contiguous: bool) {
        let mut g = self.lock();
        if out.len() < 16 || !contiguous {
            for x in out {
                *x = g.normal_f64(mean, std);
            }
            return;
        }
        for x in out.iter_mut() {
            *x = g.unit_f64();
        }
        let n = out.len();
        for chunk in out.chunks_exact_mut(16) {
            normal_fill_16_f64(chunk, mean, std);
        }
        if !n.is_multiple_of(16) {
            let tail = &mut out[n - 16..];
            for x in tail.iter_mut() {
                *x = g.unit_f64();
            }
            normal_fill_16_f64(tail, mean, std);
        }
    }

    /// `n` Bernoulli draws with success probability `p`, as PyTorch's portable `bernoulli_(p)`
    /// kernel (a double uniform below `p`), and the state they were drawn from.
    pub(crate) fn bernoulli(&self, n: usize, p: f64) -> (GeneratorState, Vec<bool>) {
        let mut g = self.lock();
        let state = GeneratorState(g.clone());
        (state, (0..n).map(|_| g.unit_f64() < p).collect())
    }

    /// A generator starting from `state`.
    pub(crate) fn from_state(state: &GeneratorState) -> Generator {
        Generator {
            inner: Arc::new(Mutex::new(state.0.clone())),
        }
    }

    /// `n` integers uniform in `[low, high)`, as PyTorch's CPU `random_(from, to)`: one 32-bit
    /// draw modulo the range, or a 64-bit draw when the range reaches 2^32.
    pub(crate) fn randint(&self, n: usize, low: i64, high: i64) -> Vec<i64> {
        let mut g = self.lock();
        let range = (i128::from(high) - i128::from(low)) as u128;
        (0..n)
            .map(|_| {
                let draw = if range >= 1 << 32 {
                    u128::from(g.random64())
                } else {
                    u128::from(g.random())
                };
                (i128::from(low) + (draw % range) as i128) as i64
            })
            .collect()
    }

    /// A draw of PyTorch's `torch.empty((), dtype=torch.int64).random_(generator=g)`: one
    /// 64-bit draw modulo 2^63 (`uniform_int_distribution<int64_t>`), the seed the data loader
    /// takes per epoch and for a shuffle without a generator.
    pub(crate) fn random_int64(&self) -> u64 {
        self.lock().random64() % (1 << 63)
    }

    /// A random permutation of `0..n`, as PyTorch's CPU `randperm`.
    pub(crate) fn randperm(&self, n: usize) -> Vec<usize> {
        let mut g = self.lock();
        let mut r: Vec<usize> = (0..n).collect();
        let small = (n as u64) < u64::from(u32::MAX / 20);
        for i in 0..n.saturating_sub(1) {
            let draw = if small {
                u64::from(g.random())
            } else {
                g.random64()
            };
            let z = (draw % (n - i) as u64) as usize;
            r.swap(i, z + i);
        }
        r
    }
}

/// `uniform_real<float>(val, from, to)`: 24 random bits scaled into `[from, to)` in f32.
fn uniform_f32(val: u32, from: f32, to: f32) -> f32 {
    let x = (val & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
    x.mul_add(to - from, from)
}

/// PyTorch's `normal_fill_16<double>`: Box-Muller over 8 pairs `(data[j], data[j + 8])`.
fn normal_fill_16_f64(data: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        data[j] = (radius * theta.cos()).mul_add(std, mean);
        data[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// PyTorch's `normal_fill_16_AVX2`: Box-Muller over 8 pairs in f32 with the Cephes `log` and
/// `sincos` of `avx_mathfun.h`, lane by lane, and a fused multiply-add for `x·std + mean`.
fn normal_fill_16_f32(data: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    for j in 0..8 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * cephes_logf(u1)).sqrt();
        let theta = two_pi * u2;
        let (s, c) = cephes_sincosf(theta);
        data[j] = (radius * c).mul_add(std, mean);
        data[j + 8] = (radius * s).mul_add(std, mean);
    }
}

/// `log256_ps` of `avx_mathfun.h` for one lane (only called with `x` in `(0, 1]`). The
/// constants are Cephes' decimal ones rounded to f32 as C rounds them.
fn cephes_logf(x: f32) -> f32 {
    const P: [f64; 9] = [
        7.0376836292E-2,
        -1.1514610310E-1,
        1.1676998740E-1,
        -1.2420140846E-1,
        1.4249322787E-1,
        -1.6668057665E-1,
        2.0000714765E-1,
        -2.4999993993E-1,
        3.3333331174E-1,
    ];
    if x.is_nan() || x <= 0.0 {
        return f32::NAN;
    }
    let x = x.max(f32::MIN_POSITIVE);
    let bits = x.to_bits();
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
    let mut x = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    let below = x < std::f64::consts::FRAC_1_SQRT_2 as f32;
    let tmp = if below { x } else { 0.0 };
    x -= 1.0;
    if below {
        e -= 1.0;
    }
    x += tmp;
    let z = x * x;
    let mut y = P[0] as f32;
    for p in &P[1..] {
        y = fused(y, x, *p as f32);
    }
    y *= x;
    // GCC fuses `y·z + e·q1` on the first product.
    y = fused(y, z, e * -2.12194440e-4f64 as f32);
    y = fused(-z, 0.5, y);
    x += y;
    fused(e, 0.693_359_375_f64 as f32, x)
}

/// `a·b + c` fused, as GCC contracts the `avx_mathfun.h` multiply-then-add pairs in
/// PyTorch's AVX2 build (found by comparing with PyTorch's output: the unfused form differs in
/// the last bit for about 1 sample in 170).
fn fused(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// `sincos256_ps` of `avx_mathfun.h` for one lane: `(sin x, cos x)`.
fn cephes_sincosf(x: f32) -> (f32, f32) {
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = x.abs();
    let y = x * 1.27323954473516f64 as f32;
    let mut j = (y as i32).wrapping_add(1) & !1;
    let y = j as f32;
    let swap_sin = ((j & 4) as u32) << 29;
    let poly = j & 2 == 0;
    x = fused(y, -0.78515625, x);
    x = fused(y, -2.418_756_484_985_351_6e-4_f64 as f32, x);
    x = fused(y, -3.774_894_977_445_941e-8_f64 as f32, x);
    j -= 2;
    let sign_cos = ((!j & 4) as u32) << 29;
    sign_sin ^= swap_sin;
    let z = x * x;
    let mut c = 2.443315711809948E-005f64 as f32;
    c = fused(c, z, -1.388731625493765E-003f64 as f32);
    c = fused(c, z, 4.166664568298827E-002f64 as f32);
    c *= z;
    c = fused(c, z, -(z * 0.5));
    c += 1.0;
    let mut s = -1.9515295891E-4f64 as f32;
    s = fused(s, z, 8.3321608736E-3f64 as f32);
    s = fused(s, z, -1.6666654611E-1f64 as f32);
    s *= z;
    s = fused(s, x, x);
    let (sin, cos) = if poly { (s, c) } else { (c, s) };
    (
        f32::from_bits(sin.to_bits() ^ sign_sin),
        f32::from_bits(cos.to_bits() ^ sign_cos),
    )
}

/// A seed from the clock and a fresh hasher's random keys.
fn nondeterministic_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// The global generator every seedless random function draws from.
static DEFAULT: LazyLock<Generator> = LazyLock::new(Generator::new);

/// The global CPU generator (PyTorch's `torch.default_generator`): a handle to the stream that
/// [`manual_seed`] reseeds.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{default_generator, manual_seed};
/// manual_seed(5);
/// assert_eq!(default_generator().initial_seed(), 5);
/// ```
pub fn default_generator() -> Generator {
    DEFAULT.clone()
}

/// Seeds the global generator (PyTorch's `torch.manual_seed`): what follows draws PyTorch's CPU
/// values for that seed.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let u = Tensor::rand(&[2], DType::F32)?.to_vec::<f32>()?;
/// assert_eq!(u, vec![0.49625659, 0.76822180]); // torch.manual_seed(0); torch.rand(2)
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn manual_seed(seed: u64) -> Generator {
    DEFAULT.manual_seed(seed)
}

/// The seed the global generator was last seeded with (PyTorch's `torch.initial_seed`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{initial_seed, manual_seed};
/// manual_seed(11);
/// assert_eq!(initial_seed(), 11);
/// ```
pub fn initial_seed() -> u64 {
    DEFAULT.initial_seed()
}

/// Reseeds the global generator from a non-deterministic source and returns the seed
/// (PyTorch's `torch.seed`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{initial_seed, seed};
/// let s = seed();
/// assert_eq!(initial_seed(), s);
/// ```
pub fn seed() -> u64 {
    DEFAULT.seed()
}

/// A random permutation of `0..n` drawn from the global generator (PyTorch's
/// `torch.randperm(n)` on the CPU, same values after [`manual_seed`]), as indices until this
/// crate has an integer dtype.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{manual_seed, randperm};
/// manual_seed(0);
/// assert_eq!(randperm(10), vec![4, 1, 7, 5, 3, 9, 0, 8, 6, 2]); // torch.randperm(10)
/// ```
pub fn randperm(n: usize) -> Vec<usize> {
    DEFAULT.randperm(n)
}

/// A random permutation of `0..n` drawn from `generator` (PyTorch's `torch.randperm(n,
/// generator=g)`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{Generator, randperm_with};
/// let mut p = randperm_with(100, &Generator::new().manual_seed(1));
/// p.sort_unstable();
/// assert_eq!(p, (0..100).collect::<Vec<_>>());
/// ```
pub fn randperm_with(n: usize, generator: &Generator) -> Vec<usize> {
    generator.randperm(n)
}

#[cfg(test)]
mod tests;
