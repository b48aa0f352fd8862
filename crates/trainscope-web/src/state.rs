//! The app's state and its reducer. Pure Rust (no DOM), so it is tested in
//! the browser test suite without mounting anything. Loaded files keep their
//! bytes so later simulations need no re-read.

use std::rc::Rc;
use trainscope_core::inspect::{inspect, FileSummary};
use yew::Reducible;

/// One file the user dropped, picked or loaded from the gallery.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedFile {
    pub name: String,
    pub bytes: Rc<Vec<u8>>,
    pub summary: FileSummary,
}

/// Everything the page shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppState {
    pub files: Vec<LoadedFile>,
    /// Problems outside any file (a file that could not be read, a failed
    /// example download).
    pub notices: Vec<String>,
    /// True while files are being read.
    pub loading: usize,
}

/// What can happen to the state.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Files are being read; show progress.
    Reading(usize),
    /// Files read: inspect each; a file with the same name replaces the old one.
    Loaded(Vec<(String, Vec<u8>)>),
    /// Reading failed (name, reason).
    ReadFailed(String, String),
    Remove(String),
    Clear,
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        match action {
            Action::Reading(n) => next.loading += n,
            Action::Loaded(files) => {
                next.loading = next.loading.saturating_sub(files.len());
                for (name, bytes) in files {
                    let summary = inspect(&name, &bytes, None);
                    let file = LoadedFile {
                        name,
                        bytes: Rc::new(bytes),
                        summary,
                    };
                    match next.files.iter_mut().find(|f| f.name == file.name) {
                        Some(slot) => *slot = file,
                        None => next.files.push(file),
                    }
                }
            }
            Action::ReadFailed(name, reason) => {
                next.loading = next.loading.saturating_sub(1);
                next.notices
                    .push(format!("could not read {name}: {reason}"));
            }
            Action::Remove(name) => next.files.retain(|f| f.name != name),
            Action::Clear => next = AppState::default(),
        }
        Rc::new(next)
    }
}
