//! Small lexing helpers shared by the parsers: numbered lines (BOM and CR
//! stripped), exact decimal-to-integer conversion with a unit scale (so
//! `7289.55` ms becomes 7 289 550 000 ns without float error), and a
//! diagnostics sink that caps how many messages one file can produce (a
//! hostile 10-MB line must not turn into millions of warnings) while still
//! counting and reporting what it did not list.

use crate::diag::{Diagnostic, Location, Severity};

/// Lines of `text` with 1-based numbers, a trailing `\r` stripped from each,
/// a leading UTF-8 BOM removed. Line numbers saturate at `u32::MAX`.
pub fn numbered_lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n').enumerate().map(|(i, l)| {
        (
            u32::try_from(i + 1).unwrap_or(u32::MAX),
            l.strip_suffix('\r').unwrap_or(l),
        )
    })
}

/// Whitespace-separated tokens of `line` (any ASCII whitespace) with their
/// byte offsets.
pub fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let base = line.as_ptr() as usize;
    line.split(|c: char| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .map(move |t| (t.as_ptr() as usize - base, t))
}

/// Byte offset of `part` inside `whole` when `part` is a subslice of it
/// (0 otherwise).
pub fn offset_in(whole: &str, part: &str) -> usize {
    let w = whole.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    if p >= w && p <= w + whole.len() {
        p - w
    } else {
        0
    }
}

/// Parse a non-negative decimal (`12`, `7289.55`, `4.79e-09`, `+3.`) and
/// return `value * 10^scale` rounded half-up to an integer. With `scale = 6`
/// this converts milliseconds to nanoseconds exactly as written (no binary
/// float rounding). Errors say why, in words usable inside a message.
pub fn parse_decimal_scaled(text: &str, scale: i32) -> Result<u64, &'static str> {
    unsigned(text, |b| {
        let d = scan_decimal(b)?;
        let mant = d.mant + u128::from(d.first_dropped.is_some_and(|x| x >= 5));
        let e = d.exp10 + i64::from(scale);
        if mant == 0 {
            return Ok(0);
        }
        if e >= 0 {
            if e > 20 {
                return Err(TOO_LARGE);
            }
            let v = mant.checked_mul(10u128.pow(e as u32)).ok_or(TOO_LARGE)?;
            u64::try_from(v).map_err(|_| TOO_LARGE)
        } else {
            let neg_e = -e;
            if neg_e > 38 {
                return Ok(0);
            }
            let div = 10u128.pow(neg_e as u32);
            let q = mant / div;
            let q = if (mant % div) * 2 >= div { q + 1 } else { q };
            u64::try_from(q).map_err(|_| TOO_LARGE)
        }
    })
}

/// An unsigned integer that may be written as a float (`20971520.0`, `1e3`),
/// converted exactly from the decimal text (no binary float on the way, so
/// `9007199254740993.0` stays 9 007 199 254 740 993). A fraction (`12.5`,
/// `1e-400`) is refused, never rounded.
pub fn parse_u64_exact(text: &str) -> Result<u64, &'static str> {
    if let Ok(v) = text.parse::<u64>() {
        return Ok(v);
    }
    unsigned(text, |b| {
        let d = scan_decimal(b)?;
        if d.dropped_nonzero {
            // Past 30 significant digits: beyond 64 bits, or a fraction.
            return Err(if d.exp10 >= 0 { TOO_LARGE } else { FRACTION });
        }
        let (mut mant, mut exp10) = (d.mant, d.exp10);
        if mant == 0 {
            return Ok(0);
        }
        while mant % 10 == 0 {
            mant /= 10;
            exp10 += 1;
        }
        if exp10 < 0 {
            return Err(FRACTION);
        }
        if exp10 > 20 {
            return Err(TOO_LARGE);
        }
        let v = mant
            .checked_mul(10u128.pow(exp10 as u32))
            .ok_or(TOO_LARGE)?;
        u64::try_from(v).map_err(|_| TOO_LARGE)
    })
}

const TOO_LARGE: &str = "a number too large for 64 bits";
const FRACTION: &str = "a fractional number where an integer is expected";

/// `parse` on the unsigned text after an optional `+`; a `-` number is
/// refused unless it is zero.
fn unsigned(
    text: &str,
    parse: impl Fn(&[u8]) -> Result<u64, &'static str>,
) -> Result<u64, &'static str> {
    let Some(rest) = text.strip_prefix('-') else {
        return parse(text.strip_prefix('+').unwrap_or(text).as_bytes());
    };
    match parse(rest.as_bytes()) {
        Ok(0) => Ok(0),
        _ if rest.bytes().any(|c| c.is_ascii_digit()) => {
            Err("a negative number where a time, count or size is expected")
        }
        _ => Err("not a number"),
    }
}

/// An unsigned decimal as written: at most 30 significant digits in `mant`
/// (later digits only shift the exponent), `value ≈ mant * 10^exp10`.
struct Decimal {
    mant: u128,
    exp10: i64,
    /// The first digit not kept in `mant` (decides rounding).
    first_dropped: Option<u8>,
    /// Whether any digit not kept in `mant` is nonzero (the value is not
    /// exactly `mant * 10^exp10`).
    dropped_nonzero: bool,
}

/// Scan `digits [. digits] [e|E [+|-] digits]` (the whole input).
fn scan_decimal(b: &[u8]) -> Result<Decimal, &'static str> {
    const KEEP: u32 = 30;
    let mut d = Decimal {
        mant: 0,
        exp10: 0,
        first_dropped: None,
        dropped_nonzero: false,
    };
    let mut kept: u32 = 0;
    let mut any_digit = false;
    let mut seen_dot = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            any_digit = true;
            let digit = c - b'0';
            if kept < KEEP {
                if d.mant != 0 || digit != 0 {
                    d.mant = d.mant * 10 + u128::from(digit);
                    kept += 1;
                }
                if seen_dot {
                    d.exp10 -= 1;
                }
            } else {
                d.first_dropped.get_or_insert(digit);
                d.dropped_nonzero |= digit != 0;
                if !seen_dot {
                    d.exp10 += 1;
                }
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if !any_digit {
        return Err("not a number");
    }
    d.exp10 += parse_exponent(&b[i..])?;
    Ok(d)
}

/// The exponent suffix after a decimal mantissa: empty (0) or `e`/`E`, an
/// optional sign and digits; clamped to ±1 000 000 (far beyond any u64).
fn parse_exponent(b: &[u8]) -> Result<i64, &'static str> {
    let Some((&first, rest)) = b.split_first() else {
        return Ok(0);
    };
    if first != b'e' && first != b'E' {
        return Err("not a number");
    }
    let (neg, digits) = match rest.split_first() {
        Some((&b'-', d)) => (true, d),
        Some((&b'+', d)) => (false, d),
        _ => (false, rest),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err("not a number");
    }
    let e = digits
        .iter()
        .fold(0i64, |e, &c| (e * 10 + i64::from(c - b'0')).min(1_000_000));
    Ok(if neg { -e } else { e })
}

/// Collects diagnostics for one file, listing at most `limit` of them and
/// counting the rest; [`DiagSink::finish`] appends one summary line for what
/// was not listed, so nothing disappears without a trace.
#[derive(Debug)]
pub struct DiagSink {
    items: Vec<Diagnostic>,
    limit: usize,
    suppressed_errors: u64,
    suppressed_warnings: u64,
}

/// How many diagnostics one file lists before summarising the rest.
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 200;

impl Default for DiagSink {
    fn default() -> Self {
        DiagSink::new(MAX_DIAGNOSTICS_PER_FILE)
    }
}

impl DiagSink {
    /// A sink listing at most `limit` diagnostics.
    pub fn new(limit: usize) -> Self {
        DiagSink {
            items: Vec::new(),
            limit,
            suppressed_errors: 0,
            suppressed_warnings: 0,
        }
    }

    /// A sink that continues a file's already finished list (parse
    /// diagnostics) with the conversion's, under the same per-file limit:
    /// once the list holds [`MAX_DIAGNOSTICS_PER_FILE`] items, further ones
    /// are only counted.
    pub fn resume(items: Vec<Diagnostic>) -> Self {
        DiagSink {
            items,
            limit: MAX_DIAGNOSTICS_PER_FILE,
            suppressed_errors: 0,
            suppressed_warnings: 0,
        }
    }

    /// Record several diagnostics.
    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        for d in ds {
            self.push(d);
        }
    }

    /// Record a diagnostic (listed while under the limit, counted after).
    pub fn push(&mut self, d: Diagnostic) {
        if self.items.len() < self.limit {
            self.items.push(d);
        } else if d.is_error() {
            self.suppressed_errors += 1;
        } else {
            self.suppressed_warnings += 1;
        }
    }

    /// Whether another diagnostic would still be listed (lets callers skip
    /// building expensive locations once the limit is reached).
    pub fn has_room(&self) -> bool {
        self.items.len() < self.limit
    }

    /// Record with a lazily built diagnostic (built only when listed).
    pub fn push_with(&mut self, severity: Severity, build: impl FnOnce() -> Diagnostic) {
        if self.has_room() {
            self.items.push(build());
        } else if severity == Severity::Error {
            self.suppressed_errors += 1;
        } else {
            self.suppressed_warnings += 1;
        }
    }

    /// The listed diagnostics so far.
    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }

    /// All listed diagnostics plus one summary per severity for those that
    /// were counted but not listed.
    pub fn finish(mut self, file: &str) -> Vec<Diagnostic> {
        if self.suppressed_errors > 0 {
            self.items.push(Diagnostic::error(format!(
                "{} more error(s) in `{file}` were not listed (limit {} messages per file)",
                self.suppressed_errors, self.limit
            )));
        }
        if self.suppressed_warnings > 0 {
            self.items.push(Diagnostic::warning(format!(
                "{} more warning(s) in `{file}` were not listed (limit {} messages per file)",
                self.suppressed_warnings, self.limit
            )));
        }
        self.items
    }
}

/// A JSON syntax error of `text` (`serde_json`'s message without its
/// position, which the location carries) located at its line and column;
/// the caller adds the hint.
pub fn json_syntax_error(file: &str, text: &str, e: &serde_json::Error) -> Diagnostic {
    let line_no = u32::try_from(e.line().max(1)).unwrap_or(u32::MAX);
    let line = text
        .split('\n')
        .nth(e.line().max(1) - 1)
        .unwrap_or("")
        .trim_end_matches('\r');
    let full = e.to_string();
    let what = full
        .rfind(" at line ")
        .map_or(full.as_str(), |c| &full[..c]);
    Diagnostic::error(format!("`{file}` is not valid JSON: {what}")).at(location(
        file,
        line_no,
        line,
        e.column().saturating_sub(1).min(line.len()),
    ))
}

/// The location of byte offset `at` of a whole text (`at` past the end:
/// its end; the line found around it, numbered from 1).
pub fn location_at(file: &str, text: &str, at: usize) -> Location {
    let at = crate::diag::floor_char_boundary(text, at.min(text.len()));
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim_end_matches('\r');
    let line_no = text[..start].bytes().filter(|b| *b == b'\n').count() + 1;
    location(
        file,
        u32::try_from(line_no).unwrap_or(u32::MAX),
        line,
        (at - start).min(line.len()),
    )
}

/// A location that stays cheap on very long lines: the column is counted in
/// characters only within the first 64 KiB (beyond that, bytes are used).
pub fn location(file: &str, line_no: u32, line: &str, byte_col: usize) -> Location {
    const CHEAP: usize = 64 * 1024;
    let mut loc = if byte_col <= CHEAP {
        Location::new(file, line_no, line, byte_col)
    } else {
        let at = crate::diag::floor_char_boundary(line, byte_col);
        let column = u32::try_from(at + 1).unwrap_or(u32::MAX);
        Location::with_column(file, line_no, line, at, column)
    };
    // Tabs become single spaces so a rendered caret lines up with the column.
    if loc.text.contains('\t') {
        loc.text = loc.text.replace('\t', " ");
    }
    loc
}

/// `text` shortened to `max` characters for quoting inside a message.
pub fn quote(text: &str, max: usize) -> String {
    crate::diag::excerpt(text, max)
}

/// A "did you mean" suggestion, only for words short enough for an edit
/// distance to be meaningful.
pub fn suggest_short<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if word.len() > 48 {
        return None;
    }
    crate::diag::suggest(word, candidates)
}

/// The candidate within `max_distance` edits of `word` (case-insensitive),
/// the closest first; stricter than [`suggest_short`] for long identifiers.
pub fn suggest_within<'a>(
    word: &str,
    candidates: &[&'a str],
    max_distance: usize,
) -> Option<&'a str> {
    if word.len() > 64 {
        return None;
    }
    let w = word.to_ascii_uppercase();
    candidates
        .iter()
        .map(|c| (crate::diag::edit_distance(&w, &c.to_ascii_uppercase()), *c))
        .filter(|(d, _)| *d <= max_distance)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Format nanoseconds as milliseconds with up to 6 decimals (trailing zeros
/// trimmed), e.g. 7 289 550 000 ns -> `7289.55`.
pub fn ns_to_ms_string(ns: u64) -> String {
    let whole = ns / 1_000_000;
    let frac = ns % 1_000_000;
    if frac == 0 {
        return whole.to_string();
    }
    let s = format!("{whole}.{frac:06}");
    s.trim_end_matches('0').to_string()
}

/// Nanoseconds as f64 milliseconds (for JSON display only).
pub fn ns_to_ms_f64(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Ascending numbers as runs: `[0, 1, 2, 3, 5]` -> `0-3, 5` (empty: "").
pub fn number_ranges(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_scaling_is_exact() {
        assert_eq!(parse_decimal_scaled("7289.55", 6), Ok(7_289_550_000));
        assert_eq!(
            parse_decimal_scaled("4509232423.74", 6),
            Ok(4_509_232_423_740_000)
        );
        assert_eq!(parse_decimal_scaled("9.9808843806386", 6), Ok(9_980_884));
        assert_eq!(parse_decimal_scaled("4.791370158793459e-09", 6), Ok(0));
        assert_eq!(parse_decimal_scaled("1.5e3", 0), Ok(1500));
        assert_eq!(parse_decimal_scaled("0.0", 6), Ok(0));
        assert_eq!(parse_decimal_scaled("-0.0", 6), Ok(0));
        assert_eq!(parse_decimal_scaled("0.5", 0), Ok(1));
        assert_eq!(parse_decimal_scaled("0.49", 0), Ok(0));
        assert!(parse_decimal_scaled("-1", 0).is_err());
        assert!(parse_decimal_scaled("1e400", 0).is_err());
        assert_eq!(parse_decimal_scaled("1e-400", 0), Ok(0));
        assert!(parse_decimal_scaled("abc", 0).is_err());
        assert!(parse_decimal_scaled("1.2.3", 0).is_err());
        assert!(parse_decimal_scaled("nan", 0).is_err());
        assert!(parse_decimal_scaled("1e", 0).is_err());
        assert_eq!(
            parse_decimal_scaled("18446744073709551615", 0),
            Ok(u64::MAX)
        );
        assert!(parse_decimal_scaled("18446744073709551616", 0).is_err());
        assert_eq!(
            parse_decimal_scaled("123456789012345678901234567890123e-20", 0),
            Ok(1_234_567_890_123)
        );
    }

    #[test]
    fn exact_integers() {
        assert_eq!(parse_u64_exact("20971520.0"), Ok(20_971_520));
        assert_eq!(parse_u64_exact("1e3"), Ok(1000));
        assert!(parse_u64_exact("1.5").is_err());
        assert!(parse_u64_exact("-2").is_err());
        assert_eq!(
            parse_u64_exact("9007199254740993.0"),
            Ok(9_007_199_254_740_993)
        );
        assert_eq!(parse_u64_exact("1.8446744073709551615e19"), Ok(u64::MAX));
        assert!(parse_u64_exact("1.8446744073709551616e19").is_err());
        assert!(parse_u64_exact("1e-400").is_err());
        assert!(parse_u64_exact("12.5").is_err());
        assert!(parse_u64_exact("12.0004").is_err());
        assert!(parse_u64_exact("0.0000001").is_err());
        assert_eq!(parse_u64_exact("0.0e-400"), Ok(0));
        assert_eq!(parse_u64_exact("-0.0"), Ok(0));
        assert_eq!(parse_u64_exact("1200e-2"), Ok(12));
        assert!(parse_u64_exact("1e400").is_err());
        assert!(parse_u64_exact("abc").is_err());
        assert!(parse_u64_exact("1.2.3").is_err());
    }

    #[test]
    fn sink_caps_and_counts() {
        let mut s = DiagSink::new(2);
        for i in 0..5 {
            s.push(Diagnostic::warning(format!("w{i}")));
        }
        let v = s.finish("f");
        assert_eq!(v.len(), 3);
        assert!(v[2].message.starts_with("3 more warning(s)"));
    }

    #[test]
    fn ms_strings() {
        assert_eq!(ns_to_ms_string(7_289_550_000), "7289.55");
        assert_eq!(ns_to_ms_string(1_000_000), "1");
    }
}
