//! PyTorch profiler (Kineto) traces: the JSON `torch.profiler` writes per
//! rank (`export_chrome_trace`, `tensorboard_trace_handler`), plain or
//! gzip'd. Facts used (field names as PyTorch writes them, checked against
//! PyTorch's `ParamCommsUtils` / Kineto's output and HolisticTraceAnalysis's
//! parser configuration; nothing copied):
//!
//! - top level: `schemaVersion`, `deviceProperties`, `distributedInfo`
//!   (`rank`, `world_size`, `backend`, `pg_config`, ...), `traceEvents`;
//! - events: `ph: "X"` complete events with `ts`/`dur` in microseconds
//!   written with fractional digits, `cat` `kernel` / `gpu_memcpy` /
//!   `gpu_memset` (GPU work: `pid` = device, `tid` = stream), `cpu_op`,
//!   `cuda_runtime`, `user_annotation` (`ProfilerStep#N` on the host),
//!   `gpu_user_annotation` (annotations on a stream, `ProfilerStep#N` too);
//!   older traces spell the GPU categories `Kernel` / `Memcpy` / `Memset`;
//! - a step's GPU extent: PyTorch 2.x writes the GPU `ProfilerStep#N`
//!   annotation as a mark about a microsecond long (seen in the H100 traces
//!   of `tests/fixtures/measured/`), so the step is the span of the GPU ops
//!   whose runtime call (`cuda_runtime`/`cuda_driver`, joined by the args'
//!   `correlation`) ran inside the host `ProfilerStep#N`; a GPU annotation
//!   that covers that work is kept as it is; when the GPU work of two
//!   adjacent steps interleaves (a pipelined trainer, e.g. TorchRec's train
//!   pipeline, launches the next batch's input copies and collectives
//!   inside the current step, so they run while the next step's work
//!   already has: seen in HolisticTraceAnalysis's
//!   `negative_queue_length_values_check` trace, whose launched GPU work
//!   spans 372 ms per 216 ms step), the step's extent is the profiler's own
//!   mark, the host `ProfilerStep#N`'s duration, from the step's first GPU
//!   op;
//! - NCCL kernels are named `ncclDevKernel_<Coll>_...` or `ncclKernel_...`;
//!   their collective, message size and process group come from the args
//!   `Collective name`, `In msg nelems`, `Out msg nelems`, `dtype`,
//!   `Process Group Name`, `Process Group Ranks` (a string such as
//!   `"[0, 1, 2, 3]"`, cut with `...` past 30 ranks), `Group size`, carried
//!   by the kernel itself in recent PyTorch, else by the `record_param_comms`
//!   CPU op the kernel was launched from (joined by `External id`).
//!
//! Streaming: the file is walked once with a serde visitor; each element of
//! `traceEvents` is read in the same single pass into a small struct of
//! borrowed raw slices (`ph`, `cat`, `name`, `pid`, `tid`, `ts`, `dur`,
//! `args`; other fields skipped), and `args` is read further only for an
//! event that its `ph`, `cat` and `name` keep; only GPU work, step
//! annotations and the collective metadata are kept, compactly
//! ([`GpuOp`]: interned names, integer ns).
//! No JSON value of the file is ever built. Times are converted from the
//! decimal text (`lex::parse_decimal_scaled`, µs → ns, exact, rounded
//! half-up below the nanosecond). Every skipped event is a located
//! diagnostic (capped per file, [`DiagSink`]); a truncated file keeps what
//! was read before the cut and says where it ends.
//!
//! [`to_run`] makes one [`MeasuredRun`] of the rank files of one job: one
//! iteration (a `ProfilerStep#N` present on every rank; by default the
//! last one, else the one asked for), its GPU ops per rank as
//! [`MeasuredOp`]s with their stream, NCCL kernels as collectives,
//! each op with the part of training that launched it (forward, backward,
//! optimizer: [`launch_phases`], from the launching host thread and the
//! CPU op around the launch) and a micro-batch number inferred from the
//! order of forward and backward runs ([`number_micro_batches`]).

use crate::diag::{Diagnostic, Location, Severity};
use crate::formats::lex::{self, DiagSink};
use crate::workload::Format;
use crate::workload::{
    CommGroup, CommKind, MeasuredIteration, MeasuredOp, MeasuredRun, OpKind, ParallelConfig,
    RankTrace, Span, TrainingPhase,
};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// The two bytes every gzip stream starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Largest decompressed size accepted (a bigger trace is cut with an error).
pub const MAX_DECOMPRESSED_BYTES: u64 = 16 << 30;

/// Whether `bytes` is a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// Decompress a gzip'd file (all members). A damaged or truncated stream
/// keeps what decompressed before the damage and returns an error saying so.
pub fn gunzip(file: &str, bytes: &[u8]) -> (Vec<u8>, Option<Diagnostic>) {
    use std::io::Read;
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4).min(1 << 30));
    let decoder = flate2::read::MultiGzDecoder::new(bytes);
    let mut limited = decoder.take(MAX_DECOMPRESSED_BYTES + 1);
    let err = match limited.read_to_end(&mut out) {
        Ok(_) if out.len() as u64 > MAX_DECOMPRESSED_BYTES => {
            out.truncate(MAX_DECOMPRESSED_BYTES as usize);
            Some(Diagnostic::error(format!(
                "`{file}` decompresses to more than {} GiB; the rest is not read",
                MAX_DECOMPRESSED_BYTES >> 30
            )))
        }
        Ok(_) => None,
        Err(e) => Some(
            Diagnostic::error(format!(
                "`{file}`: the gzip stream is damaged or cut short after {} decompressed bytes ({e})",
                out.len()
            ))
            .with_hint("the file may be truncated (an interrupted copy or a profiler killed while writing); what decompressed before the damage is read"),
        ),
    };
    (out, err)
}

/// Detection: a JSON object with `traceEvents` and a Kineto marker.
/// Returns the confidence and the reason.
pub fn looks_like(head: &str) -> Option<(u8, String)> {
    let t = head.trim_start();
    if !t.starts_with('{') && !t.starts_with('[') {
        return None;
    }
    let events = head.contains("\"traceEvents\"");
    let markers = [
        "\"schemaVersion\"",
        "\"distributedInfo\"",
        "\"deviceProperties\"",
        "ProfilerStep#",
        "\"cat\": \"kernel\"",
        "\"cat\":\"kernel\"",
        "\"cpu_op\"",
    ];
    let found = markers.iter().filter(|m| head.contains(**m)).count();
    match (events, found) {
        (true, f) if f >= 2 => Some((
            100,
            format!("a JSON object with `traceEvents` and {f} PyTorch profiler markers"),
        )),
        (true, _) => Some((
            70,
            "a JSON object with `traceEvents` (a Chrome trace; no PyTorch profiler marker seen)"
                .to_string(),
        )),
        (false, f) if f >= 2 => Some((
            50,
            format!("{f} PyTorch profiler markers but no `traceEvents` in the first 64 KiB"),
        )),
        _ => None,
    }
}

/// What a kept GPU op is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
    /// An NCCL kernel (collective or point-to-point).
    Nccl,
}

/// The collective facts of an NCCL kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommMeta {
    pub kind: CommKind,
    /// Bytes of the collective's whole buffer: the larger of `In msg nelems`
    /// and `Out msg nelems` times the element size (an all-gather's output,
    /// a reduce-scatter's input), when known.
    pub message_bytes: Option<u64>,
    pub dtype: Option<String>,
    /// `Process Group Name`.
    pub group_name: Option<String>,
    /// `Process Group Ranks`, when listed in full.
    pub group_ranks: Option<Vec<u32>>,
    /// `Group size` (or the number of listed ranks).
    pub group_size: Option<u32>,
}

/// One GPU op as kept by the parser (compact; names interned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuOp {
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Index into [`KinetoTrace::names`].
    pub name: u32,
    pub device: u32,
    pub stream: u32,
    pub kind: GpuKind,
    /// Index into [`KinetoTrace::comms`] (NCCL kernels).
    pub comm: Option<u32>,
    /// The part of training that launched it, from the host side
    /// (see `launch_phases`); `None` when the trace does not tell.
    pub phase: Option<TrainingPhase>,
}

/// A `ProfilerStep#N` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepSpan {
    pub number: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// On a GPU stream (`gpu_user_annotation`) rather than the host.
    pub gpu: bool,
    /// The extent is the host step's duration placed on the GPU (steps
    /// whose launched work interleaves): a GPU op starting inside it that
    /// runs past its end does not lengthen it.
    pub marked: bool,
}

/// Counts of what the file held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct KinetoCounts {
    /// Elements of `traceEvents`.
    pub events: u64,
    pub kernels: u64,
    pub memcpy: u64,
    pub memset: u64,
    /// NCCL kernels.
    pub collectives: u64,
    /// GPU user annotations other than `ProfilerStep#N`.
    pub gpu_annotations: u64,
    /// `record_param_comms` CPU ops (collective metadata).
    pub param_comms: u64,
    /// Host events read for context only (CPU ops, runtime calls, flows,
    /// metadata, instants, counters).
    pub host_events: u64,
    /// Events skipped with a diagnostic.
    pub skipped: u64,
}

/// One parsed Kineto file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KinetoTrace {
    pub file: String,
    /// The file was gzip'd.
    pub gzip: bool,
    pub schema_version: Option<u64>,
    /// `distributedInfo.rank` / `world_size` / `backend`.
    pub rank: Option<u32>,
    pub world: Option<u32>,
    pub backend: Option<String>,
    /// GPU model from `deviceProperties` (first device).
    pub device_name: Option<String>,
    /// Interned op names.
    pub names: Vec<String>,
    /// GPU ops in file order.
    pub ops: Vec<GpuOp>,
    pub comms: Vec<CommMeta>,
    /// `ProfilerStep#N` annotations (host and GPU), in file order.
    pub steps: Vec<StepSpan>,
    pub counts: KinetoCounts,
    pub diagnostics: Vec<Diagnostic>,
}

impl KinetoTrace {
    /// The `ProfilerStep` numbers found, ascending, distinct.
    pub fn step_numbers(&self) -> Vec<u32> {
        let s: BTreeSet<u32> = self.steps.iter().map(|s| s.number).collect();
        s.into_iter().collect()
    }

    /// The span of step `n` on this rank: the GPU annotation when there is
    /// one (it covers the GPU work), else the host one.
    pub fn step_span(&self, n: u32) -> Option<StepSpan> {
        let of = |gpu: bool| {
            self.steps
                .iter()
                .filter(|s| s.number == n && s.gpu == gpu)
                .fold(None, |acc: Option<StepSpan>, s| {
                    Some(match acc {
                        None => *s,
                        Some(a) => StepSpan {
                            start_ns: a.start_ns.min(s.start_ns),
                            end_ns: a.end_ns.max(s.end_ns),
                            ..a
                        },
                    })
                })
        };
        of(true).or_else(|| of(false))
    }

    /// The name of op `op`.
    pub fn name_of(&self, op: &GpuOp) -> &str {
        self.names.get(op.name as usize).map_or("", String::as_str)
    }
}

// ---------------------------------------------------------------------------
// Streaming reader

/// Line numbers of byte offsets, counted forward once (offsets of kept
/// diagnostics grow through the file, so the cost is linear overall).
struct Lines<'a> {
    text: &'a str,
    pos: usize,
    line: u32,
    line_start: usize,
}

impl<'a> Lines<'a> {
    fn locate(&mut self, file: &str, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        if offset < self.pos {
            self.pos = 0;
            self.line = 1;
            self.line_start = 0;
        }
        let bytes = self.text.as_bytes();
        for (i, b) in bytes[self.pos..offset].iter().enumerate() {
            if *b == b'\n' {
                self.line = self.line.saturating_add(1);
                self.line_start = self.pos + i + 1;
            }
        }
        self.pos = offset;
        let end = bytes[offset..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |p| offset + p);
        let line_text = &self.text[self.line_start..end];
        lex::location(file, self.line, line_text, offset - self.line_start)
    }
}

/// The fields of one trace event that are looked at, read in the one pass
/// over `traceEvents` ([`ElementSeed`]): each value a borrowed raw slice of
/// the text (a JSON `null` counts as absent); `ph`, `cat` and `name` are
/// decoded as strings by [`State::event`], `args` only for an event the
/// checks on them keep.
#[derive(Default)]
struct RawEvent<'a> {
    ph: Option<&'a RawValue>,
    cat: Option<&'a RawValue>,
    name: Option<&'a RawValue>,
    pid: Option<&'a RawValue>,
    tid: Option<&'a RawValue>,
    ts: Option<&'a RawValue>,
    dur: Option<&'a RawValue>,
    args: Option<&'a RawValue>,
    /// The first and the last value of the object (to locate the event
    /// and the element after it).
    first: Option<&'a RawValue>,
    last: Option<&'a RawValue>,
    /// A field given twice (the event is refused, as a strict reader would).
    duplicate: Option<&'static str>,
}

/// One element of `traceEvents`: an event object, or anything else (its
/// text, and the element itself when it is a string of the file).
enum Element<'a> {
    Event(RawEvent<'a>),
    NotObject(String, Option<&'a str>),
}

/// The keys of [`RawEvent`].
#[derive(Clone, Copy)]
enum Key {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl Key {
    fn name(self) -> &'static str {
        match self {
            Key::Ph => "ph",
            Key::Cat => "cat",
            Key::Name => "name",
            Key::Pid => "pid",
            Key::Tid => "tid",
            Key::Ts => "ts",
            Key::Dur => "dur",
            Key::Args => "args",
            Key::Other => "",
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
        Ok(match k {
            "ph" => Key::Ph,
            "cat" => Key::Cat,
            "name" => Key::Name,
            "pid" => Key::Pid,
            "tid" => Key::Tid,
            "ts" => Key::Ts,
            "dur" => Key::Dur,
            "args" => Key::Args,
            _ => Key::Other,
        })
    }
}

/// Reads one element of `traceEvents` in a single pass: an object's
/// fields as raw slices, anything else as its text.
struct ElementSeed;

impl<'de> DeserializeSeed<'de> for ElementSeed {
    type Value = Element<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Element<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ElementSeed {
    type Value = Element<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Element<'de>, M::Error> {
        let mut ev = RawEvent::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let v: &'de RawValue = map.next_value()?;
            ev.first.get_or_insert(v);
            ev.last = Some(v);
            let slot = match key {
                Key::Ph => &mut ev.ph,
                Key::Cat => &mut ev.cat,
                Key::Name => &mut ev.name,
                Key::Pid => &mut ev.pid,
                Key::Tid => &mut ev.tid,
                Key::Ts => &mut ev.ts,
                Key::Dur => &mut ev.dur,
                Key::Args => &mut ev.args,
                Key::Other => continue,
            };
            if slot.is_some() {
                ev.duplicate.get_or_insert(key.name());
            }
            if v.get() != "null" {
                *slot = Some(v);
            }
        }
        Ok(Element::Event(ev))
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Element<'de>, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Element::NotObject("[...]".to_string(), None))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(format!("\"{v}\""), Some(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(format!("\"{v}\""), None))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(v.to_string(), None))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(v.to_string(), None))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(v.to_string(), None))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Element<'de>, E> {
        Ok(Element::NotObject(v.to_string(), None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Element<'de>, E> {
        Ok(Element::NotObject("null".to_string(), None))
    }
}

/// A raw JSON string's text: borrowed when it has no escapes; `Err` when
/// the value is not a string.
fn raw_str(raw: Option<&RawValue>) -> Result<Cow<'_, str>, ()> {
    let Some(raw) = raw else {
        return Ok(Cow::Borrowed(""));
    };
    let t = raw.get();
    match t.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Ok(Cow::Borrowed(inner)),
        Some(_) => serde_json::from_str::<String>(t)
            .map(Cow::Owned)
            .map_err(|_| ()),
        None => Err(()),
    }
}

/// The one argument of a runtime call (`cudaLaunchKernel`, ...) kept.
#[derive(Deserialize)]
struct LaunchArgs<'a> {
    #[serde(borrow)]
    correlation: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct RawArgs<'a> {
    #[serde(rename = "External id", borrow)]
    external_id: Option<&'a RawValue>,
    #[serde(rename = "Collective name", borrow)]
    collective: Option<Cow<'a, str>>,
    #[serde(rename = "In msg nelems", borrow)]
    in_nelems: Option<&'a RawValue>,
    #[serde(rename = "Out msg nelems", borrow)]
    out_nelems: Option<&'a RawValue>,
    #[serde(borrow)]
    dtype: Option<Cow<'a, str>>,
    #[serde(rename = "Process Group Name", borrow)]
    pg_name: Option<Cow<'a, str>>,
    #[serde(rename = "Process Group Ranks", borrow)]
    pg_ranks: Option<&'a RawValue>,
    #[serde(rename = "Group size", borrow)]
    group_size: Option<&'a RawValue>,
    #[serde(borrow)]
    stream: Option<&'a RawValue>,
    #[serde(borrow)]
    device: Option<&'a RawValue>,
    /// Joins a GPU op to the runtime call (`cudaLaunchKernel`, ...) that
    /// launched it.
    #[serde(borrow)]
    correlation: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawDistributed {
    rank: Option<u32>,
    world_size: Option<u32>,
    backend: Option<String>,
}

#[derive(Deserialize)]
struct RawDevice {
    name: Option<String>,
}

/// A runtime call that launched GPU work: its host time (ns) and thread.
#[derive(Clone, Copy)]
struct Launch {
    at_ns: u64,
    thread: Option<u64>,
}

/// A host region (a CPU op or annotation) whose name says which part of
/// training ran inside it: `Optimizer.step#...` / `Optimizer.zero_grad#...`
/// (the optimizer), `autograd::engine::evaluate_function: ...` (backward).
#[derive(Clone, Copy)]
struct Region {
    thread: u64,
    start_ns: u64,
    end_ns: u64,
    phase: TrainingPhase,
}

/// The part of training a host region's name says, if any.
fn region_phase(name: &str) -> Option<TrainingPhase> {
    if name.starts_with("Optimizer.step") || name.starts_with("Optimizer.zero_grad") {
        Some(TrainingPhase::Optimizer)
    } else if name.starts_with("autograd::engine::evaluate_function") {
        Some(TrainingPhase::Backward)
    } else {
        None
    }
}

/// A GPU op whose collective metadata may come from a CPU op.
struct Pending {
    op: GpuOp,
    external_id: Option<u64>,
    kernel_kind: Option<CommKind>,
    /// `correlation` of the runtime call that launched it.
    correlation: Option<u64>,
}

struct State<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines<'a>,
    sink: DiagSink,
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    pending: Vec<Pending>,
    comms: Vec<CommMeta>,
    /// `record_param_comms` metadata by `External id`.
    param_comms: BTreeMap<u64, CommMeta>,
    steps: Vec<StepSpan>,
    /// Host time (ns) and thread of each runtime call by `correlation`:
    /// when a GPU op was launched (which tells the host step it belongs
    /// to) and from which thread (which tells forward from backward).
    launches: HashMap<u64, Launch>,
    /// Host threads that ran a `ProfilerStep#N` annotation.
    step_threads: BTreeSet<u64>,
    /// Host regions that name a part of training (optimizer, autograd).
    regions: Vec<Region>,
    counts: KinetoCounts,
    schema_version: Option<u64>,
    distributed: Option<RawDistributed>,
    device_name: Option<String>,
    saw_events: bool,
    /// About where the next element of `traceEvents` starts: after the
    /// last one read (to locate an element that is not an object).
    next_at: usize,
}

impl<'a> State<'a> {
    fn offset(&self, raw: &str) -> usize {
        lex::offset_in(self.text, raw)
    }

    fn skip(&mut self, offset: usize, severity: Severity, message: String, hint: Option<&str>) {
        if severity == Severity::Error {
            self.counts.skipped += 1;
        }
        let file = self.file;
        let lines = &mut self.lines;
        self.sink.push_with(severity, || {
            let d = match severity {
                Severity::Error => Diagnostic::error(message),
                Severity::Warning => Diagnostic::warning(message),
            }
            .at(lines.locate(file, offset));
            match hint {
                Some(h) => d.with_hint(h),
                None => d,
            }
        });
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.name_ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        id
    }

    fn event(&mut self, element: Element<'a>) {
        self.counts.events += 1;
        let ev = match element {
            Element::Event(ev) => ev,
            Element::NotObject(text, at) => {
                // A string of the file is located exactly; another value
                // where the element after the last located one starts
                // (the array's start before any: the file's start).
                let at = at.map_or_else(
                    || {
                        let rest = &self.text.as_bytes()[self.next_at.min(self.text.len())..];
                        let skip = rest
                            .iter()
                            .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b','))
                            .unwrap_or(rest.len());
                        self.next_at + skip
                    },
                    |t| self.offset(t).saturating_sub(1),
                );
                self.next_at = at + text.len();
                self.skip(
                    at,
                    Severity::Error,
                    format!(
                        "a trace event must be a JSON object, found `{}`",
                        lex::quote(&text, 40)
                    ),
                    None,
                );
                return;
            }
        };
        // The event's `{`: the last one before its first value (keys hold
        // no braces in practice).
        let at = ev.first.map_or(self.next_at, |f| {
            let off = self.offset(f.get());
            self.text[..off].rfind('{').unwrap_or(off)
        });
        if let Some(last) = ev.last {
            let end = self.offset(last.get()) + last.get().len();
            self.next_at = self.text[end..].find('}').map_or(end, |p| end + p + 1);
        }
        if let Some(field) = ev.duplicate {
            self.skip(
                at,
                Severity::Error,
                format!("unreadable trace event (duplicate field `{field}`)"),
                None,
            );
            return;
        }
        let (Ok(ph), Ok(cat), Ok(name)) = (raw_str(ev.ph), raw_str(ev.cat), raw_str(ev.name))
        else {
            let field = [("ph", ev.ph), ("cat", ev.cat), ("name", ev.name)]
                .into_iter()
                .find(|(_, r)| raw_str(*r).is_err())
                .map_or("ph", |(f, _)| f);
            self.skip(
                at,
                Severity::Error,
                format!("unreadable trace event (`{field}` must be a string)"),
                None,
            );
            return;
        };
        let (ph, cat, name) = (ph.as_ref(), cat.as_ref(), name.as_ref());
        if ph != "X" {
            self.counts.host_events += 1;
            return;
        }
        let gpu_kind = match cat {
            "kernel" | "Kernel" => Some(GpuKind::Kernel),
            "gpu_memcpy" | "Memcpy" => Some(GpuKind::Memcpy),
            "gpu_memset" | "Memset" => Some(GpuKind::Memset),
            _ => None,
        };
        let step = name.strip_prefix("ProfilerStep#").map(|n| {
            lex::parse_u64_exact(n)
                .ok()
                .and_then(|v| u32::try_from(v).ok())
        });
        let is_gpu_annotation = cat == "gpu_user_annotation";
        let is_param_comms = name == "record_param_comms";
        if matches!(cat, "cuda_runtime" | "cuda_driver") {
            self.counts.host_events += 1;
            let correlation = ev
                .args
                .and_then(|raw| serde_json::from_str::<LaunchArgs<'_>>(raw.get()).ok())
                .and_then(|a| a.correlation)
                .and_then(|r| id_value(r.get()));
            let launched = ev
                .ts
                .and_then(|ts| lex::parse_decimal_scaled(ts.get(), 3).ok());
            if let (Some(c), Some(t)) = (correlation, launched) {
                let thread = ev.tid.and_then(|r| id_value(r.get()));
                self.launches.insert(c, Launch { at_ns: t, thread });
            }
            return;
        }
        if matches!(cat, "cpu_op" | "user_annotation") {
            if let Some(phase) = region_phase(name) {
                self.counts.host_events += 1;
                let ts = ev
                    .ts
                    .and_then(|t| lex::parse_decimal_scaled(t.get(), 3).ok());
                let dur = ev
                    .dur
                    .and_then(|d| lex::parse_decimal_scaled(d.get(), 3).ok());
                let thread = ev.tid.and_then(|r| id_value(r.get()));
                if let (Some(start_ns), Some(dur), Some(thread)) = (ts, dur, thread) {
                    self.regions.push(Region {
                        thread,
                        start_ns,
                        end_ns: start_ns.saturating_add(dur),
                        phase,
                    });
                }
                return;
            }
        }
        if gpu_kind.is_none() && step.is_none() && !is_gpu_annotation && !is_param_comms {
            self.counts.host_events += 1;
            return;
        }
        // Times.
        let (start_ns, duration_ns) = match (ev.ts, ev.dur) {
            (Some(ts), Some(dur)) => {
                let t = lex::parse_decimal_scaled(ts.get(), 3);
                let d = lex::parse_decimal_scaled(dur.get(), 3);
                match (t, d) {
                    (Ok(t), Ok(d)) => (t, d),
                    (Err(why), _) => {
                        let off = self.offset(ts.get());
                        self.skip(
                            off,
                            Severity::Error,
                            format!(
                                "`{}`: `ts` must be a non-negative number of microseconds ({why})",
                                lex::quote(name, 60)
                            ),
                            None,
                        );
                        return;
                    }
                    (_, Err(why)) => {
                        let off = self.offset(dur.get());
                        self.skip(
                            off,
                            Severity::Error,
                            format!(
                                "`{}`: `dur` must be a non-negative number of microseconds ({why})",
                                lex::quote(name, 60)
                            ),
                            None,
                        );
                        return;
                    }
                }
            }
            _ => {
                self.skip(
                    at,
                    Severity::Error,
                    format!(
                        "`{}` ({cat}) has no {}: a complete event needs both `ts` and `dur`",
                        lex::quote(name, 60),
                        if ev.ts.is_none() { "`ts`" } else { "`dur`" }
                    ),
                    None,
                );
                return;
            }
        };
        let args: RawArgs<'_> = match ev.args.map(|raw| serde_json::from_str(raw.get())) {
            None => RawArgs::default(),
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                let off = ev.args.map_or(at, |raw| self.offset(raw.get()));
                self.skip(
                    off,
                    Severity::Error,
                    format!("`{}`: unreadable `args` ({e})", lex::quote(name, 60)),
                    None,
                );
                return;
            }
        };
        if let Some(step) = step {
            if gpu_kind.is_none() {
                if !is_gpu_annotation {
                    if let Some(thread) = ev.tid.and_then(|r| id_value(r.get())) {
                        self.step_threads.insert(thread);
                    }
                }
                match step {
                    Some(number) => self.steps.push(StepSpan {
                        number,
                        start_ns,
                        end_ns: start_ns.saturating_add(duration_ns),
                        gpu: is_gpu_annotation,
                        marked: false,
                    }),
                    None => self.skip(
                        at,
                        Severity::Warning,
                        format!(
                            "`{}`: the step number is not a whole number; this annotation is not used as an iteration",
                            lex::quote(name, 60)
                        ),
                        None,
                    ),
                }
                return;
            }
        }
        if is_gpu_annotation {
            self.counts.gpu_annotations += 1;
            return;
        }
        if is_param_comms && gpu_kind.is_none() {
            self.counts.param_comms += 1;
            self.counts.host_events += 1;
            let Some(ext) = args.external_id.and_then(|r| id_value(r.get())) else {
                return;
            };
            if let Some(meta) = self.comm_meta(None, &args) {
                self.param_comms.insert(ext, meta);
            }
            return;
        }
        let Some(mut kind) = gpu_kind else {
            return;
        };
        let device = ev
            .pid
            .and_then(|r| id_value(r.get()))
            .or_else(|| args.device.and_then(|r| id_value(r.get())));
        let stream = ev
            .tid
            .and_then(|r| id_value(r.get()))
            .or_else(|| args.stream.and_then(|r| id_value(r.get())));
        let (Some(device), Some(stream)) = (device, stream) else {
            self.skip(
                at,
                Severity::Error,
                format!(
                    "GPU event `{}` names no device (`pid`) or stream (`tid`)",
                    lex::quote(name, 60)
                ),
                None,
            );
            return;
        };
        let nccl = name.starts_with("nccl") || args.collective.is_some();
        let kernel_kind = if nccl {
            kind = GpuKind::Nccl;
            kind_from_kernel_name(name)
        } else {
            None
        };
        match kind {
            GpuKind::Kernel => self.counts.kernels += 1,
            GpuKind::Memcpy => self.counts.memcpy += 1,
            GpuKind::Memset => self.counts.memset += 1,
            GpuKind::Nccl => self.counts.collectives += 1,
        }
        // Without its own collective args, the kernel is joined to its
        // `record_param_comms` op once the whole file is read.
        let comm = if nccl && args.collective.is_some() {
            match self.comm_meta(kernel_kind, &args) {
                Some(meta) => {
                    self.comms.push(meta);
                    Some(u32::try_from(self.comms.len() - 1).unwrap_or(u32::MAX))
                }
                None => None,
            }
        } else {
            None
        };
        let name_id = self.intern(name);
        let external_id = args.external_id.and_then(|r| id_value(r.get()));
        let correlation = args.correlation.and_then(|r| id_value(r.get()));
        self.pending.push(Pending {
            op: GpuOp {
                start_ns,
                duration_ns,
                name: name_id,
                device: u32::try_from(device).unwrap_or(u32::MAX),
                stream: u32::try_from(stream).unwrap_or(u32::MAX),
                kind,
                comm,
                phase: None,
            },
            external_id,
            kernel_kind,
            correlation,
        });
    }

    /// The collective metadata in `args`, if they name a collective (or the
    /// kernel name did).
    fn comm_meta(&mut self, from_name: Option<CommKind>, args: &RawArgs<'_>) -> Option<CommMeta> {
        let from_args = args
            .collective
            .as_deref()
            .and_then(kind_from_collective_name);
        let kind = from_args.or(from_name)?;
        let nelems = |r: Option<&RawValue>| r.and_then(|v| id_value(v.get()));
        let elems = match (nelems(args.in_nelems), nelems(args.out_nelems)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let dtype = args.dtype.as_deref().map(str::to_string);
        let message_bytes = match (elems, dtype.as_deref().and_then(dtype_bytes)) {
            (Some(n), Some(s)) => n.checked_mul(s),
            _ => None,
        };
        let group_ranks = args.pg_ranks.and_then(|r| parse_ranks(r.get()));
        let group_size = args
            .group_size
            .and_then(|r| id_value(r.get()))
            .and_then(|v| u32::try_from(v).ok())
            .or_else(|| {
                group_ranks
                    .as_ref()
                    .and_then(|r| u32::try_from(r.len()).ok())
            });
        Some(CommMeta {
            kind,
            message_bytes,
            dtype,
            group_name: args.pg_name.as_deref().map(str::to_string),
            group_ranks,
            group_size,
        })
    }
}

/// An integer id or count written as a number (`7`, `7.0`) or a string
/// (`"7"`, `"stream 7"`: the trailing digits).
fn id_value(raw: &str) -> Option<u64> {
    let t = raw.trim();
    if let Some(s) = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        let digits: String = s
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return digits.parse().ok();
    }
    lex::parse_u64_exact(t).ok()
}

/// `"[0, 1, 2]"` or `[0, 1, 2]`; `None` when cut (`...`) or unreadable.
fn parse_ranks(raw: &str) -> Option<Vec<u32>> {
    let t = raw.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(t);
    let inner = t.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|p| p.trim().parse::<u32>().ok())
        .collect()
}

/// Element size of a dtype as the profiler writes it (`Float`, `BFloat16`,
/// c10 `ScalarType` names) or as `torch.*` names.
pub fn dtype_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "Double" | "Long" | "ComplexFloat" | "UInt64" => 8,
        "Float" | "Int" | "UInt32" | "ComplexHalf" => 4,
        "Half" | "BFloat16" | "Short" | "UInt16" => 2,
        "Byte" | "Char" | "Bool" | "Float8_e4m3fn" | "Float8_e5m2" | "Float8_e4m3fnuz"
        | "Float8_e5m2fnuz" => 1,
        "ComplexDouble" => 16,
        other => return crate::workload::dtype_size_bytes(other),
    })
}

/// The collective of a `Collective name` arg (`allreduce`,
/// `_allgather_base`, `reduce_scatter_tensor`, `all_to_allv`, ...).
pub fn kind_from_collective_name(name: &str) -> Option<CommKind> {
    let n: String = name
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    Some(
        if n.contains("allreduce") || n == "barrier" || n == "reduce" {
            CommKind::AllReduce
        } else if n.contains("allgather") {
            CommKind::AllGather
        } else if n.contains("reducescatter") {
            CommKind::ReduceScatter
        } else if n.contains("alltoall") {
            CommKind::AllToAll
        } else if n.contains("broadcast") {
            CommKind::Broadcast
        } else if n.starts_with("send") || n.starts_with("isend") {
            CommKind::Send
        } else if n.starts_with("recv") || n.starts_with("irecv") {
            CommKind::Recv
        } else {
            return None;
        },
    )
}

/// The collective of an NCCL kernel name (`ncclDevKernel_AllReduce_Sum_...`,
/// `ncclKernel_AllGather_RING_LL_Sum_int8_t`, `ncclDevKernel_SendRecv`).
/// Send/receive kernels are sends here (NCCL runs both directions in one).
pub fn kind_from_kernel_name(name: &str) -> Option<CommKind> {
    let rest = name
        .strip_prefix("ncclDevKernel_")
        .or_else(|| name.strip_prefix("ncclKernel_"))?;
    let head = rest.split(['_', '(', '<']).next().unwrap_or("");
    Some(match head {
        "AllReduce" | "Reduce" => CommKind::AllReduce,
        "AllGather" => CommKind::AllGather,
        "ReduceScatter" => CommKind::ReduceScatter,
        "AllToAll" | "AlltoAll" => CommKind::AllToAll,
        "Broadcast" => CommKind::Broadcast,
        "SendRecv" | "Send" => CommKind::Send,
        "Recv" => CommKind::Recv,
        _ => return None,
    })
}

/// How often (in events) [`parse_text_with_progress`] reports.
pub const PROGRESS_EVERY_EVENTS: u64 = 8192;

/// The parse state and the caller's progress callback (bytes read, total).
struct TopSeed<'s, 'a>(&'s mut State<'a>, &'s mut dyn FnMut(u64, u64));

impl<'de, 's> DeserializeSeed<'de> for TopSeed<'s, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 's> Visitor<'de> for TopSeed<'s, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a PyTorch profiler trace (a JSON object with `traceEvents`)")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "traceEvents" => {
                    self.0.saw_events = true;
                    map.next_value_seed(EventsSeed(&mut *self.0, &mut *self.1))?;
                }
                "schemaVersion" => {
                    let raw: &RawValue = map.next_value()?;
                    self.0.schema_version = id_value(raw.get());
                }
                "distributedInfo" => {
                    let raw: &RawValue = map.next_value()?;
                    match serde_json::from_str::<RawDistributed>(raw.get()) {
                        Ok(d) => self.0.distributed = Some(d),
                        Err(e) => {
                            let at = self.0.offset(raw.get());
                            self.0.skip(
                                at,
                                Severity::Warning,
                                format!("`distributedInfo` is unreadable ({e}); rank and world size are unknown"),
                                None,
                            );
                        }
                    }
                }
                "deviceProperties" => {
                    let raw: &RawValue = map.next_value()?;
                    if let Ok(list) = serde_json::from_str::<Vec<RawDevice>>(raw.get()) {
                        self.0.device_name = list.into_iter().find_map(|d| d.name);
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<(), S::Error> {
        // The older Chrome trace form: a bare array of events.
        self.0.saw_events = true;
        EventsSeed(self.0, self.1).visit_seq(seq)
    }
}

struct EventsSeed<'s, 'a>(&'s mut State<'a>, &'s mut dyn FnMut(u64, u64));

impl<'de, 's> DeserializeSeed<'de> for EventsSeed<'s, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 's> Visitor<'de> for EventsSeed<'s, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while let Some(element) = seq.next_element_seed(ElementSeed)? {
            self.0.event(element);
            if self.0.counts.events.is_multiple_of(PROGRESS_EVERY_EVENTS) {
                (self.1)(self.0.next_at as u64, self.0.text.len() as u64);
            }
        }
        Ok(())
    }
}

/// Parse one Kineto file (gzip'd or not). `Err` only when nothing at all
/// could be read (not JSON, no `traceEvents`); a file cut short keeps the
/// events before the cut with a located error.
pub fn parse(file: &str, bytes: &[u8]) -> Result<KinetoTrace, Diagnostic> {
    let gzip = is_gzip(bytes);
    let (owned, gz_err) = if gzip {
        let (b, e) = gunzip(file, bytes);
        (Some(b), e)
    } else {
        (None, None)
    };
    let data: &[u8] = owned.as_deref().unwrap_or(bytes);
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let text: Cow<'_, str> = match std::str::from_utf8(data) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(String::from_utf8_lossy(data).into_owned()),
    };
    let mut trace = parse_text(file, &text, gz_err)?;
    trace.gzip = gzip;
    if matches!(text, Cow::Owned(_)) {
        trace.diagnostics.insert(
            0,
            Diagnostic::warning(format!(
                "`{file}` is not valid UTF-8; invalid bytes were replaced with U+FFFD"
            )),
        );
    }
    Ok(trace)
}

/// Parse the decompressed text of one Kineto file.
pub fn parse_text(
    file: &str,
    text: &str,
    decompress_error: Option<Diagnostic>,
) -> Result<KinetoTrace, Diagnostic> {
    parse_text_with_progress(file, text, decompress_error, &mut |_, _| {})
}

/// [`parse_text`], calling `progress(bytes read, total bytes)` of the text
/// every [`PROGRESS_EVERY_EVENTS`] events and once at the end (bytes read
/// = total), so a front end can show progress within one large file.
pub fn parse_text_with_progress(
    file: &str,
    text: &str,
    decompress_error: Option<Diagnostic>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<KinetoTrace, Diagnostic> {
    let mut st = State {
        file,
        text,
        lines: Lines {
            text,
            pos: 0,
            line: 1,
            line_start: 0,
        },
        sink: DiagSink::default(),
        names: Vec::new(),
        name_ids: HashMap::new(),
        pending: Vec::new(),
        comms: Vec::new(),
        param_comms: BTreeMap::new(),
        steps: Vec::new(),
        launches: HashMap::new(),
        step_threads: BTreeSet::new(),
        regions: Vec::new(),
        counts: KinetoCounts::default(),
        schema_version: None,
        distributed: None,
        device_name: None,
        saw_events: false,
        next_at: 0,
    };
    let mut truncated = decompress_error.is_some();
    if let Some(d) = decompress_error {
        st.sink.push(d);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let result = TopSeed(&mut st, &mut *progress)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    progress(text.len() as u64, text.len() as u64);
    if let Err(e) = result {
        let line = u32::try_from(e.line()).unwrap_or(u32::MAX).max(1);
        let cut = e.is_eof();
        let message = if cut {
            format!("`{file}` ends in the middle of the JSON (line {line}); the events before the cut are read")
        } else {
            format!("JSON syntax error: {e}")
        };
        let loc = error_location(file, text, e.line(), e.column());
        let d = Diagnostic::error(message).at(loc);
        let d = if cut {
            d.with_hint("the trace looks truncated (an interrupted copy or a profiler killed while writing)")
        } else {
            d
        };
        if !st.saw_events || (st.counts.events == 0 && !cut) {
            return Err(d);
        }
        st.sink.push(d);
        truncated = true;
    }
    if !st.saw_events {
        return Err(Diagnostic::error(format!(
            "`{file}` has no `traceEvents`: it is not a PyTorch profiler trace"
        ))
        .with_hint("export the trace with torch.profiler (`export_chrome_trace` or `tensorboard_trace_handler`)"));
    }
    // Join NCCL kernels without their own metadata to the
    // `record_param_comms` op they were launched from.
    let mut ops = Vec::with_capacity(st.pending.len());
    let pending = std::mem::take(&mut st.pending);
    launched_step_spans(&mut st.steps, &pending, &st.launches);
    let phases = launch_phases(&pending, &st.launches, &st.step_threads, &st.regions);
    st.launches = HashMap::new();
    st.regions = Vec::new();
    let mut unjoined = 0u64;
    for (p, phase) in pending.into_iter().zip(phases) {
        let mut op = p.op;
        op.phase = phase;
        if op.kind == GpuKind::Nccl && op.comm.is_none() {
            match p.external_id.and_then(|x| st.param_comms.get(&x)) {
                Some(meta) => {
                    st.comms.push(meta.clone());
                    op.comm = Some(u32::try_from(st.comms.len() - 1).unwrap_or(u32::MAX));
                }
                None => match p.kernel_kind {
                    Some(kind) => {
                        unjoined += 1;
                        st.comms.push(CommMeta {
                            kind,
                            message_bytes: None,
                            dtype: None,
                            group_name: None,
                            group_ranks: None,
                            group_size: None,
                        });
                        op.comm = Some(u32::try_from(st.comms.len() - 1).unwrap_or(u32::MAX));
                    }
                    None => unjoined += 1,
                },
            }
        }
        ops.push(op);
    }
    if unjoined > 0 {
        st.sink.push(Diagnostic::warning(format!(
            "{unjoined} NCCL kernel(s) carry no collective arguments and match no `record_param_comms` op by `External id`: their message size and process group are unknown"
        )));
    }
    // A cut file: a step ending after the last GPU work read may have lost
    // its tail; it is not offered as an iteration.
    if truncated {
        let last_end = ops
            .iter()
            .map(|o: &GpuOp| o.start_ns.saturating_add(o.duration_ns))
            .max()
            .unwrap_or(0);
        let before = st.steps.len();
        let mut cut_steps: Vec<u32> = st
            .steps
            .iter()
            .filter(|s| s.end_ns > last_end)
            .map(|s| s.number)
            .collect();
        st.steps.retain(|s| s.end_ns <= last_end);
        cut_steps.dedup();
        if st.steps.len() < before {
            let list: Vec<String> = cut_steps.iter().map(u32::to_string).collect();
            st.sink.push(Diagnostic::warning(format!(
                "`{file}` is cut: ProfilerStep {} end(s) after the last GPU work read and may be incomplete; not used as iterations",
                list.join(", ")
            )));
        }
    }
    let dist = st.distributed.take();
    if dist.is_none() {
        st.sink.push(
            Diagnostic::warning(format!(
                "`{file}` has no `distributedInfo`: its rank and the world size are unknown"
            ))
            .with_hint("PyTorch writes `distributedInfo` when torch.distributed is initialised before profiling"),
        );
    }
    if ops.is_empty() {
        st.sink.push(
            Diagnostic::error(format!(
                "`{file}` holds no GPU kernel, memcpy or memset event: nothing to analyse"
            ))
            .with_hint("profile with `activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]` so the trace records GPU work"),
        );
    }
    if st.steps.is_empty() {
        st.sink.push(
            Diagnostic::warning(format!(
            "`{file}` has no `ProfilerStep#N` annotation: the whole trace is taken as one iteration"
        ))
            .with_hint(
                "call `prof.step()` once per training step so the profiler marks iterations",
            ),
        );
    }
    let (rank, world, backend) = match dist {
        Some(d) => (d.rank, d.world_size, d.backend),
        None => (None, None, None),
    };
    Ok(KinetoTrace {
        file: file.to_string(),
        gzip: false,
        schema_version: st.schema_version,
        rank,
        world,
        backend,
        device_name: st.device_name,
        names: st.names,
        ops,
        comms: st.comms,
        steps: st.steps,
        counts: st.counts,
        diagnostics: st.sink.finish(file),
    })
}

/// The GPU span of each host `ProfilerStep#N`, from the GPU ops whose
/// runtime call (joined by `correlation`) ran inside the host step: from the
/// first such op's start to the last one's end. It replaces the step's GPU
/// annotation when that does not cover the work (recent PyTorch writes the
/// GPU `ProfilerStep#N` annotation as a microsecond-long mark, not as the
/// step's extent) and stands for the step when there is no GPU annotation.
/// When the windows of two adjacent steps interleave (the GPU still runs
/// work launched in step N after work launched in step N+1 has started),
/// the window is not the step's extent: both steps take their host
/// annotation's duration from their first GPU op instead.
/// A trace without runtime calls or correlations keeps its annotations.
fn launched_step_spans(
    steps: &mut Vec<StepSpan>,
    pending: &[Pending],
    launches: &HashMap<u64, Launch>,
) {
    if launches.is_empty() {
        return;
    }
    let mut host: Vec<StepSpan> = steps.iter().filter(|s| !s.gpu).copied().collect();
    host.sort_by_key(|s| (s.start_ns, s.number));
    let mut windows: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for p in pending {
        let Some(t) = p
            .correlation
            .and_then(|c| launches.get(&c))
            .map(|l| &l.at_ns)
        else {
            continue;
        };
        // The last host step starting at or before the launch.
        let i = host.partition_point(|s| s.start_ns <= *t);
        let Some(step) = i.checked_sub(1).map(|i| host[i]) else {
            continue;
        };
        if *t >= step.end_ns {
            continue;
        }
        let end = p.op.start_ns.saturating_add(p.op.duration_ns);
        let w = windows.entry(step.number).or_insert((p.op.start_ns, end));
        w.0 = w.0.min(p.op.start_ns);
        w.1 = w.1.max(end);
    }
    // Windows of adjacent host steps that interleave: the work one step
    // launched still runs after the next step's work has started (a
    // pipelined trainer that issues the next batch's input transfers inside
    // the current step). Such a window is longer than the step, so the
    // step is the profiler's own mark: the host `ProfilerStep#N`'s
    // duration, from the step's first GPU op.
    let order: Vec<u32> = host
        .iter()
        .map(|s| s.number)
        .filter(|n| windows.contains_key(n))
        .collect();
    let mut interleaved: BTreeSet<u32> = BTreeSet::new();
    for pair in order.windows(2) {
        let (a, b) = (windows[&pair[0]], windows[&pair[1]]);
        if pair[0] != pair[1] && a.1 > b.0 {
            interleaved.insert(pair[0]);
            interleaved.insert(pair[1]);
        }
    }
    for number in interleaved {
        let Some(h) = host.iter().find(|s| s.number == number) else {
            continue;
        };
        let host_ns = h.end_ns.saturating_sub(h.start_ns);
        if let Some(w) = windows.get_mut(&number) {
            steps.retain(|s| !(s.gpu && s.number == number));
            w.1 = w.0.saturating_add(host_ns);
            steps.push(StepSpan {
                number,
                start_ns: w.0,
                end_ns: w.1,
                gpu: true,
                marked: true,
            });
        }
    }
    for (number, (start_ns, end_ns)) in windows {
        let covered = steps
            .iter()
            .any(|s| s.gpu && s.number == number && s.start_ns <= start_ns && s.end_ns >= end_ns);
        if !covered {
            steps.retain(|s| !(s.gpu && s.number == number));
            steps.push(StepSpan {
                number,
                start_ns,
                end_ns,
                gpu: true,
                marked: false,
            });
        }
    }
}

/// The part of training that launched each pending GPU op, from its
/// runtime call (joined by `correlation`): the host thread and time of the
/// launch. PyTorch runs a CUDA backward on the autograd engine's own
/// thread, so work launched from a thread other than the one that runs the
/// `ProfilerStep#N` annotations is backward, as is work launched inside an
/// `autograd::engine::evaluate_function: ...` CPU op on any thread; work
/// launched inside `Optimizer.step#...` / `Optimizer.zero_grad#...` is the
/// optimizer; the rest launched from the step's thread is forward (the
/// loss included). A file that shows no backward at all (no launch from
/// another thread, no autograd op: a trace without CPU events, or a
/// generator that launches everything from one thread) does not say where
/// the forward ends: every phase is `None` then, as is the phase of an op
/// whose launch is not in the file.
fn launch_phases(
    pending: &[Pending],
    launches: &HashMap<u64, Launch>,
    step_threads: &BTreeSet<u64>,
    regions: &[Region],
) -> Vec<Option<TrainingPhase>> {
    // Per (thread, phase): region starts ascending with the running
    // maximum of their ends, so "some region contains t" is one binary
    // search (regions may nest).
    let mut by: HashMap<(u64, TrainingPhase), Vec<(u64, u64)>> = HashMap::new();
    for r in regions {
        by.entry((r.thread, r.phase))
            .or_default()
            .push((r.start_ns, r.end_ns));
    }
    for v in by.values_mut() {
        v.sort_unstable();
        let mut max_end = 0;
        for x in v.iter_mut() {
            max_end = max_end.max(x.1);
            x.1 = max_end;
        }
    }
    let inside = |thread: u64, phase: TrainingPhase, t: u64| {
        by.get(&(thread, phase)).is_some_and(|v| {
            let i = v.partition_point(|x| x.0 <= t);
            i > 0 && v[i - 1].1 >= t
        })
    };
    let phases: Vec<Option<TrainingPhase>> = pending
        .iter()
        .map(|p| {
            let l = p.correlation.and_then(|c| launches.get(&c))?;
            let thread = l.thread?;
            if inside(thread, TrainingPhase::Optimizer, l.at_ns) {
                Some(TrainingPhase::Optimizer)
            } else if inside(thread, TrainingPhase::Backward, l.at_ns)
                || (!step_threads.is_empty() && !step_threads.contains(&thread))
            {
                Some(TrainingPhase::Backward)
            } else if step_threads.contains(&thread) {
                Some(TrainingPhase::Forward)
            } else {
                None
            }
        })
        .collect();
    if phases.contains(&Some(TrainingPhase::Backward)) {
        phases
    } else {
        vec![None; phases.len()]
    }
}

fn error_location(file: &str, text: &str, line: usize, column: usize) -> Location {
    // serde_json counts lines and columns 1-based; column 0 means "at the
    // line start" (an error right after a newline).
    let mut start = 0usize;
    let mut n = 1usize;
    if line > 1 {
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                n += 1;
                if n == line {
                    start = i + 1;
                    break;
                }
            }
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |p| start + p);
    let line_text = &text[start..end];
    lex::location(
        file,
        u32::try_from(line).unwrap_or(u32::MAX).max(1),
        line_text,
        column.saturating_sub(1).min(line_text.len()),
    )
}

// ---------------------------------------------------------------------------
// Assembling a run

/// Which iteration [`to_run`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KinetoOptions {
    /// The `ProfilerStep` number; `None`: the last one every rank has.
    pub iteration: Option<u32>,
}

/// The `ProfilerStep` chosen by [`to_run`] and the steps it could choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepChoice {
    /// Steps present on every rank of the set, ascending.
    pub complete: Vec<u32>,
    /// The step the run holds (`None`: no step marks; the whole trace).
    pub chosen: Option<u32>,
}

fn comm_group(meta: &CommMeta, world: u32) -> CommGroup {
    match (meta.group_size, meta.group_ranks.as_ref()) {
        (Some(n), _) if n == world && world > 1 => CommGroup::Dp,
        (None, Some(r)) if r.len() as u64 == u64::from(world) && world > 1 => CommGroup::Dp,
        _ => CommGroup::Unscoped,
    }
}

fn group_detail(meta: &CommMeta) -> Option<String> {
    let name = meta.group_name.as_deref();
    let ranks = meta.group_ranks.as_ref().map(|r| {
        let s: Vec<String> = r.iter().map(u32::to_string).collect();
        format!("[{}]", s.join(", "))
    });
    match (name, ranks, meta.group_size) {
        (None, None, None) => None,
        (n, r, size) => {
            let mut out = format!("process group {}", n.unwrap_or("?"));
            if let Some(r) = r {
                out.push_str(&format!(" ranks {r}"));
            } else if let Some(s) = size {
                out.push_str(&format!(" of {s} ranks"));
            }
            Some(out)
        }
    }
}

/// The measured op of a kept GPU op.
fn measured_op(t: &KinetoTrace, op: &GpuOp, world: u32, step: Option<u32>) -> MeasuredOp {
    let meta = op.comm.and_then(|i| t.comms.get(i as usize));
    let kind = match meta {
        Some(m) => match m.kind {
            CommKind::Send => OpKind::Send,
            CommKind::Recv => OpKind::Recv,
            k => OpKind::Collective {
                collective: k,
                group: comm_group(m, world),
            },
        },
        None => OpKind::Compute,
    };
    let mut m = MeasuredOp::new(t.name_of(op), kind);
    m.start_ns = Some(op.start_ns);
    m.duration_ns = Some(op.duration_ns);
    m.step = step;
    m.stream = Some(op.stream);
    m.phase = op.phase;
    if let Some(c) = meta {
        m.message_bytes = c.message_bytes;
        m.dtype.clone_from(&c.dtype);
        m.detail = group_detail(c);
    } else if op.kind != GpuKind::Kernel {
        m.detail = Some(
            match op.kind {
                GpuKind::Memcpy => "memcpy",
                GpuKind::Memset => "memset",
                _ => "nccl",
            }
            .to_string(),
        );
    }
    m
}

/// Micro-batch numbers of a rank's forward and backward compute, in start
/// order: each run of forward compute (a gradient-accumulation step runs
/// forward, backward, forward, backward, ...) is the next micro-batch, and
/// the backward after it belongs to it (backward before any forward: to
/// micro-batch 0). An inference from the order, not something the trace
/// writes; collectives and the optimizer get none.
fn number_micro_batches(ops: &mut [MeasuredOp]) {
    let mut current: Option<u32> = None;
    let mut in_forward = false;
    for op in ops.iter_mut().filter(|o| o.kind == OpKind::Compute) {
        match op.phase {
            Some(TrainingPhase::Forward) => {
                if !in_forward {
                    current = Some(current.map_or(0, |j| j + 1));
                    in_forward = true;
                }
                op.micro_batch = current;
            }
            Some(TrainingPhase::Backward) => {
                in_forward = false;
                op.micro_batch = Some(current.unwrap_or(0));
            }
            _ => {}
        }
    }
}

fn ranges(v: &[u32]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        super::lex::number_ranges(v)
    }
}

/// Assemble the rank files of one job into a measured run of one iteration
/// (see the module documentation). Ranks come from `distributedInfo`; a
/// file without it takes the lowest rank not named by another file (with
/// a warning). Run-level diagnostics come after the files' own.
pub fn to_run(traces: &[KinetoTrace], options: &KinetoOptions) -> (MeasuredRun, StepChoice) {
    let mut file_diags: Vec<Diagnostic> = Vec::new();
    for t in traces {
        file_diags.extend(t.diagnostics.iter().cloned());
    }
    let mut diags = DiagSink::default();
    // Ranks.
    let named: BTreeSet<u32> = traces.iter().filter_map(|t| t.rank).collect();
    let mut next_free = 0u32;
    let mut by_rank: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, t) in traces.iter().enumerate() {
        let rank = match t.rank {
            Some(r) => r,
            None => {
                while named.contains(&next_free) || by_rank.contains_key(&next_free) {
                    next_free += 1;
                }
                diags.push(Diagnostic::warning(format!(
                    "`{}` names no rank; taking rank {next_free}",
                    t.file
                )));
                next_free
            }
        };
        match by_rank.get(&rank) {
            Some(first) => diags.push(Diagnostic::warning(format!(
                "rank {rank} appears twice: in `{}` and in `{}`; the second is ignored",
                traces[*first].file, t.file
            ))),
            None => {
                by_rank.insert(rank, i);
            }
        }
    }
    // World.
    let worlds: BTreeSet<u32> = traces.iter().filter_map(|t| t.world).collect();
    if worlds.len() > 1 {
        let w: Vec<String> = worlds.iter().map(u32::to_string).collect();
        diags.push(Diagnostic::warning(format!(
            "the files disagree on the world size ({}); using the largest",
            w.join(", ")
        )));
    }
    let present: Vec<u32> = by_rank.keys().copied().collect();
    let needed = present.last().map_or(1, |r| r.saturating_add(1));
    let world = match worlds.iter().next_back() {
        Some(w) if *w >= needed => *w,
        Some(w) => {
            diags.push(Diagnostic::warning(format!(
                "rank {} is outside the stated world size {w}; using {needed}",
                needed - 1
            )));
            needed
        }
        None => {
            diags.push(Diagnostic::warning(format!(
                "no file states the world size; assuming {needed} (the highest rank + 1)"
            )));
            needed
        }
    };
    let missing: Vec<u32> = (0..world).filter(|r| !by_rank.contains_key(r)).collect();
    if !missing.is_empty() {
        diags.push(Diagnostic::warning(format!(
            "the set holds {} of {world} ranks (present: {}; missing: {}); the run is analysed as those ranks",
            present.len(),
            ranges(&present),
            ranges(&missing)
        )));
    }
    let (mut parallel, notes) = ParallelConfig::resolve(Some(world), 1, 1, 1, 1);
    diags.extend(notes.into_iter().map(Diagnostic::warning));
    parallel.micro_batches = 1;

    // Steps present on every rank.
    let mut complete: Option<BTreeSet<u32>> = None;
    for i in by_rank.values() {
        let s: BTreeSet<u32> = traces[*i].steps.iter().map(|s| s.number).collect();
        complete = Some(match complete {
            None => s,
            Some(c) => c.intersection(&s).copied().collect(),
        });
    }
    let complete: Vec<u32> = complete.unwrap_or_default().into_iter().collect();
    let any_steps = traces.iter().any(|t| !t.steps.is_empty());
    let chosen = match options.iteration {
        Some(n) if complete.contains(&n) => Some(n),
        Some(n) => {
            let fallback = complete.last().copied();
            diags.push(Diagnostic::warning(format!(
                "iteration {n} is not a ProfilerStep every rank has (complete: {}); using {}",
                ranges(&complete),
                fallback.map_or("the whole trace".to_string(), |f| format!("step {f}"))
            )));
            fallback
        }
        None => complete.last().copied(),
    };
    if chosen.is_none() && any_steps {
        diags.push(Diagnostic::warning(
            "no ProfilerStep is present on every rank; the whole trace of each rank is taken as one iteration",
        ));
    }

    let mut ranks = Vec::new();
    let mut first_start: Option<u64> = None;
    let mut last_end: Option<u64> = None;
    for (rank, i) in &by_rank {
        let t = &traces[*i];
        let span = match chosen {
            Some(n) => t.step_span(n),
            None => None,
        };
        let (lo, hi) = match span {
            Some(s) => (s.start_ns, s.end_ns),
            None => (
                t.ops.iter().map(|o| o.start_ns).min().unwrap_or(0),
                t.ops
                    .iter()
                    .map(|o| o.start_ns.saturating_add(o.duration_ns))
                    .max()
                    .unwrap_or(0),
            ),
        };
        let mut idx: Vec<usize> = (0..t.ops.len())
            .filter(|k| {
                let s = t.ops[*k].start_ns;
                s >= lo && (s < hi || (s == hi && t.ops[*k].duration_ns == 0 && hi == lo))
            })
            .collect();
        idx.sort_by_key(|k| (t.ops[*k].start_ns, t.ops[*k].stream, *k));
        let mut ops: Vec<MeasuredOp> = idx
            .iter()
            .map(|k| measured_op(t, &t.ops[*k], world, chosen))
            .collect();
        number_micro_batches(&mut ops);
        let end = if span.is_some_and(|s| s.marked) {
            hi
        } else {
            ops.iter()
                .filter_map(MeasuredOp::end_ns)
                .max()
                .unwrap_or(hi)
                .max(hi)
        };
        first_start = Some(first_start.map_or(lo, |f| f.min(lo)));
        last_end = Some(last_end.map_or(end, |l| l.max(end)));
        ranks.push(RankTrace {
            rank: *rank,
            stage: Some(0),
            file: t.file.clone(),
            ops,
            iterations: vec![Span {
                start_ns: lo,
                end_ns: end,
            }],
            copy: None,
        });
    }
    let iterations = match (first_start, last_end) {
        (Some(s), Some(e)) if e > s => vec![MeasuredIteration {
            index: chosen.unwrap_or(0),
            duration_ns: e - s,
            iterations_covered: 1,
            source_line: None,
        }],
        _ => Vec::new(),
    };
    file_diags.extend(diags.finish("the run"));
    let run = MeasuredRun {
        format: Format::KinetoTrace,
        files: traces.iter().map(|t| t.file.clone()).collect(),
        parallel,
        ranks,
        iterations,
        diagnostics: file_diags,
    };
    (run, StepChoice { complete, chosen })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 10, "ts": 1000.000, "dur": 100.5},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1001.2345, "dur": 10.5},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 21, "ts": 1020, "dur": 30,
   "args": {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Group size": 2}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1060, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "bad", "pid": 0, "tid": 7, "ts": -1, "dur": 1},
  {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}
  ]
}"#;

    /// Progress within one file: every `PROGRESS_EVERY_EVENTS` events and at
    /// the end, ascending, ending at the text's length.
    #[test]
    fn reports_progress_within_a_file() {
        let mut text = String::from("{\"traceEvents\": [\n");
        let n = 2 * PROGRESS_EVERY_EVENTS + 100;
        for i in 0..n {
            text.push_str(&format!(
                "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": {i}, \"dur\": 1}}{}\n",
                if i + 1 < n { "," } else { "" }
            ));
        }
        text.push_str("]}");
        let mut calls = Vec::new();
        let t = parse_text_with_progress("p.json", &text, None, &mut |d, total| {
            calls.push((d, total))
        })
        .unwrap();
        assert_eq!(t.ops.len() as u64, n);
        let len = text.len() as u64;
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls.iter().all(|(_, total)| *total == len));
        assert!(calls.windows(2).all(|w| w[0].0 < w[1].0), "{calls:?}");
        assert!(calls[0].0 > len / 4 && calls[0].0 < len / 2, "{calls:?}");
        assert_eq!(calls.last(), Some(&(len, len)));
    }

    /// Elements read in the one pass: anything that is not an event object
    /// or has a field of the wrong type is a located error, the rest is read;
    /// `args` are read only for kept events (a host op's unreadable `args`
    /// cost nothing and say nothing, a kernel's are an error).
    #[test]
    fn odd_elements_are_located_errors() {
        let text = r#"{"traceEvents": [
  {"ph": "i", "name": "mark"},
     5,
  "text",
  {"ph": 5, "cat": "kernel", "name": "k"},
  {"ph": "X", "ph": "X", "cat": "kernel", "name": "k"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": [1, {"a": 2}]},
  {"args": {"External id": 3}, "ph": "X", "cat": "kernel", "name": "g\u0065mm", "pid": 0, "tid": 7, "ts": 10, "dur": 2},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 20, "dur": 2, "args": 7},
  {"ph": "X", "cat": "kernel", "name": "k3", "pid": null, "tid": 7, "ts": 30, "dur": 2},
  {}, [1, 2]
]}"#;
        let t = parse("odd.json", text.as_bytes()).unwrap();
        assert_eq!(t.ops.len(), 1);
        assert_eq!(t.names[t.ops[0].name as usize], "gemm");
        assert_eq!(t.counts.events, 11);
        let errors: Vec<(u32, &str)> = t
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| (d.location.as_ref().unwrap().line, d.message.as_str()))
            .collect();
        let want: [(u32, &str); 6] = [
            (3, "found `5`"),
            (4, "found `\"text\"`"),
            (5, "`ph` must be a string"),
            (6, "duplicate field `ph`"),
            (9, "unreadable `args`"),
            (10, "names no device"),
        ];
        assert!(errors.len() >= want.len(), "{errors:?}");
        for ((line, part), (got_line, got)) in want.iter().zip(&errors) {
            assert_eq!(line, got_line, "{got}");
            assert!(got.contains(part), "{got} lacks {part}");
        }
        // The `{` of an event, the first byte of another value, is the column.
        let five = t
            .diagnostics
            .iter()
            .find(|d| d.message.contains("`5`"))
            .unwrap();
        assert_eq!(five.location.as_ref().unwrap().column, 6);
        let dup = t
            .diagnostics
            .iter()
            .find(|d| d.message.contains("duplicate"))
            .unwrap();
        assert_eq!(dup.location.as_ref().unwrap().column, 3);
    }

    #[test]
    fn reads_events_exactly_and_skips_with_location() {
        let t = parse("r1.json", SMALL.as_bytes()).unwrap();
        assert_eq!((t.rank, t.world), (Some(1), Some(2)));
        assert_eq!(t.device_name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(t.ops.len(), 3);
        assert_eq!(
            (t.ops[0].start_ns, t.ops[0].duration_ns),
            (1_001_235, 10_500)
        );
        assert_eq!(t.ops[1].kind, GpuKind::Nccl);
        let c = &t.comms[t.ops[1].comm.unwrap() as usize];
        assert_eq!(c.kind, CommKind::AllReduce);
        assert_eq!(c.message_bytes, Some(2048));
        assert_eq!(c.group_ranks, Some(vec![0, 1]));
        assert_eq!(t.counts.skipped, 1);
        let e = t.diagnostics.iter().find(|d| d.is_error()).unwrap();
        let loc = e.location.as_ref().unwrap();
        assert_eq!(loc.line, 11);
        assert!(e.message.contains("`ts`"), "{}", e.message);
        assert_eq!(t.step_numbers(), vec![3]);
    }

    #[test]
    fn kernel_names_and_collective_names_classify() {
        assert_eq!(
            kind_from_kernel_name("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"),
            Some(CommKind::AllGather)
        );
        assert_eq!(
            kind_from_kernel_name("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)"),
            Some(CommKind::ReduceScatter)
        );
        assert_eq!(
            kind_from_kernel_name("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            Some(CommKind::Send)
        );
        assert_eq!(kind_from_kernel_name("gemm"), None);
        assert_eq!(
            kind_from_collective_name("_allgather_base"),
            Some(CommKind::AllGather)
        );
        assert_eq!(
            kind_from_collective_name("reduce_scatter_tensor"),
            Some(CommKind::ReduceScatter)
        );
        assert_eq!(
            kind_from_collective_name("all_to_allv"),
            Some(CommKind::AllToAll)
        );
        assert_eq!(parse_ranks("\"[0, 1, ..., 127]\""), None);
        assert_eq!(parse_ranks("[3,4]"), Some(vec![3, 4]));
        assert_eq!(id_value("\"stream 7\""), Some(7));
    }

    #[test]
    fn truncated_text_keeps_events_before_the_cut() {
        let cut = &SMALL[..SMALL.find("gpu_memset").unwrap()];
        let t = parse("cut.json", cut.as_bytes()).unwrap();
        assert_eq!(t.ops.len(), 2);
        let e = t.diagnostics.iter().find(|d| d.is_error()).unwrap();
        assert!(e.message.contains("ends in the middle"), "{}", e.message);
        assert!(parse("x.json", b"{\"a\": 1}").is_err());
        assert!(parse("x.json", b"not json").is_err());
    }

    #[test]
    fn detection_markers() {
        assert_eq!(looks_like(SMALL).unwrap().0, 100);
        assert!(looks_like("rank:1:forward_step(").is_none());
        assert!(looks_like("{\"model_type\": \"llama\"}").is_none());
    }
}
