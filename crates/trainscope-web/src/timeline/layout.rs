//! Vertical layout of the timeline: the rows under the ruler. Lanes are
//! grouped per stage or rank (a [`Group`]); an expanded group shows one row
//! per non-empty lane (one per stream), a collapsed group one row drawing
//! its primary (compute) lane. An expanded group also shows its counter
//! lanes (a simulated stage's activation memory over time) below its span
//! lanes, one row each ([`COUNTER_H`] high). In compare mode every timeline
//! gets a section header row with its label ("measured", "simulated", "A",
//! "B", a schedule's name). Rows are stacked from y = 0 (CSS px, before
//! scrolling).

use trainscope_core::timeline::{LaneGroup, Timeline as Model};

/// Height of a lane row, CSS px.
pub const LANE_H: f64 = 20.0;
/// Height of a section header row (compare mode), CSS px.
pub const SECTION_H: f64 = 22.0;
/// Height of a counter lane's row (a step area needs some height), CSS px.
pub const COUNTER_H: f64 = 30.0;

/// A stage or rank: its lanes in one timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Which timeline (0 = the main one, 1 = the compared one).
    pub section: usize,
    /// `stage 3`, `rank 17 · stage 2`.
    pub name: String,
    /// Lanes shown when expanded (non-empty ones; the first lane when all
    /// are empty).
    pub lanes: Vec<u32>,
    /// Lane drawn when collapsed (the first non-empty lane, compute first).
    pub primary: u32,
    /// Counter lanes of the group (indices into the timeline's counters),
    /// shown when expanded.
    pub counters: Vec<u32>,
}

/// What a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// The header of a timeline in compare mode.
    Section(usize),
    /// A lane of `group` (`collapsed`: the group's single row).
    Lane {
        section: usize,
        group: usize,
        lane: u32,
        /// First row of its group (draws the group's name).
        first: bool,
        collapsed: bool,
    },
    /// Counter lane `counter` of `group` (an expanded group's last rows).
    Counter {
        section: usize,
        group: usize,
        counter: u32,
    },
}

/// One row: what it shows and where, CSS px from the top of the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    pub kind: RowKind,
    pub y: f64,
    pub h: f64,
}

/// All rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    pub groups: Vec<Group>,
    pub rows: Vec<Row>,
    /// Total height of the rows, CSS px.
    pub height: f64,
    /// Per section, lane -> row index (the group's row when collapsed).
    lane_rows: Vec<Vec<Option<usize>>>,
}

/// The groups of `sections`' timelines, in lane order (a group's position
/// is where its first lane appears).
pub fn groups(sections: &[&Model]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (section, tl) in sections.iter().enumerate() {
        let first = out.len();
        // (kind, group) -> index into out, in first-seen order.
        let mut keys: Vec<((u8, u32), usize)> = Vec::new();
        for (i, lane) in tl.lanes().iter().enumerate() {
            let key = (lane.group_kind as u8, lane.group);
            let g = match keys.iter().find(|(k, _)| *k == key) {
                Some((_, g)) => *g,
                None => {
                    let name = match lane.group_kind {
                        LaneGroup::Stage => format!("stage {}", lane.group),
                        LaneGroup::Rank => format!("rank {} · stage {}", lane.group, lane.stage),
                    };
                    out.push(Group {
                        section,
                        name,
                        lanes: Vec::new(),
                        primary: i as u32,
                        counters: Vec::new(),
                    });
                    keys.push((key, out.len() - 1));
                    out.len() - 1
                }
            };
            if let Some(grp) = out.get_mut(g) {
                grp.lanes.push(i as u32);
            }
        }
        // Counters join the group of their (kind, group); one without span
        // lanes is not shown.
        for (c, counter) in tl.counters().iter().enumerate() {
            let key = (counter.group_kind as u8, counter.group);
            if let Some(grp) = keys
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, g)| out.get_mut(*g))
            {
                grp.counters.push(c as u32);
            }
        }
        for grp in out.iter_mut().skip(first) {
            let busy: Vec<u32> = grp
                .lanes
                .iter()
                .copied()
                .filter(|&l| !tl.spans(l).is_empty())
                .collect();
            if let Some(&p) = busy.first() {
                grp.primary = p;
                grp.lanes = busy;
            } else {
                grp.lanes.truncate(1);
            }
        }
    }
    out
}

impl Layout {
    /// Lay out `groups` of `sections` timelines; `collapsed[g]` collapses
    /// group `g` (missing entries are expanded); `headers` adds a section
    /// header row before each timeline's groups.
    pub fn build(groups: Vec<Group>, sections: usize, collapsed: &[bool], headers: bool) -> Layout {
        let mut rows = Vec::new();
        let mut y = 0.0;
        let mut lane_rows: Vec<Vec<Option<usize>>> = vec![Vec::new(); sections];
        for (section, map) in lane_rows.iter_mut().enumerate() {
            if headers {
                rows.push(Row {
                    kind: RowKind::Section(section),
                    y,
                    h: SECTION_H,
                });
                y += SECTION_H;
            }
            for (g, grp) in groups.iter().enumerate() {
                if grp.section != section {
                    continue;
                }
                let mut note = |lane: u32, row: usize| {
                    let i = lane as usize;
                    if map.len() <= i {
                        map.resize(i + 1, None);
                    }
                    map[i] = Some(row);
                };
                if collapsed.get(g).copied().unwrap_or(false) {
                    let row = rows.len();
                    rows.push(Row {
                        kind: RowKind::Lane {
                            section,
                            group: g,
                            lane: grp.primary,
                            first: true,
                            collapsed: true,
                        },
                        y,
                        h: LANE_H,
                    });
                    y += LANE_H;
                    for &l in &grp.lanes {
                        note(l, row);
                    }
                } else {
                    for (k, &lane) in grp.lanes.iter().enumerate() {
                        note(lane, rows.len());
                        rows.push(Row {
                            kind: RowKind::Lane {
                                section,
                                group: g,
                                lane,
                                first: k == 0,
                                collapsed: false,
                            },
                            y,
                            h: LANE_H,
                        });
                        y += LANE_H;
                    }
                    for &counter in &grp.counters {
                        rows.push(Row {
                            kind: RowKind::Counter {
                                section,
                                group: g,
                                counter,
                            },
                            y,
                            h: COUNTER_H,
                        });
                        y += COUNTER_H;
                    }
                }
            }
        }
        Layout {
            groups,
            rows,
            height: y,
            lane_rows,
        }
    }

    /// Counter rows laid out (expanded groups' memory lanes).
    pub fn counter_rows(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| matches!(r.kind, RowKind::Counter { .. }))
            .count()
    }

    /// Index of the row at `y` (CSS px from the top of the rows).
    pub fn row_at(&self, y: f64) -> Option<usize> {
        if y.is_nan() || y < 0.0 {
            return None;
        }
        let i = self.rows.partition_point(|r| r.y + r.h <= y);
        (i < self.rows.len()).then_some(i)
    }

    /// Rows overlapping `[y0, y1)`.
    pub fn rows_between(&self, y0: f64, y1: f64) -> std::ops::Range<usize> {
        let a = self.rows.partition_point(|r| r.y + r.h <= y0);
        let b = self.rows.partition_point(|r| r.y < y1);
        a..b.max(a)
    }

    /// The row showing `lane` of timeline `section` (its group's row when
    /// collapsed; None for a hidden empty lane).
    pub fn row_of_lane(&self, section: usize, lane: u32) -> Option<&Row> {
        let i = (*self.lane_rows.get(section)?.get(lane as usize)?)?;
        self.rows.get(i)
    }
}
