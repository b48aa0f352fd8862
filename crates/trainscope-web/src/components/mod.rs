//! View components. Each takes plain props (and the reducer's dispatcher
//! where it changes state); none holds state of its own beyond UI toggles.

pub mod file_card;
pub mod ingest;
