//! Compiles real apps in temp folders against the installed pinned libraries.
//!
//! The libraries come from `$MOBIUS_APP_NODE_MODULES`, else `<repo>/frontend/node_modules`; a
//! missing folder or package fails the test with instructions instead of skipping it.

mod apps;
mod errors;
mod libraries;

use std::path::PathBuf;

use mobius_bundler::{Bundle, BundleOptions, Diagnostic, DiagnosticKind, Diagnostics};
use oxc::allocator::Allocator;
use oxc::ast::ast::{Expression, ImportExpression, ModuleExportName, Statement};
use oxc::ast_visit::{Visit, walk};
use oxc::parser::Parser;
use oxc::span::SourceType;
use tempfile::TempDir;

/// The npm packages the tests need, by package folder name.
const PACKAGES: &[&str] = &[
    "react",
    "react-dom",
    "recharts",
    "date-fns",
    "lucide-react",
    "three",
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
    "dompurify",
    "@openai/apps-sdk-ui",
];

/// The installed library folder, checked to hold every pinned package.
fn libraries() -> PathBuf {
    let dir = std::env::var_os("MOBIUS_APP_NODE_MODULES").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
            .join("../../frontend/node_modules")
    });
    let missing: Vec<&str> =
        PACKAGES.iter().copied().filter(|name| !dir.join(name).join("package.json").is_file()).collect();
    assert!(
        missing.is_empty(),
        "the mini-app libraries are not installed in {} (missing: {}). Run `npm ci` in frontend/ to install \
         the pinned libraries, or point MOBIUS_APP_NODE_MODULES at a node_modules folder that has them.",
        dir.display(),
        missing.join(", ")
    );
    dir
}

/// An app folder in a temp dir, plus room next to it for files the app must not reach.
struct TestApp {
    root: TempDir,
}

impl TestApp {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(root.path().join("app")).expect("app dir");
        Self { root }
    }

    /// An app with these files (path relative to the app folder, contents).
    fn with(files: &[(&str, &str)]) -> Self {
        let app = Self::new();
        for (name, contents) in files {
            app.write(name, contents);
        }
        app
    }

    fn dir(&self) -> PathBuf {
        self.root.path().join("app")
    }

    /// Writes a file relative to the app folder (`../x` lands beside it).
    fn write(&self, name: &str, contents: &str) {
        let path = self.dir().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write");
    }

    fn options(&self) -> BundleOptions {
        BundleOptions {
            app_dir: self.dir(),
            entry: "index.jsx".into(),
            node_modules: vec![libraries()],
            ..Default::default()
        }
    }

    async fn bundle(&self) -> Result<Bundle, Diagnostics> {
        mobius_bundler::bundle(&self.options()).await
    }

    /// Bundles and checks the output is one self-contained module exporting only `default`.
    async fn bundle_ok(&self) -> Bundle {
        let bundle = match self.bundle().await {
            Ok(bundle) => bundle,
            Err(diagnostics) => panic!("expected a bundle, got:\n{diagnostics}"),
        };
        assert_self_contained(&bundle.code);
        bundle
    }

    /// Bundles, expecting failure, and returns the only diagnostic.
    async fn single_error(&self) -> Diagnostic {
        let diagnostics = match self.bundle().await {
            Ok(_) => panic!("expected the compile to fail"),
            Err(diagnostics) => diagnostics,
        };
        assert_eq!(diagnostics.0.len(), 1, "expected one diagnostic, got:\n{diagnostics}");
        diagnostics.0.into_iter().next().expect("one")
    }
}

/// Parses the output and asserts it imports nothing but URLs and exports exactly `default`.
fn assert_self_contained(code: &str) {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, SourceType::mjs()).parse();
    assert!(parsed.diagnostics.is_empty(), "the bundle does not parse: {:?}", parsed.diagnostics);
    let mut exports = Vec::new();
    for statement in &parsed.program.body {
        match statement {
            Statement::ImportDeclaration(import) => {
                assert!(is_url(&import.source.value), "the bundle still imports \"{}\"", import.source.value)
            }
            Statement::ExportAllDeclaration(export) => panic!("the bundle re-exports \"{}\"", export.source.value),
            Statement::ExportFromDeclaration(export) => panic!("the bundle re-exports \"{}\"", export.source.value),
            Statement::ExportDeclaration(_) => panic!("the bundle exports a declaration by name"),
            Statement::ExportNamedDeclaration(export) => {
                for specifier in &export.specifiers {
                    exports.push(match &specifier.exported {
                        ModuleExportName::IdentifierName(name) => name.name.to_string(),
                        ModuleExportName::IdentifierReference(name) => name.name.to_string(),
                        ModuleExportName::StringLiteral(name) => name.value.to_string(),
                    });
                }
            }
            Statement::ExportDefaultDeclaration(_) => exports.push("default".into()),
            _ => {}
        }
    }
    assert_eq!(exports, ["default"], "the bundle must export exactly `default`");
    let mut dynamic = DynamicImports::default();
    dynamic.visit_program(&parsed.program);
    assert!(dynamic.bare.is_empty(), "the bundle has dynamic imports of {:?}", dynamic.bare);
}

#[derive(Default)]
struct DynamicImports {
    bare: Vec<String>,
}

impl<'a> Visit<'a> for DynamicImports {
    fn visit_import_expression(&mut self, expr: &ImportExpression<'a>) {
        if let Expression::StringLiteral(source) = &expr.source
            && !is_url(&source.value)
        {
            self.bare.push(source.value.to_string());
        }
        walk::walk_import_expression(self, expr);
    }
}

fn is_url(specifier: &str) -> bool {
    specifier.starts_with("https://") || specifier.starts_with("http://")
}

/// Asserts a diagnostic's kind and location.
fn assert_located(diagnostic: &Diagnostic, kind: DiagnosticKind, file: &str, line: u32, column: u32) {
    assert_eq!(diagnostic.kind, kind, "{diagnostic}");
    assert_eq!(diagnostic.file.as_deref(), Some(file), "{diagnostic}");
    assert_eq!((diagnostic.line, diagnostic.column), (Some(line), Some(column)), "{diagnostic}");
    let frame = diagnostic.frame.as_deref().unwrap_or_default();
    assert!(frame.contains(&format!("> {line} |")) && frame.contains('^'), "no code frame:\n{diagnostic}");
    assert!(
        diagnostic.to_string().starts_with(&format!("{file}:{line}:{column}: error: ")),
        "display must lead with the location:\n{diagnostic}"
    );
}
