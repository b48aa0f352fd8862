//! The "Describe a job" panel (`data-testid="job-panel"`), beside the file
//! drop: a model (a preset, or a dropped `config.json` once the worker has
//! recognised it), the GPU type, TP / PP / DP / EP, virtual stages, batch,
//! sequence length, precision, recompute, sequence parallelism, the
//! distributed optimizer and fused attention; one control per
//! [`JobField`] (`data-testid` = [`JobField::testid`], e.g. `job-model`,
//! `job-tp`). Below: the world and NVLink bandwidth the job runs with, the
//! core's refusal of the combination (`job-error`: the CLI's message and
//! hint), the equivalent CLI command and the Run button (`job-run`).
//! Every edit goes to the reducer as text and makes the job the page's
//! input; the page re-runs after a short pause, like a settings edit. The
//! cluster (GPUs per node, NICs, bandwidths, latency, placement), the
//! schedule and the collective algorithm are the Configure panel's.

use crate::job::{JobField, JobModel, FILE_PREFIX};
use crate::model_job::nvlink_pinned;
use crate::settings::Field;
use crate::state::{Action, AppState};
use trainscope_core::hardware::{gpu_preset, Precision, GPU_NAMES};
use trainscope_core::job::sharding::ZeroStage;
use trainscope_core::job::Recompute;
use trainscope_core::model::attention_kernel::AttentionKernel;
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::presets;
use trainscope_core::model::stack::{CudaGraphs, Stack};
use trainscope_core::named::Named;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct JobPanelProps {
    pub state: UseReducerHandle<AppState>,
}

/// A named setting's choices as options, each labelled by its name.
fn named<T: Named>() -> Vec<(String, String)> {
    T::CHOICES
        .iter()
        .map(|c| (c.name().to_string(), c.name().to_string()))
        .collect()
}

/// The `<select>` options of a choice field: (value, label).
fn options(state: &AppState, field: JobField) -> Vec<(String, String)> {
    let names = |all: &[&str]| all.iter().map(|n| (n.to_string(), n.to_string())).collect();
    match field {
        JobField::Model => {
            let mut out: Vec<(String, String)> = names(presets::NAMES);
            let files = state.model_files();
            for f in &files {
                out.push((format!("{FILE_PREFIX}{f}"), format!("{f} (dropped config)")));
            }
            if let JobModel::File(f) = &state.job.model {
                if !files.contains(f) {
                    out.push((format!("{FILE_PREFIX}{f}"), format!("{f} (drop it to run)")));
                }
            }
            out
        }
        JobField::Gpu => names(&GPU_NAMES),
        JobField::Precision => Precision::ALL
            .iter()
            .map(|p| (p.name().to_string(), p.name().to_string()))
            .collect(),
        JobField::Recompute => Recompute::ALL
            .iter()
            .map(|r| (r.name().to_string(), r.name().to_string()))
            .collect(),
        JobField::Stack => named::<Stack>(),
        JobField::CudaGraphs => named::<CudaGraphs>(),
        JobField::AttentionKernel => named::<AttentionKernel>(),
        JobField::MoeDispatcher => named::<Dispatcher>(),
        JobField::MoeFusion => vec![
            (String::new(), "as the stack runs it".to_string()),
            ("on".to_string(), "on".to_string()),
            ("off".to_string(), "off".to_string()),
        ],
        JobField::Sharding => ZeroStage::ALL
            .iter()
            .map(|z| {
                let label = match z {
                    ZeroStage::None => "none".to_string(),
                    ZeroStage::Optimizer => "ZeRO-1 (distributed optimizer)".to_string(),
                    ZeroStage::Gradients => "ZeRO-2 (+ gradients)".to_string(),
                    ZeroStage::Parameters => "ZeRO-3 / FSDP (+ weights)".to_string(),
                };
                (z.level().to_string(), label)
            })
            .collect(),
        JobField::Offload => trainscope_core::job::sharding::Offload::ALL
            .iter()
            .map(|o| (o.name().to_string(), o.name().to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

fn control(state: &UseReducerHandle<AppState>, field: JobField) -> Html {
    let id = format!("j-{}", field.key());
    let err_id = format!("{id}-err");
    let text = state.job_text(field);
    let error = state.job_parse_errors.get(&field).cloned();
    let invalid = error.is_some();
    let dispatch = state.dispatcher();
    let testid = field.testid();
    let title = format!("CLI: {}", field.flag());
    let input = match field {
        JobField::Model
        | JobField::Gpu
        | JobField::Precision
        | JobField::Recompute
        | JobField::Stack
        | JobField::CudaGraphs
        | JobField::AttentionKernel
        | JobField::MoeDispatcher
        | JobField::MoeFusion
        | JobField::Sharding
        | JobField::Offload => {
            let onchange = Callback::from(move |e: Event| {
                let select: HtmlSelectElement = e.target_unchecked_into();
                dispatch.dispatch(Action::JobEdit(field, select.value()));
            });
            html! {
                <select id={id.clone()} name={field.key()} data-testid={testid} {title}
                        aria-invalid={invalid.then_some("true")}
                        aria-describedby={invalid.then(|| err_id.clone())} {onchange}>
                    { for options(state, field).into_iter().map(|(value, label)| {
                        let selected = value == text;
                        html! { <option {value} {selected}>{ label }</option> }
                    }) }
                </select>
            }
        }
        f if f.is_check() => {
            let onchange = Callback::from(move |e: Event| {
                let input: HtmlInputElement = e.target_unchecked_into();
                let v = if input.checked() { "1" } else { "0" };
                dispatch.dispatch(Action::JobEdit(field, v.into()));
            });
            html! {
                <input id={id.clone()} name={field.key()} type="checkbox" checked={text == "1"}
                       data-testid={testid} {title} {onchange} />
            }
        }
        _ => {
            let oninput = Callback::from(move |e: InputEvent| {
                let input: HtmlInputElement = e.target_unchecked_into();
                dispatch.dispatch(Action::JobEdit(field, input.value()));
            });
            let placeholder = match field {
                JobField::GlobalBatchSize => Some("auto"),
                JobField::HostLaunchUs => Some("stack's"),
                JobField::LaunchQueueDepth => Some("1024"),
                JobField::MoeImbalance => Some("1 (balanced)"),
                JobField::FirstStageLayers | JobField::LastStageLayers => Some("even"),
                _ => None,
            };
            html! {
                <input id={id.clone()} name={field.key()} type="number"
                       step={if matches!(field, JobField::HostLaunchUs | JobField::MoeImbalance) { "any" } else { "1" }}
                       min={if matches!(field, JobField::HostLaunchUs | JobField::LaunchQueueDepth) { "0" } else { "1" }}
                       inputmode="numeric" value={text} {placeholder} {title}
                       aria-invalid={invalid.then_some("true")}
                       aria-describedby={invalid.then(|| err_id.clone())}
                       data-testid={testid} {oninput} />
            }
        }
    };
    let wide = matches!(
        field,
        JobField::Model
            | JobField::Gpu
            | JobField::Precision
            | JobField::Recompute
            | JobField::Stack
            | JobField::CudaGraphs
            | JobField::MoeDispatcher
            | JobField::MoeFusion
            | JobField::Sharding
    );
    html! {
        <div class={classes!("job-field", wide.then_some("wide"), field.is_check().then_some("check"),
                             invalid.then_some("invalid"))}
             data-field={field.key()}>
            <label for={id}>{ field.label() }</label>
            { input }
            if let Some(message) = error {
                <p class="field-error" id={err_id} data-testid="job-field-error"
                   data-field={field.key()} role="alert">{ message }</p>
            }
        </div>
    }
}

/// The NVLink bandwidth the job runs with and where it comes from.
fn nvlink_note(state: &AppState) -> String {
    let s = &state.settings;
    if nvlink_pinned(&state.pinned_fields) {
        format!("NVLink {} GB/s (set in Configure)", s.get(Field::NvlinkBw))
    } else {
        match gpu_preset(&state.job.gpu) {
            Some(g) => format!("NVLink {} GB/s ({}'s)", g.nvlink_busbw_gbps, g.name),
            None => String::new(),
        }
    }
}

#[component]
pub fn JobPanel(props: &JobPanelProps) -> Html {
    let state = &props.state;
    let job = &state.job;
    let on_run = {
        let dispatch = state.dispatcher();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            dispatch.dispatch(Action::RunJob);
        })
    };
    let world = job.world();
    let per_node = u64::from(state.settings.gpus_per_node.max(1));
    let nodes = world.div_ceil(per_node);
    let error = if state.job_active {
        state.job_error().cloned()
    } else {
        None
    };
    let stale = state.results_stale();
    let fields =
        |list: &[JobField]| -> Html { list.iter().map(|f| control(state, *f)).collect::<Html>() };
    html! {
        <section class={classes!("job-panel", state.job_active.then_some("active"))}
                 data-testid="job-panel" data-active={state.job_active.to_string()}
                 aria-label="Describe a job">
            <h2>{"Describe a job"}</h2>
            <p class="note small">
                {"A model and a training setup: the simulator builds the workload itself (compute per op, every collective, memory per stage)."}
            </p>
            <form class="job-form" onsubmit={on_run} novalidate=true>
                <div class="job-grid">
                    { fields(&[JobField::Model, JobField::Gpu]) }
                    { fields(&[JobField::Tp, JobField::Cp, JobField::Pp, JobField::Dp, JobField::Ep, JobField::ExpertTp]) }
                    { fields(&[JobField::Vpp, JobField::MicroBatchSize, JobField::GlobalBatchSize, JobField::SeqLength]) }
                    { fields(&[JobField::Precision, JobField::Recompute]) }
                    { fields(&[JobField::FirstStageLayers, JobField::LastStageLayers]) }
                </div>
                <div class="job-checks">
                    { fields(&[JobField::SequenceParallel, JobField::DistributedOptimizer, JobField::FlashAttention]) }
                    { fields(&[JobField::AccountForEmbedding, JobField::AccountForLoss, JobField::Bf16Grads, JobField::Fp8ParamGather]) }
                    { fields(&[JobField::Stack, JobField::CudaGraphs, JobField::HostLaunchUs, JobField::LaunchQueueDepth, JobField::TpCommOverlap, JobField::AttentionKernel]) }
                    { fields(&[JobField::MoeDispatcher, JobField::MoeFusion, JobField::MoeA2aOverlap, JobField::MoeImbalance]) }
                    { fields(&[JobField::Sharding, JobField::FsdpPrefetch, JobField::ReshardAfterForward, JobField::HsdpShard, JobField::Offload]) }
                </div>
                <p class="derived" data-testid="job-world">
                    { if job.training.cp > 1 {
                        format!(
                            "World = TP × CP × PP × DP = {} × {} × {} × {} = {world} GPUs ({nodes} node{} of {per_node}) · {}",
                            job.training.tp, job.training.cp, job.training.pp, job.dp(), if nodes == 1 { "" } else { "s" }, nvlink_note(state)
                        )
                    } else {
                        format!(
                            "World = TP × PP × DP = {} × {} × {} = {world} GPUs ({nodes} node{} of {per_node}) · {}",
                            job.training.tp, job.training.pp, job.dp(), if nodes == 1 { "" } else { "s" }, nvlink_note(state)
                        )
                    } }
                </p>
                if let Some(d) = error {
                    <div class={classes!("diag", "error", "job-error", stale.then_some("stale"))}
                         data-testid="job-error" role="alert">
                        <span class="diag-msg">{ &d.message }</span>
                        if let Some(hint) = &d.hint {
                            <span class="diag-hint">{ format!("hint: {hint}") }</span>
                        }
                    </div>
                }
                if let JobModel::File(name) = &job.model {
                    <p class="note small" data-testid="job-file-note">
                        { format!("A link names {name} but cannot carry it: whoever opens the link drops that config.json again.") }
                    </p>
                }
                if let Some(start) = state.output.as_ref().and_then(|o| o.job.as_ref()).and_then(|j| j.start.as_ref()) {
                    <p class="derived" data-testid="job-start-note">{ &start.note }</p>
                }
                <p class="job-cli note small">{"CLI: "}<code data-testid="job-cli">{ job.cli_command() }</code></p>
                <div class="actions">
                    <button type="submit" data-testid="job-run" disabled={!state.can_run_job()}>
                        {"Simulate this job"}
                    </button>
                    <span class="invalid-note" role="status">
                        { if state.job_active {
                            "The results show this job; the Configure panel sets the cluster, schedule and algorithm."
                        } else if state.files.is_empty() {
                            "Simulate this job, or load files, to see results."
                        } else {
                            "The results show the loaded files."
                        } }
                    </span>
                </div>
            </form>
        </section>
    }
}
