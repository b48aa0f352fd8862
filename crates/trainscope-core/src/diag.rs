//! Diagnostics as data: every parse problem, assumption and skipped piece of
//! input becomes a [`Diagnostic`] with a severity, a message, an optional
//! source [`Location`] (file, 1-based line and column, the offending line's
//! text) and an optional hint. Nothing in the core prints or panics; callers
//! render diagnostics with [`Diagnostic::render`] or serialise them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Input that could not be used (a whole file, or a skipped record).
    Error,
    /// An assumption made or content ignored; the result is still usable.
    Warning,
}

/// Where in an input file a diagnostic points.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Location {
    /// File name as the user gave it (no directories are opened by the core).
    pub file: String,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
    /// The offending line, without its line terminator; a line longer than
    /// [`Location::MAX_TEXT_CHARS`] characters is quoted as a window of that
    /// many characters around the column, with `…` on each cut side.
    pub text: String,
    /// When `text` is a window that does not start at the line's start: the
    /// 1-based character column of the offending text inside `text` (where
    /// the caret goes). `None`: `text` starts at the line's start, so the
    /// caret goes at `column`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_column: Option<u32>,
}

impl Location {
    /// Longest excerpt of a line kept in a location (long lines are cut with `…`).
    pub const MAX_TEXT_CHARS: usize = 160;

    /// Characters kept before the column when a long line is windowed.
    const CONTEXT_BEFORE_CHARS: usize = 60;

    /// A location at byte offset `byte_col` of `line_text` (line is 1-based).
    pub fn new(file: &str, line: u32, line_text: &str, byte_col: usize) -> Self {
        let byte_col = floor_char_boundary(line_text, byte_col.min(line_text.len()));
        let column = line_text[..byte_col].chars().count() as u32 + 1;
        Self::with_column(file, line, line_text, byte_col, column)
    }

    /// A location at byte offset `byte_col` of `line_text` whose column the
    /// caller already knows; the quoted text is a window around `byte_col`
    /// (cost bounded by the window, not the line).
    pub fn with_column(
        file: &str,
        line: u32,
        line_text: &str,
        byte_col: usize,
        column: u32,
    ) -> Self {
        let byte_col = floor_char_boundary(line_text, byte_col.min(line_text.len()));
        let (text, text_column) = window(line_text, byte_col);
        Location {
            file: file.to_string(),
            line,
            column,
            text,
            text_column,
        }
    }

    /// 0-based character position of the caret inside [`Location::text`].
    pub fn caret_chars(&self) -> usize {
        (self.text_column.unwrap_or(self.column) as usize).saturating_sub(1)
    }
}

/// The quoted text of a line for an error at byte `at` (a char boundary):
/// the whole line when short, else [`Location::MAX_TEXT_CHARS`] characters
/// around `at` with `…` on the cut sides; plus the caret column inside the
/// window when it does not start at the line's start.
fn window(line: &str, at: usize) -> (String, Option<u32>) {
    let max = Location::MAX_TEXT_CHARS;
    // Short lines (checked without counting a long line whole).
    if line.len() <= max || line.char_indices().nth(max).is_none() {
        return (line.to_string(), None);
    }
    // Start: CONTEXT_BEFORE_CHARS chars before `at`, or the line's start.
    let before = &line[..at];
    let start = match before
        .char_indices()
        .rev()
        .nth(Location::CONTEXT_BEFORE_CHARS - 1)
    {
        Some((i, _)) if i > 0 => i,
        _ => 0,
    };
    let kept_before = line[start..at].chars().count();
    let after_budget = max - kept_before;
    let end = line[at..]
        .char_indices()
        .nth(after_budget)
        .map_or(line.len(), |(i, _)| at + i);
    let mut text = String::with_capacity(end - start + 8);
    if start > 0 {
        text.push('…');
    }
    text.push_str(&line[start..end]);
    if end < line.len() {
        text.push('…');
    }
    let text_column = (start > 0).then(|| u32::try_from(kept_before + 2).unwrap_or(u32::MAX));
    (text, text_column)
}

/// One message about an input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            location: None,
            hint: None,
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    #[must_use]
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// One line: `file:line:col: warning: message` (no hint, no excerpt).
    pub fn short(&self) -> String {
        self.to_string()
    }

    /// Multi-line rendering in the style of rustc/typst:
    ///
    /// ```text
    /// error: failed to parse SimAI workload (expected 12 fields, found 11)
    ///   --> a.txt:5:1
    ///    |
    ///  5 | attention_norm -1 3422000 ALLREDUCE ...
    ///    | ^
    ///    = hint: a SimAI record is: ...
    /// ```
    pub fn render(&self) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!("{sev}: {}\n", self.message);
        if let Some(loc) = &self.location {
            let num = loc.line.to_string();
            let pad = " ".repeat(num.len());
            out.push_str(&format!(
                "{pad}--> {}:{}:{}\n",
                loc.file, loc.line, loc.column
            ));
            out.push_str(&format!("{pad} |\n{num} | {}\n", loc.text));
            let caret_at = loc.caret_chars();
            if caret_at <= loc.text.chars().count() {
                out.push_str(&format!("{pad} | {}^\n", " ".repeat(caret_at)));
            }
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("  = hint: {hint}\n"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if let Some(loc) = &self.location {
            write!(f, "{}:{}:{}: ", loc.file, loc.line, loc.column)?;
        }
        write!(f, "{sev}: {}", self.message)
    }
}

/// One diagnostic said alike of one or more files of a set (a rank's file
/// each: "`job.3.et`: 2 METADATA_NODE node(s) skipped ..."), merged by
/// value by [`merge_by_file`]; rendered last, by [`FileDiagnostic::short`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostic {
    /// The files it was said of, in the order first seen (one or more).
    pub files: Vec<String>,
    /// As said of the first file.
    pub diagnostic: Diagnostic,
}

impl FileDiagnostic {
    /// One line: the diagnostic's own, with its file's quoted name replaced
    /// by the files' names (`a`, `b`, `c`; or `a`, `b`, ... `z` (N files)).
    pub fn short(&self) -> String {
        let Some((first, _)) = self.files.split_first().filter(|_| self.files.len() > 1) else {
            return self.diagnostic.short();
        };
        let names: Vec<String> = self.files.iter().map(|f| format!("`{f}`")).collect();
        let n = names.len();
        let named = if n <= 3 {
            names.join(", ")
        } else {
            format!(
                "{}, {}, ... {} ({n} files)",
                names[0],
                names[1],
                names[n - 1]
            )
        };
        let mut d = self.diagnostic.clone();
        d.message = d.message.replacen(&format!("`{first}`"), &named, 1);
        d.short()
    }
}

/// The diagnostics of a set's files (each with the file it came from),
/// merged by value: an unlocated diagnostic that names its own file once is
/// the same as another file's when their severity, hint and message (that
/// name aside) are equal, and becomes one entry naming both where the
/// first stood; any other diagnostic is kept once (equal one-line forms
/// are one). Order otherwise kept.
pub fn merge_by_file<'a>(
    items: impl IntoIterator<Item = (&'a str, Diagnostic)>,
) -> Vec<FileDiagnostic> {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        /// Severity, hint and the message with the file's name cut out.
        Alike(Severity, Option<String>, String, String),
        /// The one-line form.
        Line(String),
    }
    let mut out: Vec<FileDiagnostic> = Vec::new();
    let mut seen: std::collections::BTreeMap<Key, usize> = Default::default();
    let mut lines: std::collections::BTreeSet<String> = Default::default();
    for (file, d) in items {
        if !lines.insert(d.short()) {
            continue; // said before in the same words
        }
        let quoted = format!("`{file}`");
        let key = match d.message.split_once(&quoted) {
            Some((before, after)) if d.location.is_none() && !after.contains(&quoted) => {
                Key::Alike(
                    d.severity,
                    d.hint.clone(),
                    before.to_string(),
                    after.to_string(),
                )
            }
            _ => Key::Line(d.short()),
        };
        let alike = matches!(key, Key::Alike(..));
        match seen.get(&key) {
            Some(&i) => {
                let files = &mut out[i].files;
                if alike && !files.iter().any(|f| f == file) {
                    files.push(file.to_string());
                }
            }
            None => {
                seen.insert(key, out.len());
                out.push(FileDiagnostic {
                    files: vec![file.to_string()],
                    diagnostic: d,
                });
            }
        }
    }
    out
}

/// `text` cut to `max_chars` characters, with `…` when something was cut.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// The largest char boundary of `s` at or before byte `i` (clamped to the
/// length), so a computed offset can be used to slice `s` without panicking.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The candidate closest to `word` by edit distance (case-insensitive), if it
/// is close enough to be a plausible typo (at most a third of its length).
pub fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let w = word.to_ascii_uppercase();
    let limit = (w.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&w, &c.to_ascii_uppercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars; inputs are short identifiers, and anything
/// over 64 chars is compared by its first 64 only so the cost stays bounded.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The message for a name that is none of a setting's `choices`:
/// "unknown `kind` `name`; expected one of: a, b, c" (the flags' and the
/// page's fields' parse error).
pub fn unknown_name(kind: &str, name: &str, choices: &[&str]) -> String {
    format!(
        "unknown {kind} `{}`; expected one of: {}",
        name.trim(),
        choices.join(", ")
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_diagnostic_said_of_several_files_is_one_entry_naming_them() {
        let w = |m: &str| Diagnostic::warning(m);
        let at = |f: &str, m: &str| Diagnostic::warning(m).at(Location::new(f, 1, "x", 0));
        let items = vec![
            ("a.0.et", w("`a.0.et`: 1 METADATA_NODE node(s) skipped")),
            ("a.0.et", w("something else")),
            ("a.1.et", w("`a.1.et`: 1 METADATA_NODE node(s) skipped")),
            ("a.10.et", w("`a.10.et`: 1 METADATA_NODE node(s) skipped")),
            ("a.2.et", w("`a.2.et`: 1 METADATA_NODE node(s) skipped")),
            ("a.2.et", w("`a.2.et`: 1 METADATA_NODE node(s) skipped")),
            ("a.1.et", w("`a.1.et`: 3 METADATA_NODE node(s) skipped")),
            ("b.txt", w("`b.txt`: 3 METADATA_NODE node(s) skipped")),
            ("b.txt", w("something else")),
            ("a.0.et", at("a.0.et", "`a.0.et`: node 4 is odd")),
            ("a.1.et", at("a.1.et", "`a.1.et`: node 4 is odd")),
            ("a.0.et", w("`a.0.et` and `a.1.et` differ")),
            ("a.1.et", w("`a.0.et` and `a.1.et` differ")),
            (
                "b.txt",
                w("`b.txt`: 3 METADATA_NODE node(s) skipped").with_hint("h"),
            ),
        ];
        let merged = merge_by_file(items);
        let lines: Vec<String> = merged.iter().map(FileDiagnostic::short).collect();
        assert_eq!(
            lines,
            vec![
                "warning: `a.0.et`, `a.1.et`, ... `a.2.et` (4 files): 1 METADATA_NODE node(s) skipped",
                "warning: something else",
                "warning: `a.1.et`, `b.txt`: 3 METADATA_NODE node(s) skipped",
                "a.0.et:1:1: warning: `a.0.et`: node 4 is odd",
                "a.1.et:1:1: warning: `a.1.et`: node 4 is odd",
                "warning: `a.0.et` and `a.1.et` differ",
            ]
        );
        assert_eq!(merged[0].files, ["a.0.et", "a.1.et", "a.10.et", "a.2.et"]);
    }
    use super::*;

    #[test]
    fn location_counts_chars_not_bytes() {
        let loc = Location::new("f.txt", 3, "é x", 3);
        assert_eq!(loc.column, 3);
    }

    #[test]
    fn render_points_at_column() {
        let d = Diagnostic::error("bad number")
            .at(Location::new("w.txt", 12, "layer -1 abc", 9))
            .with_hint("write an integer");
        let r = d.render();
        assert!(r.contains("--> w.txt:12:10"), "{r}");
        assert!(r.contains("12 | layer -1 abc"), "{r}");
        assert!(r.contains("   |          ^"), "{r}");
        assert!(r.contains("= hint: write an integer"), "{r}");
        assert_eq!(d.short(), "w.txt:12:10: error: bad number");
    }

    #[test]
    fn suggests_near_typos_only() {
        let c = ["ALLREDUCE", "ALLGATHER", "REDUCESCATTER"];
        assert_eq!(suggest("ALLREDUSE", &c), Some("ALLREDUCE"));
        assert_eq!(suggest("allgathr", &c), Some("ALLGATHER"));
        assert_eq!(suggest("FOO", &c), None);
    }

    #[test]
    fn long_lines_are_quoted_around_the_column() {
        let line = format!("{}BAD{}", "é".repeat(3000), "x".repeat(3000));
        let at = "é".repeat(3000).len();
        let loc = Location::new("f", 1, &line, at);
        assert_eq!(loc.column, 3001);
        assert!(loc.text.starts_with('…') && loc.text.ends_with('…'));
        assert!(loc.text.chars().count() <= Location::MAX_TEXT_CHARS + 2);
        let r = Diagnostic::error("bad").at(loc.clone()).render();
        let lines: Vec<&str> = r.lines().collect();
        let quoted = lines[3].split_once(" | ").unwrap().1;
        let caret = lines[4].split_once(" | ").unwrap().1;
        let caret_pos = caret.chars().count() - 1;
        let under: String = quoted.chars().skip(caret_pos).take(3).collect();
        assert_eq!(under, "BAD", "{r}");
        // Near the start: no leading cut, caret at the column.
        let loc = Location::new("f", 1, &line, 4);
        assert!(!loc.text.starts_with('…') && loc.text.ends_with('…'));
        assert_eq!(loc.text_column, None);
        // Near the end: no trailing cut.
        let loc = Location::new("f", 1, &line, line.len() - 1);
        assert!(loc.text.starts_with('…') && !loc.text.ends_with('…'));
    }

    #[test]
    fn excerpt_cuts_long_lines() {
        assert_eq!(excerpt("abcdef", 3), "abc…");
        assert_eq!(excerpt("abc", 3), "abc");
    }
}
