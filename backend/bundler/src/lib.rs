//! Compiles a mini-app folder into one self-contained, minified ES module with the rolldown crate.
//!
//! The app's `index.jsx` must `export default` a React component. Everything it imports (its own
//! files, CSS and the platform's pinned libraries) is inlined, so the output has no bare imports
//! and exactly one export, `default`. Failures come back as [`Diagnostics`] with `file:line:col`
//! and a code frame, worded for the coding agent that wrote the app.
//!
//! Servers compile through a [`Bundler`], which bounds how many compiles run at once and keeps
//! rolldown's CPU-bound work off the caller's runtime. [`bundle`] compiles directly on the caller's
//! runtime, for tools and tests.

mod bundler;
mod compile;
mod css;
mod diagnostics;
mod plugin;
mod policy;

use std::path::PathBuf;

pub use bundler::{Bundler, MAX_COMPILE_TIME};
pub use diagnostics::{Diagnostic, DiagnosticKind, Diagnostics};

/// The libraries apps may import by bare specifier, as named in error messages. Any path inside
/// one of these packages may be imported too (`katex/dist/katex.min.css`); the packages they
/// depend on may not, so an app never relies on a library's private dependencies. They resolve
/// against [`BundleOptions::node_modules`]; `frontend/package.json` pins their versions.
pub const PINNED_LIBRARIES: &[&str] = &[
    "react",
    "react/jsx-runtime",
    "react-dom",
    "react-dom/client",
    "recharts",
    "date-fns",
    "lucide-react",
    "three",
    "three/addons/*",
    "pdfjs-dist",
    "codemirror",
    "@codemirror/state",
    "@codemirror/view",
    "@codemirror/commands",
    "@codemirror/language",
    "@codemirror/lang-markdown",
    "@lezer/highlight",
    "katex",
    "d3-geo",
    "marked",
    "marked-highlight",
    "highlight.js",
    "highlight.js/lib/languages/*",
    "dompurify",
    "@openai/apps-sdk-ui/components/Icon",
];

/// What to compile and where its imports may come from.
#[derive(Debug, Clone, Default)]
pub struct BundleOptions {
    /// The app's folder; relative imports may not leave it.
    pub app_dir: PathBuf,
    /// The entry file, relative to `app_dir` (normally `index.jsx`).
    pub entry: String,
    /// Folders bare imports resolve in (the platform's installed `node_modules`), in order.
    pub node_modules: Vec<PathBuf>,
    /// Exact bare specifiers mapped to files, e.g. `("mobius-runtime", ".../mobius-runtime.js")`.
    pub aliases: Vec<(String, PathBuf)>,
    /// A module evaluated before the entry, for its side effects.
    pub inject: Option<PathBuf>,
    /// Text placed verbatim at the top of the output, after minification.
    pub banner: Option<String>,
}

/// A compiled app: one ES module whose only export is `default`.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The module source.
    pub code: String,
    /// Lowercase hex SHA-256 of `code`.
    pub sha256: String,
    /// How many modules were linked into the bundle (app files, library files and the entry shim).
    pub modules: usize,
    /// Non-fatal findings in the app's own files (library noise is dropped).
    pub warnings: Vec<Diagnostic>,
}

/// Compiles one app on the caller's tokio runtime, without any concurrency limit.
///
/// Servers should use [`Bundler::bundle`] instead, so compiles queue behind a limit and run on
/// their own threads.
pub async fn bundle(opts: &BundleOptions) -> Result<Bundle, Diagnostics> {
    compile::compile(opts).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: &T) {}

    #[tokio::test]
    async fn the_bundler_counts_compiles_and_is_idle_between_them() {
        let bundler = Bundler::new(1).expect("runtime");
        assert!(bundler.is_idle());
        assert_eq!(bundler.compiles_started(), 0);
        // A compile of a folder that does not exist fails, but still counts and releases its permit.
        let opts = BundleOptions {
            app_dir: "/nonexistent-mobius-app".into(),
            entry: "index.jsx".into(),
            ..Default::default()
        };
        assert!(bundler.bundle(&opts).await.is_err());
        assert_eq!(bundler.compiles_started(), 1);
        assert!(bundler.is_idle());
    }

    #[test]
    fn bundle_futures_are_send() {
        let opts = BundleOptions::default();
        assert_send(&bundle(&opts));
        let bundler = Bundler::new(1).expect("runtime");
        assert_send(&bundler.bundle(&opts));
    }
}
