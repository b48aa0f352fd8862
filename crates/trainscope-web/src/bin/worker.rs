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

use std::cell::{Cell, RefCell};
use trainscope_web::compute::{self, ExportSource};
use trainscope_web::protocol::{
    decode_request_with, encode_response, encode_timelines, Request, Response,
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

/// Decode a request sent as consecutive parts (see `decode_request_with`):
/// each file is copied from its part into its own bytes, never the whole
/// request into wasm memory. A part read to its end (ranges are read in
/// order) is handed back to the page at once, its buffer transferred: the
/// worker runs wasm for seconds without allocating JS objects, so its
/// garbage collector would keep a dropped set's bytes (400 MB) alive for
/// the whole run; the page, which ignores the message, collects them.
fn decode_parts(parts: &[js_sys::Uint8Array]) -> Result<Request, String> {
    // wasm32: a usize is a u32.
    let mut bounds = Vec::with_capacity(parts.len());
    let mut total = 0usize;
    for p in parts {
        let len = p.length() as usize;
        bounds.push((total, total + len));
        total += len;
    }
    decode_request_with(total, &mut |start, end| {
        let mut out = Vec::with_capacity(end - start);
        for (p, &(from, to)) in parts.iter().zip(&bounds) {
            if to > start && from < end {
                let a = start.max(from) - from;
                let b = end.min(to) - from;
                // Straight into `out` (no temporary copy in wasm memory).
                let at = out.len();
                out.resize(at + (b - a), 0);
                p.subarray(a as u32, b as u32).copy_to(&mut out[at..]);
                if end >= to {
                    let _ = scope().post_message_with_transfer(p, &js_sys::Array::of1(&p.buffer()));
                }
            }
        }
        out
    })
}

fn on_message(e: MessageEvent) {
    let data = e.data();
    // The request's parts (the page's `request_buffer`: the head, then one
    // buffer per file), or one buffer holding them all.
    let parts: Vec<js_sys::Uint8Array> = if let Some(arr) = data.dyn_ref::<js_sys::Array>() {
        arr.iter().filter_map(|p| p.dyn_into().ok()).collect()
    } else if let Some(arr) = data.dyn_ref::<js_sys::Uint8Array>() {
        vec![arr.clone()]
    } else if let Some(buf) = data.dyn_ref::<js_sys::ArrayBuffer>() {
        vec![js_sys::Uint8Array::new(buf)]
    } else {
        send(&Response::Failed {
            id: 0,
            message: "unexpected message to the worker".into(),
        });
        return;
    };
    let decoded = decode_parts(&parts);
    drop(parts);
    match decoded {
        Ok(Request::Run(run)) => {
            CURRENT.with(|c| c.set(run.id));
            LAST.with(|l| l.borrow_mut().take());
            let (mut output, source) =
                compute::run_with_source(&run, &mut |p| send(&Response::Progress(p)));
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
            let files: Vec<(&str, &[u8])> = x
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice()))
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
                Some((id, source)) if *id == x.id => compute::export(source, &x.testid),
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
