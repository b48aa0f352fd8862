//! Benchmark page of the timeline canvas (`www/bench/timeline.html`, built
//! with Trunk, driven by `tests/e2e/bench-timeline.mjs`). It builds a
//! synthetic run in the page (`?spans=1000000&stages=16&mb=32`, default a
//! million spans) or simulates seed 000 (`?seed=000`, with `&compare=1` a
//! second run on the same axis), mounts the [`Timeline`] component, and
//! publishes for the driver: `window.__tlInfo` (span count, build time,
//! `Timeline::heap_bytes`, wasm memory before and after) and
//! `window.__tlFrames` (one `[draw_ms, rects, texts, lanes, max_lane_prims,
//! t_ms, critical_rects, max_lane_critical]` entry per drawn frame).

use js_sys::{Array, Object, Reflect};
use std::rc::Rc;
use trainscope_core::engine::{JobSpec, SimConfig};
use trainscope_web::timeline::synth::{self, SynthSpec};
use trainscope_web::timeline::{FrameStats, Timeline, TimelineProps};
use wasm_bindgen::{JsCast, JsValue};
use yew::Callback;

const SEED000: &str =
    include_str!("../../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");

fn wasm_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| {
            m.buffer()
                .dyn_into::<js_sys::ArrayBuffer>()
                .map_or(0.0, |b| f64::from(b.byte_length()))
        })
        .unwrap_or(0.0)
}

fn now() -> f64 {
    gloo::utils::window().performance().map_or(0.0, |p| p.now())
}

/// `key=value` from the page's query string.
fn param(key: &str) -> Option<String> {
    let search = gloo::utils::window().location().search().ok()?;
    search
        .trim_start_matches('?')
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

fn set(obj: &Object, key: &str, v: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &key.into(), &v.into());
}

fn main() {
    let window = gloo::utils::window();
    let frames = Array::new();
    let _ = Reflect::set(&window, &"__tlFrames".into(), &frames);
    let mem0 = wasm_bytes();
    let t0 = now();
    let seed = param("seed").is_some();
    let (timeline, compare) = if seed {
        let w = trainscope_core::formats::simai::parse("seed000.txt", SEED000)
            .expect("the bundled seed parses");
        let job = JobSpec::from_simai(&w).expect("seed 000 is a valid job");
        let a = trainscope_core::engine::simulate(&job, &SimConfig::default())
            .expect("seed 000 simulates")
            .timeline;
        let b = param("compare").map(|_| {
            let cfg = SimConfig {
                overlap_grad_sync: true,
                compute_scale: 0.8,
                ..SimConfig::default()
            };
            Rc::new(
                trainscope_core::engine::simulate(&job, &cfg)
                    .expect("seed 000 simulates")
                    .timeline,
            )
        });
        (Rc::new(a), b)
    } else {
        let spans = param("spans")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000usize)
            .min(20_000_000);
        let stages = param("stages").and_then(|s| s.parse().ok()).unwrap_or(16);
        let micro_batches = param("mb").and_then(|s| s.parse().ok()).unwrap_or(32);
        let dependencies = param("deps").is_none_or(|v| v != "0");
        let tl = synth::pipeline(SynthSpec {
            stages,
            micro_batches,
            spans,
            dependencies,
        });
        (Rc::new(tl), None)
    };
    let build_ms = now() - t0;
    let mem1 = wasm_bytes();
    let spans = timeline.span_count() + compare.as_ref().map_or(0, |c| c.span_count());
    let heap = timeline.heap_bytes() + compare.as_ref().map_or(0, |c| c.heap_bytes());
    let info = Object::new();
    set(&info, "spans", spans as f64);
    set(&info, "lanes", timeline.lanes().len() as f64);
    set(&info, "end_ns", timeline.end_ns() as f64);
    set(&info, "build_ms", build_ms);
    set(&info, "heap_bytes", heap as f64);
    set(&info, "wasm_bytes_before", mem0);
    set(&info, "wasm_bytes_after", mem1);
    let _ = Reflect::set(&window, &"__tlInfo".into(), &info);
    if let Some(el) = gloo::utils::document().get_element_by_id("title") {
        el.set_text_content(Some(&format!(
            "trainscope timeline benchmark: {spans} spans, {} lanes, built in {build_ms:.0} ms, {:.1} bytes/span (Timeline::heap_bytes)",
            timeline.lanes().len(),
            heap as f64 / spans.max(1) as f64
        )));
    }
    let on_frame = Callback::from(move |s: FrameStats| {
        let e = Array::new();
        for v in [
            s.draw_ms,
            f64::from(s.rects),
            f64::from(s.texts),
            f64::from(s.lanes),
            f64::from(s.max_lane_prims),
            now(),
            f64::from(s.critical_rects),
            f64::from(s.max_lane_critical),
        ] {
            e.push(&v.into());
        }
        frames.push(&e);
    });
    let root = gloo::utils::document()
        .get_element_by_id("timeline")
        .expect("the page has #timeline");
    let props = yew::props!(TimelineProps {
        timeline,
        label: if compare.is_some() { "A" } else { "" },
        compare,
        compare_label: "B: overlapped grad sync, compute x0.8",
        critical_path: param("critical").is_some(),
        on_frame: Some(on_frame),
    });
    yew::Renderer::<Timeline>::with_root_and_props(root, props).render();
    // The same readiness signal as the app's, which the e2e harness waits for.
    trainscope_web::app::mark_ready();
}
