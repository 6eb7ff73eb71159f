//! The generator against PyTorch 2.15's CPU streams, recorded by `tests/ops/gen_random.py`.
//!
//! f32 streams are compared bit for bit everywhere. f64 streams go through the C library's `log`,
//! `log1p`, `sin` and `cos` (as PyTorch's do): they are compared to 1e-15 relative, which holds
//! exactly on glibc and within an ulp on another C library.

use super::*;

/// The wrapping sum of `(i + 1) · bits[i]`, the checksum `gen_random.py` prints.
fn checksum(bits: impl IntoIterator<Item = u64>) -> u64 {
    bits.into_iter().enumerate().fold(0u64, |acc, (i, b)| {
        acc.wrapping_add((i as u64 + 1).wrapping_mul(b))
    })
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_f64(name: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{name}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-15 * w.abs().max(1.0),
            "{name}[{i}]: {g} vs PyTorch's {w}"
        );
    }
}

fn seeded(seed: u64) -> Generator {
    Generator::new().manual_seed(seed)
}

fn normal_f32(seed: u64, n: usize, mean: f64, std: f64) -> Vec<f32> {
    let mut v = vec![0f32; n];
    seeded(seed).fill_normal_f32(&mut v, mean, std, true);
    v
}

fn normal_f64(seed: u64, n: usize, mean: f64, std: f64) -> Vec<f64> {
    let mut v = vec![0f64; n];
    seeded(seed).fill_normal_f64(&mut v, mean, std, true);
    v
}

#[test]
fn mt19937_is_the_standard_engine() {
    // std::mt19937 with its default seed 5489: the 10000th output is 4123659995 (C++11 §26.5.5).
    let mut mt = Mt19937::new(5489);
    let first = mt.next_u32();
    assert_eq!(first, 3_499_211_612);
    let last = (1..10_000).map(|_| mt.next_u32()).last();
    assert_eq!(last, Some(4_123_659_995));
    assert_eq!(Generator::new().initial_seed(), 67_280_421_310_721);
}

#[test]
fn randn_f32_is_pytorchs_on_both_paths() {
    // Below 16 elements: Box-Muller in double, one cached sample.
    assert_eq!(
        bits32(&normal_f32(0, 5, 0.0, 1.0)),
        [0x3fc53f5c, 0xbe963c50, 0xc00b7149, 0x3f1184b6, 0xbf8ad1a1]
    );
    // From 16: PyTorch's AVX2 path over chunks of 16, the last chunk redrawn.
    let want: [u32; 40] = [
        0xbf901b85, 0xbf93808a, 0xbe804bd6, 0xbede255d, 0x3f594515, 0x3f312783, 0xbea1cc6d,
        0xc0075fc1, 0x3ea50138, 0xbfa1b4f4, 0x3eb330ff, 0x3e9dc3bb, 0x3df56f77, 0x3f9e6b93,
        0x3f8ef28e, 0xbe7d367c, 0xbfad23c2, 0xbfd91446, 0x3f111004, 0x3f4b235d, 0x3f194d8b,
        0xbfc70d5b, 0xbeaec6ca, 0x3fed2f4e, 0xbe5d0b42, 0xbf3e17a3, 0x3f100e82, 0x3e84ede2,
        0xbe3222d5, 0xbf2dc250, 0x3f7031db, 0x3efa4d25, 0x3f9a033c, 0x3dad2087, 0xbf999e2b,
        0xbb9cd1ae, 0xbf04a08d, 0xbe9d0855, 0xbfca5e02, 0x3fda734a,
    ];
    assert_eq!(bits32(&normal_f32(0, 40, 0.0, 1.0)), want);
    // normal_(0.5, 2.5): `x·std + mean` fused, as PyTorch's build computes it.
    let want: [u32; 37] = [
        0xc0142266, 0xc01860ac, 0xbe017b2e, 0xbf15aeb4, 0x4027cb2d, 0x400eb8b2, 0xbe947f10,
        0xc09937b1, 0x3fa720c3, 0xc02a2231, 0x3faffe9f, 0x3fa29a55, 0x3f4cb2d5, 0x40660678,
        0x4052af32, 0xbdf2106c, 0xc0386cb2, 0xc06f5958, 0x3ff55405, 0x401ef61a, 0x3fffa0ee,
        0x3f47f173, 0x400686db, 0x3fcd2b86, 0xbd227094, 0xbfad9d8c, 0x3ff41222, 0x3f9314ad,
        0x3d8551d7, 0x40c82d2a, 0xc04b05e5, 0xc05ddec6, 0x4060840b, 0x3f361a2a, 0xc02005b6,
        0x3ef9dfcf, 0xbf4b9160,
    ];
    assert_eq!(bits32(&normal_f32(0, 37, 0.5, 2.5)), want);
    // Long streams: every one of 100003 samples, bit for bit, through a checksum.
    for (seed, want) in [
        (1, 10_673_926_775_729_121_528),
        (42, 10_668_840_099_453_850_640),
    ] {
        let v = normal_f32(seed, 100_003, 0.0, 1.0);
        assert_eq!(
            checksum(v.iter().map(|x| u64::from(x.to_bits()))),
            want,
            "seed {seed}"
        );
    }
}

#[test]
fn randn_f64_is_pytorchs_on_both_paths() {
    assert_f64(
        "randn(5)",
        &normal_f64(0, 5, 0.0, 1.0),
        &[
            1.5409961082440433,
            -0.2934289057609464,
            -2.1787893820745574,
            0.5684312772806678,
            -1.084522342424021,
        ],
    );
    let v = normal_f64(0, 40, 0.0, 1.0);
    assert_f64(
        "randn(40)",
        &[v[0], v[1], v[2], v[3], v[38], v[39]],
        &[
            -2.310411800234176,
            -0.3732508612577643,
            -1.0608166785462863,
            0.9995093547811761,
            -1.96124168414333,
            0.22092437177232177,
        ],
    );
    let v = normal_f64(0, 37, 0.5, 2.5);
    assert_f64(
        "normal_(0.5, 2.5) x37",
        &[v[0], v[20], v[33], v[36]],
        &[
            -5.27602950058544,
            0.45008812273059334,
            0.0009794309179749355,
            3.386740568956165,
        ],
    );
    assert_f64(
        "normal_(0.5, 2.5) x7",
        &normal_f64(0, 7, 0.5, 2.5),
        &[
            4.352490270610108,
            -0.23357226440236595,
            -4.946973455186393,
            1.9210781932016694,
            -2.2113058560600525,
            -2.996488488427192,
            1.5083671190732482,
        ],
    );
    // The scalar path's cached second sample carries over to the next call.
    let g = seeded(0);
    g.fill_normal_f64(&mut [0.0; 5], 0.0, 1.0, true);
    let mut next = [0.0; 3];
    g.fill_normal_f64(&mut next, 0.0, 1.0, true);
    assert_f64(
        "randn(5) then randn(3)",
        &next,
        &[-1.3985953953708767, 0.4033468476292993, 0.8380263329976598],
    );
    // Reseeding drops the cached sample.
    g.manual_seed(0);
    let mut again = [0.0; 5];
    g.fill_normal_f64(&mut again, 0.0, 1.0, true);
    assert_eq!(again, normal_f64(0, 5, 0.0, 1.0).as_slice());
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        for (seed, want) in [(1, 372_780_392_557_549_556), (42, 39_742_552_597_904_089)] {
            let v = normal_f64(seed, 10_003, 0.0, 1.0);
            assert_eq!(checksum(v.iter().map(|x| x.to_bits())), want, "seed {seed}");
        }
    }
}

#[test]
fn uniform_is_pytorchs_in_f32_and_f64() {
    let g = seeded(0);
    let mut v = [0f32; 12];
    g.fill_uniform_f32(&mut v, 0.0, 1.0);
    assert_eq!(
        bits32(&v),
        [
            0x3efe1558, 0x3f44aa2f, 0x3db533a8, 0x3e073300, 0x3e9d6686, 0x3f2252fb, 0x3efaed86,
            0x3f657d67, 0x3ee94812, 0x3f21ded3, 0x3eb2a22a, 0x3ecdade4
        ]
    );
    g.manual_seed(0);
    let mut v = [0f32; 20];
    g.fill_uniform_f32(&mut v, -2.0, 3.0);
    assert_eq!(
        bits32(&v),
        [
            0x3ef66ab8, 0x3feba976, 0xbfc75fdc, 0xbfab8020, 0xbeecff62, 0x3f95cf74, 0x3ee6a39e,
            0x401edcc1, 0x3e8e685a, 0x3f94ad10, 0xbe82d52e, 0x3c0cae80, 0xbff1b626, 0xbf93ee26,
            0xbf07d2a2, 0x3f17b538, 0x3fbe81dc, 0x400000ef, 0xbf98f0ef, 0xbf16b23b
        ]
    );
    // f64 involves no transcendental function: exact.
    g.manual_seed(0);
    let mut v = [0f64; 5];
    g.fill_uniform_f64(&mut v, 0.0, 1.0);
    assert_eq!(
        v,
        [
            0.9700530018065531,
            0.707819864399788,
            0.45938294312745087,
            0.9207476841219603,
            0.6450241201227648
        ]
    );
    g.manual_seed(0);
    let mut v = [0f64; 6];
    g.fill_uniform_f64(&mut v, -2.0, 3.0);
    assert_eq!(
        v,
        [
            2.8502650090327655,
            1.5390993219989397,
            0.29691471563725436,
            2.6037384206098015,
            1.225120600613824,
            1.9557394609015184
        ]
    );
    for (seed, want) in [(1, 52_668_664_136_022_945), (42, 52_680_203_020_537_973)] {
        let mut v = vec![0f32; 10_003];
        seeded(seed).fill_uniform_f32(&mut v, 0.0, 1.0);
        assert_eq!(checksum(v.iter().map(|x| u64::from(x.to_bits()))), want);
    }
}

#[test]
fn randperm_and_bernoulli_are_pytorchs() {
    assert_eq!(seeded(0).randperm(10), [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]);
    assert_eq!(
        seeded(3).randperm(30),
        [
            16, 27, 19, 24, 4, 10, 6, 0, 1, 7, 3, 26, 23, 9, 5, 2, 29, 14, 11, 17, 18, 20, 13, 12,
            15, 28, 8, 21, 25, 22
        ]
    );
    assert!(seeded(0).randperm(0).is_empty());
    assert_eq!(seeded(0).randperm(1), [0]);
    // torch.manual_seed(0); F.dropout(torch.ones(12), 0.3) keeps these.
    let (state, keep) = seeded(0).bernoulli(12, 0.7);
    let keep: Vec<u8> = keep.into_iter().map(u8::from).collect();
    assert_eq!(keep, [0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1]);
    assert_eq!(state, seeded(0).get_state());
    // The same draws from the recorded state.
    let again = Generator::from_state(&state).bernoulli(12, 0.7).1;
    assert_eq!(again.into_iter().map(u8::from).collect::<Vec<_>>(), keep);
}

#[test]
fn state_round_trips_and_generators_are_independent() {
    let g = seeded(9);
    let h = g.clone();
    let state = g.get_state();
    let mut a = [0f64; 3];
    g.fill_normal_f64(&mut a, 0.0, 1.0, true);
    // A clone is the same stream: it continues where `g` stopped.
    let mut b = [0f64; 3];
    h.fill_normal_f64(&mut b, 0.0, 1.0, true);
    assert_ne!(a, b);
    g.set_state(&state);
    let mut c = [0f64; 3];
    g.fill_normal_f64(&mut c, 0.0, 1.0, true);
    assert_eq!(a, c);
    // An independent generator does not move `g`.
    let before = g.get_state();
    seeded(9).fill_uniform_f64(&mut [0.0; 10], 0.0, 1.0);
    assert_eq!(g.get_state(), before);
    assert_eq!(format!("{g:?}"), "Generator { initial_seed: 9, .. }");
    // `seed()` reseeds from a fresh value.
    let s = g.seed();
    assert_eq!(g.initial_seed(), s);
}

#[test]
fn cephes_functions_are_close_to_the_true_ones() {
    // The lane functions reproduce PyTorch's approximations, which stay within a few ulps.
    for i in 1..=1000 {
        let x = i as f32 / 1000.0;
        assert!(
            (cephes_logf(x) - x.ln()).abs() <= 2e-7 * x.ln().abs().max(1.0),
            "log {x}"
        );
        let t = x * std::f32::consts::TAU;
        let (s, c) = cephes_sincosf(t);
        assert!(
            (s - t.sin()).abs() < 1e-6 && (c - t.cos()).abs() < 1e-6,
            "sincos {t}"
        );
    }
    assert!(cephes_logf(0.0).is_nan());
}
