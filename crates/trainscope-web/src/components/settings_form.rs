//! The Configure panel: one labelled control per setting of the current mode
//! (mode select `data-testid="mode"`, presets, numbers, schedule, overlap
//! ratios), grouped in fieldsets; a message next to each invalid field
//! (`data-testid="field-error"`, `data-field=<key>`, linked by
//! `aria-describedby`); a "from file" note on values the loaded files set;
//! and the Simulate button (`data-testid="simulate"`). Every edit goes to
//! the reducer as text; the page re-runs after a short pause.

use crate::settings::{
    algorithm_name, gpu_name, mode_name, nic_name, schedule_name, Algorithm, Field, GpuPreset,
    Mode, NicPreset, Schedule,
};
use crate::state::{Action, AppState};
use trainscope_core::engine::config::PlacementOrder;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct SettingsFormProps {
    pub state: UseReducerHandle<AppState>,
    pub on_simulate: Callback<()>,
}

/// How a field is edited.
enum Control {
    Number {
        step: &'static str,
        min: &'static str,
    },
    Select(Vec<(&'static str, &'static str)>),
    Check,
    Text(&'static str),
}

fn control(field: Field) -> Control {
    fn opts<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<(&'static str, &'static str)> {
        all.iter().map(|v| (name(*v), name(*v))).collect()
    }
    match field {
        Field::Mode => Control::Select(vec![
            (mode_name(Mode::Event), "Event-level"),
            (mode_name(Mode::Simai), "SimAI-compatible"),
        ]),
        Field::Gpu => {
            let mut o = opts(&GpuPreset::ALL, gpu_name);
            o[0].1 = "custom bandwidth";
            Control::Select(o)
        }
        Field::Nic => {
            let mut o = opts(&NicPreset::ALL, nic_name);
            o[0].1 = "custom bandwidth";
            Control::Select(o)
        }
        Field::Schedule => Control::Select(vec![
            (
                schedule_name(Schedule::Gpipe),
                "GPipe (all forward, then all backward)",
            ),
            (schedule_name(Schedule::OneFOneB), "1F1B"),
            (schedule_name(Schedule::Interleaved), "Interleaved 1F1B"),
            (
                schedule_name(Schedule::ZbH1),
                "ZB-H1 (zero bubble, 1F1B memory)",
            ),
            (
                schedule_name(Schedule::ZbH2),
                "ZB-H2 (zero bubble, 2p-1 in flight)",
            ),
            (
                schedule_name(Schedule::Zbv),
                "ZB-V (two chunks per rank, V shape)",
            ),
            (
                schedule_name(Schedule::Dualpipev),
                "DualPipeV (V shape, forward & backward overlapped)",
            ),
        ]),
        Field::Algorithm => Control::Select(opts(&Algorithm::ALL, algorithm_name)),
        Field::Placement => Control::Select(PlacementOrder::NAMES.map(|n| (n, n)).to_vec()),
        Field::Oversubscription => Control::Number {
            step: "any",
            min: "1",
        },
        Field::GradSyncOverlap | Field::Blame => Control::Check,
        Field::Slow => Control::Text("e.g. 5:1.5 node1:1.1@iter1+1"),
        Field::SlowLink => Control::Text("e.g. 0-8:2 node1:2"),
        Field::Jitter => Control::Number {
            step: "any",
            min: "0",
        },
        Field::Seed => Control::Number {
            step: "1",
            min: "0",
        },
        Field::NvlinkBw | Field::NicBw | Field::BackwardFactor => Control::Number {
            step: "any",
            min: "0",
        },
        Field::Latency => Control::Number {
            step: "any",
            min: "0",
        },
        Field::DpOverlap | Field::TpOverlap | Field::EpOverlap | Field::PpOverlap => {
            Control::Number {
                step: "0.05",
                min: "0",
            }
        }
        _ => Control::Number {
            step: "1",
            min: "1",
        },
    }
}

/// The groups of the form, in order.
const GROUPS: [(&str, &[Field]); 5] = [
    (
        "Cluster",
        &[
            Field::Gpu,
            Field::NvlinkBw,
            Field::GpusPerNode,
            Field::NicsPerNode,
            Field::Nic,
            Field::NicBw,
            Field::Latency,
            Field::Placement,
            Field::Oversubscription,
        ],
    ),
    (
        "Parallelism",
        &[Field::World, Field::Tp, Field::Pp, Field::Ep],
    ),
    (
        "Batch and schedule",
        &[
            Field::MicroBatches,
            Field::Schedule,
            Field::VirtualStages,
            Field::Algorithm,
            Field::BackwardFactor,
            Field::Blocks,
        ],
    ),
    (
        "Overlap",
        &[
            Field::DpOverlap,
            Field::TpOverlap,
            Field::EpOverlap,
            Field::PpOverlap,
            Field::GradSyncOverlap,
        ],
    ),
    (
        "What-if",
        &[
            Field::Slow,
            Field::SlowLink,
            Field::Jitter,
            Field::Seed,
            Field::Blame,
        ],
    ),
];

/// A value Configure shows, not sets, while a described job is active, and
/// where it comes from: the job's layout ([`crate::state::JOB_DEFINED_FIELDS`]),
/// its GPU (the job's one GPU choice) and the interleaved schedule its
/// virtual stages select ([`crate::job::JobSettings::sim_settings`]).
fn job_value(state: &AppState, field: Field) -> Option<(String, String)> {
    if !state.job_active {
        return None;
    }
    let j = &state.job;
    let vpp = j.training.vpp;
    let from_job = || "from the job".to_string();
    Some(match field {
        Field::Gpu => (j.gpu.clone(), "the job's GPU".into()),
        Field::Schedule if vpp > 1 => (
            schedule_label(Schedule::Interleaved).into(),
            format!("from the job's {vpp} virtual stages"),
        ),
        f if !crate::state::JOB_DEFINED_FIELDS.contains(&f) => return None,
        Field::World => (j.world().to_string(), from_job()),
        Field::Tp => (j.training.tp.to_string(), from_job()),
        Field::Pp => (j.training.pp.to_string(), from_job()),
        Field::Ep => (j.training.ep.to_string(), from_job()),
        Field::VirtualStages => (vpp.to_string(), from_job()),
        _ => match j.training.global_batch_size {
            Some(g) => (
                (g / (j.training.micro_batch_size * j.dp()).max(1)).to_string(),
                from_job(),
            ),
            None => ("per the job's batch".into(), from_job()),
        },
    })
}

/// The schedule select's label of `schedule`.
fn schedule_label(schedule: Schedule) -> &'static str {
    match control(Field::Schedule) {
        Control::Select(options) => options
            .into_iter()
            .find(|(v, _)| *v == schedule_name(schedule))
            .map_or("", |(_, l)| l),
        _ => "",
    }
}

fn field_row(state: &UseReducerHandle<AppState>, field: Field, error: Option<String>) -> Html {
    let id = format!("s-{}", field.key());
    if let Some((value, from)) = job_value(state, field) {
        // Shown, not set: the job defines it (no tab stop, no error).
        return html! {
            <div class="setting from-job" data-field={field.key()}>
                <label for={id.clone()}>{ field.label() }</label>
                <input id={id} name={field.key()} type="text" readonly=true tabindex="-1" value={value}
                       aria-readonly="true" data-testid={format!("setting-{}", field.key())}
                       title="Defined by the described job: change it in the Describe a job panel" />
                <span class="from-file" data-testid="from-job">{ from }</span>
            </div>
        };
    }
    let err_id = format!("{id}-err");
    // The job's GPU sets the NVLink bandwidth until the user types one.
    let from_job_gpu = field == Field::NvlinkBw
        && state.job_active
        && !crate::job::nvlink_pinned(&state.pinned_fields);
    let text = if from_job_gpu {
        state.simulated_settings().get(field)
    } else {
        state.field_text(field)
    };
    let dispatch = state.dispatcher();
    let from_file = !state.pinned_fields.contains(&field)
        && state
            .output
            .as_ref()
            .and_then(|o| o.hints.get(field))
            .is_some_and(|v| v == state.settings.get(field));
    let source = state.output.as_ref().and_then(|o| {
        o.hints
            .sources
            .iter()
            .find(|s| s.contains(&format!("{} = ", short_name(field))))
            .cloned()
    });
    let invalid = error.is_some();
    let described = invalid.then(|| err_id.clone());
    let input = match control(field) {
        Control::Number { step, min } => {
            let oninput = Callback::from(move |e: InputEvent| {
                let input: HtmlInputElement = e.target_unchecked_into();
                dispatch.dispatch(Action::Edit(field, input.value()));
            });
            // TP, PP and EP describe the job: the input's per-rank ops are
            // sized for them, so they are shown, not set.
            let stated = matches!(field, Field::Tp | Field::Pp | Field::Ep);
            let title = stated.then_some(
                "Stated by the input: its per-rank operations are sized for this layout",
            );
            html! {
                <input id={id.clone()} name={field.key()} type="number" {step} {min}
                       inputmode="decimal" value={text} readonly={stated} {title}
                       tabindex={stated.then_some("-1")}
                       aria-invalid={invalid.then_some("true")}
                       aria-describedby={described}
                       data-testid={format!("setting-{}", field.key())} {oninput} />
            }
        }
        Control::Select(options) => {
            let onchange = Callback::from(move |e: Event| {
                let select: HtmlSelectElement = e.target_unchecked_into();
                dispatch.dispatch(Action::Edit(field, select.value()));
            });
            let testid = if field == Field::Mode {
                "mode".to_string()
            } else {
                format!("setting-{}", field.key())
            };
            html! {
                // `~value`: the property, so a value set from outside (a
                // schedule row clicked, a link) shows even after the user
                // has picked an option (then the options' `selected`
                // attributes no longer move the selection).
                <select id={id.clone()} name={field.key()} data-testid={testid}
                        ~value={text.clone()}
                        aria-invalid={invalid.then_some("true")}
                        aria-describedby={described} {onchange}>
                    { for options.iter().map(|(value, label)| html! {
                        <option value={*value} selected={*value == text}>{ *label }</option>
                    }) }
                </select>
            }
        }
        Control::Text(placeholder) => {
            let oninput = Callback::from(move |e: InputEvent| {
                let input: HtmlInputElement = e.target_unchecked_into();
                dispatch.dispatch(Action::Edit(field, input.value()));
            });
            html! {
                <input id={id.clone()} name={field.key()} type="text" value={text} {placeholder}
                       spellcheck="false" autocomplete="off"
                       aria-invalid={invalid.then_some("true")}
                       aria-describedby={described}
                       data-testid={format!("setting-{}", field.key())} {oninput} />
            }
        }
        Control::Check => {
            let onchange = Callback::from(move |e: Event| {
                let input: HtmlInputElement = e.target_unchecked_into();
                let v = if input.checked() { "1" } else { "0" };
                dispatch.dispatch(Action::Edit(field, v.into()));
            });
            html! {
                <input id={id.clone()} name={field.key()} type="checkbox" checked={text == "1"}
                       data-testid={format!("setting-{}", field.key())} {onchange} />
            }
        }
    };
    let check = matches!(control(field), Control::Check);
    html! {
        <div class={classes!("setting", check.then_some("check"), invalid.then_some("invalid"))}
             data-field={field.key()}>
            <label for={id.clone()}>{ field.label() }</label>
            { input }
            if from_job_gpu {
                <span class="from-file" data-testid="from-job-gpu">{ format!("the job's {}", state.job.gpu) }</span>
            } else if from_file {
                <span class="from-file" title={source.unwrap_or_default()}>{"from file"}</span>
            }
            if let Some(message) = error {
                <p class="field-error" id={err_id} data-testid="field-error"
                   data-field={field.key()} role="alert">{ message }</p>
            }
        </div>
    }
}

/// The short name a hint source uses for a field (`TP = 8 from …`).
fn short_name(field: Field) -> &'static str {
    match field {
        Field::World => "world",
        Field::Tp => "TP",
        Field::Pp => "PP",
        Field::Ep => "EP",
        Field::MicroBatches => "micro-batches",
        Field::VirtualStages => "virtual stages",
        _ => field.key(),
    }
}

#[component]
pub fn SettingsForm(props: &SettingsFormProps) -> Html {
    let state = &props.state;
    let errors = state.field_errors();
    let mode = state.settings.mode;
    let error_for = |f: Field| {
        errors
            .iter()
            .find(|e| e.field == f)
            .map(|e| e.message.clone())
    };
    let onsubmit = {
        let on_simulate = props.on_simulate.clone();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            on_simulate.emit(());
        })
    };
    let dp = if state.job_active {
        state.job.dp().to_string()
    } else {
        state.settings.dp().to_string()
    };
    html! {
        <form class="settings" aria-label="Simulation settings" {onsubmit} novalidate=true>
            <h2>{"Configure"}</h2>
            if state.job_active {
                <p class="derived" data-testid="job-settings-note">
                    {"Simulating the described job: its GPU, parallelism, batch and virtual stages come from the Describe a job panel; the rest of the cluster, the schedule and the collective algorithm from here."}
                </p>
            }
            { field_row(state, Field::Mode, error_for(Field::Mode)) }
            { for GROUPS.iter().map(|(title, fields)| {
                let shown: Vec<Field> = fields.iter().copied().filter(|f| f.used_in(mode)).collect();
                if shown.is_empty() {
                    return html! {};
                }
                html! {
                    <fieldset>
                        <legend>{ *title }</legend>
                        { for shown.iter().map(|f| field_row(state, *f, error_for(*f))) }
                        if *title == "Parallelism" && errors.iter().all(|e| e.field != Field::World) {
                            <p class="derived" data-testid="dp">{ format!("DP = world / (TP × PP) = {dp}") }</p>
                        }
                        if *title == "Batch and schedule" && mode == Mode::Event && !state.job_active
                            && state.settings.schedule != Schedule::Interleaved {
                            <p class="derived" data-testid="vpp-note">
                                {"Virtual stages apply to the interleaved schedule only (a SimAI header's vpp is kept for SimAI's bubble formula)."}
                            </p>
                        }
                    </fieldset>
                }
            }) }
            <div class="actions">
                <button type="submit" data-testid="simulate" disabled={!state.can_run()}>
                    { if mode == Mode::Simai { "Simulate (SimAI)" } else { "Simulate" } }
                </button>
                if !errors.is_empty() {
                    <span class="invalid-note" role="status">
                        { format!("{} to fix", crate::format::counted(errors.len() as u64, "setting", "settings")) }
                    </span>
                } else if !state.has_input() {
                    <span class="invalid-note">{"Load a file or describe a job to simulate"}</span>
                }
            </div>
        </form>
    }
}
