//! Where an app's imports may resolve: its own folder, the library folders and the alias targets.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::BundleOptions;
use crate::diagnostics::{Diagnostic, DiagnosticKind};

/// Id of the virtual module rolldown starts from; it imports `inject` and re-exports the entry.
pub(crate) const ENTRY_ID: &str = "\0mobius:entry";

/// The canonical paths of one compile, checked once before rolldown starts.
#[derive(Debug)]
pub(crate) struct Policy {
    pub app_dir: PathBuf,
    /// The entry file as the agent named it, e.g. `index.jsx`.
    pub entry_name: String,
    pub entry: PathBuf,
    pub library_dirs: Vec<PathBuf>,
    pub aliases: HashMap<String, PathBuf>,
    pub inject: Option<PathBuf>,
}

/// Who is importing, which decides how strictly an import is checked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Importer {
    /// The virtual entry module.
    Entry,
    /// A file of the app itself: untrusted, every import is checked.
    App,
    /// A library, alias target or the inject module: trusted platform code.
    Platform,
}

impl Policy {
    /// Canonicalises every path in `opts`, failing with an `Io` diagnostic for anything missing.
    pub fn new(opts: &BundleOptions) -> Result<Self, Diagnostic> {
        let app_dir = canonical_dir(&opts.app_dir, "app folder")?;
        let entry_name = opts.entry.clone();
        if !is_plain_relative(&entry_name) {
            return Err(Diagnostic::new(
                DiagnosticKind::Io,
                format!("the entry `{entry_name}` must be a file name inside the app folder, like `index.jsx`"),
            ));
        }
        let entry = app_dir.join(&entry_name);
        if !entry.is_file() {
            return Err(Diagnostic::new(
                DiagnosticKind::Io,
                format!("`{entry_name}` is missing: every app needs an `{entry_name}` at the top of its folder that `export default`s a React component"),
            )
            .in_file(&entry_name));
        }
        let entry = std::fs::canonicalize(&entry).map_err(|e| io_error(&entry, &e))?;
        if !entry.starts_with(&app_dir) {
            return Err(Diagnostic::new(
                DiagnosticKind::ImportOutsideApp,
                format!("`{entry_name}` links to a file outside the app folder"),
            )
            .in_file(&entry_name));
        }
        let library_dirs = opts
            .node_modules
            .iter()
            .map(|dir| canonical_dir(dir, "library folder (node_modules)"))
            .collect::<Result<Vec<_>, _>>()?;
        let aliases = opts
            .aliases
            .iter()
            .map(|(spec, target)| Ok((spec.clone(), canonical_file(target, &format!("target of alias `{spec}`"))?)))
            .collect::<Result<HashMap<_, _>, Diagnostic>>()?;
        let inject = opts.inject.as_deref().map(|path| canonical_file(path, "inject module")).transpose()?;
        Ok(Self { app_dir, entry_name, entry, library_dirs, aliases, inject })
    }

    /// Classifies an importer id as rolldown passes it to `resolve_id`.
    pub fn importer(&self, id: &str) -> Importer {
        if id == ENTRY_ID {
            return Importer::Entry;
        }
        let path = Path::new(id);
        if self.in_libraries(path) || !path.starts_with(&self.app_dir) { Importer::Platform } else { Importer::App }
    }

    /// Whether an app file may pull in the module at `path` (a resolved, canonical path).
    pub fn admits(&self, path: &Path) -> bool {
        path.starts_with(&self.app_dir)
            || self.in_libraries(path)
            || self.aliases.values().any(|target| target == path)
            || self.inject.as_deref() == Some(path)
    }

    fn in_libraries(&self, path: &Path) -> bool {
        self.library_dirs.iter().any(|dir| path.starts_with(dir))
    }

    /// How a module path is shown to the agent: relative to the app folder, `node_modules/…`
    /// inside a library folder, otherwise as given.
    pub fn display_path(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(&self.app_dir) {
            return slash(rel);
        }
        for dir in &self.library_dirs {
            if let Ok(rel) = path.strip_prefix(dir) {
                return format!("node_modules/{}", slash(rel));
            }
        }
        path.to_string_lossy().into_owned()
    }

    /// The JavaScript of the virtual entry module.
    pub fn entry_code(&self) -> String {
        let mut code = String::new();
        if let Some(inject) = &self.inject {
            code.push_str(&format!("import {};\n", js_string(&inject.to_string_lossy())));
        }
        code.push_str(&format!("export {{ default }} from {};\n", js_string(&self.entry.to_string_lossy())));
        code
    }
}

/// Whether `name` is a relative path that stays inside its base folder (no `..`, not absolute).
fn is_plain_relative(name: &str) -> bool {
    let path = Path::new(name);
    path.components().any(|c| matches!(c, Component::Normal(_)))
        && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn canonical_dir(path: &Path, what: &str) -> Result<PathBuf, Diagnostic> {
    let canonical = std::fs::canonicalize(path).map_err(|e| io_error_for(path, what, &e))?;
    if !canonical.is_dir() {
        return Err(Diagnostic::new(DiagnosticKind::Io, format!("{what} {} is not a folder", path.display())));
    }
    Ok(canonical)
}

fn canonical_file(path: &Path, what: &str) -> Result<PathBuf, Diagnostic> {
    let canonical = std::fs::canonicalize(path).map_err(|e| io_error_for(path, what, &e))?;
    if !canonical.is_file() {
        return Err(Diagnostic::new(DiagnosticKind::Io, format!("{what} {} is not a file", path.display())));
    }
    Ok(canonical)
}

fn io_error_for(path: &Path, what: &str, err: &std::io::Error) -> Diagnostic {
    Diagnostic::new(DiagnosticKind::Io, format!("cannot open {what} {}: {err}", path.display()))
}

fn io_error(path: &Path, err: &std::io::Error) -> Diagnostic {
    Diagnostic::new(DiagnosticKind::Io, format!("cannot read {}: {err}", path.display()))
}

fn slash(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// A double-quoted JavaScript string literal for `text`.
pub(crate) fn js_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_string_escapes_quotes_backslashes_and_line_breaks() {
        assert_eq!(js_string("a\"b\\c\nd\u{2028}"), r#""a\"b\\c\nd\u2028""#);
    }

    #[test]
    fn entry_names_must_stay_inside_the_app_folder() {
        assert!(is_plain_relative("index.jsx"));
        assert!(is_plain_relative("src/index.jsx"));
        assert!(!is_plain_relative("../index.jsx"));
        assert!(!is_plain_relative("/etc/passwd"));
        assert!(is_plain_relative("./index.jsx"));
        assert!(!is_plain_relative(""));
    }
}
