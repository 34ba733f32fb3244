//! The rolldown plugin: the virtual entry, the import rules for app files, and CSS as JavaScript.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rolldown::ModuleType;
use rolldown::plugin::{
    HookLoadArgs, HookLoadOutput, HookLoadReturn, HookResolveIdArgs, HookResolveIdOutput, HookResolveIdReturn,
    HookUsage, Plugin, PluginContext, PluginContextResolveOptions, SharedLoadPluginContext,
};
use rolldown_common::side_effects::HookSideEffects;
use rolldown_common::{ImportKind, ResolvedId};

use crate::PINNED_LIBRARIES;
use crate::css;
use crate::diagnostics::{Diagnostic, DiagnosticKind, line_col};
use crate::policy::{ENTRY_ID, Importer, Policy};

/// Import problems found while resolving, reported after rolldown finishes.
pub(crate) type Findings = Arc<Mutex<Vec<Diagnostic>>>;

#[derive(Debug)]
pub(crate) struct AppPlugin {
    policy: Arc<Policy>,
    findings: Findings,
}

/// Why an app's import was refused.
enum Refusal {
    NotALibrary,
    NotInLibrary,
    NoSuchFile,
    OutsideApp,
}

impl AppPlugin {
    pub fn new(policy: Arc<Policy>, findings: Findings) -> Self {
        Self { policy, findings }
    }

    /// Resolves an import written in an app file, enforcing where it may lead.
    async fn resolve_app_import(
        &self,
        ctx: &PluginContext,
        importer: &str,
        specifier: &str,
        kind: ImportKind,
    ) -> HookResolveIdReturn {
        if is_url(specifier) {
            // rolldown keeps http(s) URLs as external imports and inlines data: URLs.
            return Ok(None);
        }
        if is_bare(specifier) {
            if !is_pinned(specifier) {
                return Ok(Some(self.refuse(importer, specifier, &Refusal::NotALibrary)));
            }
            for dir in &self.policy.library_dirs {
                // Resolving from a file at the top of the library folder makes bare imports find
                // only the platform's libraries, never a node_modules the app brought along.
                let anchor = dir.join("__mobius_app__.js");
                let found =
                    ctx.resolve(specifier, Some(&anchor.to_string_lossy()), Some(resolve_options(kind))).await?;
                if let Ok(resolved) = found
                    && self.admitted(&resolved)
                {
                    return Ok(Some(HookResolveIdOutput::from_resolved_id(resolved)));
                }
            }
            return Ok(Some(self.refuse(importer, specifier, &Refusal::NotInLibrary)));
        }
        match ctx.resolve(specifier, Some(importer), Some(resolve_options(kind))).await? {
            Ok(resolved) if self.admitted(&resolved) => Ok(Some(HookResolveIdOutput::from_resolved_id(resolved))),
            Ok(_) => Ok(Some(self.refuse(importer, specifier, &Refusal::OutsideApp))),
            Err(_) => Ok(Some(self.refuse(importer, specifier, &Refusal::NoSuchFile))),
        }
    }

    fn admitted(&self, resolved: &ResolvedId) -> bool {
        match resolved.id.as_path() {
            Some(path) if path.is_absolute() => self.policy.admits(path),
            // Virtual, external or ignored (`browser: { fs: false }`) modules read no file.
            _ => true,
        }
    }

    /// Records why `specifier` was refused and returns a stand-in that rolldown will not load.
    fn refuse(&self, importer: &str, specifier: &str, refusal: &Refusal) -> HookResolveIdOutput {
        let importer_path = Path::new(importer);
        let file = self.policy.display_path(importer_path);
        let (kind, message) = match refusal {
            Refusal::NotALibrary => (
                DiagnosticKind::UnresolvedImport,
                format!(
                    "cannot import \"{specifier}\": it is not one of the platform's libraries. Apps can import only \
                     these libraries: {}; plus files inside the app folder by relative path (\"./chart.jsx\")",
                    PINNED_LIBRARIES.join(", ")
                ),
            ),
            Refusal::NotInLibrary => (
                DiagnosticKind::UnresolvedImport,
                format!(
                    "cannot import \"{specifier}\": the {} library has no such module. Check the path against the \
                     library's documentation for its installed version (if the library itself is missing, the \
                     platform's libraries are not installed: run `npm ci` in frontend/)",
                    package_name(specifier)
                ),
            ),
            Refusal::NoSuchFile => (
                DiagnosticKind::UnresolvedImport,
                format!(
                    "cannot import \"{specifier}\": no such file next to {file}. Check the path and the file name \
                     (imports are case-sensitive; .jsx, .js, .json and .css files can be imported)"
                ),
            ),
            Refusal::OutsideApp => (
                DiagnosticKind::ImportOutsideApp,
                format!(
                    "cannot import \"{specifier}\": it resolves outside the app folder. Apps can import only files \
                     inside their own folder and the platform's libraries"
                ),
            ),
        };
        let mut diagnostic = Diagnostic::new(kind, message).in_file(file);
        if let Ok(source) = std::fs::read_to_string(importer_path)
            && let Some(offset) = find_specifier(&source, specifier)
        {
            let (line, column) = line_col(&source, offset);
            diagnostic = diagnostic.at(&source, line, column);
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "the bundler crate has no lock helper of its own; a poisoned lock is recovered, not skipped"
        )]
        let mut findings = self.findings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        findings.push(diagnostic);
        HookResolveIdOutput { id: specifier.into(), external: Some(true.into()), ..Default::default() }
    }
}

impl Plugin for AppPlugin {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("mobius:app")
    }

    async fn resolve_id(&self, ctx: &PluginContext, args: &HookResolveIdArgs<'_>) -> HookResolveIdReturn {
        if args.specifier == ENTRY_ID {
            return Ok(Some(HookResolveIdOutput::from_id(ENTRY_ID)));
        }
        if let Some(target) = self.policy.aliases.get(args.specifier) {
            return Ok(Some(HookResolveIdOutput::from_id(target.to_string_lossy().into_owned())));
        }
        let Some(importer) = args.importer else { return Ok(None) };
        match self.policy.importer(importer) {
            Importer::App => self.resolve_app_import(ctx, importer, args.specifier, args.kind).await,
            Importer::Entry | Importer::Platform => Ok(None),
        }
    }

    async fn load(&self, _ctx: SharedLoadPluginContext, args: &HookLoadArgs<'_>) -> HookLoadReturn {
        if args.id == ENTRY_ID {
            return Ok(Some(HookLoadOutput {
                code: self.policy.entry_code().into(),
                module_type: Some(ModuleType::Js),
                ..Default::default()
            }));
        }
        let path = PathBuf::from(args.id);
        if !path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("css")) {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)?;
        Ok(Some(HookLoadOutput {
            code: css::to_module(&self.policy, &path, &text).into(),
            module_type: Some(ModuleType::Js),
            // A stylesheet is imported for its effect even where a package claims to be side-effect free.
            side_effects: Some(HookSideEffects::True),
            ..Default::default()
        }))
    }

    fn register_hook_usage(&self) -> HookUsage {
        HookUsage::ResolveId | HookUsage::Load
    }
}

fn resolve_options(kind: ImportKind) -> PluginContextResolveOptions {
    PluginContextResolveOptions { import_kind: kind, ..Default::default() }
}

fn is_url(specifier: &str) -> bool {
    ["http://", "https://", "//", "data:"].iter().any(|prefix| specifier.starts_with(prefix))
}

/// A package name (`react`, `@codemirror/view`, `three/addons/x.js`), not a path.
fn is_bare(specifier: &str) -> bool {
    !(specifier.starts_with('.') || specifier.starts_with('/') || specifier.starts_with('\0'))
}

/// The npm package a bare specifier names: `@scope/name` or `name`.
fn package_name(specifier: &str) -> &str {
    let mut slashes = specifier.match_indices('/').map(|(i, _)| i);
    let end = if specifier.starts_with('@') { slashes.nth(1) } else { slashes.next() };
    end.map_or(specifier, |end| &specifier[..end])
}

/// Whether a bare specifier is inside one of the pinned library packages.
fn is_pinned(specifier: &str) -> bool {
    let package = package_name(specifier);
    PINNED_LIBRARIES.iter().any(|pinned| package_name(pinned) == package)
}

/// Byte offset of `specifier` as a string literal in `source` (the opening quote).
fn find_specifier(source: &str, specifier: &str) -> Option<usize> {
    ['"', '\'', '`'].iter().filter_map(|quote| source.find(&format!("{quote}{specifier}{quote}"))).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_specifiers_are_package_names() {
        assert!(is_bare("react"));
        assert!(is_bare("@codemirror/view"));
        assert!(!is_bare("./label.jsx"));
        assert!(!is_bare("../x"));
        assert!(!is_bare("/etc/passwd"));
    }

    #[test]
    fn only_the_pinned_packages_and_their_files_are_importable() {
        assert_eq!(package_name("@codemirror/view"), "@codemirror/view");
        assert_eq!(package_name("three/addons/controls/OrbitControls.js"), "three");
        assert!(is_pinned("react-dom/client"));
        assert!(is_pinned("katex/dist/katex.min.css"));
        assert!(is_pinned("@openai/apps-sdk-ui/components/Icon"));
        assert!(!is_pinned("lodash"));
        assert!(!is_pinned("@codemirror/lang-python"));
        assert!(!is_pinned("reactive"));
    }

    #[test]
    fn specifiers_are_found_as_string_literals() {
        let source = "// import from lodash\nimport x from 'lodash';";
        assert_eq!(find_specifier(source, "lodash"), Some(source.find("'lodash'").expect("literal")));
    }
}
