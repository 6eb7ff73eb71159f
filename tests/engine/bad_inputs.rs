//! Hostile arguments across the public API: every case must return an `autograd::Error` (with
//! PyTorch's text where it has one) or a documented result. A panic from library code, an abort,
//! a hang (a watchdog bounds the sweep) or a wrong value fails the test. The number of cases is
//! printed (`cargo test --test engine bad_inputs -- --nocapture`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use autograd::*;

/// What the sweep saw.
#[derive(Default)]
struct Sweep {
    cases: usize,
    errors: usize,
    failures: Vec<String>,
}

impl Sweep {
    /// Runs `f`; `check` judges its outcome (`Err` text or `Ok` value). A panic fails the case.
    fn case<T>(
        &mut self,
        name: impl Into<String>,
        f: impl FnOnce() -> Result<T>,
        check: impl FnOnce(&Result<T>) -> bool,
    ) {
        let name = name.into();
        self.cases += 1;
        match catch_unwind(AssertUnwindSafe(|| {
            let r = f();
            let ok = check(&r);
            (r.is_err(), ok, r.err().map(|e| e.to_string()))
        })) {
            Ok((is_err, true, _)) => self.errors += usize::from(is_err),
            Ok((_, false, err)) => self.failures.push(format!("{name}: wrong outcome {err:?}")),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                self.failures.push(format!("{name}: panicked: {msg:?}"));
            }
        }
    }

    /// `f` must fail with an error whose text contains `text`.
    fn err<T>(&mut self, name: impl Into<String>, text: &str, f: impl FnOnce() -> Result<T>) {
        self.case(
            name,
            f,
            |r| matches!(r, Err(e) if e.to_string().contains(text)),
        );
    }
}

fn f64s(shape: &[usize], values: &[f64]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| values[i % values.len()]).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// Values that break naive kernels: NaN, infinities, signed zeros, subnormals, extremes.
const HOSTILE: [f64; 10] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    5e-324,
    -1.0,
    1e308,
    -1e-300,
    0.5,
];

const SHAPES: [&[usize]; 8] = [&[], &[0], &[1], &[3], &[0, 3], &[2, 0], &[1, 1, 1], &[2, 3]];

type Binary = (&'static str, fn(&Tensor, &Tensor) -> Result<Tensor>);

type Op1 = (&'static str, fn(&Tensor) -> Result<Tensor>);

type Unary = (&'static str, fn(&Tensor) -> Result<Tensor>, fn(f64) -> f64);

fn unary_ops() -> Vec<Unary> {
    vec![
        ("neg", |t| t.neg(), |x| -x),
        ("exp", |t| t.exp(), f64::exp),
        ("log", |t| t.log(), f64::ln),
        ("sin", |t| t.sin(), f64::sin),
        ("cos", |t| t.cos(), f64::cos),
        ("tanh", |t| t.tanh(), f64::tanh),
        ("sigmoid", |t| t.sigmoid(), |x| 1.0 / (1.0 + (-x).exp())),
        (
            "relu",
            |t| t.relu(),
            |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
        ),
        ("sqrt", |t| t.sqrt(), f64::sqrt),
        ("abs", |t| t.abs(), f64::abs),
        ("pow 2", |t| t.pow(2.0), |x| x * x),
        ("pow -1", |t| t.pow(-1.0), |x| x.powf(-1.0)),
        // PyTorch computes `pow(x, 0.5)` as `sqrt(x)`: NaN at -inf, -0 at -0.
        ("pow 0.5", |t| t.pow(0.5), f64::sqrt),
        (
            "mul inf",
            |t| t.mul_scalar(f64::INFINITY),
            |x| x * f64::INFINITY,
        ),
        ("add nan", |t| t.add_scalar(f64::NAN), |x| x + f64::NAN),
        ("rdiv 1", |t| t.rdiv_scalar(1.0), |x| 1.0 / x),
        ("log1p", |t| t.log1p(), f64::ln_1p),
        ("expm1", |t| t.expm1(), f64::exp_m1),
        ("log2", |t| t.log2(), f64::log2),
        ("exp2", |t| t.exp2(), f64::exp2),
        ("rsqrt", |t| t.rsqrt(), |x| 1.0 / x.sqrt()),
        (
            "softplus",
            |t| t.softplus(1.0, 20.0),
            |x| if x > 20.0 { x } else { x.exp().ln_1p() },
        ),
        ("silu", |t| t.silu(), |x| x / (1.0 + (-x).exp())),
        ("mish", |t| t.mish(), |x| x * x.exp().ln_1p().tanh()),
        (
            "hardtanh",
            |t| t.hardtanh(-1.0, 1.0),
            |x| {
                if x.is_nan() { x } else { x.clamp(-1.0, 1.0) }
            },
        ),
        ("floor", |t| t.floor(), f64::floor),
        ("ceil", |t| t.ceil(), f64::ceil),
        ("round", |t| t.round(), f64::round_ties_even),
        ("trunc", |t| t.trunc(), f64::trunc),
        ("fmod 2", |t| t.fmod_scalar(2.0), |x| x % 2.0),
        (
            "remainder -2",
            |t| t.remainder_scalar(-2.0),
            |x| {
                let m = x % -2.0;
                if m > 0.0 { m - 2.0 } else { m }
            },
        ),
    ]
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// Element-wise ops on every hostile shape and value, with and without autograd, in f64 and
/// f32: the values must be the scalar function's (NaN where it is NaN), the backward must run.
fn elementwise(s: &mut Sweep) {
    for shape in SHAPES {
        for (name, op, reference) in unary_ops() {
            let x = f64s(shape, &HOSTILE);
            let expected: Vec<f64> = x
                .to_vec::<f64>()
                .unwrap()
                .into_iter()
                .map(reference)
                .collect();
            s.case(
                format!("{name} {shape:?}"),
                || op(&x)?.to_vec::<f64>(),
                |r| {
                    matches!(r, Ok(v) if v.len() == expected.len()
                    && v.iter().zip(&expected).all(|(a, b)| same(*a, *b)))
                },
            );
            s.case(
                format!("{name} {shape:?} on virtual:0"),
                || op(&x.to(Device::Virtual(0))?)?.to_vec::<f64>(),
                |r| {
                    matches!(r, Ok(v) if v.len() == expected.len()
                    && v.iter().zip(&expected).all(|(a, b)| same(*a, *b)))
                },
            );
            s.case(
                format!("{name} {shape:?} f32"),
                || op(&x.to_dtype(DType::F32)?)?.to_vec::<f32>(),
                |r| matches!(r, Ok(v) if v.len() == expected.len()),
            );
            s.case(
                format!("{name} {shape:?} backward"),
                || {
                    let leaf = x.detach().requires_grad_(true)?;
                    op(&leaf)?.sum()?.backward()?;
                    Ok(leaf.grad().map(|g| g.shape().to_vec()))
                },
                |r| matches!(r, Ok(Some(g)) if g == shape),
            );
        }
    }
}

/// Every pair of shapes through the binary ops: PyTorch's broadcast result or its error text.
fn broadcasting(s: &mut Sweep) {
    let ops: [Binary; 9] = [
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("fmod", |a, b| a.fmod(b)),
        ("remainder", |a, b| a.remainder(b)),
        ("atan2", |a, b| a.atan2(b)),
    ];
    for a_shape in SHAPES {
        for b_shape in SHAPES {
            let expected = broadcast(a_shape, b_shape);
            for (name, op) in ops {
                let (a, b) = (f64s(a_shape, &HOSTILE), f64s(b_shape, &[2.0, -3.0]));
                let label = format!("{name} {a_shape:?} {b_shape:?}");
                match &expected {
                    Some(shape) => s.case(
                        label,
                        || op(&a, &b),
                        |r| matches!(r, Ok(t) if t.shape() == shape.as_slice()),
                    ),
                    None => s.err(label, "must match the size of tensor b", || op(&a, &b)),
                }
            }
        }
    }
    let a = f64s(&[2], &[1.0]);
    // Mixed dtypes promote as PyTorch's result_type (f32 + f64 is f64).
    s.case(
        "add f64 + f32",
        || a.add(&a.to_dtype(DType::F32)?),
        |r| matches!(r, Ok(t) if t.dtype() == DType::F64),
    );
    s.err(
        "add cpu + virtual",
        "expected all tensors to be on the same device",
        || a.add(&a.to(Device::Virtual(0))?),
    );
    s.err("add_ f32 into f64", "same dtype", || {
        a.add_(&a.to_dtype(DType::F32)?).map(|_| ())
    });
    s.err("add_ bigger source", "must match", || {
        a.add_(&f64s(&[3, 2], &[1.0])).map(|_| ())
    });
    s.err(
        "mul_ of an expanded view",
        "more than one element of the written-to tensor",
        || {
            f64s(&[1], &[1.0])
                .expand(&[3])?
                .mul_(&f64s(&[3], &[2.0]))
                .map(|_| ())
        },
    );
}

/// The broadcast shape of `a` and `b`, as PyTorch computes it.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (da, db) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// Dims, indices and sizes out of range, negative (wrapped) or huge, and shape products that
/// overflow `usize`.
fn shapes_and_dims(s: &mut Sweep) {
    let m = f64s(&[2, 3], &[1.0, 2.0, 3.0]);
    let scalar = Tensor::scalar(4.0f64);
    let empty = f64s(&[0, 3], &[0.0]);
    let huge = [usize::MAX, 1 << 62, 1 << 40, 7];
    for dim in [2, 3, 64, usize::MAX - 5] {
        let text = "Dimension out of range";
        s.err(format!("transpose dim {dim}"), text, || m.transpose(0, dim));
        s.err(format!("narrow dim {dim}"), text, || m.narrow(dim, 0, 1));
        s.err(format!("index_select dim {dim}"), text, || {
            m.index_select(dim, &[0])
        });
        s.err(format!("sum_dims dim {dim}"), text, || {
            m.sum_dims(&[dim], false)
        });
        s.err(format!("softmax dim {dim}"), text, || m.softmax(dim));
        s.err(format!("log_softmax dim {dim}"), text, || {
            m.log_softmax(dim)
        });
        s.err(format!("max_dim dim {dim}"), text, || {
            Ok(m.max_dim(dim, true)?.0)
        });
        s.err(format!("cat dim {dim}"), text, || {
            Tensor::cat(&[m.clone(), m.clone()], dim)
        });
        s.err(format!("stack dim {dim}"), text, || {
            Tensor::stack(&[m.clone()], dim + 1)
        });
        s.err(format!("chunk dim {dim}"), text, || m.chunk(2, dim));
    }
    // usize::MAX is dim -1, as PyTorch's negative dims.
    s.case(
        "transpose(0, -1)",
        || m.transpose(0, usize::MAX),
        |r| matches!(r, Ok(t) if t.shape() == [3, 2]),
    );
    for &n in &huge {
        for (label, shape) in [("huge", vec![n, 2]), ("huge x huge", vec![n, n])] {
            let text_ok = |r: &Result<Tensor>| match r {
                Err(e) => {
                    let t = e.to_string();
                    t.contains("overflowed") || t.contains("can't allocate memory")
                }
                Ok(t) => t.numel() == shape.iter().product::<usize>(),
            };
            s.case(
                format!("zeros {label} {n}"),
                || Tensor::zeros(&shape, DType::F64),
                text_ok,
            );
            s.case(
                format!("randn {label} {n}"),
                || Tensor::randn_seeded(&shape, DType::F32, 0),
                text_ok,
            );
            s.case(
                format!("from_vec {label} {n}"),
                || Tensor::from_vec(vec![1.0f64], &shape),
                |r| r.is_err(),
            );
            s.case(
                format!("reshape {label} {n}"),
                || m.reshape(&shape),
                |r| r.is_err(),
            );
            s.case(
                format!("expand {label} {n}"),
                || scalar.expand(&shape),
                |r| match r {
                    Ok(t) => t.numel() == shape.iter().product::<usize>(),
                    Err(e) => e.to_string().contains("overflowed"),
                },
            );
            s.case(
                format!("expand then contiguous {label} {n}"),
                || scalar.expand(&shape)?.contiguous(),
                |r| match r {
                    Ok(t) => t.numel() == shape.iter().product::<usize>(),
                    Err(e) => {
                        let t = e.to_string();
                        t.contains("overflowed") || t.contains("can't allocate memory")
                    }
                },
            );
        }
        s.err(
            format!("narrow start {n}"),
            "exceeds dimension size",
            || m.narrow(1, n, 2),
        );
        s.err(format!("narrow len {n}"), "exceeds dimension size", || {
            m.narrow(1, 1, n)
        });
        s.err(format!("index_select index {n}"), "out of bounds", || {
            m.index_select(0, &[0, n])
        });
        s.err(format!("split size {n}"), "do not add up", || {
            m.split(&[n, 1], 1)
        });
    }
    s.err(
        "broadcast huge outer product",
        "can't allocate memory",
        || {
            let col = Tensor::zeros(&[1], DType::F32)?.expand(&[1 << 31, 1])?;
            col.add(&col.transpose(0, 1)?)
        },
    );
    s.err("matmul huge outer product", "can't allocate memory", || {
        let col = Tensor::zeros(&[1, 1], DType::F64)?.expand(&[1 << 31, 1])?;
        col.matmul(&col.transpose(0, 1)?)
    });
    s.err(
        "reshape wrong size",
        "is invalid for input of size 6",
        || m.reshape(&[4]),
    );
    s.err(
        "from_vec wrong size",
        "is invalid for input of size 2",
        || Tensor::from_vec(vec![1.0f64, 2.0], &[3]),
    );
    s.err("permute short", "is not a permutation", || m.permute(&[0]));
    s.err("permute repeated", "is not a permutation", || {
        m.permute(&[1, 1])
    });
    s.err("expand to fewer dims", "must be greater or equal", || {
        m.broadcast_to(&[3])
    });
    s.err("expand a non-1 dim", "must match", || m.expand(&[4, 3]));
    s.err("sum_dims repeated", "appears multiple times", || {
        m.sum_dims(&[1, 1], false)
    });
    s.err("sum_to_shape unrelated", "is not expandable", || {
        m.sum_to_shape(&[4])
    });
    s.err("cat nothing", "non-empty list", || Tensor::cat(&[], 0));
    s.err("stack nothing", "non-empty list", || Tensor::stack(&[], 0));
    s.err(
        "cat a scalar",
        "zero-dimensional tensor (at position 1) cannot be",
        || Tensor::cat(&[m.clone(), scalar.clone()], 0),
    );
    s.err(
        "cat ranks",
        "Tensors must have same number of dimensions: got 2 and 1",
        || Tensor::cat(&[m.clone(), f64s(&[3], &[1.0])], 0),
    );
    s.err(
        "cat sizes",
        "Expected size 3 but got size 2 for tensor number 1",
        || Tensor::cat(&[m.clone(), f64s(&[2, 2], &[1.0])], 0),
    );
    s.err("chunk 0", "greater than 0", || m.chunk(0, 0));
    s.err("max over an empty dim", "to have non-zero size", || {
        Ok(empty.max_dim(0, false)?.0)
    });
    s.err("matmul 0-D", "at least 1D, but they are 2D and 0D", || {
        m.matmul(&scalar)
    });
    s.err(
        "matmul vector",
        "size mismatch, got input (2), mat (2x3), vec (2)",
        || m.matmul(&f64s(&[2], &[1.0])),
    );
    s.err("matmul dot", "expected tensor [3] and src [2]", || {
        f64s(&[3], &[1.0]).matmul(&f64s(&[2], &[1.0]))
    });
    s.err("matmul inner", "cannot be multiplied", || m.matmul(&m));
    s.err(
        "matmul batch",
        "The size of tensor a (2) must match the size of tensor b (3)",
        || f64s(&[2, 2, 3], &[1.0]).matmul(&f64s(&[3, 3, 4], &[1.0])),
    );
    s.err("item of many", "cannot be converted to Scalar", || {
        m.item::<f64>()
    });
    s.err("item of none", "cannot be converted to Scalar", || {
        empty.item::<f64>()
    });
    s.err("item wrong dtype", "expected a tensor of dtype f32", || {
        scalar.item::<f32>()
    });
    s.err(
        "to_vec wrong dtype",
        "expected a tensor of dtype f32",
        || m.to_vec::<f32>(),
    );
    s.err("virtual device 64", "device indices go up to 63", || {
        m.to(Device::Virtual(64))
    });
    s.err("virtual device huge", "not available", || {
        m.to(Device::Virtual(usize::MAX))
    });
    s.err("cuda device huge", "not available", || {
        m.to(Device::Cuda(usize::MAX))
    });
    s.err("set_num_threads(0)", "at least 1", || set_num_threads(0));
    // Documented results on empty and 0-dim tensors (PyTorch's).
    s.case(
        "mean of nothing is NaN",
        || empty.mean()?.item::<f64>(),
        |r| matches!(r, Ok(v) if v.is_nan()),
    );
    s.case(
        "sum of nothing is 0",
        || empty.sum()?.item::<f64>(),
        |r| matches!(r, Ok(v) if *v == 0.0),
    );
    s.case(
        "softmax of nothing",
        || empty.softmax(1),
        |r| matches!(r, Ok(t) if t.shape() == [0, 3]),
    );
    s.case(
        "softmax of a scalar",
        || scalar.softmax(0)?.item::<f64>(),
        |r| matches!(r, Ok(v) if *v == 1.0),
    );
    s.case(
        "max of a scalar",
        || {
            let x = scalar.detach().requires_grad_(true)?;
            let (v, i) = x.max_dim(0, false)?;
            v.backward()?;
            Ok((
                v.item::<f64>()?,
                i.to_vec::<i64>()?,
                x.grad().unwrap().item::<f64>()?,
            ))
        },
        |r| matches!(r, Ok((v, i, g)) if *v == 4.0 && i == &[0] && *g == 1.0),
    );
    s.case(
        "empty matmul is zeros",
        || empty.matmul(&f64s(&[3, 0], &[0.0])),
        |r| matches!(r, Ok(t) if t.shape() == [0, 0]),
    );
    s.case(
        "inner dimension 0 gives zeros",
        || {
            f64s(&[2, 0], &[0.0])
                .matmul(&f64s(&[0, 2], &[0.0]))?
                .to_vec::<f64>()
        },
        |r| matches!(r, Ok(v) if v == &[0.0; 4]),
    );
    s.case(
        "index_select nothing",
        || m.index_select(0, &[]),
        |r| matches!(r, Ok(t) if t.shape() == [0, 3]),
    );
}

/// A node whose backward fails or panics.
struct Faulty {
    panic: bool,
}

impl graph::Backward for Faulty {
    const NAME: &'static str = "FaultyBackward";
    fn backward(&self, _: &graph::NodeMeta, _: graph::GradVec) -> Result<graph::GradVec> {
        if self.panic {
            panic!("faulty backward");
        }
        Err(Error::msg("faulty backward failed"))
    }
}

/// Wrong gradients for `backward`/`grad`, hooks that misbehave, backwards that fail, and the
/// engine re-entered from a hook.
fn engine(s: &mut Sweep) {
    let fresh = || -> Result<(Tensor, Tensor)> {
        let x = f64s(&[2, 3], &[1.0, -2.0]).requires_grad_(true)?;
        let y = x.mul_scalar(2.0)?;
        Ok((x, y))
    };
    let with_grad = |g: Result<Tensor>| -> Result<()> {
        let (_, y) = fresh()?;
        y.backward_with(BackwardOptions::new().gradient(g?))
    };
    s.err(
        "backward gradient shape",
        "Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2, 3].",
        || with_grad(Tensor::zeros(&[3], DType::F64)),
    );
    // Another floating dtype is cast to the root's (PyTorch's validate_outputs).
    s.case(
        "backward gradient dtype",
        || {
            let (x, y) = fresh()?;
            y.backward_with(BackwardOptions::new().gradient(Tensor::ones(&[2, 3], DType::F32)?))?;
            x.grad().expect("grad").to_vec::<f64>()
        },
        |r| matches!(r, Ok(g) if g == &[2.0; 6]),
    );
    s.err(
        "backward gradient device",
        "invalid gradient at index 0 - expected device cpu but got virtual:0",
        || with_grad(Tensor::zeros(&[2, 3], DType::F64)?.to(Device::Virtual(0))),
    );
    s.err(
        "backward of a non-scalar",
        "grad can be implicitly created only for scalar outputs",
        || fresh()?.1.backward(),
    );
    s.err(
        "backward of a constant",
        "does not require grad and does not have a grad_fn",
        || Tensor::scalar(1.0f64).backward(),
    );
    s.err(
        "grad without inputs",
        "`inputs` argument to `grad()` cannot be empty.",
        || {
            let (_, y) = fresh()?;
            grad(&[y.sum()?], &[], GradOptions::new())
        },
    );
    s.err(
        "grad count mismatch",
        "got 1 tensors and 2 gradients",
        || {
            let (x, y) = fresh()?;
            grad(
                &[y],
                &[x],
                GradOptions::new().grad_outputs(vec![None, None]),
            )
        },
    );
    s.err(
        "grad of an unused input",
        "appears to not have been used in the graph",
        || {
            let (_, y) = fresh()?;
            let other = Tensor::scalar(1.0f64).requires_grad_(true)?;
            grad(&[y.sum()?], &[other], GradOptions::new())
        },
    );
    s.err(
        "backward twice",
        "Trying to backward through the graph a second time",
        || {
            let (x, _) = fresh()?;
            let y = x.exp()?.sum()?;
            y.backward()?;
            y.backward()
        },
    );
    s.err(
        "hook returns a wrong shape",
        "hook: hook has changed the size of value (was [2, 3] got [5])",
        || {
            let (_, y) = fresh()?;
            let y = y.exp()?;
            y.register_hook(|_| Some(Tensor::zeros(&[5], DType::F64).unwrap()))?;
            y.sum()?.backward()
        },
    );
    s.err(
        "leaf hook returns a wrong shape",
        "hook has changed the size of value (was [2, 3] got [])",
        || {
            let (x, y) = fresh()?;
            x.register_hook(|_| Some(Tensor::scalar(0.0f64)))?;
            y.sum()?.backward()
        },
    );
    s.err("hook panics", "panic during backward", || {
        let (_, y) = fresh()?;
        y.register_hook(|_| panic!("hook exploded"))?;
        y.sum()?.backward()
    });
    s.err(
        "hook changes the dtype",
        "hook has changed the type of value (was f64 got f32)",
        || {
            let (_, y) = fresh()?;
            y.register_hook(|g| Some(g.to_dtype(DType::F32).unwrap()))?;
            y.sum()?.backward()
        },
    );
    s.err(
        "post-accumulate hook on a non-leaf",
        "post accumulate grad hooks cannot be registered on non-leaf tensors",
        || {
            let (_, y) = fresh()?;
            y.register_post_accumulate_grad_hook(|_| {}).map(|_| ())
        },
    );
    for panic in [false, true] {
        let text = if panic {
            "panic during backward in FaultyBackward: faulty backward"
        } else {
            "faulty backward failed"
        };
        s.err(
            format!("custom backward fails (panic: {panic})"),
            text,
            || {
                let (x, _) = fresh()?;
                let y = {
                    let _off = no_grad();
                    x.copy()?
                };
                let edges = __private::next_edges(&[&x]).expect("x requires grad");
                __private::record_node(edges, &[&y], |_| Faulty { panic });
                y.sum()?.backward()
            },
        );
    }
    // The engine is still usable after every failure above.
    s.case(
        "engine usable afterwards",
        || {
            let (x, y) = fresh()?;
            y.sum()?.backward()?;
            x.grad().unwrap().to_vec::<f64>()
        },
        |r| matches!(r, Ok(v) if v == &[2.0; 6]),
    );
    // Re-entering the engine from a hook: a nested backward runs to completion (with grad mode
    // on, as a hook that wants a graph must ask for it), and the outer pass finishes.
    s.case(
        "backward from inside a hook",
        || {
            let (x, y) = fresh()?;
            let inner = Tensor::scalar(3.0f64).requires_grad_(true)?;
            let seen = inner.clone();
            y.register_hook(move |g| {
                let _on = enable_grad();
                seen.mul(&seen).unwrap().backward().unwrap();
                Some(g.clone())
            })?;
            y.sum()?.backward()?;
            Ok((
                x.grad().unwrap().to_vec::<f64>()?,
                inner.grad().unwrap().item::<f64>()?,
            ))
        },
        |r| matches!(r, Ok((g, i)) if g == &[2.0; 6] && *i == 6.0),
    );
    s.err(
        "leaf modified in place",
        "a leaf Variable that requires grad is being used in an in-place operation.",
        || {
            let (x, _) = fresh()?;
            x.add_(&Tensor::scalar(1.0f64)).map(|_| ())
        },
    );
    s.err(
        "requires_grad on a non-leaf",
        "you can only change requires_grad flags of leaf variables",
        || fresh()?.1.requires_grad_(false).map(|_| ()),
    );
    s.err(
        "saved tensor modified",
        "modified by an inplace operation",
        || {
            let (x, _) = fresh()?;
            let h = x.mul_scalar(1.0)?;
            let y = h.sin()?; // saves its input `h`
            h.add_(&Tensor::scalar(1.0f64))?;
            y.sum()?.backward()
        },
    );
}

/// Issue 35's shape ops and reductions: dims far out of range, sizes whose products overflow,
/// extreme shifts and diagonals, p and correction that are not numbers.
fn issue_35_ops(s: &mut Sweep) {
    let m = f64s(&[2, 3], &[1.0, 2.0, 3.0]);
    let a3 = f64s(&[2, 2, 2], &[1.0]);
    let range = "Dimension out of range";
    for dim in [2isize, 3, 64, isize::MAX, isize::MIN, -3] {
        s.err(format!("unsqueeze {dim}"), range, || {
            m.unsqueeze(dim.max(3))
        });
        s.err(format!("squeeze_dim {dim}"), range, || m.squeeze_dim(dim));
        s.err(format!("squeeze_dims {dim}"), range, || {
            m.squeeze_dims(&[0, dim])
        });
        s.err(format!("flatten {dim}"), range, || m.flatten(0, dim));
        s.err(format!("unflatten {dim}"), range, || {
            m.unflatten(dim, &[1, -1])
        });
        s.err(format!("flip {dim}"), range, || m.flip(&[dim]));
        s.err(format!("roll {dim}"), range, || m.roll(&[1], &[dim]));
        s.err(format!("mean_dims {dim}"), range, || {
            m.mean_dims(&[dim], false)
        });
        s.err(format!("var_dims {dim}"), range, || {
            m.var_dims(&[dim], 1.0, false)
        });
        s.err(format!("std_dims {dim}"), range, || {
            m.std_dims(&[dim], 1.0, false)
        });
        s.err(format!("prod_dim {dim}"), range, || m.prod_dim(dim, false));
        s.err(format!("cumsum {dim}"), range, || m.cumsum(dim));
        s.err(format!("logsumexp {dim}"), range, || {
            m.logsumexp(&[dim], false)
        });
        s.err(format!("norm_dims {dim}"), range, || {
            m.norm_dims(2.0, &[dim], false)
        });
        s.err(format!("amax {dim}"), range, || m.amax(&[dim], false));
        s.err(format!("amin {dim}"), range, || m.amin(&[dim], false));
    }
    let big = isize::MAX;
    s.err("view overflowing", "is invalid for input of size 6", || {
        m.view(&[big, big, -1])
    });
    s.err("view two -1", "only one dimension can be inferred", || {
        m.view(&[-1, -1])
    });
    s.err("reshape_infer negative", "invalid shape dimension", || {
        m.reshape_infer(&[isize::MIN, 1])
    });
    s.err("unflatten overflowing", "don't multiply up", || {
        m.unflatten(1, &[big, big])
    });
    s.err("repeat overflowing", "usize::MAX", || {
        m.repeat(&[usize::MAX, usize::MAX, 2])
    });
    s.err("repeat too large", "", || m.repeat(&[1 << 40, 1 << 20, 1]));
    s.err("t of 3-D", "t() expects", || a3.t());
    s.err("bmm of 2-D", "batch1 must be a 3D tensor", || m.bmm(&a3));
    s.err("outer of 2-D", "outer: Expected 1-D", || m.outer(&m));
    s.err("norm p=inf", "not supported", || {
        m.norm_dims(f64::INFINITY, &[], false)
    });
    s.err("norm p=nan", "not supported", || {
        m.norm_dims(f64::NAN, &[], false)
    });
    s.err("norm p=0", "not supported", || m.norm_dims(0.0, &[], false));
    // Extreme shifts, diagonals and corrections are values, not errors.
    s.case(
        "roll by isize::MIN",
        || m.roll(&[isize::MIN], &[1]),
        |r| r.is_ok(),
    );
    s.case(
        "roll flat by isize::MAX",
        || m.roll(&[isize::MAX], &[]),
        |r| r.is_ok(),
    );
    for d in [isize::MIN, isize::MAX] {
        s.case(format!("tril {d}"), || m.tril(d), |r| r.is_ok());
        s.case(format!("triu {d}"), || m.triu(d), |r| r.is_ok());
    }
    for c in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
        s.case(
            format!("var correction {c}"),
            || m.var_dims(&[], c, false),
            |r| r.is_ok(),
        );
        s.case(
            format!("std correction {c}"),
            || m.std_dims(&[1], c, true),
            |r| r.is_ok(),
        );
    }
    let empty = f64s(&[0, 3], &[0.0]);
    s.case(
        "prod of empty",
        || empty.prod(),
        |r| matches!(r, Ok(t) if t.item::<f64>().ok() == Some(1.0)),
    );
    s.case("cumsum of empty", || empty.cumsum(0), |r| r.is_ok());
    s.err("amax of empty dim", "non-zero size", || {
        empty.amax(&[0], false)
    });
    s.err("logsumexp of empty dim", "size 0", || {
        empty.logsumexp(&[0], false)
    });
    s.case("tril of empty", || empty.tril(0), |r| r.is_ok());
    s.case("flip of empty", || empty.flip(&[0, 1]), |r| r.is_ok());
    s.case("repeat of empty", || empty.repeat(&[2, 2]), |r| r.is_ok());
}

/// Every dtype through every op: an op without a kernel for a dtype must say so (PyTorch's
/// `"op" not implemented for 'Long'`, or its own error), never panic; a float result must be
/// backward-able. Values are checked elsewhere (`tests/ops/dtypes.rs`, the dtypes corpus).
fn dtypes(s: &mut Sweep) {
    let base = f64s(&[2, 3], &[1.0, -2.0, 0.0, 3.5, f64::NAN, 300.0]);
    let tensors: Vec<(DType, Tensor)> = DType::ALL
        .iter()
        .map(|&d| (d, base.to_dtype(d).unwrap()))
        .collect();
    for (d, x) in &tensors {
        for (name, f, _) in unary_ops() {
            s.case(format!("{name} of {d}"), || f(x), |_| true);
        }
        let reductions: [Op1; 22] = [
            ("sum", |t| t.sum()),
            ("mean", |t| t.mean()),
            ("sum_dims", |t| t.sum_dims(&[1], true)),
            ("mean_dims", |t| t.mean_dims(&[0], false)),
            ("var_dims", |t| t.var_dims(&[1], 1.0, false)),
            ("prod", |t| t.prod()),
            ("cumsum", |t| t.cumsum(1)),
            ("logsumexp", |t| t.logsumexp(&[1], false)),
            ("norm", |t| t.norm_dims(2.0, &[], false)),
            ("amax", |t| t.amax(&[1], false)),
            ("softmax", |t| t.softmax(1)),
            ("log_softmax", |t| t.log_softmax(0)),
            ("argmax", |t| t.argmax(Some(1), false)),
            ("argmin", |t| t.argmin(None, false)),
            ("any", |t| t.any()),
            ("all", |t| t.all()),
            ("clamp", |t| t.clamp(Some(0.0), Some(2.0))),
            ("transpose contiguous", |t| t.transpose(0, 1)?.contiguous()),
            ("expand contiguous", |t| {
                t.unsqueeze(0)?.expand(&[2, 2, 3])?.contiguous()
            }),
            ("cat", |t| Tensor::cat(&[t.clone(), t.clone()], 1)),
            ("index_select", |t| t.index_select(1, &[2, 0, 2])),
            ("flip tril", |t| t.flip(&[0])?.tril(0)),
        ];
        for (name, f) in reductions {
            s.case(format!("{name} of {d}"), || f(x), |_| true);
        }
        s.case(format!("matmul of {d}"), || x.matmul(&x.t()?), |_| true);
        s.case(
            format!("max_dim of {d}"),
            || x.max_dim(1, false).map(|(v, _)| v),
            |_| true,
        );
        s.case(
            format!("display of {d}"),
            || Ok(x.to_string()),
            |r| r.is_ok(),
        );
        s.case(
            format!("masked_fill of {d}"),
            || x.masked_fill(&x.gt_scalar(0)?, 7),
            |_| true,
        );
        s.case(
            format!("in-place add of {d}"),
            || {
                let y = x.copy()?;
                y.add_(&x.ones_like()?)?;
                Ok(y)
            },
            |_| true,
        );
        s.case(
            format!("fill of {d}"),
            || x.copy()?.fill_(1.5).cloned(),
            |_| true,
        );
        for (e, y) in &tensors {
            let binary: [Binary; 11] = [
                ("add", |a, b| a.add(b)),
                ("sub", |a, b| a.sub(b)),
                ("mul", |a, b| a.mul(b)),
                ("div", |a, b| a.div(b)),
                ("minimum", |a, b| a.minimum(b)),
                ("fmod", |a, b| a.fmod(b)),
                ("remainder", |a, b| a.remainder(b)),
                ("atan2", |a, b| a.atan2(b)),
                ("lt", |a, b| a.lt(b)),
                ("eq", |a, b| a.eq(b)),
                ("where", |a, b| Tensor::where_(&a.gt_scalar(0)?, a, b)),
            ];
            for (name, f) in binary {
                s.case(format!("{name} of {d} and {e}"), || f(x, y), |_| true);
            }
            s.case(
                format!("copy_ {e} into {d}"),
                || x.copy()?.copy_(y).cloned(),
                |_| true,
            );
        }
        if d.is_floating_point() {
            let leaf = x.detach().requires_grad_(true).unwrap();
            s.case(
                format!("backward through {d}"),
                || {
                    let y = leaf.mul(&leaf)?.exp()?.softmax(1)?.matmul(&leaf.t()?)?;
                    y.sum()?.backward()?;
                    leaf.grad().ok_or(Error::IncompleteGraph)
                },
                |r| matches!(r, Ok(g) if g.dtype() == *d),
            );
        } else {
            s.err(
                format!("requires_grad of {d}"),
                "only Tensors of floating point dtype can require gradients",
                || x.detach().requires_grad_(true),
            );
        }
    }
}

fn sweep() -> Sweep {
    let mut s = Sweep::default();
    dtypes(&mut s);
    elementwise(&mut s);
    broadcasting(&mut s);
    shapes_and_dims(&mut s);
    issue_35_ops(&mut s);
    engine(&mut s);
    s
}

#[test]
fn hostile_arguments_give_errors_or_documented_results_never_panics() {
    // A hang is a failure too: the sweep runs on its own thread under a generous deadline.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // A panicking hook or backward prints its message through the panic hook; keep the
        // output to the sweep's own summary.
        let _ = tx.send(sweep());
    });
    let s = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the bad-input sweep hung (no result within 120 s)");
    println!(
        "bad-input sweep: {} cases, {} returned errors, {} failed",
        s.cases,
        s.errors,
        s.failures.len()
    );
    assert!(s.failures.is_empty(), "{:#?}", s.failures);
    assert!(s.cases >= 900, "the sweep shrank to {} cases", s.cases);
}
