//! The per-file summary (`trainscope inspect`, the web page's file list):
//! detected format, the job description found in the header, record counts,
//! and every diagnostic. One serialisable value per input file so the CLI's
//! JSON and the browser show the same data.

use crate::diag::Diagnostic;
use crate::formats::{self, simai, Format};
use serde::Serialize;

/// Header facts of a SimAI workload, flattened for display and JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiSummary {
    pub policy: &'static str,
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    pub vpp: u32,
    pub ga: u32,
    pub world: Option<u32>,
    pub pp_comm_bytes: u64,
    pub records: u64,
    pub declared_records: u64,
    pub skipped_records: u32,
}

/// What `inspect` reports about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    pub file: String,
    /// Detected (or forced) format; `None` when it could not be recognised.
    pub format: Option<Format>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub simai: Option<SimaiSummary>,
    /// Every diagnostic, warnings and errors, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl FileSummary {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Detect (unless `forced`) and parse one file, summarising it.
pub fn inspect(file: &str, bytes: &[u8], forced: Option<Format>) -> FileSummary {
    let mut summary = FileSummary {
        file: file.to_string(),
        format: None,
        simai: None,
        diagnostics: Vec::new(),
    };
    let text = match formats::decode_text(file, bytes) {
        Ok((text, lossy)) => {
            if lossy {
                summary.diagnostics.push(Diagnostic::warning(format!(
                    "`{file}` is not valid UTF-8; invalid bytes were replaced with U+FFFD"
                )));
            }
            text
        }
        Err(d) => {
            summary.diagnostics.push(d);
            return summary;
        }
    };
    let format = match forced.map_or_else(|| formats::detect(file, &text), Ok) {
        Ok(f) => f,
        Err(d) => {
            summary.diagnostics.push(d);
            return summary;
        }
    };
    summary.format = Some(format);
    match format {
        Format::SimaiWorkload => match simai::parse(file, &text) {
            Ok(w) => {
                let h = &w.header;
                summary.simai = Some(SimaiSummary {
                    policy: h.policy.as_str(),
                    tp: h.tp,
                    pp: h.pp,
                    ep: h.ep,
                    vpp: h.vpp,
                    ga: h.ga,
                    world: h.world,
                    pp_comm_bytes: h.pp_comm_bytes,
                    records: w.records.len() as u64,
                    declared_records: w.declared_records,
                    skipped_records: w.skipped_records,
                });
                summary.diagnostics.extend(w.diagnostics);
            }
            Err(d) => summary.diagnostics.push(d),
        },
        Format::NeusightTsv | Format::EchoTrace | Format::OptimusPrimeLog => {}
    }
    summary
}
