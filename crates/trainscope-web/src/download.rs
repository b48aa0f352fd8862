//! Downloads without a server: text through a Blob and an object URL, a
//! canvas as PNG through `toDataURL`, each by clicking a temporary
//! `<a download>` link.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, HtmlCanvasElement, Url};

fn js_err(e: JsValue) -> String {
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

fn click_link(href: &str, file_name: &str) -> Result<(), String> {
    let document = gloo::utils::document();
    let a: HtmlAnchorElement = document
        .create_element("a")
        .map_err(js_err)?
        .dyn_into()
        .map_err(|_| "not an anchor".to_string())?;
    a.set_href(href);
    a.set_download(file_name);
    a.set_attribute("hidden", "").map_err(js_err)?;
    let body = gloo::utils::body();
    body.append_child(&a).map_err(js_err)?;
    a.click();
    a.remove();
    Ok(())
}

/// Offer `content` as a file named `file_name` of type `mime`.
pub fn download_text(file_name: &str, mime: &str, content: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(content));
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let blob = Blob::new_with_str_sequence_and_options(&parts, &options).map_err(js_err)?;
    let url = Url::create_object_url_with_blob(&blob).map_err(js_err)?;
    let result = click_link(&url, file_name);
    // Revoke once the browser has started the download.
    gloo::timers::callback::Timeout::new(10_000, move || {
        let _ = Url::revoke_object_url(&url);
    })
    .forget();
    result
}

/// Offer a canvas's pixels as a PNG file.
pub fn download_canvas_png(canvas: &HtmlCanvasElement, file_name: &str) -> Result<(), String> {
    let url = canvas.to_data_url_with_type("image/png").map_err(js_err)?;
    click_link(&url, file_name)
}
