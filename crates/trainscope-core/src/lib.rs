//! trainscope-core: the pure heart of trainscope. Bytes in, values out: input
//! format detection and parsers ([`formats`]), diagnostics as data
//! ([`diag`]) and the per-file summary shown by the CLI and the web page
//! ([`inspect`]) and the event-level simulator ([`sim`]). No IO, clocks, threads or DOM; builds for wasm32 and
//! natively, so the CLI and the browser compute identical numbers.

pub mod diag;
pub mod formats;
pub mod inspect;
pub mod sim;

pub use diag::{Diagnostic, Location, Severity};
pub use formats::Format;
