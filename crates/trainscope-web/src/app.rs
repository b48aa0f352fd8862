//! The root component: page layout, drag-and-drop anywhere on the page, and
//! the glue that reads files (gloo, async) and dispatches them to the reducer.

use crate::components::file_card::FileCard;
use crate::components::ingest::Ingest;
use crate::state::{Action, AppState};
use yew::prelude::*;

/// Read browser files to bytes, then hand them to the reducer all at once
/// (files dropped together belong together, e.g. the ranks of one run).
pub fn read_files(files: Vec<web_sys::File>, dispatch: UseReducerDispatcher<AppState>) {
    if files.is_empty() {
        return;
    }
    dispatch.dispatch(Action::Reading(files.len()));
    yew::platform::spawn_local(async move {
        let mut loaded = Vec::with_capacity(files.len());
        for file in files {
            let name = file.name();
            let blob = gloo::file::File::from(file);
            match gloo::file::futures::read_as_bytes(&blob).await {
                Ok(bytes) => loaded.push((name, bytes)),
                Err(e) => dispatch.dispatch(Action::ReadFailed(name, e.to_string())),
            }
        }
        dispatch.dispatch(Action::Loaded(loaded));
    });
}

/// Files carried by a drop event.
fn dropped_files(event: &DragEvent) -> Vec<web_sys::File> {
    let Some(list) = event.data_transfer().and_then(|dt| dt.files()) else {
        return Vec::new();
    };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

#[component]
pub fn App() -> Html {
    let state = use_reducer(AppState::default);
    let dragging = use_state(|| false);

    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            // Only when the pointer leaves the window, not a child element.
            if e.related_target().is_none() {
                dragging.set(false);
            }
        })
    };
    let ondrop = {
        let dragging = dragging.clone();
        let dispatch = state.dispatcher();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            read_files(dropped_files(&e), dispatch.clone());
        })
    };
    let on_clear = {
        let dispatch = state.dispatcher();
        Callback::from(move |_| dispatch.dispatch(Action::Clear))
    };

    html! {
        <div class={classes!("page", dragging.then_some("dragging"))}
             {ondragover} {ondragleave} {ondrop}>
            <header class="topbar">
                <h1>{"trainscope"}</h1>
                <p class="tagline">{"Distributed-training simulator, entirely in your browser"}</p>
            </header>
            <Ingest dispatch={state.dispatcher()} loading={state.loading} />
            if !state.notices.is_empty() {
                <ul class="notices">
                    { for state.notices.iter().map(|n| html! {
                        <li class="diag error" data-testid="error">{ n }</li>
                    }) }
                </ul>
            }
            if !state.files.is_empty() {
                <section class="files" aria-label="Loaded files">
                    <div class="files-head">
                        <h2>{ format!("Files ({})", state.files.len()) }</h2>
                        <button class="secondary" onclick={on_clear}>{"Clear all"}</button>
                    </div>
                    { for state.files.iter().map(|f| html! {
                        <FileCard key={f.name.clone()} summary={f.summary.clone()}
                                  dispatch={state.dispatcher()} />
                    }) }
                </section>
            }
            if *dragging {
                <div class="drop-overlay" aria-hidden="true">{"Drop files to load them"}</div>
            }
        </div>
    }
}
