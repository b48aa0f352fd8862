//! Files from the browser into the reducer: a drop's or the picker's files
//! ([`read_files`], handed over unread as `Blob`s), the files a drop event
//! carries ([`dropped_files`]) and those index.html queued while the app
//! was starting ([`take_early_files`]). The root component and the ingest
//! panel both hand files over here.

use crate::protocol::FileData;
use crate::state::{Action, AppState};
use yew::prelude::*;

/// Hand browser files to the reducer all at once (files dropped together
/// belong together, e.g. the ranks of one run), unread: each stays the
/// browser's `Blob` ([`FileData::blob`]), which the worker reads when a
/// run needs it, so the page's memory never holds a file's bytes.
pub fn read_files(files: Vec<web_sys::File>, dispatch: UseReducerDispatcher<AppState>) {
    if files.is_empty() {
        return;
    }
    let loaded = files
        .into_iter()
        .map(|file| (file.name(), FileData::blob(file.into())))
        .collect();
    dispatch.dispatch(Action::Loaded {
        files: loaded,
        example: None,
    });
}

/// The name of the start-up queue that index.html's inline script keeps:
/// files dropped (or chosen) before the app mounted.
const EARLY_FILES: &str = "__trainscopeEarlyFiles";

/// Take the files queued by index.html while the app was starting (none
/// when the page has no such queue, e.g. a test page), and tell the script
/// the app takes drops from now on.
pub fn take_early_files() -> Vec<web_sys::File> {
    use wasm_bindgen::JsCast;
    let window = gloo::utils::window();
    let Ok(early) = js_sys::Reflect::get(&window, &EARLY_FILES.into()) else {
        return Vec::new();
    };
    if !early.is_object() {
        return Vec::new();
    }
    let _ = js_sys::Reflect::set(&early, &"taken".into(), &true.into());
    let queued = js_sys::Reflect::get(&early, &"files".into()).unwrap_or_default();
    let _ = js_sys::Reflect::set(&early, &"files".into(), &js_sys::Array::new());
    let Ok(queued) = queued.dyn_into::<js_sys::Array>() else {
        return Vec::new();
    };
    queued
        .iter()
        .filter_map(|f| f.dyn_into::<web_sys::File>().ok())
        .collect()
}

/// Files carried by a drop event.
pub fn dropped_files(event: &DragEvent) -> Vec<web_sys::File> {
    let Some(list) = event.data_transfer().and_then(|dt| dt.files()) else {
        return Vec::new();
    };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}
