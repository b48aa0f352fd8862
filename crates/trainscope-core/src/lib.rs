//! trainscope-core: the pure heart of trainscope. Bytes in, values out: input
//! format detection and parsers ([`formats`]) into one workload model
//! ([`workload`]), diagnostics as data ([`diag`]), the per-file summary shown by
//! the CLI and the web page ([`inspect`]), the SimAI-compatible cost model
//! ([`analytical`]) and the event-level simulator with its timeline model
//! ([`sim`]), model-level jobs ([`job`]) and the configuration search over
//! them ([`search`]), with one range check per user setting ([`limits`]), and
//! the per-rank breakdown of measured GPU traces ([`analysis`]). No IO,
//! clocks, threads or DOM; builds for wasm32 and natively, so the CLI and
//! the browser compute identical numbers.

pub mod analysis;
pub mod analytical;
pub mod diag;
pub mod engine;
pub mod export;
pub mod formats;
/// Whole-run planning: days to train, failures, checkpoints, restarts and cost (goodput).
pub mod goodput;
pub mod hardware;
pub mod inspect;
pub mod job;
pub mod limits;
pub mod model;
pub mod named;
pub mod replay;
pub mod rng;
pub mod run;
pub mod search;
pub mod timeline;
pub mod whatif;
pub mod workload;

pub use diag::{Diagnostic, Location, Severity};
pub use workload::Format;
