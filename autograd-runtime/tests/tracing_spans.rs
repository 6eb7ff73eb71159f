//! Feature `tracing`: one `backward` span per pass and one `node` span per node it runs, with
//! the node's name, sequence number and thread, parented to its pass on every thread.
//!
//! Run with `cargo test -p autograd-runtime --features tracing --test tracing_spans`.
#![cfg(feature = "tracing")]

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use autograd_runtime::{Device, Result, Tensor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One span as the subscriber saw it.
#[derive(Clone, Debug)]
struct SpanRecord {
    name: &'static str,
    parent: Option<u64>,
    fields: HashMap<&'static str, String>,
}

/// Keeps every span it is told about (installed globally: device worker threads use the global
/// dispatcher).
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, SpanRecord>>,
}

struct Fields<'a>(&'a mut HashMap<&'static str, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        // Relaxed: only uniqueness matters. Ids start at 1 (0 is not a valid span id).
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = attrs.parent().map(Id::into_u64);
        let record = SpanRecord {
            name: attrs.metadata().name(),
            parent,
            fields,
        };
        self.spans.lock().unwrap().insert(id, record);
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn recorder() -> &'static Arc<Recorder> {
    static RECORDER: OnceLock<Arc<Recorder>> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let r = Arc::new(Recorder::default());
        tracing::subscriber::set_global_default(r.clone()).expect("the only subscriber");
        r
    })
}

#[test]
fn backward_and_node_spans_carry_name_sequence_nr_and_thread() -> Result<()> {
    let rec = recorder();
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let y = x.to(Device::Virtual(7))?.exp()?.to(Device::Cpu)?.sum()?;
    let exp_seq = {
        // ExpBackward0 is the grad_fn of ToCopyBackward0's input.
        let to_cpu = y.grad_fn().unwrap().next_functions()[0]
            .clone()
            .unwrap()
            .node;
        let exp = to_cpu.next_functions()[0].clone().unwrap().node;
        assert_eq!(exp.name(), "ExpBackward0");
        exp.meta().sequence_nr()
    };
    y.backward()?;

    let spans = rec.spans.lock().unwrap().clone();
    let passes: Vec<u64> = spans
        .iter()
        .filter(|(_, s)| s.name == "backward")
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(passes.len(), 1, "{spans:?}");
    let nodes: Vec<&SpanRecord> = spans.values().filter(|s| s.name == "node").collect();
    let names: Vec<&str> = nodes.iter().map(|s| s.fields["name"].as_str()).collect();
    for name in [
        "SumBackward0",
        "ToCopyBackward0",
        "ExpBackward0",
        "AccumulateGrad",
    ] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    assert_eq!(nodes.len(), 5, "{names:?}"); // two ToCopyBackward0
    assert!(
        nodes.iter().all(|s| s.parent == Some(passes[0])),
        "{nodes:?}"
    );
    let exp = nodes
        .iter()
        .find(|s| s.fields["name"] == "ExpBackward0")
        .unwrap();
    assert_eq!(exp.fields["sequence_nr"], exp_seq.to_string());
    assert_eq!(exp.fields["thread"], "autograd-device-7");
    let sum = nodes
        .iter()
        .find(|s| s.fields["name"] == "SumBackward0")
        .unwrap();
    assert_eq!(
        sum.fields["thread"],
        std::thread::current().name().unwrap(),
        "CPU nodes run on the caller"
    );
    Ok(())
}
