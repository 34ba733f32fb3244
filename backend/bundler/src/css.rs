//! Turns an imported stylesheet into a JavaScript module that appends it as a `<style>` element.
//!
//! rolldown refuses to bundle CSS, and the output must be one file, so a stylesheet's relative
//! `url(…)` assets (images, fonts) are inlined as `data:` URLs. A font fallback (`.woff`, `.ttf`,
//! `.otf`) in a declaration that already lists a `.woff2` is left as is: every browser that runs
//! React 19 takes the `.woff2`, so inlining the fallbacks would only bloat the bundle.

use std::path::Path;

use base64::Engine as _;

use crate::policy::{Policy, js_string};

/// Largest asset inlined into CSS; bigger ones keep their (unreachable) relative URL.
pub(crate) const MAX_INLINED_ASSET_BYTES: u64 = 1024 * 1024;

/// The JavaScript module for the stylesheet at `path` with text `css`.
pub(crate) fn to_module(policy: &Policy, path: &Path, css: &str) -> String {
    let css = inline_assets(policy, path, css);
    format!(
        "const css = {};\n\
         if (typeof document !== \"undefined\") {{\n  \
           const style = document.createElement(\"style\");\n  \
           style.textContent = css;\n  \
           document.head.appendChild(style);\n\
         }}\n\
         export default css;\n",
        js_string(&css)
    )
}

/// Replaces relative `url(…)` references with `data:` URLs where the file may be inlined.
fn inline_assets(policy: &Policy, css_path: &Path, css: &str) -> String {
    let Some(base) = css_path.parent() else { return css.to_owned() };
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    let mut consumed = 0;
    while let Some(found) = find_url(rest) {
        let UrlRef { start, end, value } = found;
        out.push_str(&rest[..start]);
        let declaration = declaration_around(css, consumed + start);
        match data_url(policy, base, value, declaration) {
            Some(data) => out.push_str(&format!("url({})", js_string(&data))),
            None => out.push_str(&rest[start..end]),
        }
        rest = &rest[end..];
        consumed += end;
    }
    out.push_str(rest);
    out
}

struct UrlRef<'a> {
    /// Byte range of the whole `url(…)` in the searched text.
    start: usize,
    end: usize,
    /// The URL without quotes or surrounding whitespace.
    value: &'a str,
}

/// Finds the next `url(…)` in `text`.
fn find_url(text: &str) -> Option<UrlRef<'_>> {
    let mut from = 0;
    loop {
        let start = from + text[from..].find("url(")?;
        // `url(` must start a token, not end an identifier like `myurl(`.
        let starts_token =
            text[..start].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let open = start + 4;
        if !starts_token {
            from = open;
            continue;
        }
        let inner = &text[open..];
        let trimmed = inner.trim_start();
        let lead = inner.len() - trimmed.len();
        let (value, after) = match trimmed.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let close = trimmed[1..].find(q)? + 1;
                (&trimmed[1..close], open + lead + close + 1)
            }
            _ => {
                let close = trimmed.find(')')?;
                (trimmed[..close].trim_end(), open + lead + close)
            }
        };
        let paren = after + text[after..].find(')')?;
        return Some(UrlRef { start, end: paren + 1, value });
    }
}

/// The CSS declaration containing byte `at` (between the nearest `;`, `{` or `}`).
fn declaration_around(css: &str, at: usize) -> &str {
    let is_boundary = |c: char| matches!(c, ';' | '{' | '}');
    let begin = css[..at].rfind(is_boundary).map_or(0, |i| i + 1);
    let end = css[at..].find(is_boundary).map_or(css.len(), |i| at + i);
    &css[begin..end]
}

/// The `data:` URL for a relative asset reference, if it may and should be inlined.
fn data_url(policy: &Policy, base: &Path, value: &str, declaration: &str) -> Option<String> {
    if value.is_empty()
        || value.starts_with('#')
        || value.starts_with('/')
        || value.contains("://")
        || value.starts_with("data:")
        || value.starts_with("//")
    {
        return None;
    }
    let file = value.split(['?', '#']).next()?;
    let extension = Path::new(file).extension()?.to_str()?.to_ascii_lowercase();
    let mime = match extension.as_str() {
        "woff2" => "font/woff2",
        "woff" | "ttf" | "otf" if declaration.contains(".woff2") => return None,
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "avif" => "image/avif",
        _ => return None,
    };
    let path = std::fs::canonicalize(base.join(file)).ok()?;
    // An asset outside the allowed folders is never read: inlining it would leak server files.
    if !policy.admits(&path) || std::fs::metadata(&path).ok()?.len() > MAX_INLINED_ASSET_BYTES {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    Some(format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_quoted_and_bare_urls() {
        let text = "a{background:url( \"x.png\" )} b{src:url(y.woff2) format('woff2')}";
        let first = find_url(text).expect("first");
        assert_eq!(first.value, "x.png");
        assert_eq!(&text[first.start..first.end], "url( \"x.png\" )");
        let rest = &text[first.end..];
        let second = find_url(rest).expect("second");
        assert_eq!(second.value, "y.woff2");
        assert_eq!(&rest[second.start..second.end], "url(y.woff2)");
    }

    #[test]
    fn ignores_function_names_that_end_in_url() {
        assert!(find_url("a{x:myurl(a.png)}").is_none());
    }

    #[test]
    fn a_declaration_ends_at_semicolons_and_braces() {
        let css = "@font-face{font-family:K;src:url(a.woff2) format(\"woff2\"),url(a.woff) format(\"woff\")}";
        let at = css.find("url(a.woff)").expect("woff");
        assert!(declaration_around(css, at).starts_with("src:url(a.woff2)"));
    }
}
