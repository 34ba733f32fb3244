//! Apps that compile: the output's shape, CSS, aliases, inject, banner, determinism and the queue.

use mobius_bundler::{BundleOptions, Bundler};
use sha2::{Digest, Sha256};

use crate::TestApp;

const COUNTER: &str = r#"import { useState } from "react";
import Label from "./label.jsx";
import "./style.css";

export default function Counter() {
  const [count, setCount] = useState(0);
  const [items, setItems] = useState([]);
  return (
    <div className="counter">
      <Label text={`Count: ${count}`} />
      <button onClick={() => { setCount(count + 1); setItems([...items, count + 1]); }}>Add one</button>
      <button onClick={() => { setCount(0); setItems([]); }}>Reset</button>
      <ul>{items.map((n) => <li key={n}>{n}</li>)}</ul>
    </div>
  );
}
"#;

const LABEL: &str = r#"export default function Label({ text }) {
  return <h1 className="counter-label">{text}</h1>;
}
"#;

const STYLE: &str = ".counter { padding: 16px; }\n.counter-label { color: rebeccapurple; }\n";

fn counter() -> TestApp {
    TestApp::with(&[("index.jsx", COUNTER), ("label.jsx", LABEL), ("style.css", STYLE)])
}

#[tokio::test]
async fn a_multi_file_app_becomes_one_module_that_exports_only_default() {
    let bundle = counter().bundle_ok().await;

    assert!(bundle.code.contains("counter-label"), "the label component is missing");
    assert!(bundle.code.contains("Add one") && bundle.code.contains("Reset"), "the counter component is missing");
    assert!(bundle.code.contains("react.transitional.element"), "React is not inlined");
    assert!(bundle.modules > 3, "only {} modules linked", bundle.modules);
    assert_eq!(bundle.sha256, hex::encode(Sha256::digest(bundle.code.as_bytes())));
}

#[tokio::test]
async fn the_bundle_is_a_minified_production_build() {
    let bundle = counter().bundle_ok().await;

    assert!(!bundle.code.contains("process.env"), "NODE_ENV was not replaced");
    assert!(!bundle.code.contains("react.development"), "React's development build was bundled");
    assert!(!bundle.code.contains("useState(0)"), "the output is not minified");
    assert!(bundle.code.contains("@license React"), "legal comments should be kept");
}

#[tokio::test]
async fn imported_css_is_appended_as_a_style_element() {
    let bundle = counter().bundle_ok().await;

    assert!(bundle.code.contains("padding: 16px") || bundle.code.contains("padding:16px"), "CSS text missing");
    assert!(bundle.code.contains("rebeccapurple"));
    assert!(bundle.code.contains("document.head.appendChild"), "the style is never attached");
}

#[tokio::test]
async fn the_same_source_gives_the_same_bytes_in_any_folder() {
    let first = counter().bundle_ok().await;
    let again = counter().bundle_ok().await;

    assert_eq!(first.sha256, again.sha256, "two compiles of the same app differ");
    assert!(!first.code.contains("/tmp"), "the bundle embeds a temp path");
}

#[tokio::test]
async fn the_inject_module_runs_before_the_app_and_aliases_resolve_to_their_files() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import { greet } from \"mobius-runtime\";\n\
         globalThis.appMarker = \"APP-BODY-MARKER\";\n\
         export default function App() { return <p>{greet()}</p>; }\n",
    )]);
    app.write("../platform/runtime.js", "export function greet() { return \"RUNTIME-MARKER\"; }\n");
    app.write("../platform/inject.js", "globalThis.injectMarker = \"INJECT-MARKER\";\n");
    let platform = app.dir().join("../platform");
    let opts = BundleOptions {
        aliases: vec![("mobius-runtime".into(), platform.join("runtime.js"))],
        inject: Some(platform.join("inject.js")),
        ..app.options()
    };

    let bundle = match mobius_bundler::bundle(&opts).await {
        Ok(bundle) => bundle,
        Err(diagnostics) => panic!("{diagnostics}"),
    };

    crate::assert_self_contained(&bundle.code);
    assert!(bundle.code.contains("RUNTIME-MARKER"), "the alias target is not inlined");
    let inject = bundle.code.find("INJECT-MARKER").expect("inject module inlined");
    let body = bundle.code.find("APP-BODY-MARKER").expect("app inlined");
    assert!(inject < body, "the inject module must run before the app");
}

#[tokio::test]
async fn the_banner_opens_the_bundle() {
    let app = counter();
    let banner = "/* mobius-compiled-runtime-abi:1;artifact-revision:6 */";
    let opts = BundleOptions { banner: Some(banner.into()), ..app.options() };

    let bundle = mobius_bundler::bundle(&opts).await.expect("bundle");

    assert!(bundle.code.starts_with(banner), "the bundle starts with {:?}", &bundle.code[..80]);
}

#[tokio::test]
async fn app_files_may_import_json_and_files_in_subfolders() {
    let app = TestApp::with(&[
        (
            "index.jsx",
            "import data from \"./data/items.json\";\nimport { Row } from \"./parts/row.jsx\";\nexport default function App() { return <ul>{data.items.map((t) => <Row key={t} text={t} />)}</ul>; }\n",
        ),
        ("data/items.json", "{\"items\": [\"JSON-ITEM-MARKER\"]}"),
        ("parts/row.jsx", "export function Row({ text }) { return <li>{text}</li>; }\n"),
    ]);

    let bundle = app.bundle_ok().await;

    assert!(bundle.code.contains("JSON-ITEM-MARKER"));
}

#[tokio::test]
async fn a_bundler_runs_compiles_one_at_a_time_and_frees_its_permit() {
    let bundler = Bundler::new(1).expect("bundler");
    let apps = [counter(), counter()];

    let (first, second) = (apps[0].options(), apps[1].options());
    let (a, b) = tokio::join!(bundler.bundle(&first), bundler.bundle(&second));

    let (a, b) = (a.expect("first"), b.expect("second"));
    assert_eq!(a.sha256, b.sha256);
    assert_eq!(bundler.available_permits(), 1);
}

#[tokio::test]
async fn a_bundler_can_be_dropped_inside_async_code() {
    let bundler = Bundler::new(1).expect("bundler");
    let clone = bundler.clone();
    let bundle = clone.bundle(&counter().options()).await.expect("bundle");

    // Dropping the last handle shuts the compile runtime down; a blocking drop would panic here.
    drop(bundler);
    drop(clone);

    assert!(!bundle.code.is_empty());
}

#[tokio::test]
async fn https_imports_are_left_for_the_browser_to_load() {
    let app = TestApp::with(&[(
        "index.jsx",
        "import confetti from \"https://esm.sh/canvas-confetti@1\";\n\
         export default function App() { return <button onClick={() => confetti()}>Party</button>; }\n",
    )]);

    let bundle = app.bundle_ok().await;

    assert!(bundle.code.contains("https://esm.sh/canvas-confetti@1"));
}

#[tokio::test]
async fn dynamic_imports_of_libraries_and_app_files_bundle_into_the_one_module() {
    let app = TestApp::with(&[
        (
            "index.jsx",
            "import { useEffect, useState } from \"react\";\n\
             export default function App() {\n\
               const [html, setHtml] = useState(\"\");\n\
               useEffect(() => {\n\
                 (async () => {\n\
                   const { marked } = await import(\"marked\");\n\
                   const katex = (await import(\"katex\")).default;\n\
                   const { label } = await import(\"./lazy/label.js\");\n\
                   setHtml(marked.parse(label) + katex.renderToString(\"x^2\"));\n\
                 })();\n\
               }, []);\n\
               return <div dangerouslySetInnerHTML={{ __html: html }} />;\n\
             }\n",
        ),
        ("lazy/label.js", "export const label = \"# Lazy-loaded label\";\n"),
    ]);

    let bundle = app.bundle_ok().await;

    assert!(bundle.code.contains("Lazy-loaded label"), "the app's own lazily imported file is missing");
    assert!(bundle.code.contains("katex"), "KaTeX is missing");
}
