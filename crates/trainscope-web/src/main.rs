//! Entry point of the web app: mounts [`trainscope_web::app::App`] into the
//! page's `<main id="app">` element (Trunk builds this binary to wasm).

fn main() {
    let root = gloo::utils::document()
        .get_element_by_id("app")
        .expect("index.html has <main id=\"app\">");
    yew::Renderer::<trainscope_web::app::App>::with_root(root).render();
}
