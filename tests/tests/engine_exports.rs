//! Exports: the Chrome trace carries MICROseconds (a simulator once wrote
//! milliseconds and its timelines came out 1000x compressed), names its
//! processes and threads, and links stage-to-stage sends with flow events;
//! the summary JSON has a schema version; the spans CSV has one row per span.

use serde_json::Value;
use trainscope_core::engine::spec::{Block, JobSpec, LayerSpec, Parallelism};
use trainscope_core::timeline::{SpanKind, Stream};
use trainscope_core::{
    engine::{SimConfig, SimResult},
    export,
};

/// Two stages, two micro-batches, one layer of 1_234_567 ns forward:
/// stage 0's second forward starts at exactly 1_234_567 ns.
fn result() -> SimResult {
    let block = Block {
        layers: vec![LayerSpec::compute("layer0", 1_234_567, 2_000_000, 500)],
    };
    let job = JobSpec::spmd(
        "units",
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        2,
        1 << 20,
        block,
    );
    trainscope_core::engine::simulate(&job, &SimConfig::default()).unwrap()
}

fn events(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).expect("valid JSON");
    assert_eq!(v["displayTimeUnit"], "ns");
    v["traceEvents"].as_array().expect("traceEvents").clone()
}

#[test]
fn chrome_trace_times_are_microseconds() {
    let r = result();
    let ev = events(&export::chrome_trace_json(&r.timeline));
    let fwd: Vec<&Value> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 0 && e["cat"] == "forward")
        .collect();
    assert_eq!(fwd.len(), 2);
    let second = fwd.iter().find(|e| e["args"]["micro_batch"] == 1).unwrap();
    // 1_234_567 ns = 1234.567 us (not 1.234567 ms, not 1234567 ns).
    assert_eq!(second["ts"].as_f64(), Some(1234.567));
    assert_eq!(second["dur"].as_f64(), Some(1234.567));
    assert_eq!(second["name"], "layer0");
    assert_eq!(second["tid"], 0);
    // Every complete event matches its span to the nanosecond.
    let mut total_us = 0.0;
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let ts = e["ts"].as_f64().unwrap();
        let start_ns = e["args"]["start_ns"].as_u64().unwrap();
        assert_eq!((ts * 1000.0).round() as u64, start_ns);
        total_us += e["dur"].as_f64().unwrap();
    }
    let total_ns: u64 = (0..r.timeline.lanes().len() as u32)
        .flat_map(|l| r.timeline.spans(l).iter())
        .map(|s| s.duration_ns)
        .sum();
    assert!(((total_us * 1000.0) - total_ns as f64).abs() < 1.0);
    // The last event ends at the iteration time.
    let end_us = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((end_us * 1000.0 - r.summary.iteration_time_ns as f64).abs() < 1.0);
}

#[test]
fn chrome_trace_names_and_flows() {
    let r = result();
    let ev = events(&export::chrome_trace_json(&r.timeline));
    let meta = |name: &str, pid: u64| {
        ev.iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name && e["pid"] == pid)
            .count()
    };
    assert_eq!(meta("process_name", 0), 1);
    assert_eq!(meta("process_name", 1), 1);
    assert_eq!(meta("thread_name", 0), Stream::DEVICE.len());
    // 2 micro-batches x (activation + gradient) = 4 flows, each s then f.
    let starts: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!(starts.len(), 4);
    assert_eq!(ends.len(), 4);
    for s in &starts {
        let f = ends
            .iter()
            .find(|f| f["id"] == s["id"])
            .expect("matching flow end");
        assert_eq!(s["tid"], Stream::Send.index());
        assert_eq!(f["tid"], Stream::Recv.index());
        assert_eq!(f["bp"], "e");
        assert_ne!(s["pid"], f["pid"], "a flow goes between stages");
        assert!(f["ts"].as_f64() >= s["ts"].as_f64());
    }
}

/// Each stage's activation memory over time is a Chrome counter track:
/// one `ph:"C"` event per change of its counter lane, in the stage's `pid`,
/// in micro-batches (stage 0 of 1F1B with p = m = 2 holds 2 at its peak).
#[test]
fn chrome_trace_counters_are_the_memory_lanes() {
    let r = result();
    let ev = events(&export::chrome_trace_json(&r.timeline));
    for c in r.timeline.counters() {
        let mine: Vec<&Value> = ev
            .iter()
            .filter(|e| e["ph"] == "C" && e["pid"] == c.group)
            .collect();
        assert_eq!(mine.len(), c.points.len());
        for (e, p) in mine.iter().zip(&c.points) {
            assert_eq!(e["name"], "activation memory");
            assert_eq!(
                (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                p.time_ns
            );
            assert_eq!(e["args"]["micro_batches"].as_f64(), Some(p.value));
        }
    }
    let peak = |pid: u64| {
        ev.iter()
            .filter(|e| e["ph"] == "C" && e["pid"] == pid)
            .filter_map(|e| e["args"]["micro_batches"].as_f64())
            .fold(0.0, f64::max)
    };
    assert_eq!((peak(0), peak(1)), (2.0, 1.0));
}

#[test]
fn summary_json_and_spans_csv() {
    let r = result();
    let v: Value = serde_json::from_str(&export::summary_json(&r.summary)).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["mode"], "event");
    assert_eq!(v["iteration_time_ns"], r.summary.iteration_time_ns);
    // The same lowercase group keys as `simulate --json`.
    for k in ["tp", "ep", "dp", "dp_ep", "pp"] {
        assert!(v["exposed_comm_ns"][k].is_u64(), "exposed_comm_ns.{k}");
    }
    assert!(v["exposed_comm_ns"].get("DP_EP").is_none());
    assert_eq!(v["stages"].as_array().unwrap().len(), 2);

    let csv = export::spans_csv(&r.timeline);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(export::SPANS_CSV_HEADER));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), r.timeline.span_count());
    let cols = export::SPANS_CSV_HEADER.split(',').count();
    assert!(rows.iter().all(|r| r.split(',').count() == cols));
    assert!(rows
        .iter()
        .any(|r| r.contains(",send,") && r.ends_with(",1048576")));
    let sends = r
        .timeline
        .lanes()
        .iter()
        .enumerate()
        .filter(|(_, l)| l.stream == Stream::Send)
        .flat_map(|(i, _)| r.timeline.spans(i as u32).iter())
        .filter(|s| s.kind == SpanKind::Send)
        .count();
    assert_eq!(sends, 4);
}
