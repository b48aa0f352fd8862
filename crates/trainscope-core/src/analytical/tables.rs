//! Bandwidth-efficiency ("ratio") tables of the SimAI-compatible cost model
//! (docs/FORMATS.md §4 item 7): the fraction of peak bus bandwidth a
//! collective reaches for a message size and a node count, the built-in
//! tables, the lookup with linear interpolation, and a parser for a
//! user-supplied table in SimAI's CSV layout (bytes in, [`Diagnostic`] out).

use crate::diag::{Diagnostic, Location};
use crate::formats::lex::parse_u64_exact;
use serde::Serialize;
use std::fmt;

/// Number of ratio columns after the `Size` column: 1, 2, 4, 8, 16, 32, 64
/// and 128 nodes, then `Multi 16`, `Multi 32`, `Multi 64`, `Multi (NIC)`.
pub const RATIO_COLUMNS: usize = 12;

/// One built-in row: size in bytes and the 12 cells (`None` = empty cell,
/// which reads as 1).
type BuiltinRow = (u64, [Option<f64>; RATIO_COLUMNS]);

/// Which of the three tables a collective uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// `nvlink_ratio.csv`: ring collectives whose bottleneck is NVLink.
    Nvlink,
    /// `nic_ratio.csv`: ring collectives whose bottleneck is the NIC.
    Nic,
    /// `ata_ratio.csv`: all-to-all.
    Ata,
}

impl TableKind {
    /// All kinds, in a fixed order.
    pub const ALL: [TableKind; 3] = [TableKind::Nvlink, TableKind::Nic, TableKind::Ata];

    /// SimAI's file name for this table (`nvlink_ratio.csv`, ...).
    pub fn file_name(self) -> &'static str {
        match self {
            TableKind::Nvlink => "nvlink_ratio.csv",
            TableKind::Nic => "nic_ratio.csv",
            TableKind::Ata => "ata_ratio.csv",
        }
    }
}

impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TableKind::Nvlink => "nvlink",
            TableKind::Nic => "nic",
            TableKind::Ata => "all-to-all",
        })
    }
}

/// A ratio table: strictly increasing message sizes (bytes), each with
/// [`RATIO_COLUMNS`] efficiency values (empty cells already read as 1).
/// Every value is finite and positive (checked on construction).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioTable {
    rows: Vec<(u64, [f64; RATIO_COLUMNS])>,
}

/// Ratio lookup failure: the message is larger than the table's last row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AboveTable {
    /// The table's largest size, bytes.
    pub max_bytes: u64,
}

impl RatioTable {
    /// The rows: (size in bytes, the 12 values).
    pub fn rows(&self) -> &[(u64, [f64; RATIO_COLUMNS])] {
        &self.rows
    }

    /// Largest message size the table covers, bytes.
    pub fn max_bytes(&self) -> u64 {
        self.rows.last().map_or(0, |r| r.0)
    }

    fn from_builtin(rows: &[BuiltinRow]) -> RatioTable {
        RatioTable {
            rows: rows
                .iter()
                .map(|(size, cells)| (*size, cells.map(|c| c.unwrap_or(1.0))))
                .collect(),
        }
    }

    /// SimAI's `nvlink_ratio.csv` (see [`RatioTables::builtin`]).
    pub fn builtin_nvlink() -> RatioTable {
        RatioTable::from_builtin(&BUILTIN_NVLINK)
    }

    /// SimAI's `nic_ratio.csv` (see [`RatioTables::builtin`]).
    pub fn builtin_nic() -> RatioTable {
        RatioTable::from_builtin(&BUILTIN_NIC)
    }

    /// SimAI's `ata_ratio.csv` (see [`RatioTables::builtin`]).
    pub fn builtin_ata() -> RatioTable {
        RatioTable::from_builtin(&BUILTIN_ATA)
    }

    /// The efficiency rho (dimensionless) for a message of `size_bytes` in
    /// column `column` (1-based as in the CSV: 1 = one node, ..., 9 =
    /// `Multi 16`; see [`column_for_nodes`]):
    ///
    /// - `size_bytes == 0`: 1;
    /// - below the first row: `row0[c] / rowLast[c]`;
    /// - otherwise `(v0 + (v1 - v0) * (S - s0) / (s1 - s0)) / rowLast[c]`
    ///   between the bracketing rows `s0 <= S <= s1` (exactly `v0 / rowLast[c]`
    ///   on a row);
    /// - above the last row: [`AboveTable`].
    ///
    /// A column outside 1..=12 reads as column 5, like an unknown node count.
    pub fn ratio(&self, size_bytes: u64, column: usize) -> Result<f64, AboveTable> {
        let c = if (1..=RATIO_COLUMNS).contains(&column) {
            column - 1
        } else {
            4
        };
        let (Some(first), Some(last)) = (self.rows.first(), self.rows.last()) else {
            return Ok(1.0);
        };
        if size_bytes == 0 {
            return Ok(1.0);
        }
        let last_value = last.1[c];
        if size_bytes < first.0 {
            return Ok(first.1[c] / last_value);
        }
        if size_bytes > last.0 {
            return Err(AboveTable { max_bytes: last.0 });
        }
        // The first row whose size is >= S; S >= first.0 so `i >= 0` and if
        // the row matches exactly its value is used as is.
        let i = self.rows.partition_point(|r| r.0 < size_bytes);
        let Some(upper) = self.rows.get(i) else {
            return Err(AboveTable { max_bytes: last.0 });
        };
        if upper.0 == size_bytes || i == 0 {
            return Ok(upper.1[c] / last_value);
        }
        let lower = &self.rows[i - 1];
        let (s0, v0) = (lower.0, lower.1[c]);
        let (s1, v1) = (upper.0, upper.1[c]);
        let v = v0 + (v1 - v0) * (size_bytes - s0) as f64 / (s1 - s0) as f64;
        Ok(v / last_value)
    }

    /// Parse a table in SimAI's CSV layout: an optional header line (its
    /// first cell is not a number), then rows `size,r1,...,r12`. Sizes are
    /// integers (a float spelling such as `16777216.0` is accepted), strictly
    /// increasing; cells are finite positive numbers or empty (read as 1);
    /// missing trailing cells read as empty. `file` names the input in
    /// diagnostics. Blank lines are skipped; CRLF and a UTF-8 BOM are fine.
    pub fn parse_csv(file: &str, bytes: &[u8]) -> Result<RatioTable, Diagnostic> {
        let (text, _) = crate::formats::decode_text(file, bytes)?;
        let hint = "a ratio table is SimAI's CSV layout: `Size,1 Node,...` header, then rows \
                    `bytes,r1,...,r12` with sizes increasing and ratios > 0 (empty = 1)";
        let mut rows: Vec<(u64, [f64; RATIO_COLUMNS])> = Vec::new();
        for (idx, raw) in text.split('\n').enumerate() {
            let line_no = u32::try_from(idx + 1).unwrap_or(u32::MAX);
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.trim().is_empty() {
                continue;
            }
            let err = |col: usize, msg: String| {
                Diagnostic::error(format!("invalid ratio table `{file}` ({msg})"))
                    .at(Location::new(file, line_no, line, col))
                    .with_hint(hint)
            };
            let mut cells = cells_with_offsets(line);
            let Some((size_col, size_text)) = cells.next() else {
                continue;
            };
            let size_text = size_text.trim();
            let size = match parse_u64_exact(size_text) {
                Ok(s) => s,
                Err(_)
                    if rows.is_empty() && !size_text.starts_with(|c: char| c.is_ascii_digit()) =>
                {
                    // The header line (`Size,1 Node(NVLinkx),...`).
                    continue;
                }
                Err(why) => {
                    return Err(err(
                        size_col,
                        format!("size `{}` is {why}", crate::diag::excerpt(size_text, 40)),
                    ));
                }
            };
            if let Some(prev) = rows.last() {
                if size <= prev.0 {
                    return Err(err(
                        size_col,
                        format!("size {size} does not increase after {}", prev.0),
                    ));
                }
            }
            let mut values = [1.0; RATIO_COLUMNS];
            for (i, (col, cell)) in cells.enumerate() {
                let cell = cell.trim();
                let Some(slot) = values.get_mut(i) else {
                    return Err(err(
                        col,
                        format!("more than {} ratio columns after the size", RATIO_COLUMNS),
                    ));
                };
                if cell.is_empty() {
                    continue;
                }
                match cell.parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => *slot = v,
                    Ok(v) => {
                        return Err(err(
                            col,
                            format!("ratio {v} must be a finite number above 0"),
                        ));
                    }
                    Err(_) => {
                        return Err(err(
                            col,
                            format!("ratio `{}` is not a number", crate::diag::excerpt(cell, 40)),
                        ));
                    }
                }
            }
            rows.push((size, values));
        }
        if rows.is_empty() {
            return Err(
                Diagnostic::error(format!("invalid ratio table `{file}` (no rows)"))
                    .with_hint(hint),
            );
        }
        Ok(RatioTable { rows })
    }
}

/// Cells of a CSV line (no quoting in this layout) with their byte offsets.
fn cells_with_offsets(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    line.split(',').map(move |cell| {
        let at = start;
        start += cell.len() + 1;
        (at, cell)
    })
}

/// The CSV column (1-based, after `Size`) for a node count `nn`:
/// 1 -> 1, 2 -> 2, 4 -> 3, 8 -> 4, 16 -> 5, 32 -> 6, 64 -> 7, 128 -> 8,
/// 9 (SimAI's code for "TP spans servers") -> 9, anything else -> 5.
pub fn column_for_nodes(nn: u64) -> usize {
    match nn {
        1 => 1,
        2 => 2,
        4 => 3,
        8 => 4,
        16 => 5,
        32 => 6,
        64 => 7,
        128 => 8,
        9 => 9,
        _ => 5,
    }
}

/// Whether `nn` has its own column (else [`column_for_nodes`] falls back to 5).
pub fn has_column(nn: u64) -> bool {
    matches!(nn, 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 | 9)
}

/// The three tables a cost model uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioTables {
    /// `nvlink_ratio.csv`.
    pub nvlink: RatioTable,
    /// `nic_ratio.csv`.
    pub nic: RatioTable,
    /// `ata_ratio.csv`.
    pub ata: RatioTable,
}

impl RatioTables {
    /// The built-in tables. Source: SimAI-Analytical's bandwidth-efficiency
    /// figures as shipped in `tests/fixtures/simai/ratio/{nvlink,nic,ata}_ratio.csv`
    /// (aliyun/SimAI, commit 13696181), re-expressed as this project's Rust
    /// tables; a test checks they equal those files cell by cell.
    pub fn builtin() -> RatioTables {
        RatioTables {
            nvlink: RatioTable::builtin_nvlink(),
            nic: RatioTable::builtin_nic(),
            ata: RatioTable::builtin_ata(),
        }
    }

    /// The table of a kind.
    pub fn get(&self, kind: TableKind) -> &RatioTable {
        match kind {
            TableKind::Nvlink => &self.nvlink,
            TableKind::Nic => &self.nic,
            TableKind::Ata => &self.ata,
        }
    }

    /// Replace the table of a kind (a user-supplied table).
    pub fn set(&mut self, kind: TableKind, table: RatioTable) {
        match kind {
            TableKind::Nvlink => self.nvlink = table,
            TableKind::Nic => self.nic = table,
            TableKind::Ata => self.ata = table,
        }
    }
}

impl Default for RatioTables {
    fn default() -> Self {
        RatioTables::builtin()
    }
}

const N: Option<f64> = None;

/// Row sizes of all three built-in tables: 16 MiB, 32 MiB, ..., 16 GiB.
const MIB16: u64 = 16 << 20;

#[rustfmt::skip]
const BUILTIN_NVLINK: [BuiltinRow; 11] = [
    (MIB16,      [Some(0.45), Some(0.55), Some(0.34), Some(0.16), Some(0.08), N, N, N, Some(0.86), Some(0.86), Some(0.77), N]),
    (MIB16 << 1, [Some(0.55), Some(0.68), Some(0.6),  Some(0.34), Some(0.16), N, N, N, Some(0.92), Some(0.9),  Some(0.8),  N]),
    (MIB16 << 2, [Some(0.65), Some(0.74), Some(0.71), Some(0.62), Some(0.33), N, N, N, Some(0.94), Some(0.91), Some(0.83), N]),
    (MIB16 << 3, [Some(0.69), Some(0.8),  Some(0.74), Some(0.7),  Some(0.65), N, N, N, Some(0.94), Some(0.92), Some(0.87), N]),
    (MIB16 << 4, [Some(0.73), Some(0.84), Some(0.79), Some(0.78), Some(0.72), N, N, N, Some(0.94), Some(0.93), Some(0.91), Some(0.9)]),
    (MIB16 << 5, [Some(0.76), Some(0.86), Some(0.86), Some(0.82), Some(0.75), N, N, N, Some(0.95), Some(0.94), Some(0.93), Some(0.95)]),
    (MIB16 << 6, [Some(0.77), Some(0.87), Some(0.87), Some(0.86), Some(0.83), N, N, N, Some(0.96), Some(0.95), Some(0.94), Some(0.95)]),
    (MIB16 << 7, [Some(0.78), Some(0.87), Some(0.87), Some(0.87), Some(0.86), N, N, N, Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 8, [Some(0.79), Some(0.88), Some(0.88), Some(0.88), Some(0.87), N, N, N, Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 9, [Some(0.8),  Some(0.88), Some(0.88), Some(0.88), Some(0.88), N, N, N, Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
    (MIB16 << 10,[Some(0.81), Some(0.88), Some(0.88), Some(0.88), Some(0.88), N, N, N, Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
];

#[rustfmt::skip]
const BUILTIN_NIC: [BuiltinRow; 11] = [
    (MIB16,      [Some(0.45), Some(0.32), Some(0.24), Some(0.13), Some(0.05), Some(0.044), Some(0.021), Some(0.0087),   Some(0.86), Some(0.86), Some(0.77), N]),
    (MIB16 << 1, [Some(0.55), Some(0.47), Some(0.38), Some(0.24), Some(0.11), Some(0.052), Some(0.042), Some(0.021225), Some(0.92), Some(0.9),  Some(0.8),  N]),
    (MIB16 << 2, [Some(0.65), Some(0.5),  Some(0.53), Some(0.39), Some(0.21), Some(0.106), Some(0.051), Some(0.04405),  Some(0.94), Some(0.91), Some(0.83), N]),
    (MIB16 << 3, [Some(0.69), Some(0.67), Some(0.67), Some(0.54), Some(0.38), Some(0.205), Some(0.107), Some(0.0533),   Some(0.94), Some(0.92), Some(0.87), N]),
    (MIB16 << 4, [Some(0.73), Some(0.85), Some(0.77), Some(0.69), Some(0.57), Some(0.387), Some(0.209), Some(0.1027),   Some(0.94), Some(0.93), Some(0.91), Some(0.9)]),
    (MIB16 << 5, [Some(0.76), Some(0.89), Some(0.85), Some(0.78), Some(0.73), Some(0.562), Some(0.384), Some(0.1902),   Some(0.95), Some(0.94), Some(0.93), Some(0.95)]),
    (MIB16 << 6, [Some(0.77), Some(0.92), Some(0.93), Some(0.9),  Some(0.76), Some(0.74),  Some(0.563), Some(0.314575), Some(0.96), Some(0.95), Some(0.94), Some(0.95)]),
    (MIB16 << 7, [Some(0.78), Some(0.94), Some(0.94), Some(0.94), Some(0.92), Some(0.758), Some(0.745), Some(0.553525), Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 8, [Some(0.79), Some(0.95), Some(0.95), Some(0.95), Some(0.95), Some(0.923), Some(0.755), Some(0.740175), Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 9, [Some(0.8),  Some(0.95), Some(0.96), Some(0.96), Some(0.96), Some(0.953), Some(0.914), Some(0.7648),   Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
    (MIB16 << 10,[Some(0.81), Some(0.96), Some(0.96), Some(0.96), Some(0.96), Some(0.957), Some(0.958), Some(0.919175), Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
];

#[rustfmt::skip]
const BUILTIN_ATA: [BuiltinRow; 11] = [
    (MIB16,      [Some(0.44), Some(0.52), Some(0.67), Some(0.64), Some(0.62), N, N, N, Some(0.86), Some(0.86), Some(0.77), N]),
    (MIB16 << 1, [Some(0.51), Some(0.63), Some(0.68), Some(0.67), Some(0.66), N, N, N, Some(0.92), Some(0.9),  Some(0.8),  N]),
    (MIB16 << 2, [Some(0.6),  Some(0.72), Some(0.83), Some(0.82), Some(0.66), N, N, N, Some(0.94), Some(0.91), Some(0.83), N]),
    (MIB16 << 3, [Some(0.65), Some(0.76), Some(0.9),  Some(0.85), Some(0.72), N, N, N, Some(0.94), Some(0.92), Some(0.87), N]),
    (MIB16 << 4, [Some(0.7),  Some(0.79), Some(0.92), Some(0.87), Some(0.75), N, N, N, Some(0.94), Some(0.93), Some(0.91), Some(0.9)]),
    (MIB16 << 5, [Some(0.71), Some(0.8),  Some(0.94), Some(0.89), Some(0.81), N, N, N, Some(0.95), Some(0.94), Some(0.93), Some(0.95)]),
    (MIB16 << 6, [Some(0.74), Some(0.81), Some(0.94), Some(0.92), Some(0.85), N, N, N, Some(0.96), Some(0.95), Some(0.94), Some(0.95)]),
    (MIB16 << 7, [Some(0.76), Some(0.81), Some(0.95), Some(0.93), Some(0.88), N, N, N, Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 8, [Some(0.77), Some(0.8),  Some(0.95), Some(0.94), Some(0.89), N, N, N, Some(0.96), Some(0.96), Some(0.95), Some(0.95)]),
    (MIB16 << 9, [Some(0.78), Some(0.8),  Some(0.95), Some(0.94), Some(0.9),  N, N, N, Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
    (MIB16 << 10,[Some(0.78), Some(0.8),  Some(0.95), Some(0.94), Some(0.9),  N, N, N, Some(0.96), Some(0.96), Some(0.96), Some(0.95)]),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/simai/ratio/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(path).unwrap()
    }

    #[test]
    fn builtin_tables_equal_simai_files() {
        let t = RatioTables::builtin();
        for kind in TableKind::ALL {
            let parsed =
                RatioTable::parse_csv(kind.file_name(), &fixture(kind.file_name())).unwrap();
            assert_eq!(&parsed, t.get(kind), "{kind}");
            assert_eq!(parsed.rows().len(), 11);
            assert_eq!(parsed.max_bytes(), 17_179_869_184);
        }
    }

    #[test]
    fn ratio_exact_row_interpolation_below_and_above() {
        let nic = RatioTable::builtin_nic();
        // On a row: 128 MiB, one node: 0.69 / 0.81.
        assert_eq!(nic.ratio(134_217_728, 1), Ok(0.69 / 0.81));
        // Below the first row: row0 / rowLast.
        assert_eq!(nic.ratio(1_572_864, 1), Ok(0.45 / 0.81));
        // Zero bytes: 1.
        assert_eq!(nic.ratio(0, 4), Ok(1.0));
        // Exactly the last row: 1.
        assert_eq!(nic.ratio(17_179_869_184, 2), Ok(1.0));
        // Above: error naming the largest row.
        assert_eq!(
            nic.ratio(17_179_869_185, 1),
            Err(AboveTable {
                max_bytes: 17_179_869_184
            })
        );
        // Half-way between 64 MiB (0.83) and 128 MiB (0.90) in the ata
        // table's 4-node column (3): 0.865 / 0.95.
        let ata = RatioTable::builtin_ata();
        let r = ata.ratio(100_663_296, 3).unwrap();
        assert!((r - 0.865 / 0.95).abs() < 1e-12, "{r}");
        // An empty cell reads as 1 (nvlink, 32-node column 6).
        assert_eq!(RatioTable::builtin_nvlink().ratio(16 << 20, 6), Ok(1.0));
        // A column out of range reads as column 5.
        assert_eq!(nic.ratio(16 << 20, 99), nic.ratio(16 << 20, 5));
    }

    #[test]
    fn node_columns() {
        let got: Vec<usize> = [1, 2, 4, 8, 16, 32, 64, 128, 9, 3, 0, 256]
            .iter()
            .map(|&n| column_for_nodes(n))
            .collect();
        assert_eq!(got, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 5, 5, 5]);
        assert!(has_column(9) && !has_column(3));
    }

    #[test]
    fn parse_errors_point_at_the_cell() {
        let e = RatioTable::parse_csv("t.csv", b"Size,a,b\n16,0.5,x\n").unwrap_err();
        let loc = e.location.unwrap();
        assert_eq!((loc.line, loc.column), (2, 8));
        assert!(e.message.contains("`x` is not a number"), "{}", e.message);

        let e = RatioTable::parse_csv("t.csv", b"32,0.5\r\n16,0.5\r\n").unwrap_err();
        assert!(e.message.contains("does not increase"), "{}", e.message);
        assert_eq!(e.location.unwrap().line, 2);

        let e = RatioTable::parse_csv("t.csv", b"16,0.5,0\n").unwrap_err();
        assert!(e.message.contains("above 0"), "{}", e.message);
        assert_eq!(e.location.unwrap().column, 8);

        let e = RatioTable::parse_csv("t.csv", b"16,1,1,1,1,1,1,1,1,1,1,1,1,1\n").unwrap_err();
        assert!(e.message.contains("more than 12"), "{}", e.message);

        assert!(RatioTable::parse_csv("t.csv", b"Size,x\n\n").is_err());
        assert!(RatioTable::parse_csv("t.csv", b"16,-0.5\n").is_err());
        assert!(RatioTable::parse_csv("t.csv", b"16,nan\n").is_err());
        assert!(RatioTable::parse_csv("t.csv", b"a\0b").is_err());
    }

    #[test]
    fn parse_short_rows_fill_with_one() {
        let t = RatioTable::parse_csv("t.csv", b"\xEF\xBB\xBFSize\n1024,0.5\n2048.0,0.25,,2\n")
            .unwrap();
        assert_eq!(t.rows().len(), 2);
        assert_eq!(t.rows()[0].1[0], 0.5);
        assert_eq!(t.rows()[0].1[1], 1.0);
        assert_eq!(t.rows()[1].1[2], 2.0);
        assert_eq!(t.ratio(1024, 1), Ok(2.0));
    }
}
