//! The page's side of the Web Worker: spawns `worker_loader.js` (relative
//! URL, so any sub-path works; the first one is started early by
//! `index.html` and adopted), waits for its `Ready`, posts run requests
//! (the head and byte files as buffers, transferred, not copied; dropped
//! files as their `Blob`s), forwards every response
//! to a callback, and cancels by terminating the worker and spawning a
//! fresh one. A worker crash (a trap, a failed load) is reported as a
//! [`HostEvent::Crashed`] for the run in flight and the worker is replaced.

use crate::protocol::{
    decode_response, decode_timelines, encode_request_parts, FileData, Request, Response,
};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{ErrorEvent, MessageEvent, Worker};
use yew::Callback;

/// Relative URL of the worker script Trunk writes (`data-loader-shim`).
pub const WORKER_URL: &str = "./worker_loader.js";

/// What the host reports to the page.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Response(Response),
    /// The worker died or could not start; `id` is the run in flight.
    Crashed {
        id: Option<u64>,
        message: String,
    },
}

type MessageClosure = Closure<dyn FnMut(MessageEvent)>;
type ErrorClosure = Closure<dyn FnMut(ErrorEvent)>;

struct Inner {
    url: String,
    sink: Callback<HostEvent>,
    worker: Option<Worker>,
    ready: bool,
    /// The newest request posted before the worker was ready.
    queued: Option<(u64, js_sys::Array)>,
    /// The run posted and not yet answered with Done/Failed.
    in_flight: Option<u64>,
    closures: Option<(MessageClosure, ErrorClosure)>,
}

/// A handle to the worker (cheap to clone; all clones share it).
#[derive(Clone)]
pub struct WorkerHost(Rc<RefCell<Inner>>);

impl PartialEq for WorkerHost {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl WorkerHost {
    /// Start a worker from `url`; every response goes to `sink`.
    pub fn new(url: &str, sink: Callback<HostEvent>) -> Self {
        let host = WorkerHost(Rc::new(RefCell::new(Inner {
            url: url.to_string(),
            sink,
            worker: None,
            ready: false,
            queued: None,
            in_flight: None,
            closures: None,
        })));
        host.spawn();
        host
    }

    fn spawn(&self) {
        let weak = Rc::downgrade(&self.0);
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let Some(inner) = weak.upgrade() else { return };
            let data = e.data();
            if let Some(buf) = data.dyn_ref::<js_sys::ArrayBuffer>() {
                // Timelines, as bytes. A damaged one is shown as a notice
                // (the run's result stands).
                let event = match decode_timelines(&js_sys::Uint8Array::new(buf).to_vec()) {
                    Ok(r) => HostEvent::Response(r),
                    Err(message) => HostEvent::Crashed { id: None, message },
                };
                let sink = inner.borrow().sink.clone();
                sink.emit(event);
                return;
            }
            let response = match data.as_string().map(|s| decode_response(&s)) {
                Some(Ok(r)) => r,
                Some(Err(m)) => Response::Failed {
                    id: inner.borrow().in_flight.unwrap_or(0),
                    message: m,
                },
                // A request's part the worker has read, handed back so
                // that this side's collector frees it (`Uint8Array`).
                None => return,
            };
            let sink = {
                let mut me = inner.borrow_mut();
                match &response {
                    Response::Ready => {
                        me.ready = true;
                        if let (Some((id, buf)), Some(w)) = (me.queued.take(), me.worker.clone()) {
                            post(&w, &buf);
                            me.in_flight = Some(id);
                        }
                    }
                    Response::Done { id, .. }
                    | Response::Failed { id, .. }
                    | Response::SweepDone { id, .. } => {
                        if me.in_flight == Some(*id) {
                            me.in_flight = None;
                        }
                    }
                    Response::Progress(_)
                    | Response::Timelines { .. }
                    | Response::Export { .. }
                    | Response::ExportFailed { .. }
                    | Response::SweepProgress { .. }
                    | Response::SweepRows { .. } => {}
                }
                me.sink.clone()
            };
            sink.emit(HostEvent::Response(response));
        });
        let weak = Rc::downgrade(&self.0);
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
            // Handled here: keep it out of the console as an uncaught error.
            e.prevent_default();
            let Some(inner) = weak.upgrade() else { return };
            let (sink, id) = {
                let me = inner.borrow();
                (
                    me.sink.clone(),
                    me.in_flight.or(me.queued.as_ref().map(|q| q.0)),
                )
            };
            let message = if e.message().is_empty() {
                "the worker could not be started or stopped unexpectedly".to_string()
            } else {
                e.message()
            };
            WorkerHost(inner).restart();
            sink.emit(HostEvent::Crashed { id, message });
        });
        let mut me = self.0.borrow_mut();
        let (started, early_events) = match take_early_worker(&me.url) {
            Some((worker, events)) => (Ok(worker), events),
            None => (Worker::new(&me.url), Vec::new()),
        };
        match started {
            Ok(worker) => {
                worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
                worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
                me.worker = Some(worker);
            }
            Err(e) => {
                let sink = me.sink.clone();
                drop(me);
                sink.emit(HostEvent::Crashed {
                    id: None,
                    message: format!("cannot start the worker: {e:?}"),
                });
                return;
            }
        }
        me.ready = false;
        // What an early worker said before the page listened (`Ready`, or
        // an error), in order, once `me` is released.
        let handlers: (js_sys::Function, js_sys::Function) = (
            on_message.as_ref().clone().unchecked_into(),
            on_error.as_ref().clone().unchecked_into(),
        );
        me.closures = Some((on_message, on_error));
        drop(me);
        for event in early_events {
            let handler = if event.type_() == "error" {
                &handlers.1
            } else {
                &handlers.0
            };
            let _ = handler.call1(&wasm_bindgen::JsValue::NULL, &event);
        }
    }

    /// Terminate the worker (dropping whatever it was doing) and start a
    /// fresh one.
    fn restart(&self) {
        {
            let mut me = self.0.borrow_mut();
            if let Some(w) = me.worker.take() {
                w.set_onmessage(None);
                w.set_onerror(None);
                w.terminate();
            }
            me.ready = false;
            me.queued = None;
            me.in_flight = None;
            // The old closures may be running (a crash report): drop them later.
            if let Some(old) = me.closures.take() {
                gloo::timers::callback::Timeout::new(0, move || drop(old)).forget();
            }
        }
        self.spawn();
    }

    /// Whether a run is posted and unanswered.
    pub fn busy(&self) -> bool {
        self.0.borrow().in_flight.is_some()
    }

    /// Post a run (or a sweep slice). A run still in progress is abandoned (the worker is
    /// replaced) so the newest settings are computed at once.
    pub fn run(&self, req: &Request) {
        let id = match req {
            Request::Run(run) => run.id,
            Request::Sweep(sweep) => sweep.id,
            Request::Export(_) => {
                let _ = self.export(req);
                return;
            }
        };
        if self.busy() {
            self.restart();
        }
        let buf = request_buffer(req);
        let mut me = self.0.borrow_mut();
        match (&me.worker, me.ready) {
            (Some(w), true) => {
                post(w, &buf);
                me.in_flight = Some(id);
            }
            _ => me.queued = Some((id, buf)),
        }
    }

    /// Ask the worker for a download of its last run (answered by a
    /// `Response::Export`, or `Failed` when that run is gone). Not queued:
    /// a worker that is not ready has no run to export, so this returns
    /// `false` (nothing was posted) and the page says so.
    pub fn export(&self, req: &Request) -> bool {
        let me = self.0.borrow();
        match (&me.worker, me.ready) {
            (Some(w), true) => {
                post(w, &request_buffer(req));
                true
            }
            _ => false,
        }
    }

    /// Abandon the run in progress.
    pub fn cancel(&self) {
        self.restart();
    }
}

/// The worker `index.html` started before the page's wasm loaded
/// (`window.__trainscopeEarlyWorker = { url, worker, events }`: it starts in
/// parallel with the page instead of after it, which brings the first
/// result about 150 ms sooner), with the events it fired meanwhile. Taken
/// once, and only when it was started from `url`.
fn take_early_worker(url: &str) -> Option<(Worker, Vec<web_sys::Event>)> {
    use js_sys::Reflect;
    use wasm_bindgen::JsValue;
    let window = web_sys::window()?;
    let key = JsValue::from_str("__trainscopeEarlyWorker");
    let early = Reflect::get(&window, &key).ok().filter(|v| v.is_object())?;
    let _ = Reflect::delete_property(&window, &key);
    let field = |name: &str| Reflect::get(&early, &JsValue::from_str(name)).ok();
    let worker: Worker = field("worker")?.dyn_into().ok()?;
    if field("url")?.as_string().as_deref() != Some(url) {
        worker.terminate();
        return None;
    }
    let events = field("events")
        .and_then(|v| v.dyn_into::<js_sys::Array>().ok())
        .map(|a| a.iter().filter_map(|e| e.dyn_into().ok()).collect())
        .unwrap_or_default();
    Some((worker, events))
}

/// The request as JS values (the parts of its `TSR1` layout: the head,
/// then one part per file): a file the page holds as bytes is a JS buffer
/// copied straight from them (no whole-request copy in the page's wasm
/// memory: it would stay grown, wasm memory never shrinks); a dropped file
/// is its `Blob` (posting it passes a handle, not its bytes: the worker
/// reads it).
fn request_buffer(req: &Request) -> js_sys::Array {
    let (head, files) = encode_request_parts(req);
    let head: JsValue = js_sys::Uint8Array::from(head.as_slice()).into();
    std::iter::once(head)
        .chain(files.into_iter().map(|f| match f {
            FileData::Bytes(b) => js_sys::Uint8Array::from(b.as_slice()).into(),
            FileData::Blob(b) => b.blob.clone().into(),
        }))
        .collect()
}

/// Post the request's parts, transferring the buffers (not the `Blob`s).
fn post(worker: &Worker, parts: &js_sys::Array) {
    let transfer: js_sys::Array = parts
        .iter()
        .filter_map(|p| p.dyn_into::<js_sys::Uint8Array>().ok())
        .map(|p| p.buffer())
        .collect();
    if worker.post_message_with_transfer(parts, &transfer).is_err() {
        // A detached buffer cannot be sent twice; fall back to a copy.
        let _ = worker.post_message(parts);
    }
}
