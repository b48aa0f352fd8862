//! Ingest panel: the drop zone, the file picker (`data-testid="file-input"`)
//! and the gallery of bundled examples (`data-testid="example"`), fetched by
//! relative URL so the site works from any sub-path. Its children (the
//! "Describe a job" panel) sit between the drop zone and the gallery.

use crate::browser_files::read_files;
use crate::examples::{example_url, EXAMPLES};
use crate::state::{Action, AppState};
use web_sys::HtmlInputElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct IngestProps {
    pub dispatch: UseReducerDispatcher<AppState>,
    pub loading: usize,
    /// Shown beside the drop zone (the job panel).
    #[prop_or_default]
    pub children: Html,
}

/// Fetch a bundled example and load it like a dropped file.
pub fn load_example(file_name: &'static str, dispatch: UseReducerDispatcher<AppState>) {
    dispatch.dispatch(Action::Reading(1));
    yew::platform::spawn_local(async move {
        let result = async {
            let resp = gloo::net::http::Request::get(&example_url(file_name))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !resp.ok() {
                return Err(format!("HTTP {}", resp.status()));
            }
            resp.binary().await.map_err(|e| e.to_string())
        }
        .await;
        match result {
            Ok(bytes) => dispatch.dispatch(Action::Loaded {
                files: vec![(file_name.to_string(), bytes.into())],
                example: Some(file_name.to_string()),
            }),
            Err(e) => dispatch.dispatch(Action::ReadFailed(file_name.to_string(), e)),
        }
    });
}

#[component]
pub fn Ingest(props: &IngestProps) -> Html {
    let onchange = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = input
                .files()
                .map(|list| (0..list.length()).filter_map(|i| list.get(i)).collect())
                .unwrap_or_default();
            read_files(files, dispatch.clone());
            // Allow picking the same file again.
            input.set_value("");
        })
    };
    html! {
        <section class="ingest" aria-label="Load input files">
            <div class="dropzone">
                <p class="dropzone-title">{"Drop workload files or training logs anywhere on the page"}</p>
                <p class="dropzone-formats">
                    {"SimAI/AICB workloads · NeuSight TSV · Echo Megatron traces (one file per rank) · Optimus-Prime logs · PyTorch profiler (Kineto) traces, plain or .gz (one per rank) · Chakra .et files with their comm_groups.json · a HuggingFace config.json"}
                </p>
                <label class="button" for="file-input">{"Choose files…"}</label>
                <input id="file-input" class="visually-hidden" type="file" multiple=true
                       data-testid="file-input" aria-label="Choose input files" {onchange} />
                if props.loading > 0 {
                    <p class="loading" role="status">{ format!("Reading {}…", crate::format::counted(props.loading as u64, "file", "files")) }</p>
                }
            </div>
            { props.children.clone() }
            <div class="gallery" aria-label="Bundled examples">
                <h2>{"Examples"}</h2>
                <p class="note small">{"One click loads an example in place of the loaded files."}</p>
                <ul>
                    { for EXAMPLES.iter().map(|ex| {
                        let dispatch = props.dispatch.clone();
                        let name = ex.file_name;
                        let onclick = Callback::from(move |_| load_example(name, dispatch.clone()));
                        html! {
                            <li>
                                <button class="example" data-testid="example" {onclick}>
                                    <span class="example-name">{ ex.file_name }</span>
                                    <span class="example-desc">{ ex.description }</span>
                                </button>
                            </li>
                        }
                    }) }
                </ul>
            </div>
        </section>
    }
}
