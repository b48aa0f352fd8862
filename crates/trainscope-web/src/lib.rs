//! trainscope-web: the Yew front end. The only crate that knows the DOM. It
//! reads dropped or picked files with gloo, hands their bytes to
//! `trainscope-core`, and renders the results. State lives in one reducer
//! ([`state`]); components under [`components`] are thin views over it.

pub mod app;
pub mod components;
pub mod examples;
pub mod state;
pub mod timeline;
