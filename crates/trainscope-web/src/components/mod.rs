//! View components. Each takes plain props (display data from
//! [`crate::views`], the reducer's handle or dispatcher where it changes
//! state); none holds state of its own beyond UI toggles (table sort).

pub mod activation_chart;
pub mod charts;
pub mod compare;
pub mod file_card;
pub mod ingest;
pub mod job_panel;
pub mod kineto_analysis;
pub mod model_result;
pub mod plan_view;
pub mod results;
pub mod run_bar;
pub mod schedule_compare;
pub mod settings_form;
pub mod sweep_view;
pub mod table;
pub mod timeline_panel;
pub mod whatif_view;
