//! One compile: rolldown options, the run itself, and turning its results into a `Bundle`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rolldown::{
    AddonOutputOption, BundlerOptions, BundlerTransformOptions, CodeSplittingMode, Either, ExperimentalOptions,
    InputItem, JsxOptions, LegalComments, OutputFormat, Platform, RawMinifyOptions, ResolveOptions,
};
use rolldown_common::Output;
use rolldown_error::{BuildDiagnostic, DiagnosticOptions, EventKind, Severity};
use sha2::{Digest, Sha256};

use crate::diagnostics::{Diagnostic, DiagnosticKind, Diagnostics, utf16_to_char_column};
use crate::plugin::{AppPlugin, Findings};
use crate::policy::{ENTRY_ID, Importer, Policy};
use crate::{Bundle, BundleOptions};

/// Syntax the output may use; the app frame runs in current browsers.
const TARGET: &str = "es2022";

pub(crate) async fn compile(opts: &BundleOptions) -> Result<Bundle, Diagnostics> {
    let policy = Arc::new(Policy::new(opts)?);
    let findings: Findings = Arc::new(Mutex::new(Vec::new()));
    let plugin = AppPlugin::new(Arc::clone(&policy), Arc::clone(&findings));
    let plugins: Vec<Arc<dyn rolldown::plugin::Pluginable>> = vec![Arc::new(plugin)];

    let mut bundler = rolldown::Bundler::with_plugins(options(&policy, opts), plugins)
        .map_err(|errors| convert_all(&policy, errors.into_vec()))?;
    let result = bundler.generate().await;
    // Closing only runs plugin close hooks; its failure cannot change the result.
    let _ = bundler.close().await;

    let mut errors = take(&findings);
    let output = match result {
        Ok(output) => output,
        Err(batch) => {
            errors.extend(convert_all(&policy, batch.into_vec()).0);
            return Err(Diagnostics(dedup(errors)));
        }
    };

    let mut warnings = Vec::new();
    for warning in &output.warnings {
        if matches!(warning.kind(), EventKind::UnresolvedImport) {
            errors.push(convert(&policy, warning));
        } else if warning.id().is_some_and(|id| policy.importer(&id) == Importer::App) {
            warnings.push(convert(&policy, warning));
        }
    }
    if !errors.is_empty() {
        return Err(Diagnostics(dedup(errors)));
    }

    let chunk = match output.assets.as_slice() {
        [Output::Chunk(chunk)] => chunk,
        assets => {
            let names: Vec<&str> = assets.iter().map(Output::filename).collect();
            return Err(internal(format!("expected one JavaScript file, rolldown produced: {}", names.join(", "))));
        }
    };
    if chunk.exports.len() != 1 || chunk.exports[0].as_str() != "default" {
        let names: Vec<&str> = chunk.exports.iter().map(|e| e.as_str()).collect();
        return Err(internal(format!("the bundle must export only `default`, it exports: {}", names.join(", "))));
    }
    // With code splitting off, a dynamically imported module lands in this same chunk and
    // rolldown lists the chunk itself among its dynamic imports (the code has no `import()`).
    let own = chunk.filename.as_str();
    let dynamic = chunk.dynamic_imports.iter().filter(|spec| spec.as_str() != own);
    if let Some(bare) = chunk.imports.iter().chain(dynamic).find(|spec| !is_http_url(spec)) {
        return Err(Diagnostic::new(
            DiagnosticKind::UnresolvedImport,
            format!("the bundle still imports \"{bare}\"; only the platform's libraries and the app's own files can be imported"),
        )
        .into());
    }

    let code = chunk.code.clone();
    let sha256 = hex::encode(Sha256::digest(code.as_bytes()));
    Ok(Bundle { code, sha256, modules: chunk.module_ids.len(), warnings })
}

fn options(policy: &Policy, opts: &BundleOptions) -> BundlerOptions {
    let mut modules = vec!["node_modules".to_owned()];
    modules.extend(policy.library_dirs.iter().map(|dir| dir.to_string_lossy().into_owned()));
    BundlerOptions {
        input: Some(vec![InputItem { name: Some("app".into()), import: ENTRY_ID.into() }]),
        cwd: Some(policy.app_dir.clone()),
        format: Some(OutputFormat::Esm),
        platform: Some(Platform::Browser),
        code_splitting: Some(CodeSplittingMode::Bool(false)),
        minify: Some(RawMinifyOptions::Bool(true)),
        legal_comments: Some(LegalComments::Inline),
        define: Some([("process.env.NODE_ENV".to_owned(), "\"production\"".to_owned())].into_iter().collect()),
        transform: Some(BundlerTransformOptions {
            jsx: Some(Either::Right(JsxOptions { runtime: Some("automatic".into()), ..Default::default() })),
            target: Some(Either::Left(TARGET.into())),
            ..Default::default()
        }),
        resolve: Some(ResolveOptions { modules: Some(modules), ..Default::default() }),
        experimental: Some(ExperimentalOptions { lazy_barrel: Some(true), ..Default::default() }),
        post_banner: opts.banner.clone().map(|banner| AddonOutputOption::String(Some(banner))),
        ..Default::default()
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "the bundler crate has no lock helper of its own; a poisoned lock is recovered, not skipped"
)]
fn take(findings: &Findings) -> Vec<Diagnostic> {
    std::mem::take(&mut *findings.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

fn convert_all(policy: &Policy, errors: Vec<BuildDiagnostic>) -> Diagnostics {
    Diagnostics(errors.iter().filter(|e| e.severity() == Severity::Error).map(|e| convert(policy, e)).collect())
}

/// Converts one rolldown diagnostic, locating it in the file it points at.
fn convert(policy: &Policy, error: &BuildDiagnostic) -> Diagnostic {
    // Paths relative to `/` are absolute paths without the slash: no cwd guessing.
    let root = DiagnosticOptions { cwd: PathBuf::from("/") };
    let rendered = error.to_diagnostic_with(&root);
    let mut message = error.to_message_with(&root);
    if message.is_empty() {
        // Plugin errors only carry their text in the rendered form: `[KIND] text`.
        let text = rendered.convert_to_string(false);
        let first = text.lines().next().unwrap_or_default();
        message = first.split_once("] ").map_or(first, |(_, rest)| rest).to_owned();
    }

    let kind = match error.kind() {
        EventKind::ParseError | EventKind::JsonParseError => DiagnosticKind::Syntax,
        EventKind::UnresolvedImport | EventKind::ResolveError => DiagnosticKind::UnresolvedImport,
        EventKind::MissingExportError if error.id().as_deref() == Some(ENTRY_ID) => {
            return missing_default_export(policy);
        }
        _ => DiagnosticKind::Other,
    };

    let mut diagnostic = Diagnostic::new(kind, message);
    if let Some((file, line, utf16_column, _)) = rendered.get_primary_location() {
        let path = Path::new("/").join(&file);
        if !file.starts_with("\\0") {
            diagnostic = diagnostic.in_file(policy.display_path(&path));
        }
        let line = crate::diagnostics::to_u32(line);
        match std::fs::read_to_string(&path) {
            Ok(source) => {
                let column = utf16_to_char_column(&source, line, utf16_column);
                diagnostic = diagnostic.at(&source, line, column);
            }
            Err(_) => {
                diagnostic.line = Some(line);
                diagnostic.column = Some(crate::diagnostics::to_u32(utf16_column + 1));
            }
        }
    } else if let Some(id) = error.id().filter(|id| !id.starts_with('\0')) {
        diagnostic = diagnostic.in_file(policy.display_path(Path::new(&id)));
    }
    if kind == DiagnosticKind::UnresolvedImport && diagnostic.file.as_deref().is_some_and(|f| !is_app_file(policy, f)) {
        // App imports are checked by the plugin, so this is a library whose dependency is missing.
        let specifier = diagnostic.message.split('\'').nth(1).unwrap_or("a package").to_owned();
        diagnostic.message = format!(
            "this platform library imports \"{specifier}\", which is not installed: the pinned libraries are \
             installed incompletely (run `npm ci` in frontend/)"
        );
    }
    diagnostic
}

/// Whether a displayed path names a file of the app (not `node_modules/…` or an absolute path).
fn is_app_file(policy: &Policy, display: &str) -> bool {
    !display.starts_with("node_modules/") && !Path::new(display).is_absolute() && policy.app_dir.join(display).is_file()
}

/// The error for an entry without `export default`, pointing at its first named export if any.
fn missing_default_export(policy: &Policy) -> Diagnostic {
    let name = &policy.entry_name;
    let mut message =
        format!("{name} must `export default` a React component, e.g. `export default function App() {{ … }}`");
    let mut diagnostic = Diagnostic::new(DiagnosticKind::MissingDefaultExport, String::new()).in_file(name.clone());
    let source = std::fs::read_to_string(&policy.entry).unwrap_or_default();
    let named = source.lines().enumerate().find_map(|(i, text)| {
        let trimmed = text.trim_start();
        let rest = trimmed.strip_prefix("export ")?;
        let column = text.len() - trimmed.len() + 1;
        Some((i + 1, column, exported_name(rest)))
    });
    match named {
        Some((line, column, Some(export))) => {
            message.push_str(&format!("; it exports `{export}` by name only: add `export default {export};`"));
            diagnostic = diagnostic.at(&source, crate::diagnostics::to_u32(line), crate::diagnostics::to_u32(column));
        }
        Some((line, column, None)) => {
            diagnostic = diagnostic.at(&source, crate::diagnostics::to_u32(line), crate::diagnostics::to_u32(column));
        }
        None => diagnostic = diagnostic.at(&source, 1, 1),
    }
    diagnostic.message = message;
    diagnostic
}

/// The name declared by `function App`, `const App = …`, `class App` and the like.
fn exported_name(declaration: &str) -> Option<&str> {
    let mut words =
        declaration.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')).filter(|w| !w.is_empty());
    let mut word = words.next()?;
    if word == "async" {
        word = words.next()?;
    }
    match word {
        "function" | "class" | "const" | "let" | "var" => words.next(),
        _ => None,
    }
}

fn internal(message: String) -> Diagnostics {
    Diagnostic::new(DiagnosticKind::Other, message).into()
}

/// Orders errors by place (rolldown resolves in parallel) and removes repeats (the same
/// problem reached through two import paths).
fn dedup(mut errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    errors.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    let mut seen = Vec::new();
    errors.retain(|e| {
        let key = (e.file.clone(), e.line, e.column, e.message.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    errors
}

fn is_http_url(specifier: &str) -> bool {
    specifier.starts_with("https://") || specifier.starts_with("http://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_names_are_read_from_declarations() {
        assert_eq!(exported_name("function App() {"), Some("App"));
        assert_eq!(exported_name("async function load() {"), Some("load"));
        assert_eq!(exported_name("const Counter = () => null;"), Some("Counter"));
        assert_eq!(exported_name("{ App };"), None);
    }
}
