//! The data sets the library ships: `Digits`.

use autograd::data::datasets::Digits;
use autograd::data::{DataLoader, DataLoaderOptions, Dataset};
use autograd::{DType, Generator};

#[test]
fn digits_has_1797_images_of_each_class_scaled_to_the_unit_interval() {
    let digits = Digits::load().unwrap();
    assert_eq!(digits.len(), 1797);
    let labels = digits.targets().to_vec::<i64>().unwrap();
    let mut per_class = [0usize; 10];
    for &l in &labels {
        per_class[l as usize] += 1;
    }
    // sklearn.datasets.load_digits(): np.bincount(target)
    assert_eq!(
        per_class,
        [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    );

    let pixels = digits.images().to_vec::<f32>().unwrap();
    assert_eq!(
        (digits.images().shape(), digits.images().dtype()),
        (&[1797, 64][..], DType::F32)
    );
    // 0..=16 divided by 16: multiples of 1/16 in [0, 1], both ends reached.
    assert!(
        pixels
            .iter()
            .all(|&p| (0.0..=1.0).contains(&p) && (p * 16.0).fract() == 0.0)
    );
    assert!(pixels.contains(&0.0) && pixels.contains(&1.0));
    // load_digits().data.sum() == 561,718 (pixels 0-16).
    assert_eq!(
        pixels.iter().map(|&p| f64::from(p * 16.0)).sum::<f64>(),
        561_718.0
    );

    // Sample 1797 - 1: the last line of the source.
    let (image, label) = digits.get(1796).unwrap();
    assert_eq!((image.shape(), label.shape()), (&[64][..], &[][..]));
    assert_eq!(label.item::<i64>().unwrap(), 8);
    assert_eq!(image.to_vec::<f32>().unwrap(), pixels[1796 * 64..].to_vec());
    assert_eq!(
        digits.get(1797).unwrap_err().to_string(),
        "index 1797 is out of bounds for dimension 0 with size 1797"
    );
}

#[test]
fn digits_batch_into_images_and_labels() {
    let o = DataLoaderOptions::default()
        .batch_size(500)
        .shuffle(true)
        .generator(Generator::new().manual_seed(0))
        .num_workers(1);
    let loader = DataLoader::new(Digits::load().unwrap(), o).unwrap();
    assert_eq!(loader.len(), 4);
    let mut seen = 0;
    for batch in &loader {
        let (x, y) = batch.unwrap();
        assert_eq!((x.shape()[1], y.dtype()), (64, DType::I64));
        assert_eq!(x.shape()[0], y.shape()[0]);
        seen += y.shape()[0];
    }
    assert_eq!(seen, 1797);
}
