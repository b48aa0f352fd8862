//! Browser tests of the timeline canvas (`wasm-pack test --headless
//! --chrome`): the viewport maths (time -> pixel -> time, zoom around a
//! fixed point, clamping), the level-of-detail bound (never more primitives
//! per lane than pixel columns, and no busy column left blank), hit
//! testing, ruler ticks, layout, and the mounted component on a simulated
//! seed-000 run and a measured-style run: pixels drawn, wheel zoom, hover
//! tooltip, drag pan, keys, selection, compare mode, the critical path
//! bounded per lane, new data keeping the view, keyboard selection.

#![cfg(target_arch = "wasm32")]

use std::rc::Rc;
use trainscope_core::engine::{JobSpec, SimConfig};
use trainscope_core::timeline::{
    CollOp, LabelId, Lane, LaneGroup, Span, SpanKind, Stream, Timeline as Model, TimelineBuilder,
};
use trainscope_web::timeline::draw::{self, LABEL_W, RULER_H};
use trainscope_web::timeline::layout::{self, Layout, RowKind, LANE_H};
use trainscope_web::timeline::lod::{self, Prim};
use trainscope_web::timeline::synth::{self, SynthSpec};
use trainscope_web::timeline::viewport::Viewport;
use trainscope_web::timeline::{format, hit, Timeline, TimelineProps};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{
    CanvasRenderingContext2d, Element, HtmlCanvasElement, HtmlElement, MouseEvent, MouseEventInit,
    WheelEvent, WheelEventInit,
};

wasm_bindgen_test_configure!(run_in_browser);

const SEED000: &str = include_str!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");

fn seed000() -> Model {
    let w = trainscope_core::formats::simai::parse("seed000.txt", SEED000).expect("seed parses");
    let job = JobSpec::from_simai(&w).expect("job");
    trainscope_core::engine::simulate(&job, &SimConfig::default())
        .expect("simulates")
        .timeline
}

fn span(start: u64, dur: u64, kind: SpanKind) -> Span {
    Span {
        start_ns: start,
        duration_ns: dur,
        bytes: 0,
        label: LabelId(0),
        layer: Span::NONE,
        micro_batch: Span::NONE,
        kind,
        coll: CollOp::None,
        chunk: 0,
    }
}

/// A small measured-style run: two ranks, nested spans, a wait.
fn measured() -> Model {
    let mut b = TimelineBuilder::new();
    let op = b.label("op.matmul");
    let sub = b.label("kernel.gemm");
    let wait = b.label("wait for peer");
    let nccl = b.label("nccl all_reduce");
    for rank in 0..2u32 {
        let c = b.lane(Lane {
            group_kind: LaneGroup::Rank,
            group: rank,
            stage: 0,
            stream: Stream::Compute,
            name: format!("rank {rank} / compute"),
        });
        let k = b.lane(Lane {
            group_kind: LaneGroup::Rank,
            group: rank,
            stage: 0,
            stream: Stream::Collective,
            name: format!("rank {rank} / collectives"),
        });
        for i in 0..50u64 {
            let t = i * 10_000 + u64::from(rank) * 500;
            let mut s = span(t, 6_000, SpanKind::Compute);
            s.label = op;
            b.push(c, s);
            let mut s = span(t + 1_000, 3_000, SpanKind::Forward);
            s.label = sub;
            s.micro_batch = i as u32;
            b.push(c, s);
            let mut s = span(t + 6_000, 1_000, SpanKind::Wait);
            s.label = wait;
            b.push(c, s);
            let mut s = span(t + 7_000, 2_500, SpanKind::CollOther);
            s.label = nccl;
            s.bytes = 1 << 20;
            b.push(k, s);
        }
    }
    b.build()
}

// ---------------------------------------------------------------- viewport

#[wasm_bindgen_test]
fn viewport_time_pixel_time_round_trip() {
    for (extent, width) in [(534_975_000u64, 800.0), (1_000, 1234.5), (7, 300.0)] {
        let mut vp = Viewport::new(extent, width);
        for zoom in [1.0, 3.7, 250.0] {
            vp.fit();
            vp.zoom_around(width * 0.3, zoom);
            let (a, b) = (vp.start_ns(), vp.end_ns());
            let step = ((b - a) / 97).max(1);
            let mut t = a;
            while t <= b {
                let x = vp.ns_to_px(t);
                assert!(x >= -1e-9 && x <= width + 1e-9, "{t} -> {x}");
                assert_eq!(vp.px_to_ns(x), t, "extent {extent} zoom {zoom}");
                t += step;
            }
            assert!((vp.ns_to_px(a)).abs() < 1e-9);
            assert!((vp.ns_to_px(b) - width).abs() < 1e-6);
        }
    }
}

#[wasm_bindgen_test]
fn viewport_columns_tile_the_window_and_round_trip() {
    for (extent, width) in [
        (534_975_000u64, 800.0),
        (1_000, 1234.5),
        (7, 300.0),
        (u64::MAX / 3, 999.0),
    ] {
        let mut vp = Viewport::new(extent, width);
        for zoom in [1.0, 3.7, 250.0, 1e6] {
            vp.fit();
            vp.zoom_around(width * 0.3, zoom);
            let n = vp.columns();
            assert_eq!(n, width.ceil() as usize);
            assert_eq!(vp.column_bounds(0).0, vp.start_ns());
            let mut prev_end = vp.start_ns();
            for i in 0..n {
                let (a, b) = vp.column_bounds(i);
                assert_eq!(a, prev_end, "column {i}: a gap or an overlap");
                assert!(b >= a);
                prev_end = b;
                assert_eq!(vp.column_px(i), i as f64);
                assert_eq!(vp.column_at_px(vp.column_px(i) + 0.5), i);
                if a <= vp.extent_ns() && a < 1 << 53 {
                    assert_eq!(vp.px_to_ns(vp.column_px(i)), a, "column {i}");
                }
            }
            // The columns cover the window (the last one may stick out of
            // a fractional width).
            assert!(prev_end >= vp.end_ns());
            if width.fract() == 0.0 {
                assert_eq!(prev_end, vp.end_ns());
            }
            let d = vp.range_ns() as f64 / 3.0;
            assert!((vp.px_len_to_ns(vp.ns_len_to_px(d)) - d).abs() <= d * 1e-12);
            assert!((vp.ns_len_to_px(vp.range_ns() as f64) - width).abs() < 1e-9);
        }
    }
}

#[wasm_bindgen_test]
fn viewport_zoom_keeps_the_pointer_time_fixed() {
    let mut vp = Viewport::new(534_975_000, 900.0);
    for (x, factor) in [
        (450.0, 2.0),
        (100.0, 1.7),
        (850.0, 3.0),
        (300.0, 0.8),
        (10.0, 1.25),
    ] {
        let before = vp.px_to_ns_f64(x);
        let range = vp.range_ns();
        vp.zoom_around(x, factor);
        let after = vp.px_to_ns_f64(x);
        assert!((after - before).abs() <= 1.0, "{before} -> {after}");
        assert!(
            (vp.ns_to_px(before.round() as u64) - x).abs() < 0.5 + 900.0 / vp.range_ns() as f64
        );
        let want = range as f64 / factor;
        assert!(
            (vp.range_ns() as f64 - want).abs() <= 1.0,
            "range {}",
            vp.range_ns()
        );
    }
    // Clamps: no deeper than MIN_RANGE_NS, no wider than the extent.
    vp.zoom_around(400.0, 1e12);
    assert_eq!(vp.range_ns(), Viewport::MIN_RANGE_NS);
    vp.zoom_around(400.0, 1e-12);
    assert!(vp.is_fit());
    // Panning stops at both ends and keeps the width.
    vp.zoom_around(0.0, 10.0);
    let r = vp.range_ns();
    vp.pan(-1e9);
    assert_eq!((vp.start_ns(), vp.range_ns()), (0, r));
    vp.pan(1e12);
    assert_eq!((vp.end_ns(), vp.range_ns()), (vp.extent_ns(), r));
    vp.pan(-450.0);
    assert_eq!(vp.end_ns(), vp.extent_ns() - r / 2);
    // Garbage in, nothing breaks.
    let keep = vp;
    vp.zoom_around(f64::NAN, 2.0);
    vp.zoom_around(10.0, -1.0);
    vp.pan(f64::INFINITY);
    assert_eq!(vp, keep);
    vp.set_range(10, 5);
    assert_eq!(vp.range_ns(), Viewport::MIN_RANGE_NS);
    let empty = Viewport::new(0, 0.0);
    assert_eq!((empty.range_ns(), empty.width_px()), (1, 1.0));
}

// -------------------------------------------------------- level of detail

/// Every column that holds span time is covered by some primitive.
fn assert_covered(tl: &Model, lane: u32, vp: &Viewport, prims: &[Prim]) {
    let n = vp.columns();
    let buckets = tl.buckets(lane, vp.start_ns(), vp.end_ns(), n);
    for (i, b) in buckets.iter().enumerate() {
        if b.busy_ns == 0 {
            continue;
        }
        let (c0, c1) = (i as f64, (i + 1) as f64);
        let covered = prims.iter().any(|p| {
            let (a, z) = match *p {
                Prim::Span { x0, x1, .. } => (x0, x1.max(x0 + 1.0)),
                Prim::Agg { x0, x1, .. } => (x0, x1),
            };
            a < c1 + 0.5 && z > c0 - 0.5
        });
        assert!(
            covered,
            "lane {lane} column {i} busy {} ns left blank",
            b.busy_ns
        );
    }
}

#[wasm_bindgen_test]
fn lod_never_draws_more_than_one_primitive_per_pixel_column() {
    let tl = Rc::new(synth::pipeline(SynthSpec {
        stages: 4,
        micro_batches: 8,
        spans: 200_000,
        dependencies: false,
    }));
    assert!(tl.span_count() > 150_000);
    let mut prims = Vec::new();
    // One scratch kept across widths, zooms and lanes (as a frame after
    // frame keeps it) gives what fresh buffers give.
    let (mut scratch, mut reused) = (lod::LodScratch::default(), Vec::new());
    for width in [37.0, 640.0, 1500.0] {
        let mut vp = Viewport::new(tl.end_ns(), width);
        for zoom in [1.0, 8.0, 300.0, 40_000.0] {
            vp.fit();
            vp.zoom_around(width * 0.41, zoom);
            for lane in 0..tl.lanes().len() as u32 {
                let n = lod::lane_prims(&tl, lane, &vp, &mut prims);
                assert_eq!(n, prims.len());
                lod::lane_prims_cached(&tl, lane, &vp, &mut scratch, &mut reused);
                assert_eq!(reused, prims, "lane {lane}, width {width}, zoom {zoom}");
                assert!(
                    n <= vp.columns() + 1,
                    "lane {lane}: {n} primitives for {} columns",
                    vp.columns()
                );
                assert_covered(&tl, lane, &vp, &prims);
            }
        }
    }
    // At fit, a compute lane of ~100k spans merges into far fewer bars.
    let vp = Viewport::new(tl.end_ns(), 800.0);
    let n = lod::lane_prims(&tl, 0, &vp, &mut prims);
    assert!(tl.spans(0).len() > 30_000, "{}", tl.spans(0).len());
    assert!(n <= 800, "{n}");
    assert!(prims.iter().any(|p| matches!(p, Prim::Agg { .. })));
}

#[wasm_bindgen_test]
fn lod_kept_between_frames_gives_what_a_fresh_computation_gives() {
    let tl = Rc::new(synth::pipeline(SynthSpec {
        stages: 4,
        micro_batches: 8,
        spans: 100_000,
        dependencies: false,
    }));
    let (mut kept, mut cached, mut fresh) = (lod::LodScratch::default(), Vec::new(), Vec::new());
    let mut vp = Viewport::new(tl.end_ns(), 700.0);
    vp.zoom_around(300.0, 6.0);
    // Drags by whole and fractional pixels both ways, a jump past the kept
    // columns, a zoom (nothing reusable), the fit view.
    let moves: [&dyn Fn(&mut Viewport); 8] = [
        &|v| v.pan(30.0),
        &|v| v.pan(30.0),
        &|v| v.pan(-45.5),
        &|v| v.pan(-2.0),
        &|v| v.pan(5000.0),
        &|v| v.zoom_around(100.0, 1.7),
        &|v| v.pan(-12.0),
        &|v| v.fit(),
    ];
    for (step, m) in moves.iter().enumerate() {
        m(&mut vp);
        for lane in 0..tl.lanes().len() as u32 {
            let n = lod::lane_prims_cached(&tl, lane, &vp, &mut kept, &mut cached);
            lod::lane_prims(&tl, lane, &vp, &mut fresh);
            assert_eq!(cached, fresh, "step {step}, lane {lane}");
            assert_eq!(n, fresh.len());
        }
    }
    // Another timeline at the same address range never reads the kept
    // buckets of a dropped one.
    drop(tl);
    kept.prune();
    let other = Rc::new(synth::pipeline(SynthSpec {
        stages: 2,
        micro_batches: 4,
        spans: 20_000,
        dependencies: false,
    }));
    let vp = Viewport::new(other.end_ns(), 700.0);
    lod::lane_prims_cached(&other, 0, &vp, &mut kept, &mut cached);
    lod::lane_prims(&other, 0, &vp, &mut fresh);
    assert_eq!(cached, fresh);
}

/// The whole canvas of a frame drawn with `scratch` (a 900 x 800 canvas).
fn frame_pixels(
    scratch: &mut draw::Scratch,
    tl: &Rc<Model>,
    vp: &Viewport,
    hover: Option<hit::Hit>,
) -> (Vec<u8>, draw::FrameStats) {
    let doc = gloo::utils::document();
    let c: HtmlCanvasElement = doc.create_element("canvas").unwrap().dyn_into().unwrap();
    let (w, h) = (900.0, 800.0);
    c.set_width(w as u32);
    c.set_height(h as u32);
    let ctx: CanvasRenderingContext2d = c.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    let sections = vec![draw::Section {
        tl: tl.clone(),
        label: String::new(),
    }];
    let layout = Layout::build(layout::groups(&[&**tl]), 1, &[], false);
    let selection = draw::Selection::default();
    let scene = draw::Scene {
        dpr: 1.0,
        sections: &sections,
        layout: &layout,
        vp,
        scroll_y: 0.0,
        width: w,
        height: h,
        selection: &selection,
        hover,
        critical: false,
    };
    let stats = draw::draw(&ctx, &scene, scratch);
    (ctx.get_image_data(0.0, 0.0, w, h).unwrap().data().0, stats)
}

#[wasm_bindgen_test]
fn a_frame_that_changes_only_the_hover_puts_the_last_lanes_again() {
    let tl = Rc::new(seed000());
    let plot_w = draw::plot_width(900.0);
    let mut vp = Viewport::new(tl.end_ns(), plot_w);
    vp.set_range(tl.end_ns() / 5, tl.end_ns() / 3);
    // The widest span in view of the first lane row on the canvas.
    let rows = Layout::build(layout::groups(&[&*tl]), 1, &[], false);
    let (lane, index) = rows
        .rows
        .iter()
        .filter(|r| RULER_H + r.y + r.h <= 800.0)
        .find_map(|r| {
            let RowKind::Lane { lane, .. } = r.kind else {
                return None;
            };
            let (i, _) = tl
                .query(lane, vp.start_ns(), vp.end_ns())
                .max_by_key(|(_, s)| s.duration_ns)?;
            Some((lane, i))
        })
        .expect("a span in view");
    let hover = Some(hit::Hit {
        section: 0,
        lane,
        index,
    });
    // Kept between frames: no hover, then the hover (lanes reused), then
    // a pan (lanes made again), each equal to a fresh scratch's frame.
    let mut kept = draw::Scratch::default();
    let (plain, plain_stats) = frame_pixels(&mut kept, &tl, &vp, None);
    let (hovered, hovered_stats) = frame_pixels(&mut kept, &tl, &vp, hover);
    let (fresh, fresh_stats) = frame_pixels(&mut draw::Scratch::default(), &tl, &vp, hover);
    assert!(
        hovered == fresh,
        "the reused lanes differ from a fresh frame's"
    );
    assert_eq!(hovered_stats.rects, fresh_stats.rects);
    assert_eq!(hovered_stats.texts, fresh_stats.texts);
    assert_eq!(hovered_stats.lanes, fresh_stats.lanes);
    assert_eq!(plain_stats.rects, fresh_stats.rects);
    assert!(plain != hovered, "the hover is drawn");
    vp.pan(37.0);
    let (panned, _) = frame_pixels(&mut kept, &tl, &vp, hover);
    let (fresh, _) = frame_pixels(&mut draw::Scratch::default(), &tl, &vp, hover);
    assert!(panned == fresh, "a pan draws the lanes again");
    assert!(panned != hovered);
}

#[wasm_bindgen_test]
fn lod_draws_wide_spans_as_themselves_and_handles_nesting() {
    let tl = measured();
    let mut vp = Viewport::new(tl.end_ns(), 1000.0);
    // 60 us over 1000 px: every span is several pixels wide.
    vp.set_range(100_000, 160_000);
    let mut prims = Vec::new();
    lod::lane_prims(&tl, 0, &vp, &mut prims);
    let spans: Vec<u32> = prims
        .iter()
        .filter_map(|p| match p {
            Prim::Span { index, x0, .. } => {
                let s = tl.spans(0)[*index as usize];
                assert!((vp.ns_to_px(s.start_ns) - x0).abs() < 1e-9);
                Some(*index)
            }
            Prim::Agg { .. } => None,
        })
        .collect();
    assert!(spans.len() >= 6, "{prims:?}");
    assert_covered(&tl, 0, &vp, &prims);
    // Zoomed out, nested spans aggregate and stay bounded.
    vp.fit();
    vp.set_width(50.0);
    let n = lod::lane_prims(&tl, 0, &vp, &mut prims);
    assert!(n <= 50);
    assert_covered(&tl, 0, &vp, &prims);
    assert_eq!(lod::level(0, 100), 1);
    assert_eq!(lod::level(26, 100), 2);
    assert_eq!(lod::level(100, 100), lod::LEVELS);
}

#[wasm_bindgen_test]
fn critical_path_draws_at_most_one_run_per_pixel_column_per_lane() {
    let tl = synth::pipeline(SynthSpec {
        stages: 4,
        micro_batches: 8,
        spans: 200_000,
        dependencies: true,
    });
    let on_path: usize = (0..tl.lanes().len() as u32)
        .map(|l| tl.critical_on_lane(l).len())
        .sum();
    assert_eq!(on_path, tl.critical_path().len());
    assert!(
        tl.critical_path().len() > 2_000,
        "{}",
        tl.critical_path().len()
    );
    let mut runs = Vec::new();
    for width in [37.0, 640.0, 1500.5] {
        let mut vp = Viewport::new(tl.end_ns(), width);
        for zoom in [1.0, 8.0, 300.0, 40_000.0] {
            vp.fit();
            vp.zoom_around(width * 0.41, zoom);
            let mut drawn = 0;
            for lane in 0..tl.lanes().len() as u32 {
                let n = lod::critical_runs(&tl, lane, &vp, &mut runs);
                assert!(n <= vp.columns(), "lane {lane}: {n} runs for {width} px");
                drawn += n;
                // Every critical span in view is covered by a run.
                let spans = tl.spans(lane);
                for &i in tl.critical_on_lane(lane) {
                    let s = &spans[i as usize];
                    if s.end_ns() <= vp.start_ns() || s.start_ns >= vp.end_ns() {
                        continue;
                    }
                    let x = vp.ns_to_px(s.start_ns).max(0.0);
                    assert!(
                        runs.iter().any(|r| r.x0 <= x + 1.0 && x <= r.x1 + 1.0),
                        "lane {lane}: critical span {i} at {x} px not drawn"
                    );
                }
            }
            assert!(drawn > 0, "zoom {zoom}: nothing drawn");
        }
    }
}

#[wasm_bindgen_test]
fn hit_test_finds_innermost_and_nearest_spans() {
    let tl = measured();
    let mut vp = Viewport::new(tl.end_ns(), 1000.0);
    vp.set_range(0, 20_000); // 20 ns per px
                             // Inside the nested forward sub-op of op 0 (1000..4000 ns).
    let x = vp.ns_to_px(2_000);
    let i = hit::span_at(&tl, 0, &vp, x, 2.0).expect("hit");
    assert_eq!(tl.spans(0)[i as usize].kind, SpanKind::Forward);
    // Inside the outer op only (4000..6000).
    let i = hit::span_at(&tl, 0, &vp, vp.ns_to_px(5_000), 2.0).expect("hit");
    assert_eq!(tl.label(tl.spans(0)[i as usize].label), "op.matmul");
    // In a gap, 1 px from the wait's end (7000): the wait.
    let i = hit::span_at(&tl, 0, &vp, vp.ns_to_px(7_020), 2.0).expect("near");
    assert_eq!(tl.spans(0)[i as usize].kind, SpanKind::Wait);
    // Far from anything.
    assert_eq!(hit::span_at(&tl, 0, &vp, vp.ns_to_px(8_500), 2.0), None);
}

#[wasm_bindgen_test]
fn ruler_ticks_and_units_adapt() {
    assert_eq!(format::tick_step_ns(0.01 * 90.0), 1);
    assert_eq!(format::tick_step_ns(1.0 * 90.0), 100);
    assert_eq!(format::tick_step_ns(3_000.0 * 90.0), 500_000);
    assert_eq!(format::tick_step_ns(2.0e7 * 90.0), 2_000_000_000);
    assert_eq!(format::tick_label(300, 100), "300 ns");
    assert_eq!(format::tick_label(1_500, 500), "1.5 µs");
    assert_eq!(format::tick_label(3_000, 1_000), "3 µs");
    assert_eq!(format::tick_label(1_500_000, 500_000), "1.5 ms");
    assert_eq!(format::tick_label(2_250_000, 250_000), "2.25 ms");
    assert_eq!(format::tick_label(4_000_000_000, 2_000_000_000), "4 s");
    assert_eq!(format::tick_label(0, 200_000_000), "0 ms");
    assert_eq!(format::tick_label(1_200_000_000, 200_000_000), "1.2 s");
    assert_eq!(format::instant(1_575_208_912, 100), "1.5752089 s");
    assert_eq!(format::instant(666_898_000, 1_000), "666.898 ms");
    assert_eq!(format::duration(950), "950 ns");
    assert_eq!(format::duration(534_975_000), "534.98 ms");
    assert_eq!(format::duration(2_500_000_000), "2.500 s");
    assert_eq!(format::bytes(3 << 20), "3.00 MiB");
    assert_eq!(format::gbps(12.34), "12.3 GB/s");
}

#[wasm_bindgen_test]
fn layout_groups_stages_and_collapses() {
    let tl = seed000();
    let groups = layout::groups(&[&tl]);
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["stage 0", "stage 1", "stage 2", "stage 3"]);
    for g in &groups {
        assert!(g.lanes.iter().all(|&l| !tl.spans(l).is_empty()));
        assert_eq!(tl.lanes()[g.primary as usize].stream, Stream::Compute);
    }
    let open = Layout::build(groups.clone(), 1, &[], false);
    let shut = Layout::build(groups.clone(), 1, &[true, false, true, false], true);
    let lanes: usize = groups.iter().map(|g| g.lanes.len()).sum();
    // Each stage's activation memory lane joins its group, shown when
    // expanded (one counter row each, under the span lanes).
    for (i, g) in groups.iter().enumerate() {
        assert_eq!(g.counters.len(), 1, "stage {i}");
        assert_eq!(tl.counters()[g.counters[0] as usize].stage, i as u32);
    }
    assert_eq!(open.rows.len(), lanes + 4);
    assert_eq!(open.counter_rows(), 4);
    assert!(matches!(
        open.rows[groups[0].lanes.len()].kind,
        RowKind::Counter { group: 0, .. }
    ));
    assert_eq!(
        shut.rows.len(),
        1 + 2 + groups[1].lanes.len() + groups[3].lanes.len() + 2
    );
    assert_eq!(shut.counter_rows(), 2);
    assert!(matches!(shut.rows[0].kind, RowKind::Section(0)));
    // A collapsed group's lanes all map to its single row.
    let g0 = &groups[0];
    let r0 = shut.row_of_lane(0, g0.primary).copied();
    for &l in &g0.lanes {
        assert_eq!(shut.row_of_lane(0, l).copied(), r0);
    }
    let y = open.rows[3].y + 1.0;
    assert_eq!(open.row_at(y), Some(3));
    assert_eq!(open.rows_between(LANE_H * 1.5, LANE_H * 3.5), 1..4);
}

// --------------------------------------------------------------- component

async fn settle() {
    // A couple of animation frames and the Yew scheduler.
    gloo::timers::future::TimeoutFuture::new(60).await;
    gloo::timers::future::TimeoutFuture::new(40).await;
}

fn mount(props: TimelineProps) -> Element {
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    host.set_attribute("style", "width:1100px").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<Timeline>::with_root_and_props(host.clone(), props).render();
    host
}

fn props(tl: Rc<Model>) -> TimelineProps {
    yew::props!(TimelineProps { timeline: tl })
}

fn q(host: &Element, sel: &str) -> Option<Element> {
    host.query_selector(sel).unwrap()
}

fn view_range(host: &Element) -> (u64, u64) {
    let el = q(host, "[data-testid=view-range]").expect("view-range");
    let a = el.get_attribute("data-start-ns").unwrap().parse().unwrap();
    let b = el.get_attribute("data-end-ns").unwrap().parse().unwrap();
    (a, b)
}

fn canvas(host: &Element) -> HtmlCanvasElement {
    q(host, "canvas[data-testid=timeline]")
        .expect("timeline canvas")
        .dyn_into()
        .unwrap()
}

fn mouse(target: &Element, kind: &str, cx: f64, cy: f64) {
    let init = MouseEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_client_x(cx as i32);
    init.set_client_y(cy as i32);
    init.set_button(0);
    let e = MouseEvent::new_with_mouse_event_init_dict(kind, &init).unwrap();
    target.dispatch_event(&e).unwrap();
}

/// Ctrl+wheel (the timeline's zoom, Perfetto's convention; the plain
/// wheel scrolls).
fn wheel(target: &Element, cx: f64, cy: f64, dy: f64) {
    let init = WheelEventInit::new();
    init.set_ctrl_key(true);
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_client_x(cx as i32);
    init.set_client_y(cy as i32);
    init.set_delta_y(dy);
    let e = WheelEvent::new_with_event_init_dict("wheel", &init).unwrap();
    target.dispatch_event(&e).unwrap();
}

/// Client position of plot x and row y (CSS px within the plot / rows).
fn client(c: &HtmlCanvasElement, x: f64, y: f64) -> (f64, f64) {
    let r = c.get_bounding_client_rect();
    (r.left() + LABEL_W + x, r.top() + RULER_H + y)
}

/// Distinct non-background colours and coloured pixel count in the plot.
fn plot_pixels(c: &HtmlCanvasElement) -> (usize, usize) {
    let ctx: CanvasRenderingContext2d = c.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    let dpr = gloo::utils::window().device_pixel_ratio();
    let x0 = (LABEL_W * dpr) as f64;
    let y0 = (RULER_H * dpr) as f64;
    let w = f64::from(c.width()) - x0 - 20.0;
    let h = f64::from(c.height()) - y0;
    let img = ctx.get_image_data(x0, y0, w, h).unwrap();
    let data = img.data();
    let mut colours = std::collections::BTreeSet::new();
    let mut coloured = 0;
    for px in data.chunks_exact(4) {
        let (r, g, b) = (px[0], px[1], px[2]);
        let grey = r.abs_diff(g) < 12 && g.abs_diff(b) < 12;
        if !grey {
            coloured += 1;
            colours.insert((r >> 4, g >> 4, b >> 4));
        }
    }
    (colours.len(), coloured)
}

#[wasm_bindgen_test]
async fn component_draws_zooms_hovers_pans_and_selects_a_simulated_run() {
    let tl = Rc::new(seed000());
    let host = mount(props(tl.clone()));
    settle().await;
    let c = canvas(&host);
    assert!(c.client_width() > 1000 - 20, "{}", c.client_width());

    // Not blank: many coloured pixels of several kinds.
    let (colours, coloured) = plot_pixels(&c);
    let area = (c.width() as usize) * (c.height() as usize);
    assert!(coloured > area / 40, "{coloured} coloured of {area}");
    assert!(colours >= 4, "{colours} colours");
    assert!(q(&host, "[data-testid=timeline-legend] li").is_some());

    // Fitted: the whole run is visible.
    let (a0, b0) = view_range(&host);
    assert_eq!(a0, 0);
    assert!(b0 >= tl.end_ns());

    // Wheel up in the middle of the plot narrows the range around it.
    let plot_w = draw::plot_width(f64::from(c.client_width()));
    let (cx, cy) = client(&c, plot_w / 2.0, LANE_H / 2.0);
    let el: &Element = c.as_ref();
    wheel(el, cx, cy, -400.0);
    settle().await;
    let (a1, b1) = view_range(&host);
    assert!(b1 - a1 < (b0 - a0) / 2, "{a1}..{b1}");
    assert!(a1 > 0 && b1 < b0);
    let mid_before = (a0 + b0) / 2;
    assert!(
        a1 < mid_before && mid_before < b1,
        "zoom keeps the pointer's time"
    );

    // Hover the widest span of the first lane that has one fully in view.
    let vp = {
        let mut v = Viewport::new(b0, plot_w);
        v.set_range(a1, b1);
        v
    };
    let rows = Layout::build(layout::groups(&[&*tl]), 1, &[], false);
    let (row_y, lane, s) = rows
        .rows
        .iter()
        .find_map(|r| {
            let RowKind::Lane { lane, .. } = r.kind else {
                return None;
            };
            let (_, s) = tl
                .query(lane, a1, b1)
                .filter(|(_, s)| s.start_ns >= a1 && s.end_ns() <= b1)
                .max_by_key(|(_, s)| s.duration_ns)?;
            Some((r.y, lane, *s))
        })
        .expect("a span in view");
    let label = tl.label(s.label).to_string();
    assert!(!label.is_empty());
    let x = vp.ns_to_px(s.start_ns + s.duration_ns / 2);
    let (hx, hy) = client(&c, x, row_y + LANE_H / 2.0);
    let group = format!("stage {}", tl.lanes()[lane as usize].stage);
    assert!(q(&host, "[data-testid=tooltip]").is_none());
    mouse(el, "mousemove", hx, hy);
    settle().await;
    let tip = q(&host, "[data-testid=tooltip]").expect("tooltip shown");
    let text = tip.text_content().unwrap_or_default();
    assert!(text.contains(&label), "{text} lacks {label}");
    assert!(text.contains("duration") && text.contains(&group), "{text}");
    mouse(el, "mouseleave", hx, hy);
    settle().await;
    assert!(q(&host, "[data-testid=tooltip]").is_none());

    // Click (press and release in place) selects it: details panel.
    mouse(el, "mousedown", hx, hy);
    mouse(el, "mouseup", hx, hy);
    settle().await;
    let details = q(&host, "[data-testid=timeline-details]").unwrap();
    let text = details.text_content().unwrap_or_default();
    assert!(
        text.contains(&label) && text.contains("Waited for"),
        "{text}"
    );

    // Drag left by 200 px: later times come into view, same width.
    mouse(el, "mousedown", cx, cy);
    mouse(el, "mousemove", cx - 100.0, cy);
    mouse(el, "mousemove", cx - 200.0, cy);
    mouse(el, "mouseup", cx - 200.0, cy);
    settle().await;
    let (a2, b2) = view_range(&host);
    assert_eq!(b2 - a2, b1 - a1);
    let want = (200.0 * vp.ns_per_px()) as i64;
    assert!(((a2 as i64 - a1 as i64) - want).abs() <= 2, "{a1} -> {a2}");

    // Keys: W zooms in, A pans left, F fits.
    let root: HtmlElement = q(&host, ".ts-timeline").unwrap().dyn_into().unwrap();
    let key = |k: &str| {
        let init = web_sys::KeyboardEventInit::new();
        init.set_key(k);
        init.set_bubbles(true);
        let e =
            web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
        root.dispatch_event(&e).unwrap();
    };
    key("w");
    settle().await;
    let (a3, b3) = view_range(&host);
    assert!(b3 - a3 < b2 - a2);
    key("a");
    settle().await;
    let (a4, _) = view_range(&host);
    assert!(a4 < a3);
    key("f");
    settle().await;
    assert_eq!(view_range(&host), (a0, b0));

    // Buttons: zoom in, critical path toggle, collapse all.
    let btn = |id: &str| -> HtmlElement {
        q(&host, &format!("[data-testid={id}]"))
            .unwrap()
            .dyn_into()
            .unwrap()
    };
    btn("timeline-zoom-in").click();
    settle().await;
    assert!(view_range(&host).1 - view_range(&host).0 < b0 - a0);
    btn("timeline-critical").click();
    settle().await;
    assert_eq!(
        btn("timeline-critical")
            .get_attribute("aria-pressed")
            .as_deref(),
        Some("true")
    );
    let h_open = c.client_height();
    btn("timeline-collapse").click();
    settle().await;
    assert!(c.client_height() < h_open);
    let (colours, _) = plot_pixels(&c);
    assert!(colours >= 2, "collapsed rows still draw");
    host.remove();
}

#[wasm_bindgen_test]
async fn component_shows_a_measured_run_and_compare_mode() {
    let a = Rc::new(measured());
    let b = Rc::new(seed000());
    let host = mount(yew::props!(TimelineProps {
        timeline: a.clone(),
        label: "measured",
        compare: Some(b.clone()),
        compare_label: "simulated",
    }));
    settle().await;
    let c = canvas(&host);
    let (colours, _) = plot_pixels(&c);
    assert!(colours >= 4, "{colours}");
    // One time axis: the extent covers the longer run.
    let (s, e) = view_range(&host);
    assert_eq!(s, 0);
    assert!(e >= a.end_ns().max(b.end_ns()));
    // Hover the measured run's first nested forward sub-op at its centre,
    // after zooming to it with the overview and the wheel.
    let plot_w = draw::plot_width(f64::from(c.client_width()));
    let mut vp = Viewport::new(e, plot_w);
    let el: &Element = c.as_ref();
    let (cx, cy) = client(&c, 0.0, 0.0);
    for _ in 0..6 {
        wheel(el, cx, cy + 30.0, -600.0);
        vp.zoom_around(0.0, (600.0f64 * 0.0025).exp());
    }
    settle().await;
    let (s1, e1) = view_range(&host);
    assert!(e1 - s1 < 200_000, "{s1}..{e1}");
    vp.set_range(s1, e1);
    let x = vp.ns_to_px(2_500);
    // Rows: section header, then rank 0's compute lane.
    let (hx, hy) = client(&c, x, layout::SECTION_H + LANE_H / 2.0);
    mouse(el, "mousemove", hx, hy);
    settle().await;
    let tip = q(&host, "[data-testid=tooltip]").expect("tooltip");
    let text = tip.text_content().unwrap_or_default();
    assert!(
        text.contains("kernel.gemm") && text.contains("rank 0"),
        "{text}"
    );
    assert!(text.contains("measured"), "{text}");
    host.remove();
}

#[wasm_bindgen_test]
async fn component_survives_empty_and_extreme_timelines() {
    // No lanes at all.
    let host = mount(props(Rc::new(TimelineBuilder::new().build())));
    settle().await;
    let c = canvas(&host);
    let el: &Element = c.as_ref();
    let (cx, cy) = client(&c, 100.0, 10.0);
    wheel(el, cx, cy, -500.0);
    mouse(el, "mousemove", cx, cy);
    settle().await;
    let (a, b) = view_range(&host);
    assert!(b > a);
    host.remove();
    // Spans near the end of time, zero-length spans, an unknown label.
    let mut bld = TimelineBuilder::new();
    let l = bld.lane(Lane {
        group_kind: LaneGroup::Rank,
        group: u32::MAX,
        stage: u32::MAX,
        stream: Stream::Recv,
        name: String::new(),
    });
    bld.push(l, span(u64::MAX - 10, 5, SpanKind::Recv));
    bld.push(l, span(0, 0, SpanKind::Wait));
    let mut s = span(1 << 62, u64::MAX, SpanKind::CollEp);
    s.label = LabelId(999);
    bld.push(l, s);
    let host = mount(props(Rc::new(bld.build())));
    settle().await;
    let c = canvas(&host);
    let el: &Element = c.as_ref();
    let (cx, cy) = client(&c, 300.0, LANE_H / 2.0);
    for dy in [-800.0, -800.0, 400.0, -2000.0] {
        wheel(el, cx, cy, dy);
    }
    mouse(el, "mousemove", cx, cy);
    mouse(el, "mousedown", cx, cy);
    mouse(el, "mouseup", cx, cy);
    settle().await;
    let (a, b) = view_range(&host);
    assert!(b > a);
    let (colours, _) = plot_pixels(&c);
    assert!(colours >= 1, "the huge span is drawn");
    host.remove();
}

// ------------------------------------------ component: data, keys, paths

fn mount_handle(props: TimelineProps) -> (Element, yew::AppHandle<Timeline>) {
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    host.set_attribute("style", "width:1100px").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    let app = yew::Renderer::<Timeline>::with_root_and_props(host.clone(), props).render();
    (host, app)
}

fn press(host: &Element, k: &str) {
    let root = q(host, ".ts-timeline").unwrap();
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(k);
    init.set_bubbles(true);
    init.set_cancelable(true);
    let e = web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    root.dispatch_event(&e).unwrap();
}

/// The selected span (lane, index) from the details panel.
fn selected(host: &Element) -> Option<(u32, u32)> {
    let d = q(host, "[data-testid=timeline-details]").unwrap();
    Some((
        d.get_attribute("data-lane")?.parse().unwrap(),
        d.get_attribute("data-index")?.parse().unwrap(),
    ))
}

#[wasm_bindgen_test]
async fn component_critical_path_rectangles_per_lane_stay_within_the_plot_width() {
    let tl = Rc::new(synth::pipeline(SynthSpec {
        stages: 4,
        micro_batches: 8,
        spans: 100_000,
        dependencies: true,
    }));
    let frames = Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = frames.clone();
    let host = mount(yew::props!(TimelineProps {
        timeline: tl.clone(),
        critical_path: true,
        on_frame: Some(yew::Callback::from(move |s: draw::FrameStats| log
            .borrow_mut()
            .push(s))),
    }));
    settle().await;
    let c = canvas(&host);
    let plot_w = draw::plot_width(f64::from(c.client_width()));
    let (cx, cy) = client(&c, plot_w * 0.4, LANE_H / 2.0);
    let el: &Element = c.as_ref();
    for _ in 0..4 {
        wheel(el, cx, cy, -300.0);
        settle().await;
    }
    let frames = frames.borrow();
    assert!(frames.len() >= 2);
    for f in frames.iter() {
        assert!(f.critical_rects > 0, "{f:?}");
        assert!(
            f64::from(f.max_lane_critical) <= plot_w.ceil(),
            "{} critical rectangles on a lane, plot {plot_w} px",
            f.max_lane_critical
        );
    }
    host.remove();
}

#[wasm_bindgen_test]
async fn component_keeps_the_view_when_new_data_has_the_same_lanes() {
    let tl = Rc::new(seed000());
    let (host, mut app) = mount_handle(props(tl.clone()));
    settle().await;
    let c = canvas(&host);
    let plot_w = draw::plot_width(f64::from(c.client_width()));
    let (cx, cy) = client(&c, plot_w * 0.5, LANE_H / 2.0);
    let el: &Element = c.as_ref();
    wheel(el, cx, cy, -500.0);
    settle().await;
    // Select a span with the keyboard (which may bring it into view) and
    // collapse its group.
    press(&host, "ArrowRight");
    settle().await;
    let sel = selected(&host).expect("a selection");
    press(&host, "c");
    settle().await;
    let (a1, b1) = view_range(&host);
    assert!(a1 > 0 && b1 - a1 < tl.end_ns() / 2, "{a1}..{b1}");
    let h_collapsed = c.client_height();
    // The same run again (a new Rc): everything kept.
    app.update(props(Rc::new((*tl).clone())));
    settle().await;
    assert_eq!(view_range(&host), (a1, b1));
    assert_eq!(selected(&host), Some(sel));
    assert_eq!(c.client_height(), h_collapsed, "collapse state kept");
    // A shorter run of the same job: the window is kept, clamped to the
    // new extent; the selection stays when the same span exists.
    let w = trainscope_core::formats::simai::parse("seed000.txt", SEED000).unwrap();
    let job = JobSpec::from_simai(&w).unwrap();
    let cfg = SimConfig {
        compute_scale: 0.5,
        ..SimConfig::default()
    };
    let tl2 = Rc::new(
        trainscope_core::engine::simulate(&job, &cfg)
            .unwrap()
            .timeline,
    );
    assert_eq!(tl2.lanes(), tl.lanes());
    app.update(props(tl2.clone()));
    settle().await;
    let end = tl2.end_ns();
    let mut want = Viewport::new(end + end / 50, plot_w);
    want.set_range(a1, b1);
    assert_eq!(view_range(&host), (want.start_ns(), want.end_ns()));
    assert!(view_range(&host).0 > 0, "not fitted");
    let r = trainscope_core::timeline::SpanRef {
        lane: sel.0,
        index: sel.1,
    };
    let same = match (tl.span(r), tl2.span(r)) {
        (Some(x), Some(y)) => tl.label(x.label) == tl2.label(y.label),
        _ => false,
    };
    assert_eq!(selected(&host), same.then_some(sel));
    assert_eq!(c.client_height(), h_collapsed);
    // Another structure: reset (fit, no selection).
    let m = Rc::new(measured());
    app.update(props(m.clone()));
    settle().await;
    let (a3, _) = view_range(&host);
    assert_eq!(a3, 0);
    assert_eq!(selected(&host), None);
    host.remove();
}

#[wasm_bindgen_test]
async fn component_keyboard_moves_the_selection_opens_details_and_collapses() {
    let tl = Rc::new(seed000());
    let host = mount(props(tl.clone()));
    settle().await;
    assert_eq!(selected(&host), None);
    let hint = q(&host, ".ts-tl-hint").unwrap().text_content().unwrap();
    assert!(
        hint.contains("arrows") && hint.contains("Enter") && hint.contains("C:"),
        "{hint}"
    );
    press(&host, "ArrowRight");
    settle().await;
    let (lane, i0) = selected(&host).expect("arrow selects a span");
    press(&host, "ArrowRight");
    settle().await;
    assert_eq!(selected(&host), Some((lane, i0 + 1)));
    press(&host, "ArrowLeft");
    settle().await;
    assert_eq!(selected(&host), Some((lane, i0)));
    let label = tl.label(tl.spans(lane)[i0 as usize].label).to_string();
    let details = q(&host, "[data-testid=timeline-details]").unwrap();
    assert!(details.text_content().unwrap().contains(&label));
    // Down: the neighbouring row's lane, near the same time; Up: back.
    press(&host, "ArrowDown");
    settle().await;
    let (lane2, _) = selected(&host).unwrap();
    assert_ne!(lane2, lane);
    press(&host, "ArrowUp");
    settle().await;
    assert_eq!(selected(&host).map(|s| s.0), Some(lane));
    // Enter opens (focuses) the details panel.
    press(&host, "Enter");
    settle().await;
    let active = gloo::utils::document().active_element().unwrap();
    assert_eq!(
        active.get_attribute("data-testid").as_deref(),
        Some("timeline-details")
    );
    // C collapses the selected span's group, again expands it.
    let c = canvas(&host);
    let h0 = c.client_height();
    press(&host, "c");
    settle().await;
    assert!(c.client_height() < h0, "{} vs {h0}", c.client_height());
    press(&host, "C");
    settle().await;
    assert_eq!(c.client_height(), h0);
    // Escape clears.
    press(&host, "Escape");
    settle().await;
    assert_eq!(selected(&host), None);
    host.remove();
}
