//! The page ↔ worker protocol. The page sends a [`Request`] (a run: id,
//! settings, files; or an export of the last run's data); the worker answers
//! with [`Response`]s: `Ready` once when it has started, then for each run
//! any number of `Progress` and one `Done` or `Failed`, all carrying the run
//! id, and one `Export` (the file's text) per export request. Exports are
//! produced on demand, so a result stays small however large its Chrome
//! trace would be. The page ignores responses
//! whose id is not its current run (stale), and cancels by terminating the
//! worker and starting a new one (a synchronous computation cannot be
//! interrupted any other way).
//!
//! A sweep request ([`SweepRequest`]) asks for one shard of a
//! configuration search (with the dropped `config.json` it searches, if
//! any, as its one file): answered by `SweepProgress` after each
//! candidate, `SweepRows` chunks (the rows simulated since the last chunk,
//! so the page shows rows while the sweep runs) and one `SweepDone` (that
//! shard's report without its rows, which came in the chunks) or `Failed`.
//!
//! Encoding: a request is one binary buffer (transferred, not copied):
//! the magic `TSR1`, a little-endian u32 header length, the header as JSON
//! (id, settings, pinned fields, file names, sizes and, for a file the
//! page holds as a browser `Blob`, its id) and then every file's bytes
//! back to back. The page posts that layout in parts
//! ([`encode_request_parts`]): the head, then one part per file: a
//! dropped or picked file is its `Blob` itself ([`FileData::Blob`]: the
//! page never reads it; posting a `Blob` passes a handle, not its bytes),
//! a file the page holds as bytes (a bundled example) one JS buffer,
//! transferred. The worker copies each byte part out of its buffer
//! ([`decode_request_head`], [`RequestHead`]) and reads a `Blob` into its
//! own memory when the run needs its bytes, one file at a time, dropping
//! them once the file is parsed (a small file is kept by id for the next
//! runs): a run of large files (8 PyTorch profiler traces of 50 MB) never
//! holds them all, in either wasm memory. A response is a JSON string (results are
//! display data, small next to the inputs), except `Timelines`, which
//! travels as bytes ([`encode_timelines`]: `TSL1` + bincode, transferred).

use crate::job::{JobModel, JobSettings};
use crate::settings::{Field, Settings, SettingsHints};
use crate::sweep_inputs::SweepInputs;
use crate::views::{FileView, ResultView, ScheduleComparison};
use bincode::Options;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::analysis::Analysis;
use trainscope_core::search::{Row, ShardId, SweepReport};
use trainscope_core::Diagnostic;

/// First bytes of an encoded request (format version 1).
pub const MAGIC: &[u8; 4] = b"TSR1";

/// One input file: its name and its content ([`FileData`]).
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    pub name: String,
    pub data: FileData,
}

impl InputFile {
    /// A file held as bytes.
    pub fn new(name: impl Into<String>, bytes: impl Into<Rc<Vec<u8>>>) -> Self {
        InputFile {
            name: name.into(),
            data: FileData::Bytes(bytes.into()),
        }
    }

    /// Its bytes, `None` for a `Blob` not read yet (the worker reads every
    /// `Blob` of a request before computing: see `bin/worker.rs`).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.data {
            FileData::Bytes(b) => Some(b.as_slice()),
            FileData::Blob(_) => None,
        }
    }

    /// Its size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.data.size_bytes()
    }
}

/// The content of a file: bytes (shared: a request does not copy them),
/// or a browser `Blob` the page holds without reading it (a dropped or
/// picked file: its bytes stay with the browser, outside both wasm
/// memories, until the worker reads it).
#[derive(Debug, Clone, PartialEq)]
pub enum FileData {
    Bytes(Rc<Vec<u8>>),
    Blob(BlobFile),
}

impl FileData {
    /// A browser file (`File` is a `Blob`), with a new id.
    pub fn blob(blob: web_sys::Blob) -> Self {
        // A `Blob`'s size is an integer number of bytes (f64 in JS).
        let size_bytes = blob.size() as u64;
        FileData::Blob(BlobFile {
            id: next_blob_id(),
            size_bytes,
            blob,
        })
    }

    pub fn size_bytes(&self) -> u64 {
        match self {
            FileData::Bytes(b) => b.len() as u64,
            FileData::Blob(b) => b.size_bytes,
        }
    }
}

impl From<Vec<u8>> for FileData {
    fn from(bytes: Vec<u8>) -> Self {
        FileData::Bytes(Rc::new(bytes))
    }
}

impl From<Rc<Vec<u8>>> for FileData {
    fn from(bytes: Rc<Vec<u8>>) -> Self {
        FileData::Bytes(bytes)
    }
}

/// A browser `Blob` (a dropped or picked `File`) and the id the page gave
/// it: the worker keeps the bytes of a small file it read by this id, so a
/// re-run of the same small files reads nothing again.
#[derive(Debug, Clone, PartialEq)]
pub struct BlobFile {
    /// Unique within the page (one per file loaded).
    pub id: u64,
    pub size_bytes: u64,
    pub blob: web_sys::Blob,
}

thread_local! {
    static NEXT_BLOB_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// A new `Blob` id (1, 2, ...; per page).
fn next_blob_id() -> u64 {
    NEXT_BLOB_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

/// One run: parse every file, then simulate with the settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// Increases with every run the page starts.
    pub id: u64,
    pub settings: Settings,
    /// Fields the user or a link set: the files' hints do not override them.
    pub pinned: BTreeSet<Field>,
    pub files: Vec<InputFile>,
    /// The "Describe a job" panel's values. Used when `job_active`, and
    /// when the input picked from the files is a model config
    /// (`config.json`): that model with these settings.
    pub job: JobSettings,
    /// Simulate the described job instead of the files.
    pub job_active: bool,
    /// Also run the input under every schedule ("Compare schedules":
    /// [`crate::schedule_compare`]); the table is [`RunView::schedules`].
    pub compare_schedules: bool,
}

/// A download of the last run's data (`testid` names which: see
/// [`crate::views::ExportFile`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRequest {
    /// The run whose data is wanted (must be the worker's last run).
    pub id: u64,
    pub testid: String,
}

/// What the page asks of the worker.
// One request per user action, built and moved once: boxing the larger
// variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Run(RunRequest),
    Export(ExportRequest),
    /// One worker's slice of a configuration search ([`crate::sweep`]).
    Sweep(SweepRequest),
}

/// A slice of a configuration search: the job panel's values, the page's
/// settings, the bounds, and which shard (`index` of `count`) to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRequest {
    pub id: u64,
    pub settings: Settings,
    pub pinned: BTreeSet<Field>,
    pub job: JobSettings,
    pub inputs: SweepInputs,
    pub shard: ShardId,
    /// The job's model file when it is a dropped `config.json` (each
    /// worker gets its bytes once, with its request); else empty.
    pub files: Vec<InputFile>,
}

#[derive(Serialize, Deserialize)]
struct SweepHeader {
    inputs: SweepInputs,
    shard: ShardId,
}

#[derive(Serialize, Deserialize)]
struct FileEntry {
    name: String,
    size_bytes: u64,
    /// The page's id of a `Blob` file (its part is the `Blob`, not bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blob: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    kind: String,
    id: u64,
    #[serde(default)]
    settings: Settings,
    #[serde(default)]
    pinned: Vec<Field>,
    #[serde(default)]
    files: Vec<FileEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    testid: Option<String>,
    #[serde(default)]
    job: JobSettings,
    #[serde(default)]
    job_active: bool,
    #[serde(default)]
    compare_schedules: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sweep: Option<SweepHeader>,
}

/// Encode a request into one buffer (see the module docs for the layout).
/// A `Blob` file has no bytes here: such a request travels only in parts
/// ([`encode_request_parts`]).
pub fn encode_request(req: &Request) -> Vec<u8> {
    let (head, files) = encode_request_parts(req);
    let body: usize = files.iter().map(|f| f.size_bytes() as usize).sum();
    let mut out = Vec::with_capacity(head.len() + body);
    out.extend_from_slice(&head);
    for f in files {
        if let FileData::Bytes(b) = f {
            out.extend_from_slice(b);
        }
    }
    out
}

/// A request in parts: its head (`TSR1`, the header's length and JSON)
/// and then each file's content, borrowed, in order; for files held as
/// bytes, concatenated they are [`encode_request`]'s buffer. The page
/// posts a byte file as one JS buffer, a `Blob` file as the `Blob`.
pub fn encode_request_parts(req: &Request) -> (Vec<u8>, Vec<&FileData>) {
    let run = match req {
        Request::Run(run) => run,
        Request::Sweep(x) => {
            let header = Header {
                kind: "sweep".into(),
                id: x.id,
                settings: x.settings.clone(),
                pinned: x.pinned.iter().copied().collect(),
                files: entries(&x.files),
                testid: None,
                job: x.job.clone(),
                job_active: true,
                compare_schedules: false,
                sweep: Some(SweepHeader {
                    inputs: x.inputs.clone(),
                    shard: x.shard,
                }),
            };
            return with_files(&header, &x.files);
        }
        Request::Export(x) => {
            let header = Header {
                kind: "export".into(),
                id: x.id,
                settings: Settings::default(),
                pinned: Vec::new(),
                files: Vec::new(),
                testid: Some(x.testid.clone()),
                job: JobSettings::default(),
                job_active: false,
                compare_schedules: false,
                sweep: None,
            };
            return with_files(&header, &[]);
        }
    };
    let header = Header {
        kind: "run".into(),
        id: run.id,
        settings: run.settings.clone(),
        pinned: run.pinned.iter().copied().collect(),
        files: entries(&run.files),
        testid: None,
        job: run.job.clone(),
        job_active: run.job_active,
        compare_schedules: run.compare_schedules,
        sweep: None,
    };
    with_files(&header, &run.files)
}

fn entries(files: &[InputFile]) -> Vec<FileEntry> {
    files
        .iter()
        .map(|f| FileEntry {
            name: f.name.clone(),
            size_bytes: f.size_bytes(),
            blob: match &f.data {
                FileData::Blob(b) => Some(b.id),
                FileData::Bytes(_) => None,
            },
        })
        .collect()
}

/// `TSR1`, the header's length and JSON; then the files' contents.
fn with_files<'a>(header: &Header, files: &'a [InputFile]) -> (Vec<u8>, Vec<&'a FileData>) {
    // Serialising these plain structs cannot fail.
    let json = serde_json::to_vec(header).unwrap_or_default();
    let mut head = Vec::with_capacity(8 + json.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(json.len() as u32).to_le_bytes());
    head.extend_from_slice(&json);
    (head, files.iter().map(|f| &f.data).collect())
}

/// Decode a buffer made by [`encode_request`]. Never panics: a truncated or
/// foreign buffer is an error message.
pub fn decode_request(buf: &[u8]) -> Result<Request, String> {
    decode_request_with(buf.len(), &mut |start, end| buf[start..end].to_vec())
}

/// [`decode_request`] of a buffer of `len` bytes that is read by ranges:
/// `read(start, end)` returns bytes `start..end` (always within `len`;
/// the ranges come in increasing order: the first 8 bytes, the header,
/// then each file, so a range once passed is never read again).
/// A request with a `Blob` file cannot be one buffer (it is sent in parts:
/// [`decode_request_head`]): an error.
pub fn decode_request_with(
    len: usize,
    read: &mut dyn FnMut(usize, usize) -> Vec<u8>,
) -> Result<Request, String> {
    let magic = read(0, len.min(8));
    let json_end = head_len(&magic, len)?;
    let head = RequestHead::parse(&read(8, json_end))?;
    if head.header.kind == "export" && json_end != len {
        return Err("export request has trailing bytes".into());
    }
    let mut at = json_end;
    let mut files = Vec::with_capacity(head.header.files.len().min(4096));
    for entry in &head.header.files {
        if entry.blob.is_some() {
            return Err(format!(
                "file `{}` is a browser Blob: such a request is sent in parts",
                entry.name
            ));
        }
        let end = usize::try_from(entry.size_bytes)
            .ok()
            .and_then(|n| at.checked_add(n))
            .filter(|end| *end <= len)
            .ok_or_else(|| format!("run request truncated in file `{}`", entry.name))?;
        files.push(InputFile::new(entry.name.clone(), read(at, end)));
        at = end;
    }
    if at != len {
        return Err(format!("run request has {} trailing bytes", len - at));
    }
    head.into_request(files)
}

/// The end of the head (magic, length, JSON header) given its first 8
/// bytes and the length of what holds it.
fn head_len(magic: &[u8], len: usize) -> Result<usize, String> {
    if magic.len() < 8 || &magic[..4] != MAGIC {
        return Err("not a trainscope run request (bad magic)".into());
    }
    let mut json_len = [0u8; 4];
    json_len.copy_from_slice(&magic[4..8]);
    let json_len = u32::from_le_bytes(json_len) as usize;
    8usize
        .checked_add(json_len)
        .filter(|end| *end <= len)
        .ok_or_else(|| "run request truncated in its header".to_string())
}

/// The head of a request sent in parts (the worker's side of
/// [`encode_request_parts`]): what each following part is
/// ([`RequestHead::files`]); with those files read, the request
/// ([`RequestHead::into_request`]).
pub struct RequestHead {
    header: Header,
}

/// One file a request's parts carry, as its head describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    pub name: String,
    pub size_bytes: u64,
    /// The page's id of a `Blob` file: its part is that `Blob`.
    pub blob: Option<u64>,
}

impl RequestHead {
    fn parse(json: &[u8]) -> Result<Self, String> {
        let header: Header =
            serde_json::from_slice(json).map_err(|e| format!("run request header: {e}"))?;
        match header.kind.as_str() {
            "run" | "sweep" => Ok(RequestHead { header }),
            "export" if header.files.is_empty() => Ok(RequestHead { header }),
            "export" => Err("export request with files".into()),
            other => Err(format!("unknown request kind `{other}`")),
        }
    }

    /// The files of the parts after the head, in order.
    pub fn files(&self) -> Vec<PartInfo> {
        self.header
            .files
            .iter()
            .map(|f| PartInfo {
                name: f.name.clone(),
                size_bytes: f.size_bytes,
                blob: f.blob,
            })
            .collect()
    }

    /// The request, with its files (one per [`RequestHead::files`], in
    /// order: same names and sizes).
    pub fn into_request(self, files: Vec<InputFile>) -> Result<Request, String> {
        let header = self.header;
        if files.len() != header.files.len() {
            return Err(format!(
                "run request names {} file(s) but carries {}",
                header.files.len(),
                files.len()
            ));
        }
        for (entry, f) in header.files.iter().zip(&files) {
            if entry.name != f.name || entry.size_bytes != f.size_bytes() {
                return Err(format!(
                    "run request's file `{}` ({} bytes) is not the `{}` ({} bytes) its header names",
                    f.name,
                    f.size_bytes(),
                    entry.name,
                    entry.size_bytes
                ));
            }
        }
        match header.kind.as_str() {
            "export" => Ok(Request::Export(ExportRequest {
                id: header.id,
                testid: header.testid.unwrap_or_default(),
            })),
            "sweep" => {
                let sweep = header.sweep.ok_or("sweep request without its bounds")?;
                Ok(Request::Sweep(SweepRequest {
                    id: header.id,
                    settings: header.settings,
                    pinned: header.pinned.into_iter().collect(),
                    job: header.job,
                    inputs: sweep.inputs,
                    shard: sweep.shard,
                    files,
                }))
            }
            _ => Ok(Request::Run(RunRequest {
                id: header.id,
                settings: header.settings,
                pinned: header.pinned.into_iter().collect(),
                files,
                job: header.job,
                job_active: header.job_active,
                compare_schedules: header.compare_schedules,
            })),
        }
    }
}

/// Decode the head part of a request sent in parts (`TSR1`, the header's
/// length and JSON, nothing after). Never panics.
pub fn decode_request_head(head: &[u8]) -> Result<RequestHead, String> {
    let json_end = head_len(head, head.len())?;
    if json_end != head.len() {
        return Err(format!(
            "run request head has {} trailing bytes",
            head.len() - json_end
        ));
    }
    RequestHead::parse(&head[8..json_end])
}

/// Where a run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub id: u64,
    /// Steps finished and the total (files to parse + simulation).
    pub done: u32,
    pub total: u32,
    /// What is being done now (`Parsing a.txt`, `Simulating`).
    pub label: String,
    /// While a large file is parsed: (bytes read, its size), decompressed
    /// text; the run bar then shows this file's progress.
    #[serde(default)]
    pub parsed_bytes: Option<(u64, u64)>,
}

/// What a finished run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    /// The settings the run used: the request's with the files' hints
    /// applied to unpinned fields (the page adopts them).
    pub settings: Settings,
    /// What the files said about the settings (for "from the file" notes).
    pub hints: SettingsHints,
    /// One per input file, in input order.
    pub files: Vec<FileView>,
    /// The Read panel's content, when the files allow one.
    pub result: Option<ResultView>,
    /// Timelines to draw: the simulated one first, then the measured one of
    /// a measured run (drawn aligned on one time axis). The worker sends
    /// them in a `Timelines` response after `Done`, which carries none.
    pub timelines: Vec<NamedTimeline>,
    /// Run-level problems (settings the files contradict, nothing to
    /// simulate, ...). One `warning`/`error` element each on the page.
    pub diagnostics: Vec<Diagnostic>,
    /// Set when the run simulated a described job (the panel's, or a
    /// dropped `config.json` with the panel's settings).
    #[serde(default)]
    pub job: Option<JobOutcome>,
    /// The Compare-schedules table, when the request asked for it and the
    /// input could be compared (else a run diagnostic says why).
    #[serde(default)]
    pub schedules: Option<ScheduleComparison>,
    /// A measured run with timed GPU work (Kineto traces): the core's
    /// analysis ([`trainscope_core::analysis::analyse`], what `trainscope
    /// analyze` prints), shown in the Kineto analysis panel.
    #[serde(default)]
    pub analysis: Option<Analysis>,
}

/// What became of a described job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// The model it ran on (a dropped file's name when the file was the
    /// input: the page's panel then shows that file).
    pub model: JobModel,
    /// Why the job could not be built or simulated (the core's message
    /// and hint, as the CLI prints them); shown in the panel.
    pub error: Option<Diagnostic>,
    /// A dropped `config.json` run before any layout was set: the starting
    /// layout it ran with ([`trainscope_core::search::start`]) and the line
    /// that says so; the panel adopts it.
    #[serde(default)]
    pub start: Option<StartLayout>,
}

/// The layout a dropped model config starts from, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartLayout {
    pub training: trainscope_core::job::TrainingSetup,
    pub note: String,
}

/// A timeline with what it shows (`simulated`, `measured`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedTimeline {
    pub label: String,
    pub timeline: trainscope_core::timeline::Timeline,
}

/// What the worker says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The worker has loaded and listens (sent once, first).
    Ready,
    Progress(Progress),
    Done {
        id: u64,
        output: Box<RunView>,
    },
    /// The run could not complete (bad request, a panic in the worker).
    Failed {
        id: u64,
        message: String,
    },
    /// The download `testid` of run `id` could not be made (the worker no
    /// longer holds that run's data).
    ExportFailed {
        id: u64,
        testid: String,
        message: String,
    },
    /// The timelines of run `id`, sent right after its `Done` (large: the
    /// results show first, the timeline follows); always sent, empty when
    /// the run has no timeline (SimAI mode, an input that failed).
    Timelines {
        id: u64,
        timelines: Vec<NamedTimeline>,
    },
    /// The text of download `testid` of run `id`.
    Export {
        id: u64,
        testid: String,
        content: String,
    },
    /// Candidates of sweep slice `id` evaluated so far, of `total`.
    SweepProgress {
        id: u64,
        done: u32,
        total: u32,
    },
    /// Rows of sweep slice `id` simulated since its last chunk (in the
    /// order they were simulated): the page shows them while the sweep
    /// runs and puts them back into the shard's report when it is done.
    SweepRows {
        id: u64,
        rows: Vec<Row>,
    },
    /// The report of sweep slice `id` (its shard; the page merges them),
    /// its `results` empty: its rows came in `SweepRows` chunks before it.
    SweepDone {
        id: u64,
        report: Box<SweepReport>,
    },
}

impl Response {
    /// The run this response belongs to (`None` for `Ready`).
    pub fn run_id(&self) -> Option<u64> {
        match self {
            Response::Ready => None,
            Response::Progress(p) => Some(p.id),
            Response::Done { id, .. }
            | Response::Failed { id, .. }
            | Response::ExportFailed { id, .. }
            | Response::Timelines { id, .. }
            | Response::Export { id, .. }
            | Response::SweepProgress { id, .. }
            | Response::SweepRows { id, .. }
            | Response::SweepDone { id, .. } => Some(*id),
        }
    }
}

pub fn encode_response(r: &Response) -> String {
    serde_json::to_string(r).unwrap_or_else(|e| {
        let failed = Response::Failed {
            id: r.run_id().unwrap_or(0),
            message: format!("could not encode the result: {e}"),
        };
        // Two plain fields: cannot fail.
        serde_json::to_string(&failed).unwrap_or_default()
    })
}

pub fn decode_response(s: &str) -> Result<Response, String> {
    serde_json::from_str(s).map_err(|e| format!("bad message from the worker: {e}"))
}

/// Magic of the binary form of a `Timelines` response.
const TIMELINES_MAGIC: &[u8; 4] = b"TSL1";

/// Encode a `Timelines` response as bytes: `TSL1`, then bincode of the run
/// id and the timelines. Timelines are the one large response: seed 001's
/// is 7.7 MB of JSON, which blocked the page for about 350 ms on arrival;
/// in this form it is 2.5 MB, the buffer is transferred, not copied, and
/// the page's work on arrival (decode and the timeline's first frame) takes
/// about 100 ms. Other responses are small and stay JSON.
pub fn encode_timelines(id: u64, timelines: &[NamedTimeline]) -> Vec<u8> {
    let mut out = TIMELINES_MAGIC.to_vec();
    // Writing plain data into a Vec cannot fail; an empty list on error is
    // still a well-formed message.
    if timelines_codec()
        .serialize_into(&mut out, &(id, timelines))
        .is_err()
    {
        out.truncate(4);
        let empty: &[NamedTimeline] = &[];
        let _ = timelines_codec().serialize_into(&mut out, &(id, empty));
    }
    out
}

/// The bincode options of the timelines message (fixed-width integers:
/// span times are large, varints would save little and cost decode time).
fn timelines_codec() -> impl Options {
    bincode::DefaultOptions::new().with_fixint_encoding()
}

/// Decode bytes made by [`encode_timelines`]. Never panics: a truncated or
/// foreign buffer is an error message.
pub fn decode_timelines(buf: &[u8]) -> Result<Response, String> {
    let body = buf
        .strip_prefix(TIMELINES_MAGIC)
        .ok_or("not a trainscope timelines message (bad magic)")?;
    let (id, timelines): (u64, Vec<NamedTimeline>) = timelines_codec()
        .with_limit(body.len() as u64)
        .deserialize(body)
        .map_err(|e| format!("bad timelines message from the worker: {e}"))?;
    Ok(Response::Timelines { id, timelines })
}
