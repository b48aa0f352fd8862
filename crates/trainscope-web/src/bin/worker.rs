//! The Web Worker entry point (Trunk `data-type="worker"`, started by the
//! page as `worker_loader.js`). It announces `Ready`, then for every request
//! decodes it, runs [`trainscope_web::compute::run_with_source`]
//! synchronously while posting progress, and posts `Done` then the run's
//! timelines as bytes (or `Failed`,
//! including for a panic, whose message is sent before the worker traps).
//! A sweep request evaluates its shard of a configuration search
//! ([`trainscope_web::sweep::run_shard`]), posting progress after each
//! candidate and the rows simulated so far in chunks
//! ([`trainscope_web::sweep::chunk_due`]: every 100 ms of work or 256
//! rows, and at the end), then the shard's report without its rows.
//! It keeps the last run's data so export requests are answered on demand.
//! Dropped files come as `Blob`s, read here chunk by chunk when a run needs
//! their bytes, one file at a time (the run parses each and drops its
//! bytes); small ones are kept for re-runs ([`KEEP_MAX_BYTES`]).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use trainscope_web::compute;
use trainscope_web::engine_run::{self, ExportSource};
use trainscope_web::protocol::{
    decode_request, decode_request_head, encode_response, encode_timelines, BlobFile, FileData,
    InputFile, Progress, Request, Response,
};
use trainscope_web::sweep;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

thread_local! {
    /// The run being computed, for the panic report.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// The last finished run's id and what its downloads are made from.
    static LAST: RefCell<Option<(u64, ExportSource)>> = const { RefCell::new(None) };
    /// The bytes of the small `Blob` files of the last request, by the
    /// page's id.
    static READ: RefCell<Vec<(u64, Rc<Vec<u8>>)>> = const { RefCell::new(Vec::new()) };
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn send(r: &Response) {
    let _ = scope().post_message(&JsValue::from_str(&encode_response(r)));
}

/// Post a binary message, transferring its buffer.
fn send_bytes(bytes: &[u8]) {
    let arr = js_sys::Uint8Array::from(bytes);
    let buf = arr.buffer();
    let _ = scope().post_message_with_transfer(&buf, &js_sys::Array::of1(&buf));
}

/// Hand a JS buffer the worker has copied out back to the page, transferred:
/// the worker runs wasm for seconds without allocating JS objects, so its
/// garbage collector would keep a set's bytes (400 MB) alive for the whole
/// run; the page, which ignores the message, collects them.
fn hand_back(part: &js_sys::Uint8Array) {
    let _ = scope().post_message_with_transfer(part, &js_sys::Array::of1(&part.buffer()));
}

/// Decode a request sent in parts (the page's `request_buffer`: the head,
/// then one part per file: a byte file as a buffer, copied out and handed
/// back at once; a dropped file as its `Blob`, kept unread: see
/// [`file_bytes`]).
fn decode_parts(parts: &[JsValue]) -> Result<Request, String> {
    let head = parts
        .first()
        .and_then(|p| p.dyn_ref::<js_sys::Uint8Array>())
        .ok_or("a request without its head")?;
    let head = decode_request_head(&head.to_vec())?;
    let infos = head.files();
    if infos.len() + 1 != parts.len() {
        return Err(format!(
            "run request names {} file(s) but carries {}",
            infos.len(),
            parts.len() - 1
        ));
    }
    let mut files = Vec::with_capacity(infos.len());
    for (info, part) in infos.into_iter().zip(&parts[1..]) {
        let data = if let Some(blob) = part.dyn_ref::<web_sys::Blob>() {
            let id = info.blob.ok_or_else(|| {
                format!("file `{}`: a Blob where bytes were announced", info.name)
            })?;
            FileData::Blob(BlobFile {
                id,
                size_bytes: blob.size() as u64,
                blob: blob.clone(),
            })
        } else if let Some(arr) = part.dyn_ref::<js_sys::Uint8Array>() {
            let bytes = arr.to_vec();
            hand_back(arr);
            FileData::Bytes(Rc::new(bytes))
        } else {
            return Err(format!("file `{}`: neither bytes nor a Blob", info.name));
        };
        files.push(InputFile {
            name: info.name,
            data,
        });
    }
    head.into_request(files)
}

/// Bytes read from `Blob`s at a time (each chunk a JS buffer, handed back
/// to the page once copied: see [`hand_back`]).
const READ_CHUNK_BYTES: u64 = 8 << 20;

/// Read a `Blob` into wasm memory, chunk by chunk (`FileReaderSync`: a
/// worker may read synchronously), straight into one buffer of its size.
fn read_blob(blob: &web_sys::Blob, size_bytes: u64) -> Result<Vec<u8>, String> {
    let js = |e: JsValue| {
        e.dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| e.as_string())
            .unwrap_or_else(|| format!("{e:?}"))
    };
    let capacity = usize::try_from(size_bytes)
        .map_err(|_| format!("{size_bytes} bytes do not fit in the worker's memory"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(capacity)
        .map_err(|_| format!("{size_bytes} bytes do not fit in the worker's memory"))?;
    let reader = web_sys::FileReaderSync::new().map_err(js)?;
    let mut at = 0u64;
    while at < size_bytes {
        let end = (at + READ_CHUNK_BYTES).min(size_bytes);
        let part = blob
            .slice_with_f64_and_f64(at as f64, end as f64)
            .map_err(js)?;
        let buf = reader.read_as_array_buffer(&part).map_err(js)?;
        let arr = js_sys::Uint8Array::new(&buf);
        let from = out.len();
        out.resize(from + arr.length() as usize, 0);
        arr.copy_to(&mut out[from..]);
        hand_back(&arr);
        at = end;
    }
    if out.len() as u64 != size_bytes {
        return Err(format!(
            "read {} of its {size_bytes} bytes (did the file change on disk?)",
            out.len()
        ));
    }
    Ok(out)
}

/// `Blob` files up to this size are kept in the worker once read (a re-run
/// reads them from memory); a larger one is read again whenever a run
/// needs its bytes, one file at a time, so a set of large files (8 PyTorch
/// profiler traces of 50 MB) is never held whole: each file's bytes are
/// dropped once it is parsed.
const KEEP_MAX_BYTES: u64 = 16 << 20;

/// Forget the files kept for earlier requests that `files` no longer names
/// (their memory is reused).
fn forget_other_files(files: &[InputFile]) {
    let ids: Vec<u64> = files
        .iter()
        .filter_map(|f| match &f.data {
            FileData::Blob(b) => Some(b.id),
            FileData::Bytes(_) => None,
        })
        .collect();
    READ.with(|r| r.borrow_mut().retain(|(id, _)| ids.contains(id)));
}

/// File `f`'s bytes: its own, or those kept of its `Blob`, else the `Blob`
/// read now (`reading()` is called first; kept when small).
fn file_bytes(f: &InputFile, reading: &mut dyn FnMut()) -> Result<Rc<Vec<u8>>, String> {
    let b = match &f.data {
        FileData::Bytes(bytes) => return Ok(bytes.clone()),
        FileData::Blob(b) => b,
    };
    let kept = READ.with(|r| {
        r.borrow()
            .iter()
            .find(|(id, _)| *id == b.id)
            .map(|(_, bytes)| bytes.clone())
    });
    if let Some(bytes) = kept {
        return Ok(bytes);
    }
    reading();
    let bytes = Rc::new(read_blob(&b.blob, b.size_bytes)?);
    if b.size_bytes <= KEEP_MAX_BYTES {
        READ.with(|r| r.borrow_mut().push((b.id, bytes.clone())));
    }
    Ok(bytes)
}

fn on_message(e: MessageEvent) {
    let data = e.data();
    // The request's parts (the page's `request_buffer`: the head, then one
    // part per file), or one buffer holding a request without `Blob`s.
    let decoded = if let Some(arr) = data.dyn_ref::<js_sys::Array>() {
        decode_parts(&arr.iter().collect::<Vec<_>>())
    } else if let Some(arr) = data.dyn_ref::<js_sys::Uint8Array>() {
        decode_request(&arr.to_vec())
    } else if let Some(buf) = data.dyn_ref::<js_sys::ArrayBuffer>() {
        decode_request(&js_sys::Uint8Array::new(buf).to_vec())
    } else {
        send(&Response::Failed {
            id: 0,
            message: "unexpected message to the worker".into(),
        });
        return;
    };
    drop(data);
    match decoded {
        Ok(Request::Run(run)) => {
            CURRENT.with(|c| c.set(run.id));
            LAST.with(|l| l.borrow_mut().take());
            forget_other_files(&run.files);
            let (id, total, n) = (run.id, compute::progress_total(&run), run.files.len());
            let (mut output, source) = compute::run_with_reader(
                &run,
                &mut |i, f| {
                    file_bytes(f, &mut || {
                        send(&Response::Progress(Progress {
                            id,
                            done: 0,
                            total,
                            label: format!("Reading {} (file {} of {n})", f.name, i + 1),
                            parsed_bytes: None,
                        }))
                    })
                },
                &mut |p| send(&Response::Progress(p)),
            );
            let timelines = std::mem::take(&mut output.timelines);
            send(&Response::Done {
                id: run.id,
                output: Box::new(output),
            });
            // Always (an empty list says "no timeline for this run"), as
            // bytes, transferred.
            send_bytes(&encode_timelines(run.id, &timelines));
            LAST.with(|l| *l.borrow_mut() = source.map(|s| (run.id, s)));
        }
        Ok(Request::Sweep(x)) => {
            CURRENT.with(|c| c.set(x.id));
            forget_other_files(&x.files);
            let mut read = Vec::with_capacity(x.files.len());
            for f in &x.files {
                match file_bytes(f, &mut || {}) {
                    Ok(bytes) => read.push((f.name.as_str(), bytes)),
                    Err(e) => {
                        send(&Response::Failed {
                            id: x.id,
                            message: format!("could not read `{}`: {e}", f.name),
                        });
                        return;
                    }
                }
            }
            let files: Vec<(&str, &[u8])> = read
                .iter()
                .map(|(name, bytes)| (*name, bytes.as_slice()))
                .collect();
            match sweep::sweep_spec(&x.inputs, &x.job, &x.settings, &x.pinned, &files) {
                Ok((spec, config)) => {
                    let mut last_chunk_ms = js_sys::Date::now();
                    let mut report = sweep::run_shard(
                        &spec,
                        &config,
                        x.shard.index,
                        x.shard.count,
                        &mut |done, total, pending| {
                            send(&Response::SweepProgress {
                                id: x.id,
                                done,
                                total,
                            });
                            let now = js_sys::Date::now();
                            if sweep::chunk_due(pending.len(), done, total, now - last_chunk_ms) {
                                send(&Response::SweepRows {
                                    id: x.id,
                                    rows: std::mem::take(pending),
                                });
                                last_chunk_ms = now;
                            }
                        },
                    );
                    // The rows went in the chunks.
                    report.results = Vec::new();
                    send(&Response::SweepDone {
                        id: x.id,
                        report: Box::new(report),
                    });
                }
                Err(message) => send(&Response::Failed { id: x.id, message }),
            }
        }
        Ok(Request::Export(x)) => {
            let content = LAST.with(|l| match l.borrow().as_ref() {
                Some((id, source)) if *id == x.id => engine_run::export(source, &x.testid),
                _ => None,
            });
            match content {
                Some(content) => send(&Response::Export {
                    id: x.id,
                    testid: x.testid,
                    content,
                }),
                None => send(&Response::ExportFailed {
                    id: x.id,
                    testid: x.testid.clone(),
                    message: format!(
                        "the worker no longer holds run {}'s data for `{}`: press Simulate, then download again",
                        x.id, x.testid
                    ),
                }),
            }
        }
        Err(message) => send(&Response::Failed { id: 0, message }),
    }
}

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let id = CURRENT.with(Cell::get);
        send(&Response::Failed {
            id,
            message: format!("the worker panicked: {info}"),
        });
    }));
    let handler = Closure::<dyn FnMut(MessageEvent)>::new(on_message);
    scope().set_onmessage(Some(handler.as_ref().unchecked_ref()));
    handler.forget();
    send(&Response::Ready);
}
