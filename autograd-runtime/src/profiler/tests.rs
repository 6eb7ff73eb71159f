//! Unit tests of the profiler's formatting and grouping.

use super::*;

fn event(name: &str, shape: &[usize], micros: u64, self_micros: u64) -> NodeEvent {
    NodeEvent {
        name: name.to_string(),
        sequence_nr: 0,
        graph_task_id: 0,
        thread: Arc::from("main"),
        thread_nr: 0,
        device: Device::Cpu,
        start: Duration::ZERO,
        duration: Duration::from_micros(micros),
        self_duration: Duration::from_micros(self_micros),
        input_shapes: vec![Some(shape.to_vec()), None],
    }
}

fn profile_of(events: Vec<NodeEvent>) -> Profile {
    Profile {
        events,
        wall_time: Duration::from_millis(1),
    }
}

#[test]
fn times_print_in_pytorch_units() {
    assert_eq!(human(Duration::from_nanos(12_345)), "12.345us");
    assert_eq!(human(Duration::from_micros(1_234)), "1.234ms");
    assert_eq!(human(Duration::from_millis(2_500)), "2.500s");
}

#[test]
fn json_strings_are_escaped() {
    assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

#[test]
fn rows_group_by_name_and_sort_by_total() {
    let prof = profile_of(vec![
        event("A", &[2], 10, 10),
        event("B", &[3], 30, 5),
        event("A", &[4], 10, 10),
    ]);
    let rows: Vec<_> = prof
        .key_averages()
        .iter()
        .map(|r| (r.name.clone(), r.calls, r.total, r.self_time))
        .collect();
    let us = Duration::from_micros;
    assert_eq!(
        rows,
        [
            ("B".into(), 1, us(30), us(5)),
            ("A".into(), 2, us(20), us(20))
        ]
    );
    let by_shape = prof.key_averages_by_input_shape();
    assert_eq!(by_shape.len(), 3);
    assert_eq!(
        by_shape.iter().next().and_then(|r| r.input_shapes.clone()),
        Some(vec![Some(vec![3]), None])
    );
}

#[test]
fn table_has_aligned_columns_and_self_percentages() {
    let prof = profile_of(vec![
        event("LongNodeName", &[2], 40, 30),
        event("B", &[3], 10, 10),
    ]);
    let table = prof.key_averages().table();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert!(lines[1].starts_with("Name        "), "{table}");
    // Every row is as wide as the rules.
    assert!(
        lines[..6].iter().all(|l| l.len() == lines[0].len()),
        "{table}"
    );
    assert!(
        lines[3].starts_with("LongNodeName") && lines[3].contains("75.00%"),
        "{table}"
    );
    assert!(lines[4].contains("25.00%"), "{table}");
    assert_eq!(lines[6], "Self time total: 40.000us");
    let shaped = prof.key_averages_by_input_shape().table();
    assert!(
        shaped.contains("Input Shapes") && shaped.contains("[[2], None]"),
        "{shaped}"
    );
}

#[test]
fn chrome_trace_names_threads_once() {
    let prof = profile_of(vec![event("A", &[2], 10, 10), event("A", &[2], 10, 10)]);
    let json = prof.chrome_trace();
    assert_eq!(json.matches("\"thread_name\"").count(), 1, "{json}");
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 2, "{json}");
    assert!(json.contains("\"input_shapes\":[[2],null]"), "{json}");
}
