//! The page, built from `ui/` (`npm run build` there writes `ui/dist/`,
//! which is committed) and embedded in the binary: no Node at run time.

/// `index.html`.
pub const INDEX_HTML: &str = include_str!("../../../ui/dist/index.html");
/// The bundled script.
pub const APP_JS: &str = include_str!("../../../ui/dist/app.js");
/// The style sheet.
pub const APP_CSS: &str = include_str!("../../../ui/dist/app.css");

/// The embedded file `name` and its content type.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "" | "index.html" => Some((INDEX_HTML, "text/html; charset=utf-8")),
        "app.js" => Some((APP_JS, "text/javascript; charset=utf-8")),
        "app.css" => Some((APP_CSS, "text/css; charset=utf-8")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    /// The page's about credits Home Assistant intents with the very words
    /// `--help` and the console use (ui/tests/e2e.mjs checks it is shown).
    #[test]
    fn the_page_credits_home_assistant_intents_as_the_cli_does() {
        let credit = format!("<p id=\"credits\">{}</p>", robobrain_core::intents::CREDITS);
        assert!(super::INDEX_HTML.contains(&credit), "{credit}");
    }
}
