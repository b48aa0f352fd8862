//! Input formats: content-based detection and one parser module per format
//! (docs/FORMATS.md; a HuggingFace `config.json` is read by [`hf`]). Detection looks at the bytes, never at the file
//! name, and explains what it expected when nothing matches.

pub mod chakra;
pub mod echo;
pub mod hf;
pub mod kineto;
pub mod lex;
pub mod neusight;
pub mod optimus;
pub mod simai;

use crate::diag::Diagnostic;
use crate::workload::Format;
use serde::Serialize;

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
        .with_hint("trainscope reads text (SimAI/AICB workloads, NeuSight TSVs, Echo traces, Optimus-Prime logs, Kineto JSON traces, HuggingFace config.json) and two binary formats: gzip-compressed Kineto traces (.gz) and Chakra execution traces (.et); this file is none of these"));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok((std::borrow::Cow::Borrowed(s), false)),
        Err(_) => Ok((String::from_utf8_lossy(bytes), true)),
    }
}

/// A detection result: the format, how sure the detector is (0-100) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    pub format: Format,
    /// Confidence in percent: 100 = the format's exact signature was found;
    /// below [`Detection::THRESHOLD`] the format is not accepted by itself.
    pub confidence: u8,
    /// What was seen, in words.
    pub reason: String,
}

impl Detection {
    /// Lowest confidence [`detect`] accepts.
    pub const THRESHOLD: u8 = 40;
}

/// The first 64 KiB of `text`, cut at a char boundary.
fn head_of(text: &str) -> &str {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Score every format against `text`; best first (ties keep [`Format::ALL`]
/// order). Formats with no evidence at all are left out.
pub fn detect_all(text: &str) -> Vec<Detection> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let head = head_of(text);
    let mut non_empty = head.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = non_empty.next().unwrap_or("");
    let second = non_empty.next().unwrap_or("");
    let mut out = Vec::new();

    // SimAI: a policy token first, a count on line 2.
    let first_token = first
        .split(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or("");
    if simai::Policy::from_token(first_token).is_some() {
        let count_next = second
            .split(|c: char| c.is_ascii_whitespace())
            .next()
            .is_some_and(|t| lex::parse_u64_exact(t).is_ok());
        out.push(Detection {
            format: Format::SimaiWorkload,
            confidence: if count_next { 100 } else { 90 },
            reason: format!("line 1 starts with the policy `{first_token}`"),
        });
    } else if first.contains("model_parallel_NPU_group") || first.contains("all_gpus") {
        out.push(Detection {
            format: Format::SimaiWorkload,
            confidence: 60,
            reason: "line 1 has SimAI header keys but no known policy".to_string(),
        });
    } else {
        let names: Vec<&str> = simai::Policy::ALL.iter().map(|p| p.as_str()).collect();
        if first_token.len() > 3 && lex::suggest_short(first_token, &names).is_some() {
            out.push(Detection {
                format: Format::SimaiWorkload,
                confidence: 45,
                reason: format!(
                    "line 1 starts with `{}`, close to a SimAI policy",
                    lex::quote(first_token, 40)
                ),
            });
        }
    }

    // NeuSight: the header names.
    if first.starts_with("name\tforward_compute_time") {
        out.push(Detection {
            format: Format::NeusightTsv,
            confidence: 100,
            reason: "tab-separated NeuSight header on line 1".to_string(),
        });
    } else {
        let hits = neusight::COLUMNS
            .iter()
            .filter(|c| {
                first
                    .split(|ch: char| ch.is_ascii_whitespace())
                    .any(|f| f == **c)
            })
            .count();
        if hits >= 6 {
            out.push(Detection {
                format: Format::NeusightTsv,
                confidence: if hits == neusight::COLUMNS.len() {
                    90
                } else {
                    60
                },
                reason: format!("line 1 names {hits} of the 11 NeuSight columns"),
            });
        }
    }

    // Echo: share of `rank:R:op(` lines among the first 50.
    let sample: Vec<&str> = head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(50)
        .collect();
    let echo = sample.iter().filter(|l| is_echo_line(l)).count();
    if echo > 0 {
        let share = echo * 50 / sample.len().max(1);
        out.push(Detection {
            format: Format::EchoTrace,
            confidence: u8::try_from(50 + share).unwrap_or(100),
            reason: format!(
                "{echo} of the first {} lines are `rank:R:op(...)` lines",
                sample.len()
            ),
        });
    }

    // Optimus-Prime: distinct markers anywhere in the text.
    let markers = [
        "> World size:",
        "transformer-block(module) forward time",
        "| epoch ",
        "ms/batch",
        "stage2rank",
        "avg/op=",
    ];
    let found = markers.iter().filter(|m| text.contains(**m)).count();
    if found > 0 {
        out.push(Detection {
            format: Format::OptimusPrimeLog,
            confidence: match found {
                1 => 50,
                2 => 75,
                _ => 95,
            },
            reason: format!("{found} Optimus-Prime log marker(s) found"),
        });
    }

    // HuggingFace config.json: a JSON object with model keys.
    if let Some((confidence, reason)) = crate::formats::hf::looks_like(head) {
        out.push(Detection {
            format: Format::HfConfig,
            confidence,
            reason,
        });
    }
    // PyTorch profiler (Kineto) trace: a JSON object with `traceEvents`.
    if let Some((confidence, reason)) = kineto::looks_like(head) {
        out.push(Detection {
            format: Format::KinetoTrace,
            confidence,
            reason,
        });
    }
    // ASTRA-sim's comm_groups.json: a JSON object of lists of ranks.
    if let Some((confidence, reason)) = chakra::groups::looks_like(head, text) {
        out.push(Detection {
            format: Format::ChakraCommGroups,
            confidence,
            reason,
        });
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.confidence));
    out
}

/// Recognise the format of `text` from its content, with a confidence.
pub fn detect_with_confidence(file: &str, text: &str) -> Result<Detection, Diagnostic> {
    if text.trim().is_empty() {
        let what = if text.is_empty() {
            "is empty"
        } else {
            "holds only blank space"
        };
        return Err(Diagnostic::error(format!("the file `{file}` {what}"))
            .with_hint("nothing to read: check that the file was saved or copied completely"));
    }
    match detect_all(text).into_iter().next() {
        Some(d) if d.confidence >= Detection::THRESHOLD => Ok(d),
        other => {
            let expected: Vec<String> = Format::ALL
                .iter()
                .map(|f| format!("{} ({})", f.name(), f.signature()))
                .collect();
            let mut hint = format!("expected one of: {}", expected.join("; "));
            if let Some(d) = other {
                hint = format!(
                    "closest: {} ({}%, {}); force it with --format {}. {hint}",
                    d.format.name(),
                    d.confidence,
                    d.reason,
                    d.format.name()
                );
            }
            Err(Diagnostic::error(format!("unrecognised format in `{file}`")).with_hint(hint))
        }
    }
}

/// Recognise the format of `text` from its content.
pub fn detect(file: &str, text: &str) -> Result<Format, Diagnostic> {
    detect_with_confidence(file, text).map(|d| d.format)
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
    fn detects_hf_configs_by_content() {
        let hf = |name: &str| {
            let path = format!(
                "{}/../../tests/fixtures/hf/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            String::from_utf8(std::fs::read(path).unwrap()).unwrap()
        };
        for name in [
            "llama3_8b.json",
            "gpt2.json",
            "mixtral_8x7b.json",
            "deepseek_v3.json",
        ] {
            let d = detect_with_confidence(name, &hf(name)).unwrap();
            assert_eq!((d.format, d.confidence), (Format::HfConfig, 100), "{name}");
        }
        // No seed is taken for a config.
        for name in [
            "simai_llama65b_tp8_pp4_vpp8.txt",
            "neusight_gpt2large_dp_workitems.tsv",
            "echo_megatron_trace_rank7_tp2_pp4.txt",
            "optimus_prime_llama1b_pp8_train.log",
        ] {
            assert!(detect_all(&seed(name))
                .iter()
                .all(|d| d.format != Format::HfConfig));
        }
        assert_eq!(Format::from_name("hf-config"), Some(Format::HfConfig));
        assert_eq!(
            serde_json::to_string(&Format::HfConfig).unwrap(),
            "\"hf-config\""
        );
    }

    #[test]
    fn unknown_content_says_what_was_expected() {
        let e = detect("junk.bin", "hello\nworld\n").unwrap_err();
        assert_eq!(e.message, "unrecognised format in `junk.bin`");
        assert!(e.hint.unwrap().contains("simai-workload"));
    }

    #[test]
    fn confidence_is_high_for_seeds_and_low_for_near_misses() {
        let d = detect_with_confidence("x", &seed("simai_llama65b_tp8_pp4_vpp8.txt")).unwrap();
        assert_eq!(d.confidence, 100);
        let d = detect_with_confidence("x", "HYBRID_TRANSFORMR pp: 2\n3\n").unwrap();
        assert_eq!(d.format, Format::SimaiWorkload);
        assert!(d.confidence < 60);
        let e = detect_with_confidence("x", "ms/batch\n").unwrap();
        assert_eq!((e.format, e.confidence), (Format::OptimusPrimeLog, 50));
    }

    #[test]
    fn binary_is_refused() {
        assert!(decode_text("b", b"ab\0cd").is_err());
        let empty = detect_with_confidence("e.txt", "").unwrap_err();
        assert_eq!(empty.message, "the file `e.txt` is empty");
        let blank = detect_with_confidence("b.txt", " \n\t\n").unwrap_err();
        assert_eq!(blank.message, "the file `b.txt` holds only blank space");
        let (t, lossy) = decode_text("b", b"\xEF\xBB\xBFok\xff").unwrap();
        assert!(lossy);
        assert!(t.starts_with("ok"));
    }
}
