//! The shareable view in the URL fragment:
//! `#example=simai_llama65b_tp8_pp4_vpp8.txt&mode=simai&world=512&…`.
//! The mode and the settings the user set (typed, or from a link) are
//! written; the others are left to the files and the defaults, exactly as
//! on the page, so a link reproduces the run (writing a value the page took
//! from a file would pin it, and pinned, a default like the backward factor
//! would override what the file says). Reading accepts any subset, ignores unknown keys with a
//! note, and rejects bad values with a note naming the key. The fragment
//! never reaches a server. Pure text functions plus two small DOM helpers.
//!
//! A described job ("Describe a job" panel) is written whole, after the
//! settings: `model=llama3-8b&job_gpu=H100-SXM&job_tp=2&…` (every field of
//! [`crate::job::JobField`]); a dropped `config.json` cannot travel in a
//! link, so it is named (`model_file=config.json`) and must be dropped
//! again. Any job key makes the link's input the job.

use crate::examples::EXAMPLES;
use crate::job::{fragment_parts, JobSettings};
use crate::settings::{Field, Settings};
use std::collections::BTreeSet;

/// What a fragment says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UrlState {
    /// A bundled example to load (only names from the gallery are accepted).
    pub example: Option<String>,
    /// The defaults with every given field applied.
    pub settings: Settings,
    /// The fields the fragment set (they become pinned).
    pub given: BTreeSet<Field>,
    /// The described job, when the link names one (the defaults with every
    /// given job field applied).
    pub job: Option<JobSettings>,
}

pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn decode_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let hex = |c: u8| (c as char).to_digit(16);
        if b == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(if b == b'+' { b' ' } else { b });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The fragment (without `#`) for a view: the example, the mode and the
/// `set` fields' values, in form order.
pub fn to_fragment(example: Option<&str>, settings: &Settings, set: &BTreeSet<Field>) -> String {
    let mut parts = Vec::with_capacity(Field::ALL.len() + 1);
    if let Some(ex) = example {
        parts.push(format!("example={}", encode_component(ex)));
    }
    for f in Field::ALL
        .into_iter()
        .filter(|f| *f == Field::Mode || set.contains(f))
    {
        parts.push(format!(
            "{}={}",
            f.key(),
            encode_component(&settings.get(f))
        ));
    }
    parts.join("&")
}

/// The job's part of the fragment (without `&` in front): every field.
pub fn job_fragment(job: &JobSettings) -> String {
    fragment_parts(job)
        .into_iter()
        .map(|(k, v)| format!("{k}={}", encode_component(&v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Read a fragment (with or without its leading `#`). Returns the state and
/// one note per ignored part.
pub fn from_fragment(fragment: &str) -> (UrlState, Vec<String>) {
    let mut state = UrlState::default();
    let mut notes = Vec::new();
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    let mut values: Vec<(Field, String)> = Vec::new();
    for part in fragment.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let key = decode_component(key);
        let value = decode_component(value);
        // The configuration search's bounds and the run plan's inputs:
        // read by their views.
        if key.starts_with("sweep_") || key.starts_with("plan_") {
            continue;
        }
        if key == "example" {
            if EXAMPLES.iter().any(|e| e.file_name == value) {
                state.example = Some(value);
            } else {
                notes.push(format!("link names an unknown example `{value}`; ignored"));
            }
            continue;
        }
        // A job key (even with a bad value) makes the link describe a job.
        let mut j = state.job.clone().unwrap_or_default();
        if let Some(applied) = j.apply_fragment(&key, &value) {
            if let Err(m) = applied {
                notes.push(format!("link setting `{key}`: {m}; ignored"));
            }
            state.job = Some(j);
            continue;
        }
        match Field::from_key(&key) {
            Some(field) => {
                values.retain(|(f, _)| *f != field);
                values.push((field, value));
            }
            None => notes.push(format!("link has an unknown setting `{key}`; ignored")),
        }
    }
    // Apply in form order, whatever the link's order: a GPU/NIC preset sets
    // its bandwidth, then the link's own bandwidth value wins.
    values.sort_by_key(|(f, _)| Field::ALL.iter().position(|x| x == f));
    for (field, value) in values {
        match state.settings.set(field, &value) {
            Ok(()) => {
                state.given.insert(field);
            }
            Err(m) => notes.push(format!("link setting `{}`: {m}; ignored", field.key())),
        }
    }
    (state, notes)
}

/// The current page's fragment, without `#` (empty outside a browser).
pub fn current_fragment() -> String {
    gloo::utils::window()
        .location()
        .hash()
        .map(|h| h.trim_start_matches('#').to_string())
        .unwrap_or_default()
}

/// Replace the page's fragment without adding a history entry or firing
/// `hashchange`.
pub fn replace_fragment(fragment: &str) {
    let window = gloo::utils::window();
    if let Ok(history) = window.history() {
        let url = format!("#{fragment}");
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
    }
}
