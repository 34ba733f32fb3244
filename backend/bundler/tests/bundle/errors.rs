//! Apps that must not compile, and the located messages the agent gets back.

use base64::Engine as _;
use mobius_bundler::{BundleOptions, DiagnosticKind};

use crate::{TestApp, assert_located, libraries};

#[tokio::test]
async fn an_import_of_an_unknown_package_names_it_and_lists_what_can_be_imported() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import { useState } from \"react\";\n\
         import { debounce } from \"lodash\";\n\
         export default function App() { return <p>{String(useState)}{String(debounce)}</p>; }\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::UnresolvedImport, "index.jsx", 2, 26);
    assert!(error.message.contains("\"lodash\""), "{error}");
    assert!(error.message.contains("recharts") && error.message.contains("relative path"), "{error}");
}

#[tokio::test]
async fn a_dynamic_import_is_held_to_the_same_rules() {
    let app = TestApp::with(&[(
        "index.jsx",
        "export default function App() {\n  import(\"lodash\").then(() => {});\n  return <p>x</p>;\n}\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::UnresolvedImport, "index.jsx", 2, 10);
    assert!(error.message.contains("\"lodash\""), "{error}");
}

#[tokio::test]
async fn a_missing_module_of_a_pinned_library_names_the_library() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import { Nope } from \"three/addons/controls/NoSuchControls.js\";\nexport default function App() { return <p>{String(Nope)}</p>; }\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::UnresolvedImport, "index.jsx", 1, 22);
    assert!(error.message.contains("the three library has no such module"), "{error}");
}

#[tokio::test]
async fn an_import_of_a_missing_file_is_located() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import Chart from \"./chart.jsx\";\nexport default function App() { return <Chart />; }\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::UnresolvedImport, "index.jsx", 1, 19);
    assert!(error.message.contains("\"./chart.jsx\""), "{error}");
}

#[tokio::test]
async fn every_unresolved_import_is_reported_at_once() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import a from \"left-pad\";\nimport b from \"./nope.js\";\nexport default function App() { return <p>{a}{b}</p>; }\n",
    )]);

    let diagnostics = app.bundle().await.expect_err("must fail");

    let lines: Vec<_> = diagnostics.iter().map(|d| (d.kind, d.line)).collect();
    assert_eq!(lines, [(DiagnosticKind::UnresolvedImport, Some(1)), (DiagnosticKind::UnresolvedImport, Some(2))]);
    assert!(diagnostics.to_string().ends_with("2 errors"), "{diagnostics}");
}

#[tokio::test]
async fn a_syntax_error_is_located_with_a_code_frame() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import { useState } from \"react\";\nconst broken = ;\nexport default function App() { return <p>{broken}</p>; }\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::Syntax, "index.jsx", 2, 16);
    assert!(error.message.contains("Unexpected token"), "{error}");
    assert!(error.frame.as_deref().unwrap_or_default().contains("const broken = ;"), "{error}");
}

#[tokio::test]
async fn a_syntax_error_in_an_imported_file_names_that_file() {
    let app = TestApp::with(&[
        ("index.jsx", "import Label from \"./label.jsx\";\nexport default function App() { return <Label />; }\n"),
        ("label.jsx", "export default function Label() {\n  return <h1>unclosed</h2>;\n}\n"),
    ]);

    let error = app.single_error().await;

    assert_eq!(error.kind, DiagnosticKind::Syntax, "{error}");
    assert_eq!(error.file.as_deref(), Some("label.jsx"), "{error}");
    assert_eq!(error.line, Some(2), "{error}");
    assert!(error.to_string().starts_with("label.jsx:2:"), "{error}");
}

#[tokio::test]
async fn an_entry_without_a_default_export_says_how_to_fix_it() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import { useState } from \"react\";\n\nexport function App() {\n  return <p>{String(useState)}</p>;\n}\n",
    )]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::MissingDefaultExport, "index.jsx", 3, 1);
    assert!(error.message.contains("index.jsx must `export default` a React component"), "{error}");
    assert!(error.message.contains("export default App"), "{error}");
}

#[tokio::test]
async fn an_entry_with_no_exports_at_all_is_refused() {
    let app = TestApp::with(&[("index.jsx", "console.log(\"hello\");\n")]);

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::MissingDefaultExport, "index.jsx", 1, 1);
}

#[tokio::test]
async fn a_relative_import_out_of_the_app_folder_is_refused() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import secret from \"../secret.js\";\nexport default function App() { return <p>{secret}</p>; }\n",
    )]);
    app.write("../secret.js", "export default \"SECRET-MARKER\";\n");

    let error = app.single_error().await;

    assert_located(&error, DiagnosticKind::ImportOutsideApp, "index.jsx", 1, 20);
    assert!(error.message.contains("outside the app folder"), "{error}");
}

#[tokio::test]
async fn a_path_to_a_system_file_is_refused() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import p from \"../../../../../../../../../../etc/passwd\";\nexport default function App() { return <p>{p}</p>; }\n",
    )]);

    let error = app.single_error().await;

    assert_eq!(error.kind, DiagnosticKind::ImportOutsideApp, "{error}");
    assert_eq!((error.line, error.column), (Some(1), Some(15)), "{error}");
}

#[tokio::test]
async fn an_absolute_import_of_a_file_outside_the_app_is_refused() {
    let app = TestApp::new();
    app.write("../secret.js", "export default \"SECRET-MARKER\";\n");
    let secret = app.dir().join("../secret.js").canonicalize().expect("secret");
    app.write(
        "index.jsx",
        &format!("import s from \"{}\";\nexport default function App() {{ return <p>{{s}}</p>; }}\n", secret.display()),
    );

    let error = app.single_error().await;

    assert_eq!(error.kind, DiagnosticKind::ImportOutsideApp, "{error}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_out_of_the_app_folder_is_refused() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import s from \"./link.js\";\nexport default function App() { return <p>{s}</p>; }\n",
    )]);
    app.write("../outside.js", "export default \"SECRET-MARKER\";\n");
    std::os::unix::fs::symlink(app.dir().join("../outside.js"), app.dir().join("link.js")).expect("symlink");

    let error = app.single_error().await;

    assert_eq!(error.kind, DiagnosticKind::ImportOutsideApp, "{error}");
}

#[tokio::test]
async fn css_cannot_inline_files_from_outside_the_app() {
    let app = TestApp::with(&[
        ("index.jsx", "import \"./style.css\";\nexport default function App() { return <p className=\"x\" />; }\n"),
        ("style.css", ".x { background: url(../secret.png); }\n.y { background: url(./dot.png); }\n"),
        ("dot.png", "DOT-IMAGE-BYTES"),
    ]);
    app.write("../secret.png", "SECRET-IMAGE-BYTES");

    let bundle = app.bundle_ok().await;

    let encode = |bytes: &str| base64::engine::general_purpose::STANDARD.encode(bytes);
    assert!(!bundle.code.contains(&encode("SECRET-IMAGE-BYTES")), "a file outside the app was inlined");
    assert!(bundle.code.contains(&encode("DOT-IMAGE-BYTES")), "the app's own image was not inlined");
}

#[tokio::test]
async fn a_missing_entry_file_is_reported() {
    let app = TestApp::with(&[("main.jsx", "export default () => null;\n")]);

    let error = app.single_error().await;

    assert_eq!(error.kind, DiagnosticKind::Io, "{error}");
    assert!(error.message.contains("index.jsx"), "{error}");
}

#[tokio::test]
async fn a_missing_library_folder_is_reported() {
    let app = TestApp::with(&[("index.jsx", "export default () => null;\n")]);
    let opts = BundleOptions { node_modules: vec![app.dir().join("../no-such-node_modules")], ..app.options() };

    let error = mobius_bundler::bundle(&opts).await.expect_err("must fail");

    assert_eq!(error.0[0].kind, DiagnosticKind::Io, "{error}");
    assert!(error.0[0].message.contains("no-such-node_modules"), "{error}");
}

#[tokio::test]
async fn a_library_importing_a_package_that_is_not_installed_fails_instead_of_warning() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import DOMPurify from \"dompurify\";\nexport default function App() { return <p>{String(DOMPurify)}</p>; }\n",
    )]);
    // A broken install: the library is there, one of its dependencies is not.
    app.write("../broken/dompurify/package.json", "{\"name\": \"dompurify\", \"main\": \"index.js\"}");
    app.write("../broken/dompurify/index.js", "import x from \"not-installed-anywhere\";\nexport default x;\n");
    let opts = BundleOptions { node_modules: vec![app.dir().join("../broken"), libraries()], ..app.options() };

    let diagnostics = mobius_bundler::bundle(&opts).await.expect_err("must fail");

    let error = &diagnostics.0[0];
    assert_eq!(error.kind, DiagnosticKind::UnresolvedImport, "{diagnostics}");
    assert_eq!(error.file.as_deref(), Some("node_modules/dompurify/index.js"), "{diagnostics}");
    assert_eq!((error.line, error.column), (Some(1), Some(15)), "{diagnostics}");
    assert!(error.message.contains("\"not-installed-anywhere\"") && error.message.contains("npm ci"), "{diagnostics}");
}
