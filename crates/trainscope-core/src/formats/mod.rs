//! Input formats: content-based detection and one parser module per format
//! (FORMATS.md sections 1, 3, 4, 5). Detection looks at the bytes, never at
//! the file name, and explains what it expected when nothing matches.

pub mod echo;
pub mod lex;
pub mod neusight;
pub mod optimus;
pub mod simai;

use crate::diag::Diagnostic;
use serde::Serialize;

/// The input formats trainscope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Format {
    /// SimAI / AICB text workload.
    #[serde(rename = "simai-workload")]
    SimaiWorkload,
    /// NeuSight "Work_Item" TSV.
    #[serde(rename = "neusight-tsv")]
    NeusightTsv,
    /// Echo / Megatron per-rank op trace.
    #[serde(rename = "echo-trace")]
    EchoTrace,
    /// Optimus-Prime pipeline training log.
    #[serde(rename = "optimus-prime-log")]
    OptimusPrimeLog,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::SimaiWorkload,
        Format::NeusightTsv,
        Format::EchoTrace,
        Format::OptimusPrimeLog,
    ];

    /// The stable name used in the CLI, JSON and the web page.
    pub fn name(self) -> &'static str {
        match self {
            Format::SimaiWorkload => "simai-workload",
            Format::NeusightTsv => "neusight-tsv",
            Format::EchoTrace => "echo-trace",
            Format::OptimusPrimeLog => "optimus-prime-log",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What a file of this format looks like, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            Format::SimaiWorkload => "a policy such as HYBRID_TRANSFORMER_FWD_IN_BCKWD on line 1",
            Format::NeusightTsv => "a tab-separated header starting `name\\tforward_compute_time`",
            Format::EchoTrace => "lines like `rank:7:forward_step(stage_id=3,...)`",
            Format::OptimusPrimeLog => "log lines like `> World size: 8` or `| epoch   1 |`",
        }
    }
}

/// Decode input bytes as text: strips a UTF-8 BOM; refuses binary content
/// (NUL bytes); replaces invalid UTF-8 with U+FFFD (the caller warns).
pub fn decode_text<'a>(
    file: &str,
    bytes: &'a [u8],
) -> Result<(std::borrow::Cow<'a, str>, bool), Diagnostic> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Some(pos) = bytes.iter().take(1 << 20).position(|&b| b == 0) {
        return Err(Diagnostic::error(format!(
            "`{file}` is not a text file (NUL byte at offset {pos})"
        ))
        .with_hint("trainscope reads SimAI/AICB workloads, NeuSight TSVs, Echo traces and Optimus-Prime logs, all plain text"));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok((std::borrow::Cow::Borrowed(s), false)),
        Err(_) => Ok((String::from_utf8_lossy(bytes), true)),
    }
}

/// Recognise the format of `text` from its content.
pub fn detect(file: &str, text: &str) -> Result<Format, Diagnostic> {
    let head: &str = {
        let mut end = text.len().min(64 * 1024);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        &text[..end]
    };
    let first = head
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let first_token = first.split([' ', '\t']).next().unwrap_or("");
    if simai::Policy::from_token(first_token).is_some() {
        return Ok(Format::SimaiWorkload);
    }
    if first.starts_with("name\tforward_compute_time") {
        return Ok(Format::NeusightTsv);
    }
    if head.lines().take(50).any(is_echo_line) {
        return Ok(Format::EchoTrace);
    }
    if head.contains("> World size:")
        || head.contains("transformer-block(module) forward time")
        || head.contains("| epoch ")
    {
        return Ok(Format::OptimusPrimeLog);
    }
    if text.contains("transformer-block(module) forward time") || text.contains("| epoch ") {
        return Ok(Format::OptimusPrimeLog);
    }
    let expected: Vec<String> = Format::ALL
        .iter()
        .map(|f| format!("{} ({})", f.name(), f.signature()))
        .collect();
    Err(
        Diagnostic::error(format!("unrecognised format in `{file}`"))
            .with_hint(format!("expected one of: {}", expected.join("; "))),
    )
}

fn is_echo_line(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("rank:") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && rest[digits..].starts_with(':')
        && rest[digits + 1..].split_once('(').is_some_and(|(name, _)| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(name: &str) -> String {
        let path = format!(
            "{}/../../tests/fixtures/seeds/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        String::from_utf8(std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn detects_every_seed_by_content() {
        for (name, want) in [
            ("simai_llama65b_tp8_pp4_vpp8.txt", Format::SimaiWorkload),
            ("simai_405b_tp8_pp16_ga16_sp.txt", Format::SimaiWorkload),
            ("neusight_gpt2large_dp_workitems.tsv", Format::NeusightTsv),
            ("echo_megatron_trace_rank7_tp2_pp4.txt", Format::EchoTrace),
            (
                "optimus_prime_llama1b_pp8_train.log",
                Format::OptimusPrimeLog,
            ),
        ] {
            assert_eq!(detect("x", &seed(name)).unwrap(), want, "{name}");
        }
    }

    #[test]
    fn unknown_content_says_what_was_expected() {
        let e = detect("junk.bin", "hello\nworld\n").unwrap_err();
        assert_eq!(e.message, "unrecognised format in `junk.bin`");
        assert!(e.hint.unwrap().contains("simai-workload"));
    }

    #[test]
    fn binary_is_refused() {
        assert!(decode_text("b", b"ab\0cd").is_err());
        let (t, lossy) = decode_text("b", b"\xEF\xBB\xBFok\xff").unwrap();
        assert!(lossy);
        assert!(t.starts_with("ok"));
    }
}
