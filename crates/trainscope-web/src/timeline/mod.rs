//! The interactive canvas timeline (issue 7): lanes grouped per stage or
//! rank, spans coloured by kind, a time ruler, zoom and pan (wheel, drag,
//! keys, buttons, overview strip), hover tooltips, selection with
//! dependencies and pipeline-transfer arrows, the critical path, and a
//! compare mode that stacks two runs on one time axis.
//!
//! Frames cost O(visible lanes x plot width): [`lod`] turns each visible
//! lane into at most one primitive per pixel column using the core's
//! per-lane time index ([`trainscope_core::timeline::Timeline::buckets`]),
//! so a million spans draw as fast as a thousand. [`viewport`] is the only
//! time <-> pixel mapping.
//!
//! Mount [`Timeline`] with an `Rc` of a core timeline; link `www/timeline.css`.

mod component;
pub mod draw;
pub mod format;
pub mod hit;
pub mod layout;
pub mod lod;
pub mod palette;
pub mod raster;
pub mod synth;
pub mod viewport;

pub use component::{Msg, Timeline, TimelineProps};
pub use draw::FrameStats;
