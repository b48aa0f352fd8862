//! Exports (docs/FORMATS.md §3): the timeline as Chrome Trace Event JSON
//! (Perfetto / chrome://tracing), the summary as JSON with a
//! `schema_version`, and the spans as CSV. Writers take any
//! [`std::io::Write`] (the CLI passes a file, tests a `Vec<u8>`); nothing
//! here touches the file system.
//!
//! Chrome trace: `{"traceEvents":[...],"displayTimeUnit":"ns"}`. Every span
//! is a complete event (`ph:"X"`) whose `ts` and `dur` are MICROseconds as
//! floats (ns / 1000: 1234567 ns is `1234.567`); `pid` is the stage (SPMD)
//! or the rank, `tid` the stream (0 compute, 1 TP/EP collectives, 2 DP
//! collectives, 3 send, 4 receive; a Kineto rank: one `tid` per CUDA
//! stream, in the order of its lanes); `ph:"M"` events name processes and
//! threads; each stage-to-stage transfer adds a flow start (`ph:"s"`, on the
//! send span) and a flow end (`ph:"f"`, `bp:"e"`, on the receive span) with
//! a shared `id`. Each counter lane (a simulated stage's activation memory
//! over time) is a series of counter events (`ph:"C"`, one per change, in the
//! group's `pid`, named after the lane, e.g. `activation memory`, with one
//! argument named after its unit: `{"micro_batches":1.5}` or
//! `{"bytes":268435456}`), which Perfetto and chrome://tracing draw as a
//! counter track.

use crate::engine::summary::Summary;
use crate::timeline::{Lane, LaneGroup, Span, Timeline};
use std::io::{self, Write};

/// Nanoseconds as a JSON number of microseconds (exact decimal: ns / 1000).
fn us(ns: u64) -> String {
    let whole = ns / 1000;
    let frac = ns % 1000;
    if frac == 0 {
        format!("{whole}.0")
    } else {
        let s = format!("{whole}.{frac:03}");
        s.trim_end_matches('0').to_string()
    }
}

fn pid(lane: &Lane) -> u32 {
    lane.group
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Write the Chrome trace of `t`.
pub fn write_chrome_trace<W: Write>(t: &Timeline, mut w: W) -> io::Result<()> {
    w.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    let mut sep = |w: &mut W| -> io::Result<()> {
        if first {
            first = false;
            Ok(())
        } else {
            w.write_all(b",\n")
        }
    };
    // `tid`: the lane's position in its group (the stream index for the
    // five streams of a simulated or Echo rank; one per CUDA stream of a
    // Kineto rank); its name: the lane name after its group's.
    let mut per_group: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    let tids: Vec<u32> = t
        .lanes()
        .iter()
        .map(|lane| {
            let n = per_group.entry(pid(lane)).or_default();
            *n += 1;
            *n - 1
        })
        .collect();
    let mut named: Vec<u32> = Vec::new();
    for (li, lane) in t.lanes().iter().enumerate() {
        let pid = pid(lane);
        if !named.contains(&pid) {
            named.push(pid);
            let pname = match lane.group_kind {
                LaneGroup::Stage => format!("stage {}", lane.group),
                LaneGroup::Rank => format!("rank {} (stage {})", lane.group, lane.stage),
            };
            sep(&mut w)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
                json_str(&pname)
            )?;
            sep(&mut w)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}}"
            )?;
        }
        sep(&mut w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            tids[li],
            json_str(
                lane.name
                    .rsplit_once(" / ")
                    .map_or(lane.stream.name(), |(_, n)| n)
            )
        )?;
    }
    for (li, lane) in t.lanes().iter().enumerate() {
        let pid = pid(lane);
        let tid = tids[li];
        for s in t.spans(li as u32) {
            sep(&mut w)?;
            write!(
                w,
                "{{\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{",
                json_str(t.label(s.label)),
                s.kind.name(),
                us(s.start_ns),
                us(s.duration_ns)
            )?;
            write_args(&mut w, s)?;
            w.write_all(b"}}")?;
        }
    }
    for (i, f) in t.flows().iter().enumerate() {
        let (Some(a), Some(b)) = (t.span(f.from), t.span(f.to)) else {
            continue;
        };
        let (la, lb) = (
            &t.lanes()[f.from.lane as usize],
            &t.lanes()[f.to.lane as usize],
        );
        sep(&mut w)?;
        write!(
            w,
            "{{\"ph\":\"s\",\"name\":\"pp\",\"cat\":\"pp\",\"id\":{i},\"pid\":{},\"tid\":{},\"ts\":{}}}",
            pid(la),
            tids[f.from.lane as usize],
            us(a.start_ns)
        )?;
        sep(&mut w)?;
        write!(
            w,
            "{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"pp\",\"cat\":\"pp\",\"id\":{i},\"pid\":{},\"tid\":{},\"ts\":{}}}",
            pid(lb),
            tids[f.to.lane as usize],
            us(b.start_ns)
        )?;
    }
    for c in t.counters() {
        let name = c
            .name
            .rsplit_once(" / ")
            .map_or(c.name.as_str(), |(_, n)| n);
        for p in &c.points {
            sep(&mut w)?;
            write!(
                w,
                "{{\"ph\":\"C\",\"name\":{},\"pid\":{},\"ts\":{},\"args\":{{\"{}\":{}}}}}",
                json_str(name),
                c.group,
                us(p.time_ns),
                c.unit.name(),
                json_number(p.value)
            )?;
        }
    }
    w.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")
}

/// A counter value as a JSON number: integers without a fraction, else the
/// shortest decimal that reads back as the same f64 (non-finite: 0).
fn json_number(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_string();
    }
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        return format!("{}", x as i64);
    }
    format!("{x}")
}

fn write_args<W: Write>(w: &mut W, s: &Span) -> io::Result<()> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(mb) = s.micro_batch() {
        parts.push(format!("\"micro_batch\":{mb}"));
    }
    if let Some(l) = s.layer() {
        parts.push(format!("\"layer\":{l}"));
    }
    if s.chunk > 0 {
        parts.push(format!("\"chunk\":{}", s.chunk));
    }
    if s.bytes > 0 {
        parts.push(format!("\"bytes\":{}", s.bytes));
    }
    if !s.coll.name().is_empty() {
        parts.push(format!("\"op\":\"{}\"", s.coll.name()));
    }
    parts.push(format!(
        "\"start_ns\":{},\"duration_ns\":{}",
        s.start_ns, s.duration_ns
    ));
    w.write_all(parts.join(",").as_bytes())
}

/// The Chrome trace of `t` as a string.
pub fn chrome_trace_json(t: &Timeline) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_chrome_trace(t, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The summary as pretty JSON (has `schema_version`).
pub fn summary_json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).unwrap_or_default()
}

/// Header of the spans CSV.
pub const SPANS_CSV_HEADER: &str =
    "lane,group_kind,group,stage,stream,kind,label,layer,micro_batch,chunk,op,start_ns,duration_ns,bytes";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write every span as one CSV row, lanes in order, spans by start.
pub fn write_spans_csv<W: Write>(t: &Timeline, mut w: W) -> io::Result<()> {
    writeln!(w, "{SPANS_CSV_HEADER}")?;
    for (li, lane) in t.lanes().iter().enumerate() {
        let gk = match lane.group_kind {
            LaneGroup::Stage => "stage",
            LaneGroup::Rank => "rank",
        };
        let opt = |x: Option<u32>| x.map_or(String::new(), |v| v.to_string());
        for s in t.spans(li as u32) {
            writeln!(
                w,
                "{li},{gk},{},{},{},{},{},{},{},{},{},{},{},{}",
                lane.group,
                lane.stage,
                lane.stream.key(),
                s.kind.name(),
                csv_field(t.label(s.label)),
                opt(s.layer()),
                opt(s.micro_batch()),
                s.chunk,
                s.coll.name(),
                s.start_ns,
                s.duration_ns,
                s.bytes
            )?;
        }
    }
    Ok(())
}

/// The spans CSV as a string.
pub fn spans_csv(t: &Timeline) -> String {
    let mut out = Vec::new();
    let _ = write_spans_csv(t, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{json_number, us};

    #[test]
    fn counter_values_are_plain_numbers() {
        assert_eq!(json_number(3.0), "3");
        assert_eq!(json_number(1.5), "1.5");
        assert_eq!(json_number(268_435_456.0), "268435456");
        assert_eq!(json_number(f64::NAN), "0");
    }

    #[test]
    fn microseconds_are_exact() {
        assert_eq!(us(0), "0.0");
        assert_eq!(us(1), "0.001");
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(1_500), "1.5");
        assert_eq!(us(2_000_000), "2000.0");
    }
}
