//! Browser tests (`wasm-pack test --headless --chrome`): the reducer's
//! behaviour on real seed bytes, and the mounted app's ingest controls.

#![cfg(target_arch = "wasm32")]

use std::rc::Rc;
use trainscope_core::Format;
use trainscope_web::state::{Action, AppState};
use wasm_bindgen_test::*;
use yew::Reducible;

wasm_bindgen_test_configure!(run_in_browser);

const SEED000: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");

fn reduce(state: Rc<AppState>, action: Action) -> Rc<AppState> {
    state.reduce(action)
}

#[wasm_bindgen_test]
fn loading_a_seed_inspects_it() {
    let s = reduce(Rc::new(AppState::default()), Action::Reading(1));
    assert_eq!(s.loading, 1);
    let s = reduce(s, Action::Loaded(vec![("w.txt".into(), SEED000.to_vec())]));
    assert_eq!(s.loading, 0);
    assert_eq!(s.files.len(), 1);
    let summary = &s.files[0].summary;
    assert_eq!(summary.format, Some(Format::SimaiWorkload));
    let h = summary.simai.as_ref().expect("SimAI header");
    assert_eq!((h.tp, h.pp, h.world), (8, 4, Some(512)));
}

#[wasm_bindgen_test]
fn same_name_replaces_and_remove_and_clear_work() {
    let s = reduce(
        Rc::new(AppState::default()),
        Action::Loaded(vec![
            ("a".into(), b"junk".to_vec()),
            ("b".into(), SEED000.to_vec()),
        ]),
    );
    assert_eq!(s.files.len(), 2);
    assert_eq!(s.files[0].summary.format, None);
    assert!(s.files[0].summary.has_errors());
    let s = reduce(s, Action::Loaded(vec![("a".into(), SEED000.to_vec())]));
    assert_eq!(s.files.len(), 2, "same name replaces");
    assert_eq!(s.files[0].summary.format, Some(Format::SimaiWorkload));
    let s = reduce(s, Action::Remove("a".into()));
    assert_eq!(s.files.len(), 1);
    let s = reduce(s, Action::ReadFailed("c".into(), "denied".into()));
    assert_eq!(s.notices, vec!["could not read c: denied".to_string()]);
    let s = reduce(s, Action::Clear);
    assert_eq!(*s, AppState::default());
}

#[wasm_bindgen_test]
async fn app_mounts_with_file_input_and_gallery() {
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<trainscope_web::app::App>::with_root(host.clone()).render();
    // Let the scheduler render.
    gloo::timers::future::TimeoutFuture::new(10).await;
    let input = host
        .query_selector("[data-testid=file-input]")
        .unwrap()
        .expect("file input rendered");
    assert_eq!(input.get_attribute("type").as_deref(), Some("file"));
    assert!(input.has_attribute("multiple"));
    let examples = host.query_selector_all("[data-testid=example]").unwrap();
    assert_eq!(examples.length(), 5);
    host.remove();
}
