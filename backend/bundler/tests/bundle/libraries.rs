//! One small app per pinned library: each must resolve, inline and keep the bundle self-contained.

use crate::TestApp;

/// Bundles `index.jsx` and asserts each marker (text only that library contains) is in the output.
async fn assert_bundles(source: &str, markers: &[&str]) -> String {
    let bundle = TestApp::with(&[("index.jsx", source)]).bundle_ok().await;
    for marker in markers {
        assert!(bundle.code.contains(marker), "the bundle lacks {marker:?}, so the library was not inlined");
    }
    bundle.code
}

#[tokio::test]
async fn react_and_react_dom_bundle() {
    assert_bundles(
        r#"import { createElement, useState } from "react";
import { jsx } from "react/jsx-runtime";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
export default function App() {
  const [n] = useState(1);
  return jsx("p", { children: [n, typeof createElement, typeof flushSync, typeof createRoot].join() });
}
"#,
        &["react.production", "react-dom-client.production"],
    )
    .await;
}

#[tokio::test]
async fn recharts_bundles() {
    assert_bundles(
        r#"import { LineChart, Line, XAxis, YAxis, Tooltip, ResponsiveContainer } from "recharts";
const data = [{ day: "Mon", v: 3 }, { day: "Tue", v: 5 }];
export default function App() {
  return (
    <ResponsiveContainer width="100%" height={200}>
      <LineChart data={data}><XAxis dataKey="day" /><YAxis /><Tooltip /><Line dataKey="v" /></LineChart>
    </ResponsiveContainer>
  );
}
"#,
        &["recharts-wrapper"],
    )
    .await;
}

#[tokio::test]
async fn date_fns_bundles() {
    assert_bundles(
        r#"import { addDays, format, formatDistanceToNow } from "date-fns";
export default function App() {
  return <p>{format(addDays(new Date(0), 3), "yyyy-MM-dd")} {formatDistanceToNow(new Date(0))}</p>;
}
"#,
        &["Invalid time value"],
    )
    .await;
}

#[tokio::test]
async fn lucide_react_bundles_only_the_icons_used() {
    let code = assert_bundles(
        r#"import { Camera, Heart } from "lucide-react";
export default function App() { return <p><Camera size={16} /><Heart /></p>; }
"#,
        &["@license lucide-react"],
    )
    .await;
    assert!(code.len() < 300_000, "{} bytes: unused icons were bundled", code.len());
}

#[tokio::test]
async fn three_and_its_addons_bundle() {
    assert_bundles(
        r#"import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
export default function App() {
  const scene = new THREE.Scene();
  scene.add(new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshNormalMaterial()));
  const camera = new THREE.PerspectiveCamera(60, 1, 0.1, 100);
  return <p>{scene.children.length} {typeof OrbitControls} {camera.fov}</p>;
}
"#,
        &["OrbitControls"],
    )
    .await;
}

#[tokio::test]
async fn pdfjs_dist_bundles_with_its_worker_running_in_the_page() {
    assert_bundles(
        r#"import * as pdfjs from "pdfjs-dist";
import "pdfjs-dist/build/pdf.worker.mjs";
export default function App() {
  return <p>{pdfjs.version} {typeof pdfjs.getDocument}</p>;
}
"#,
        &["pdfjsWorker", "Setting up fake worker"],
    )
    .await;
}

#[tokio::test]
async fn codemirror_and_its_packages_bundle() {
    assert_bundles(
        r##"import { basicSetup, EditorView } from "codemirror";
import { EditorState } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { defaultKeymap, history } from "@codemirror/commands";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { markdown } from "@codemirror/lang-markdown";
import { tags } from "@lezer/highlight";
const style = HighlightStyle.define([{ tag: tags.heading, fontWeight: "bold" }]);
export default function App() {
  const state = EditorState.create({
    doc: "# Title",
    extensions: [basicSetup, keymap.of(defaultKeymap), history(), markdown(), syntaxHighlighting(style)],
  });
  return <p>{typeof EditorView} {state.doc.length}</p>;
}
"##,
        &["cm-editor"],
    )
    .await;
}

#[tokio::test]
async fn katex_bundles_with_its_css_and_fonts_inlined() {
    assert_bundles(
        r#"import katex from "katex";
import "katex/dist/katex.min.css";
export default function App() {
  return <p dangerouslySetInnerHTML={{ __html: katex.renderToString("c = \\pm\\sqrt{a^2 + b^2}") }} />;
}
"#,
        &["KaTeX parse error", ".katex", "data:font/woff2;base64,"],
    )
    .await;
}

#[tokio::test]
async fn d3_geo_bundles() {
    assert_bundles(
        r#"import { geoMercator, geoPath } from "d3-geo";
export default function App() {
  const path = geoPath(geoMercator());
  return <svg><path d={path({ type: "Sphere" })} /></svg>;
}
"#,
        &["FeatureCollection"],
    )
    .await;
}

#[tokio::test]
async fn marked_with_marked_highlight_and_highlight_js_languages_bundle() {
    assert_bundles(
        r#"import { Marked } from "marked";
import { markedHighlight } from "marked-highlight";
import hljs from "highlight.js/lib/core";
import javascript from "highlight.js/lib/languages/javascript";
hljs.registerLanguage("javascript", javascript);
const marked = new Marked(markedHighlight({
  langPrefix: "hljs language-",
  highlight: (code, lang) => hljs.highlight(code, { language: lang || "plaintext" }).value,
}));
export default function App() {
  return <div dangerouslySetInnerHTML={{ __html: marked.parse("```javascript\nconst a = 1;\n```") }} />;
}
"#,
        &["Please report this to https://github.com/markedjs/marked", "Must provide highlight function", "hljs-"],
    )
    .await;
}

#[tokio::test]
async fn highlight_js_with_every_language_bundles() {
    assert_bundles(
        r#"import hljs from "highlight.js";
export default function App() {
  return <pre dangerouslySetInnerHTML={{ __html: hljs.highlightAuto("SELECT 1;").value }} />;
}
"#,
        &["hljs-", "PostgreSQL"],
    )
    .await;
}

#[tokio::test]
async fn dompurify_bundles() {
    assert_bundles(
        r#"import DOMPurify from "dompurify";
export default function App() {
  return <div dangerouslySetInnerHTML={{ __html: DOMPurify.sanitize("<b>ok</b><script>x</script>") }} />;
}
"#,
        &["SAFE_FOR_TEMPLATES"],
    )
    .await;
}

#[tokio::test]
async fn apps_sdk_ui_icons_bundle() {
    let code = assert_bundles(
        r#"import { Agent, Archive } from "@openai/apps-sdk-ui/components/Icon";
export default function App() { return <p><Agent /><Archive /></p>; }
"#,
        &["currentColor"],
    )
    .await;
    assert!(code.len() < 300_000, "{} bytes: unused icons were bundled", code.len());
}
