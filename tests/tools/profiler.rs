//! The autograd profiler: what `profiler::profile` records, on which threads, and for which
//! backward passes (nested, concurrent, reentrant).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::profiler::{self, Profile};
use autograd::*;

/// Node names of the graph behind `t`, with how many nodes carry each (an iterative walk).
fn graph_node_counts(t: &Tensor) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeRef> = t.grad_fn().into_iter().collect();
    while let Some(node) = stack.pop() {
        if !seen.insert(&*node as *const dyn Node as *const () as usize) {
            continue;
        }
        *counts.entry(node.name().to_string()).or_default() += 1;
        stack.extend(node.next_functions().into_iter().flatten().map(|e| e.node));
    }
    counts
}

fn profiled_counts(prof: &Profile) -> BTreeMap<String, usize> {
    prof.key_averages()
        .iter()
        .map(|r| (r.name.clone(), r.calls))
        .collect()
}

/// A small MLP with an MSE loss: matmul, bias add (broadcast), relu, tanh, sub, pow, mean.
fn mlp_loss() -> Result<Tensor> {
    let x = Tensor::randn_seeded(&[8, 4], DType::F32, 1)?;
    let target = Tensor::randn_seeded(&[8, 3], DType::F32, 2)?;
    let w1 = Tensor::randn_seeded(&[4, 16], DType::F32, 3)?.requires_grad_(true)?;
    let b1 = Tensor::zeros(&[16], DType::F32)?.requires_grad_(true)?;
    let w2 = Tensor::randn_seeded(&[16, 3], DType::F32, 4)?.requires_grad_(true)?;
    let b2 = Tensor::zeros(&[3], DType::F32)?.requires_grad_(true)?;
    let h = x.matmul(&w1)?.add(&b1)?.relu()?;
    let out = h.matmul(&w2)?.add(&b2)?.tanh()?;
    out.sub(&target)?.pow(2.0)?.mean()
}

#[test]
fn table_names_every_node_of_an_mlp_with_its_graph_count() -> Result<()> {
    let loss = mlp_loss()?;
    let expected = graph_node_counts(&loss);
    assert!(expected.len() >= 7, "{expected:?}");
    assert_eq!(expected["AccumulateGrad"], 4);
    let (result, prof) = profiler::profile(|| loss.backward());
    result?;
    assert_eq!(profiled_counts(&prof), expected);
    let table = prof.key_averages().table();
    for (name, calls) in &expected {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing from\n{table}"));
        assert_eq!(
            line.split_whitespace().last(),
            Some(&*calls.to_string()),
            "{line}"
        );
    }
    // Rows are sorted by total time, and self time never exceeds total time.
    let rows: Vec<_> = prof.key_averages().iter().cloned().collect();
    assert!(rows.windows(2).all(|w| w[0].total >= w[1].total));
    assert!(rows.iter().all(|r| r.self_time <= r.total));
    // Every event ran on this thread (CPU nodes run on the caller).
    let me = std::thread::current().name().unwrap().to_string();
    assert!(
        prof.events()
            .iter()
            .all(|e| *e.thread == *me && e.device == Device::Cpu)
    );
    Ok(())
}

#[test]
fn passes_outside_the_closure_are_not_recorded() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    x.exp()?.backward()?;
    let (_, prof) = profiler::profile(|| ());
    assert!(prof.events().is_empty());
    let y = x.sin()?;
    let (r, prof) = profiler::profile(|| y.backward());
    r?;
    x.cos()?.backward()?; // after the closure
    assert_eq!(
        profiled_counts(&prof),
        BTreeMap::from([("SinBackward0".into(), 1), ("AccumulateGrad".into(), 1)])
    );
    Ok(())
}

#[test]
fn nodes_on_virtual_device_threads_are_recorded_with_their_thread_and_device() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let v = x.to(Device::Virtual(5))?.exp()?.mul_scalar(2.0)?;
    let loss = v.to(Device::Cpu)?.sum()?;
    let expected = graph_node_counts(&loss);
    let (r, prof) = profiler::profile(|| loss.backward());
    r?;
    assert_eq!(profiled_counts(&prof), expected);
    let on_device: Vec<_> = prof
        .events()
        .iter()
        .filter(|e| e.device == Device::Virtual(5))
        .collect();
    let names: HashSet<&str> = on_device.iter().map(|e| e.name.as_str()).collect();
    assert!(
        names.contains("ExpBackward0") && names.contains("MulBackward0"),
        "{names:?}"
    );
    assert!(on_device.iter().all(|e| &*e.thread == "autograd-device-5"));
    assert_eq!(on_device[0].input_shapes, [Some(vec![3])]);
    // The chrome trace names the device thread's track.
    let trace: serde_json::Value = serde_json::from_str(&prof.chrome_trace()).expect("valid JSON");
    let events = trace["traceEvents"].as_array().expect("an array of events");
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "autograd-device-5")
    );
    let complete = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(complete, prof.events().len());
    Ok(())
}

/// A pass-through node whose backward runs `inner` (a reentrant backward).
struct Reentrant<F>(F);

impl<F: Fn() -> Result<()> + Send + Sync + 'static> Backward for Reentrant<F> {
    const NAME: &'static str = "ReentrantBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        (self.0)()?;
        Ok(grads)
    }
}

fn reentrant_identity(
    x: &Tensor,
    inner: impl Fn() -> Result<()> + Send + Sync + 'static,
) -> Result<Tensor> {
    let y = {
        let _g = no_grad();
        x.copy()?
    };
    let edges = __private::next_edges(&[x]).expect("x requires grad");
    __private::record_node(edges, &[&y], |_| Reentrant(inner));
    Ok(y)
}

fn check_reentrant(engine: &Engine) -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let w = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let inner_engine = engine.clone();
    let y = reentrant_identity(&x, move || {
        let _g = enable_grad();
        let inner = w.exp()?.sin()?;
        inner_engine.backward(&[inner], &[], BackwardOptions::new())
    })?;
    let (r, prof) = profiler::profile(|| engine.backward(&[y], &[], BackwardOptions::new()));
    r?;
    let counts = profiled_counts(&prof);
    assert_eq!(counts["ReentrantBackward"], 1, "{counts:?}");
    assert_eq!(counts["SinBackward0"], 1, "{counts:?}");
    assert_eq!(counts["ExpBackward0"], 1, "{counts:?}");
    assert_eq!(counts["AccumulateGrad"], 2, "{counts:?}");
    let outer = prof
        .events()
        .iter()
        .find(|e| e.name == "ReentrantBackward")
        .unwrap();
    let inner: Vec<_> = prof
        .events()
        .iter()
        .filter(|e| e.name == "SinBackward0" || e.name == "ExpBackward0")
        .collect();
    assert!(inner.iter().all(|e| e.graph_task_id != outer.graph_task_id));
    // The inner pass ran while the outer node did.
    assert!(inner
        .iter()
        .all(|e| e.start >= outer.start && e.start + e.duration <= outer.start + outer.duration));
    Ok(())
}

#[test]
fn reentrant_passes_run_inline_are_recorded_and_excluded_from_self_time() -> Result<()> {
    check_reentrant(Engine::get_default())?;
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let slow = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = reentrant_identity(&x, move || {
        let _g = enable_grad();
        let inner = reentrant_identity(&slow, || {
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        })?;
        inner.backward()
    })?;
    let (r, prof) = profiler::profile(|| y.backward());
    r?;
    let mut outer: Vec<_> = prof
        .events()
        .iter()
        .filter(|e| e.name == "ReentrantBackward")
        .collect();
    outer.sort_by_key(|e| e.start);
    let (outer, inner) = (outer[0], outer[1]);
    assert!(inner.self_duration >= Duration::from_millis(20));
    // The outer node's self time excludes the inner node's 20 ms.
    assert!(outer.duration >= inner.duration);
    assert!(outer.self_duration + inner.duration <= outer.duration + Duration::from_micros(1));
    Ok(())
}

#[test]
fn reentrant_passes_handed_to_the_pool_are_recorded() -> Result<()> {
    let engine = Engine::new().max_recursion_depth(0);
    check_reentrant(&engine)?;
    assert!(engine.pool_threads() >= 1);
    engine.shutdown();
    Ok(())
}

/// A reentrant pass started by a node on a device worker thread records into the sessions of
/// the pass that runs that node (the state a graph task carries, B30), although no profile is
/// open on that thread.
#[test]
fn reentrant_passes_started_on_device_threads_are_recorded() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let w = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let y = reentrant_identity(&x.to(Device::Virtual(7))?, move || {
        assert_eq!(std::thread::current().name(), Some("autograd-device-7"));
        let _g = enable_grad();
        w.exp()?.sin()?.backward()
    })?;
    let (r, prof) = profiler::profile(|| y.backward());
    r?;
    let counts = profiled_counts(&prof);
    assert_eq!(counts["ReentrantBackward"], 1, "{counts:?}");
    assert_eq!(counts["SinBackward0"], 1, "{counts:?}");
    assert_eq!(counts["ExpBackward0"], 1, "{counts:?}");
    let inner: Vec<_> = prof
        .events()
        .iter()
        .filter(|e| e.name == "SinBackward0" || e.name == "ExpBackward0")
        .collect();
    // The nested pass's CPU nodes run on the device thread that started it (its local queue).
    assert!(
        inner.iter().all(|e| &*e.thread == "autograd-device-7"),
        "{inner:?}"
    );
    Ok(())
}

#[test]
fn nested_profiles_both_record_the_inner_pass() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let a = x.exp()?;
    let b = x.sin()?;
    let (inner, outer) = profiler::profile(|| -> Result<Profile> {
        a.backward()?;
        let (r, inner) = profiler::profile(|| b.backward());
        r?;
        Ok(inner)
    });
    let inner = inner?;
    assert_eq!(
        profiled_counts(&inner),
        BTreeMap::from([("SinBackward0".into(), 1), ("AccumulateGrad".into(), 1)])
    );
    assert_eq!(
        profiled_counts(&outer),
        BTreeMap::from([
            ("ExpBackward0".into(), 1),
            ("SinBackward0".into(), 1),
            ("AccumulateGrad".into(), 2)
        ])
    );
    Ok(())
}

#[test]
fn concurrent_profiles_on_two_threads_see_only_their_own_passes() -> Result<()> {
    const PASSES: usize = 50;
    let barrier = Arc::new(Barrier::new(2));
    let run = |unary: fn(&Tensor) -> Result<Tensor>, device: Device| {
        let barrier = barrier.clone();
        std::thread::spawn(move || -> Result<Profile> {
            let x = Tensor::scalar(0.5f64).requires_grad_(true)?;
            let (r, prof) = profiler::profile(|| -> Result<()> {
                barrier.wait(); // both sessions are open from here on
                for _ in 0..PASSES {
                    // Both threads share the worker of the virtual device.
                    unary(&x.to(device)?)?.to(Device::Cpu)?.backward()?;
                }
                barrier.wait();
                Ok(())
            });
            r.map(|()| prof)
        })
    };
    let a = run(Tensor::exp, Device::Virtual(6));
    let b = run(Tensor::sin, Device::Virtual(6));
    let a = a.join().expect("thread a")?;
    let b = b.join().expect("thread b")?;
    for (prof, mine, theirs) in [
        (&a, "ExpBackward0", "SinBackward0"),
        (&b, "SinBackward0", "ExpBackward0"),
    ] {
        let counts = profiled_counts(prof);
        assert_eq!(counts[mine], PASSES, "{counts:?}");
        assert_eq!(counts["ToCopyBackward0"], 2 * PASSES, "{counts:?}");
        assert!(!counts.contains_key(theirs), "{counts:?}");
    }
    Ok(())
}
