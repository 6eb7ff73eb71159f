//! `DataLoader`: PyTorch's batch order and generator streams, `len`/`drop_last`, collate steps,
//! errors, and the worker threads (same batches, early drop, errors and panics).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use autograd::data::{
    Collate, DataLoader, DataLoaderOptions, Dataset, TensorDataset, random_split,
};
use autograd::{DType, Error, Generator, Result, Tensor, manual_seed};

use super::global_generator;

/// What `tests/data/loader_values.py` printed (PyTorch 2.15.0, CPU).
const PYTORCH: &str = "\
gen n=10 bs=3 drop_last=0 | 3 7 5,2 0 8,1 6 9,4 ; 1 3 2,7 5 9,0 6 4,8 ; 6 8 5,7 2 4,1 0 3,9
gen n=10 bs=3 drop_last=0 rand | 0.7262365221977234 0.7010802030563354
gen n=10 bs=4 drop_last=1 | 3 7 5 2,0 8 1 6 ; 1 3 2 7,5 9 0 6 ; 6 8 5 7,2 4 1 0
gen n=10 bs=4 drop_last=1 rand | 0.7262365221977234 0.7010802030563354
gen n=12 bs=4 drop_last=0 | 5 4 0 9,7 8 1 10,3 11 6 2 ; 1 11 0 3,5 4 2 7,6 9 10 8 ; 4 8 5 7,11 10 0 1,3 6 9 2
gen n=12 bs=4 drop_last=0 rand | 0.6965049505233765 0.9142746925354004
gen n=1797 bs=64 drop_last=0 | 404 293 1240 1086 1350 876 934 220 938 1775 913 550 700 165 774 1455 1263 1030 953 1274 1109 1379 671 146 877 1346 321 1197 1480 153 1712 1707 1467 1038 1733 690 803 645 1557 264 698 8 1483 1142 1283 1192 467 1718 73 650 766 1504 1723 1333 1343 463 100 104 374 1477 834 791 982 779 ; 1195 1181 1381 752 1411 75 1097 865 936 1291 1380 1254 846 1202 353 726 1114 597 858 1232 51 480 1671 1064 1723 1335 1771 765 256 197 746 819 1144 779 570 182 1473 1002 29 220 1090 1207 638 1131 592 1015 642 156 676 1231 1175 1642 1192 1112 1374 1174 149 1068 1447 1731 1769 134 1529 946 ; 1260 1298 1550 1634 939 1702 585 1155 277 199 212 892 731 1618 1683 202 299 1638 737 1670 185 750 624 830 813 333 1287 940 1529 1067 1762 1622 1749 796 190 1757 1694 561 1664 1241 1380 709 1781 735 20 1794 1405 770 101 64 221 668 1183 1126 720 53 1372 1185 1682 1688 558 596 1208 1137
gen n=1797 bs=64 drop_last=0 rand | 0.04981499910354614 0.17666882276535034
gen early workers=0 | 3 7 5 ; 9 2 1,7 4 0,3 5 6,8
gen early workers=2 | 3 7 5 ; 1 3 2,7 5 9,0 6 4,8
global seed=0 | 6 7 1 4,2 0 9 8,3 5 ; 2 4 7 0,8 9 5 3,6 1
global seed=0 rand | 0.455627977848053 0.6323062777519226
global seed=7 | 3 2 7 8,6 1 5 9,0 4 ; 1 3 5 2,8 9 6 7,4 0
global seed=7 rand | 0.36531615257263184 0.8512683510780334
sequential rand | 0.30742281675338745 0.6340786814689636
split gen | 362 1568 1440 1761 815 1792 508 660 , 1084 909 1253 225 895 1261 1295 1459
split global | 6 0 3 7 , 8 5 1 9 2 4
";

/// The payload of the line named `case`.
fn pytorch(case: &str) -> &'static str {
    PYTORCH
        .lines()
        .find_map(|l| l.strip_prefix(case)?.strip_prefix(" | "))
        .unwrap_or_else(|| panic!("no line `{case}` in PYTORCH"))
}

/// `epoch ; epoch` of `batch,batch` of space-separated indices.
fn pytorch_epochs(case: &str) -> Vec<Vec<Vec<i64>>> {
    pytorch(case)
        .split(" ; ")
        .map(|e| {
            e.split(',')
                .map(|b| b.split(' ').map(|v| v.parse().unwrap()).collect())
                .collect()
        })
        .collect()
}

/// The two floats of a `rand` line.
fn pytorch_rand(case: &str) -> Vec<f32> {
    pytorch(case)
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect()
}

/// `range(n)` as PyTorch's loaders above see it: one `I64` tensor of rows 0..n.
fn range(n: i64) -> TensorDataset {
    TensorDataset::new(vec![Tensor::arange(0, n, 1).unwrap()]).unwrap()
}

/// One epoch's batches as index lists.
fn epoch(loader: &DataLoader<TensorDataset, Vec<Tensor>>) -> Vec<Vec<i64>> {
    loader
        .iter()
        .map(|b| b.and_then(|b| b[0].to_vec::<i64>()))
        .collect::<Result<_>>()
        .unwrap()
}

#[test]
fn a_seeded_generator_gives_pytorchs_batches_epoch_after_epoch() {
    for (n, bs, drop_last) in [
        (10, 3, false),
        (10, 4, true),
        (12, 4, false),
        (1797, 64, false),
    ] {
        let case = format!("gen n={n} bs={bs} drop_last={}", u8::from(drop_last));
        for workers in [0, 1, 3] {
            let g = Generator::new().manual_seed(0);
            let mut o = DataLoaderOptions::default()
                .batch_size(bs)
                .shuffle(true)
                .drop_last(drop_last)
                .generator(g.clone())
                .num_workers(workers);
            if workers == 3 {
                o = o.prefetch_factor(1);
            }
            let loader = DataLoader::new(range(n), o).unwrap();
            let mut epochs: Vec<_> = (0..3).map(|_| epoch(&loader)).collect();
            if n > 100 {
                epochs.iter_mut().for_each(|e| e.truncate(1));
            }
            assert_eq!(epochs, pytorch_epochs(&case), "{case}, {workers} workers");
            // The generator is where PyTorch's is: three seeds and six permutations later.
            let next = Tensor::rand_with(&[2], DType::F32, &g).unwrap();
            assert_eq!(
                next.to_vec::<f32>().unwrap(),
                pytorch_rand(&format!("{case} rand"))
            );
        }
    }
}

#[test]
fn an_epoch_left_early_skips_the_closing_permutation_as_pytorchs() {
    // Without workers the closing permutation is never drawn; with 2 (which send the whole
    // epoch's 4 batches at once) it is drawn when the first batch comes back, as in PyTorch.
    for workers in [0, 2] {
        let expected = pytorch_epochs(&format!("gen early workers={workers}"));
        let g = Generator::new().manual_seed(0);
        let o = DataLoaderOptions::default()
            .batch_size(3)
            .shuffle(true)
            .generator(g)
            .num_workers(workers);
        let loader = DataLoader::new(range(10), o).unwrap();
        let first = loader.iter().next().unwrap().unwrap()[0]
            .to_vec::<i64>()
            .unwrap();
        assert_eq!(vec![first], expected[0]);
        assert_eq!(epoch(&loader), expected[1], "{workers} workers");
    }
}

#[test]
fn without_a_generator_the_global_one_gives_pytorchs_batches() {
    let _global = global_generator();
    for seed in [0, 7] {
        for workers in [0, 2] {
            manual_seed(seed);
            let o = DataLoaderOptions::default()
                .batch_size(4)
                .shuffle(true)
                .num_workers(workers);
            let loader = DataLoader::new(range(10), o).unwrap();
            let epochs: Vec<_> = (0..2).map(|_| epoch(&loader)).collect();
            assert_eq!(epochs, pytorch_epochs(&format!("global seed={seed}")));
            let next = Tensor::rand(&[2], DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            assert_eq!(next, pytorch_rand(&format!("global seed={seed} rand")));
        }
    }
}

#[test]
fn a_sequential_loader_takes_one_seed_per_epoch_from_the_global_generator() {
    let _global = global_generator();
    manual_seed(0);
    let loader = DataLoader::new(range(5), DataLoaderOptions::default().batch_size(2)).unwrap();
    for _ in 0..2 {
        assert_eq!(epoch(&loader), [vec![0, 1], vec![2, 3], vec![4]]);
    }
    let next = Tensor::rand(&[2], DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(next, pytorch_rand("sequential rand"));
}

#[test]
fn random_split_cuts_pytorchs_permutation() {
    let parse = |s: &str| -> Vec<usize> { s.split(' ').map(|v| v.parse().unwrap()).collect() };
    let g = Generator::new().manual_seed(0);
    let parts = random_split(range(1797), &[1437, 360], Some(&g)).unwrap();
    let (a, b) = pytorch("split gen").split_once(" , ").unwrap();
    assert_eq!((parts[0].len(), parts[1].len()), (1437, 360));
    assert_eq!(
        (&parts[0].indices()[..8], &parts[1].indices()[..8]),
        (&parse(a)[..], &parse(b)[..])
    );
    let mut all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..1797).collect::<Vec<_>>());
    assert_eq!(parts[1].get(0).unwrap()[0].item::<i64>().unwrap(), 1084);

    let _global = global_generator();
    manual_seed(3);
    let parts = random_split(range(10), &[4, 6], None).unwrap();
    let (a, b) = pytorch("split global").split_once(" , ").unwrap();
    assert_eq!(
        (parts[0].indices(), parts[1].indices()),
        (&parse(a)[..], &parse(b)[..])
    );

    let err = random_split(range(10), &[3, 4], None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sum of input lengths does not equal the length of the input dataset!"
    );
}

#[test]
fn len_counts_the_batches_with_and_without_drop_last() {
    for (n, bs, drop_last, batches) in [
        (10, 3, false, 4),
        (10, 3, true, 3),
        (12, 4, false, 3),
        (12, 4, true, 3),
        (3, 4, false, 1),
        (3, 4, true, 0),
        (0, 2, false, 0),
    ] {
        let o = DataLoaderOptions::default()
            .batch_size(bs)
            .drop_last(drop_last)
            .generator(Generator::new());
        let loader = DataLoader::new(range(n), o).unwrap();
        assert_eq!((loader.len(), loader.is_empty()), (batches, batches == 0));
        let sizes: Vec<usize> = epoch(&loader).iter().map(Vec::len).collect();
        assert_eq!(sizes.len(), batches, "n={n} bs={bs} drop_last={drop_last}");
        let full = if drop_last {
            n as usize / bs * bs
        } else {
            n as usize
        };
        assert_eq!(sizes.iter().sum::<usize>(), full);
        assert!(
            sizes
                .iter()
                .take(batches.saturating_sub(1))
                .all(|&s| s == bs)
        );
    }
}

#[test]
fn bad_options_are_refused_in_pytorchs_words() {
    let err = |o: DataLoaderOptions, n: i64| DataLoader::new(range(n), o).unwrap_err().to_string();
    let d = DataLoaderOptions::default();
    assert_eq!(
        err(d.clone().batch_size(0), 3),
        "batch_size should be a positive integer value, but got batch_size=0"
    );
    assert_eq!(
        err(d.clone().shuffle(true), 0),
        "num_samples should be a positive integer value, but got num_samples=0"
    );
    assert_eq!(
        err(d.clone().prefetch_factor(2), 3),
        "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 \
         to enable multiprocessing, otherwise set prefetch_factor to None."
    );
    assert_eq!(
        err(d.num_workers(1).prefetch_factor(0), 3),
        "prefetch_factor must be greater than 0 with num_workers > 0"
    );
}

#[test]
fn tensor_dataset_rows_and_errors() {
    let x = Tensor::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[4, 3]).unwrap();
    let y = Tensor::from_vec(vec![3i64, 1, 4, 1], &[4]).unwrap();
    let data = TensorDataset::new(vec![x, y]).unwrap();
    let row = data.get(2).unwrap();
    assert_eq!(row[0].to_vec::<f32>().unwrap(), [6.0, 7.0, 8.0]);
    assert_eq!(
        (row[1].shape(), row[1].item::<i64>().unwrap()),
        (&[][..], 4)
    );
    let e = data.get(4).unwrap_err();
    assert!(matches!(
        e,
        Error::IndexOutOfBounds {
            index: 4,
            dim: 0,
            size: 4
        }
    ));
    assert_eq!(
        e.to_string(),
        "index 4 is out of bounds for dimension 0 with size 4"
    );

    let mismatch = TensorDataset::new(vec![
        Tensor::zeros(&[4, 3], DType::F32).unwrap(),
        Tensor::zeros(&[5], DType::F32).unwrap(),
    ]);
    assert_eq!(
        mismatch.unwrap_err().to_string(),
        "Size mismatch between tensors"
    );
    assert!(matches!(
        TensorDataset::new(vec![]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        TensorDataset::new(vec![Tensor::scalar(1.0f32)]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn the_default_collate_stacks_fields_as_default_collate() {
    let x = Tensor::from_vec((0..30).map(|v| v as f64).collect::<Vec<_>>(), &[5, 2, 3]).unwrap();
    let y = Tensor::from_vec(vec![0i64, 1, 2, 3, 4], &[5]).unwrap();
    let o = DataLoaderOptions::default()
        .batch_size(2)
        .generator(Generator::new());
    let loader = DataLoader::new(TensorDataset::new(vec![x, y]).unwrap(), o).unwrap();
    let batches: Vec<Vec<Tensor>> = loader.iter().collect::<Result<_>>().unwrap();
    let shapes: Vec<_> = batches
        .iter()
        .map(|b| (b[0].shape().to_vec(), b[1].shape().to_vec()))
        .collect();
    assert_eq!(
        shapes,
        [
            (vec![2, 2, 3], vec![2]),
            (vec![2, 2, 3], vec![2]),
            (vec![1, 2, 3], vec![1])
        ]
    );
    assert_eq!(
        (batches[0][0].dtype(), batches[0][1].dtype()),
        (DType::F64, DType::I64)
    );
    assert_eq!(
        batches[1][0].to_vec::<f64>().unwrap(),
        (12..24).map(f64::from).collect::<Vec<_>>()
    );
    assert_eq!(batches[2][1].to_vec::<i64>().unwrap(), [4]);

    // Numbers and tuples: Python ints are int64, floats float64 (`default_collate`).
    let (a, b, c) = Collate::collate(vec![(1i64, 0.5f64, true), (2, 1.5, false)]).unwrap();
    assert_eq!(
        (a.dtype(), a.to_vec::<i64>().unwrap()),
        (DType::I64, vec![1, 2])
    );
    assert_eq!(
        (b.dtype(), b.to_vec::<f64>().unwrap()),
        (DType::F64, vec![0.5, 1.5])
    );
    assert_eq!(
        (c.dtype(), c.to_vec::<bool>().unwrap()),
        (DType::Bool, vec![true, false])
    );
    let f = <f32 as Collate>::collate(vec![1.0, 2.0]).unwrap();
    assert_eq!((f.dtype(), f.shape()), (DType::F32, &[2][..]));

    let ragged = Collate::collate(vec![vec![1i64, 2], vec![3]]).unwrap_err();
    assert_eq!(
        ragged.to_string(),
        "each element in list of batch should be of equal size"
    );
    let shapes = Collate::collate(vec![
        Tensor::zeros(&[2], DType::F32).unwrap(),
        Tensor::zeros(&[3], DType::F32).unwrap(),
    ]);
    assert!(shapes.is_err());
}

/// `0..n` as plain numbers, which fails at `fail_at` and panics at `panic_at`, counting reads.
struct Numbers {
    n: usize,
    fail_at: Option<usize>,
    panic_at: Option<usize>,
    reads: Arc<AtomicUsize>,
}

impl Numbers {
    fn new(n: usize) -> Numbers {
        Numbers {
            n,
            fail_at: None,
            panic_at: None,
            reads: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Dataset for Numbers {
    type Item = i64;
    fn len(&self) -> usize {
        self.n
    }
    fn get(&self, index: usize) -> Result<i64> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if Some(index) == self.fail_at {
            return Err(Error::msg(format!("cannot read sample {index}")));
        }
        if Some(index) == self.panic_at {
            panic!("sample {index} is broken");
        }
        Ok(index as i64)
    }
}

/// The options of the worker tests: a seeded shuffle, `workers` threads.
fn shuffled(bs: usize, workers: usize) -> DataLoaderOptions {
    DataLoaderOptions::default()
        .batch_size(bs)
        .shuffle(true)
        .generator(Generator::new().manual_seed(5))
        .num_workers(workers)
}

#[test]
fn workers_give_the_batches_made_on_the_callers_thread() {
    let x = Tensor::randn_seeded(&[50, 3], DType::F32, 1).unwrap();
    let data = TensorDataset::new(vec![x, Tensor::arange(0, 50, 1).unwrap()]).unwrap();
    let batches = |workers: usize, prefetch: Option<usize>| -> Vec<(Vec<f32>, Vec<i64>)> {
        let mut o = shuffled(7, workers);
        o.prefetch_factor = prefetch;
        let loader = DataLoader::new(data.clone(), o).unwrap();
        (0..2)
            .flat_map(|_| loader.iter().collect::<Vec<_>>())
            .map(|b| {
                let b = b.unwrap();
                (b[0].to_vec().unwrap(), b[1].to_vec().unwrap())
            })
            .collect()
    };
    let inline = batches(0, None);
    assert_eq!(inline.len(), 16);
    for (workers, prefetch) in [
        (1, None),
        (1, Some(1)),
        (2, Some(3)),
        (4, None),
        (8, Some(1)),
    ] {
        assert_eq!(
            batches(workers, prefetch),
            inline,
            "{workers} workers, prefetch {prefetch:?}"
        );
    }
}

/// Runs `f` on another thread and fails the test if it takes more than 30 seconds (a hang).
fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(Duration::from_secs(30))
        .expect("hung for 30 s")
}

#[test]
fn dropping_an_iterator_early_stops_and_joins_its_workers() {
    within_30s(|| {
        let data = Numbers::new(100_000);
        let reads = Arc::clone(&data.reads);
        let o = shuffled(10, 3).prefetch_factor(2);
        let loader = DataLoader::new(data, o).unwrap();
        let mut it = loader.iter();
        assert_eq!(it.next().unwrap().unwrap().shape(), &[10]);
        drop(it);
        // Joined: nothing reads after the drop, and at most the 3 · 2 batches in flight plus
        // the one sent after the first was received were read (the rest were skipped).
        let after_drop = reads.load(Ordering::Relaxed);
        assert!(after_drop <= 7 * 10, "{after_drop} samples read");
        // The loader still works: a new epoch, read to the end.
        assert_eq!(loader.iter().count(), 10_000);
        assert_eq!(reads.load(Ordering::Relaxed), after_drop + 100_000);
    });
}

#[test]
fn a_dataset_error_is_that_batchs_item_and_the_epoch_goes_on() {
    for workers in [0, 2] {
        let mut data = Numbers::new(10);
        data.fail_at = Some(4);
        let o = DataLoaderOptions::default()
            .batch_size(3)
            .generator(Generator::new())
            .num_workers(workers);
        let loader = Arc::new(DataLoader::new(data, o).unwrap());
        let items: Vec<Result<Tensor>> = within_30s({
            let loader = Arc::clone(&loader);
            move || loader.iter().collect()
        });
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[1].as_ref().unwrap_err().to_string(),
            "cannot read sample 4"
        );
        for i in [0, 2, 3] {
            let batch = items[i].as_ref().unwrap().to_vec::<i64>().unwrap();
            assert_eq!(batch[0], 3 * i as i64, "{workers} workers");
        }
        // `?` in a training loop stops at the error.
        let run = || -> Result<usize> {
            let mut seen = 0;
            for batch in &*loader {
                batch?;
                seen += 1;
            }
            Ok(seen)
        };
        assert!(run().is_err());
    }
}

#[test]
fn a_panic_in_the_data_set_or_the_collate_fn_becomes_an_error() {
    for workers in [0, 1, 3] {
        let mut data = Numbers::new(10);
        data.panic_at = Some(7);
        let o = DataLoaderOptions::default()
            .batch_size(2)
            .generator(Generator::new())
            .num_workers(workers);
        let collate = |items: Vec<i64>| -> Result<i64> {
            assert!(items[0] != 0, "collate refuses batch 0");
            Ok(items.iter().sum())
        };
        let items: Vec<Result<i64>> = within_30s(move || {
            let loader = DataLoader::with_collate(data, o, collate).unwrap();
            loader.iter().collect()
        });
        let worker = |batch: usize| match workers {
            0 => String::new(),
            k => format!(" worker thread {}", batch % k),
        };
        assert_eq!(items.len(), 5);
        assert_eq!(
            items[0].as_ref().unwrap_err().to_string(),
            format!(
                "Caught panic in DataLoader{}: collate refuses batch 0",
                worker(0)
            )
        );
        assert!(matches!(items[3], Err(Error::DataLoaderPanic { .. })));
        assert_eq!(
            items[3].as_ref().unwrap_err().to_string(),
            format!(
                "Caught panic in DataLoader{}: sample 7 is broken",
                worker(3)
            )
        );
        let fine: Vec<i64> = [1, 2, 4]
            .iter()
            .map(|&i| *items[i].as_ref().unwrap())
            .collect();
        assert_eq!(fine, [5, 9, 17], "{workers} workers");
    }
}

#[test]
fn a_custom_collate_fn_shapes_the_batch() {
    // Pads nothing, stacks images and keeps the labels as a Vec: what a user writes when
    // `default_collate` is not the shape they want.
    let data = TensorDataset::new(vec![
        Tensor::ones(&[6, 4], DType::F32).unwrap(),
        Tensor::arange(0, 6, 1).unwrap(),
    ])
    .unwrap();
    let collate = |samples: Vec<Vec<Tensor>>| -> Result<(Tensor, Vec<i64>)> {
        let x: Vec<Tensor> = samples.iter().map(|s| s[0].clone()).collect();
        let y = samples
            .iter()
            .map(|s| s[1].item::<i64>())
            .collect::<Result<_>>()?;
        Ok((Tensor::stack(&x, 1)?, y))
    };
    for workers in [0, 2] {
        let o = shuffled(4, workers);
        let loader = DataLoader::with_collate(data.clone(), o, collate).unwrap();
        let batches: Vec<(Tensor, Vec<i64>)> = loader.iter().collect::<Result<_>>().unwrap();
        assert_eq!(
            (batches[0].0.shape(), batches[1].0.shape()),
            (&[4, 4][..], &[4, 2][..])
        );
        let mut labels: Vec<i64> = batches.iter().flat_map(|b| b.1.clone()).collect();
        assert_ne!(labels, (0..6).collect::<Vec<_>>(), "shuffled");
        labels.sort_unstable();
        assert_eq!(labels, (0..6).collect::<Vec<_>>());
    }
}

/// `0..n`, reporting each index read on a channel.
struct Reporting {
    n: usize,
    reads: std::sync::Mutex<mpsc::Sender<usize>>,
}

impl Dataset for Reporting {
    type Item = i64;
    fn len(&self) -> usize {
        self.n
    }
    fn get(&self, index: usize) -> Result<i64> {
        let _ = self.reads.lock().unwrap().send(index);
        Ok(index as i64)
    }
}

#[test]
fn a_worker_makes_the_next_batch_while_the_caller_holds_this_one() {
    within_30s(|| {
        let (tx, rx) = mpsc::channel();
        let data = Reporting {
            n: 8,
            reads: std::sync::Mutex::new(tx),
        };
        let o = DataLoaderOptions::default()
            .batch_size(2)
            .generator(Generator::new())
            .num_workers(1);
        let loader = DataLoader::new(data, o).unwrap();
        let mut it = loader.iter();
        let first = it.next().unwrap().unwrap();
        assert_eq!(first.to_vec::<i64>().unwrap(), [0, 1]);
        // No `next()` call: the worker reads the samples of batches 1 and 2 on its own (2 in
        // flight, and one more sent when batch 0 was received).
        let read: Vec<usize> = (0..6).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(read, [0, 1, 2, 3, 4, 5]);
        assert_eq!(it.next().unwrap().unwrap().to_vec::<i64>().unwrap(), [2, 3]);
    });
}
