//! The timeline's selection and hit testing: which span or counter is under
//! the pointer, keyboard moves between spans and rows, revealing the
//! selected span, collapsing its group.

use super::*;

impl Timeline {
    /// Row index showing `h`'s lane.
    pub(super) fn row_index_of(&self, h: Hit) -> Option<usize> {
        let row = self.layout.row_of_lane(h.section, h.lane)?;
        self.layout.row_at(row.y + row.h / 2.0)
    }

    /// The span keyboard navigation starts from: the one nearest the
    /// window's centre on the first visible lane row.
    pub(super) fn first_visible_span(&self, props: &TimelineProps) -> Option<Hit> {
        let t = self.vp.start_ns() + self.vp.range_ns() / 2;
        let rows = self
            .layout
            .rows_between(self.scroll_y, self.scroll_y + self.rows_height(props));
        self.layout.rows[rows].iter().find_map(|r| {
            let RowKind::Lane { section, lane, .. } = r.kind else {
                return None;
            };
            let tl = &self.sections.get(section)?.tl;
            let index = hit::span_near_ns(tl, lane, t)?;
            Some(Hit {
                section,
                lane,
                index,
            })
        })
    }

    /// Arrow keys: the span next to the selection (`dx` along its lane,
    /// `dy` rows up or down), or the first visible one.
    pub(super) fn neighbour(&self, props: &TimelineProps, dx: i64, dy: i64) -> Option<Hit> {
        let Some(h) = self.selection.hit else {
            return self.first_visible_span(props);
        };
        let tl = &self.sections.get(h.section)?.tl;
        let s = *tl.span(h.span_ref())?;
        if dx != 0 {
            let i = i64::from(h.index) + dx;
            let n = tl.spans(h.lane).len() as i64;
            return Some(Hit {
                index: i.clamp(0, (n - 1).max(0)) as u32,
                ..h
            });
        }
        let mid = s.start_ns + s.duration_ns / 2;
        let mut ri = self.row_index_of(h)? as i64;
        loop {
            ri += dy;
            let row = self.layout.rows.get(usize::try_from(ri).ok()?)?;
            let RowKind::Lane { section, lane, .. } = row.kind else {
                continue;
            };
            let tl = &self.sections.get(section)?.tl;
            if let Some(index) = hit::span_near_ns(tl, lane, mid) {
                return Some(Hit {
                    section,
                    lane,
                    index,
                });
            }
        }
    }

    /// Bring the selected span into view: centre the window on it when it
    /// is outside, scroll its row into view.
    pub(super) fn reveal_selection(&mut self, props: &TimelineProps) {
        let Some(h) = self.selection.hit else {
            return;
        };
        let Some(s) = self
            .sections
            .get(h.section)
            .and_then(|sec| sec.tl.span(h.span_ref()).copied())
        else {
            return;
        };
        if s.end_ns() <= self.vp.start_ns() || s.start_ns >= self.vp.end_ns() {
            self.vp.center_on(s.start_ns + s.duration_ns / 2);
        }
        if let Some(row) = self.layout.row_of_lane(h.section, h.lane).copied() {
            let rows_h = self.rows_height(props);
            if row.y < self.scroll_y {
                self.scroll_y = row.y;
            } else if row.y + row.h > self.scroll_y + rows_h {
                self.scroll_y = row.y + row.h - rows_h;
            }
            self.clamp_scroll(props);
        }
    }

    /// Collapse or expand the group of the selected span (else of the
    /// first visible row).
    pub(super) fn toggle_selected_group(&mut self, props: &TimelineProps) -> bool {
        let row = match self.selection.hit {
            Some(h) => self.row_index_of(h),
            None => Some(
                self.layout
                    .rows_between(self.scroll_y, self.scroll_y + 1.0)
                    .start,
            ),
        };
        let Some(RowKind::Lane { group, .. }) =
            row.and_then(|i| self.layout.rows.get(i)).map(|r| r.kind)
        else {
            return false;
        };
        let Some(c) = self.collapsed.get_mut(group) else {
            return false;
        };
        *c = !*c;
        self.relayout();
        self.clamp_scroll(props);
        self.reveal_selection(props);
        true
    }

    pub(super) fn hit_at(&self, x: f64, y: f64) -> Option<Hit> {
        if x < LABEL_W || y < RULER_H {
            return None;
        }
        let ri = self.layout.row_at(y - RULER_H + self.scroll_y)?;
        let row = self.layout.rows.get(ri)?;
        let RowKind::Lane { section, lane, .. } = row.kind else {
            return None;
        };
        let tl = &self.sections.get(section)?.tl;
        let index = hit::span_at(tl, lane, &self.vp, x - LABEL_W, 2.0)?;
        Some(Hit {
            section,
            lane,
            index,
        })
    }

    /// The counter lane under (x, y) and the time there.
    pub(super) fn counter_at(&self, x: f64, y: f64) -> Option<CounterHover> {
        if x < LABEL_W || y < RULER_H {
            return None;
        }
        let ri = self.layout.row_at(y - RULER_H + self.scroll_y)?;
        let RowKind::Counter {
            section, counter, ..
        } = self.layout.rows.get(ri)?.kind
        else {
            return None;
        };
        let t = self.vp.px_to_ns_f64(x - LABEL_W);
        if !t.is_finite() || t < 0.0 {
            return None;
        }
        Some(CounterHover {
            section,
            counter,
            t_ns: t as u64,
            x,
            y,
        })
    }

    pub(super) fn select(&mut self, h: Option<Hit>) {
        let mut sel = Selection {
            hit: h,
            ..Selection::default()
        };
        if let Some(h) = h {
            if let Some(sec) = self.sections.get(h.section) {
                let r = h.span_ref();
                sel.deps = sec.tl.dependencies(r).to_vec();
                let mut want: Vec<SpanRef> = sel.deps.clone();
                want.push(r);
                sel.flows = sec
                    .tl
                    .flows()
                    .iter()
                    .filter(|f| want.contains(&f.from) || want.contains(&f.to))
                    .take(64)
                    .map(|f| (f.from, f.to))
                    .collect();
            }
        }
        self.selection = sel;
    }

    pub(super) fn toggle_group_at(&mut self, y: f64) -> bool {
        let Some(ri) = self.layout.row_at(y - RULER_H + self.scroll_y) else {
            return false;
        };
        let Some(RowKind::Lane { group, .. }) = self.layout.rows.get(ri).map(|r| r.kind) else {
            return false;
        };
        if let Some(c) = self.collapsed.get_mut(group) {
            *c = !*c;
            self.relayout();
            return true;
        }
        false
    }
}
