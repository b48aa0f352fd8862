//! trainscope-web: the Yew front end. The only crate that knows the DOM.
//!
//! Two wasm binaries share this library: the page (`main.rs`: [`app`],
//! [`components`], [`state`]) and a Web Worker (`bin/worker.rs`:
//! [`compute`], [`model_job`], [`schedule_compare`]) that parses and simulates so the page never
//! freezes. They speak [`protocol`] (a run request with an id; progress,
//! then a result of display data from [`views`]). [`settings`] is the one
//! settings value (validated, pre-filled from the files, encoded in the URL
//! fragment by [`url`]); [`job`] holds the "Describe a job" panel's model
//! and training setup. [`glossary`] defines every figure the page shows.
//! [`format`], [`palette`] and [`download`] are small helpers;
//! [`worker_host`] is the page's handle on the worker.

pub mod app;
pub mod browser_files;
pub mod components;
pub mod compute;
pub mod download;
pub mod engine_run;
pub mod examples;
pub mod format;
pub mod glossary;
pub mod job;
pub mod model_job;
pub mod palette;
pub mod plan_inputs;
pub mod present;
pub mod protocol;
pub mod schedule_compare;
pub mod settings;
pub mod simulate;
pub mod state;
pub mod sweep;
pub mod sweep_inputs;
pub mod timeline;
pub mod url;
pub mod views;
pub mod worker_host;
