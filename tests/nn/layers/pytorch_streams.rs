//! `manual_seed` then the seedless constructors, the layers' default initialisation and dropout
//! give PyTorch 2.15's CPU values, recorded by `tests/ops/gen_random.py` (f32 as bit patterns,
//! long streams as that script's checksum).

use super::*;
use autograd::nn::Conv2d;
use autograd::{manual_seed, randperm};

/// The wrapping sum of `(i + 1) · bits(x[i])`, `gen_random.py`'s checksum.
fn checksum(t: &Tensor) -> u64 {
    t.to_vec::<f32>()
        .unwrap()
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, x)| {
            acc.wrapping_add((i as u64 + 1).wrapping_mul(u64::from(x.to_bits())))
        })
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

#[test]
fn seedless_constructors_draw_pytorchs_streams() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    assert_eq!(
        bits(&Tensor::randn(&[5], DType::F32)?),
        [0x3fc53f5c, 0xbe963c50, 0xc00b7149, 0x3f1184b6, 0xbf8ad1a1]
    );
    manual_seed(0);
    assert_eq!(
        Tensor::randn(&[2], DType::F64)?.to_vec::<f64>()?,
        [1.5409961082440433, -0.2934289057609464]
    );
    manual_seed(0);
    assert_eq!(
        bits(&Tensor::rand(&[3, 4], DType::F32)?),
        [
            0x3efe1558, 0x3f44aa2f, 0x3db533a8, 0x3e073300, 0x3e9d6686, 0x3f2252fb, 0x3efaed86,
            0x3f657d67, 0x3ee94812, 0x3f21ded3, 0x3eb2a22a, 0x3ecdade4
        ]
    );
    manual_seed(0);
    assert_eq!(randperm(10), [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]);
    assert_eq!(autograd::initial_seed(), 0);
    Ok(())
}

#[test]
fn layers_start_from_pytorchs_weights() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let l = Linear::new(3, 2)?;
    assert_eq!(
        bits(l.weight()),
        [
            0xbb8da3e8, 0x3e9e9313, 0xbef34b7e, 0xbed98bc9, 0xbe63b4b1, 0x3e1e8953
        ]
    );
    assert_eq!(bits(l.bias().unwrap()), [0xbc3b6b40, 0x3eea617a]);
    manual_seed(0);
    let l = Linear::new(20, 30)?;
    assert_eq!(
        (checksum(l.weight()), checksum(l.bias().unwrap())),
        (378_248_368_925_550, 1_048_375_857_655)
    );
    // Without a bias nothing is drawn for it: the stream continues where PyTorch's does.
    manual_seed(0);
    Linear::no_bias(3, 2)?;
    assert_eq!(bits(&Tensor::rand(&[1], DType::F32)?), [0x3efaed86]);

    manual_seed(0);
    let c = Conv2d::new(3, 4, 3)?;
    assert_eq!(
        (checksum(c.weight()), checksum(c.bias().unwrap())),
        (12_429_786_861_538, 18_900_771_248)
    );
    manual_seed(0);
    let c = Conv2d::new(4, 6, 3)?.groups(2)?;
    assert_eq!(
        (checksum(c.weight()), checksum(c.bias().unwrap())),
        (12_444_101_198_997, 41_146_451_087)
    );
    manual_seed(0);
    let _c = Conv2d::new(2, 3, 2)?.without_bias();
    assert_eq!(bits(&Tensor::rand(&[1], DType::F32)?), [0x3ed6bcb0]);

    manual_seed(0);
    let e = Embedding::new(3, 2)?;
    assert_eq!(
        bits(e.weight()),
        [
            0x3fc53f5c, 0xbe963c50, 0xc00b7149, 0x3f1184b6, 0xbf8ad1a1, 0xbfb3052d
        ]
    );
    manual_seed(0);
    let e = Embedding::new(10, 3)?;
    assert_eq!(
        bits(e.weight())[..4],
        [0xbf901b85, 0xbf93808a, 0xbe804bd6, 0xbede255d]
    );
    assert_eq!(bits(e.weight())[29], 0x40135755);

    manual_seed(0);
    let m = Sequential::new()
        .add(Linear::new(4, 8)?)
        .add(Relu::new())
        .add(Linear::new(8, 2)?);
    let sums: Vec<u64> = m.parameters().iter().map(checksum).collect();
    assert_eq!(
        sums,
        [
            1_193_780_659_586,
            70_026_586_028,
            253_287_329_402,
            7_425_990_202
        ]
    );
    Ok(())
}

#[test]
fn dropout_masks_are_pytorchs_bernoulli_stream() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let y = F::dropout(&Tensor::ones(&[12], DType::F32)?, 0.3, true)?;
    let k = 0x3fb6db6e; // 1.0f32 / 0.7f32, as PyTorch's `noise.div_(1 - p)`
    assert_eq!(bits(&y), [0, 0, k, 0, k, 0, k, k, k, k, k, k]);
    manual_seed(0);
    let y = F::dropout(&Tensor::ones(&[6], DType::F64)?, 0.3, true)?;
    let k = 1.4285714285714286;
    assert_eq!(y.to_vec::<f64>()?, [0.0, 0.0, k, 0.0, k, 0.0]);
    manual_seed(0);
    let y = Dropout::new(0.3)?.forward(&Tensor::ones(&[10003], DType::F32)?)?;
    assert_eq!(checksum(&y), 37_140_530_762_653_284);
    Ok(())
}
