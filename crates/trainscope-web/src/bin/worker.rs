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
    decode_request, encode_response, encode_timelines, Request, Response,
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

fn on_message(e: MessageEvent) {
    let data = e.data();
    let bytes = if let Some(arr) = data.dyn_ref::<js_sys::Uint8Array>() {
        arr.to_vec()
    } else if let Some(buf) = data.dyn_ref::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(buf).to_vec()
    } else {
        send(&Response::Failed {
            id: 0,
            message: "unexpected message to the worker".into(),
        });
        return;
    };
    match decode_request(&bytes) {
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
