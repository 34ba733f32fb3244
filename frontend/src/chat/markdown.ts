//! Markdown for assistant messages: marked (GFM) → DOMPurify, links limited to http, https and
//! mailto and opened in a new tab, raw HTML shown as text, images shown as links (the CSP
//! forbids remote images anyway). Code is highlighted later, language by language, on demand.
//! This module is loaded lazily; plain text shows until it arrives.

import DOMPurify from "dompurify";
import type { HLJSApi, LanguageFn } from "highlight.js";
import { Marked, type Tokens } from "marked";

const ALLOWED_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/** The href to keep, or null when the link must lose it (javascript:, data:, relative, …). */
export function safeHref(href: string | null | undefined): string | null {
  if (!href) return null;
  const trimmed = href.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return null;
  }
  return ALLOWED_PROTOCOLS.has(url.protocol) ? url.href : null;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    image(token: Tokens.Image): string {
      const label = escapeHtml(token.text || token.href);
      const href = safeHref(token.href);
      return href ? `<a href="${escapeHtml(href)}">${label}</a>` : label;
    },
  },
});

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName !== "A") return;
      const href = safeHref(node.getAttribute("href"));
      if (href === null) {
        node.removeAttribute("href");
        return;
      }
      node.setAttribute("href", href);
      if (!href.startsWith("mailto:")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
  }
  return DOMPurify;
}

/** Sanitised HTML for a Markdown source. */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source) as string;
  return purifier().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "iframe", "video", "audio", "svg", "math"],
    FORBID_ATTR: ["style", "id", "srcset"],
    ADD_ATTR: ["target"],
  });
}

type Loader = () => Promise<{ default: LanguageFn }>;

const LANGUAGES: Record<string, Loader> = {
  bash: () => import("highlight.js/lib/languages/bash"),
  c: () => import("highlight.js/lib/languages/c"),
  cpp: () => import("highlight.js/lib/languages/cpp"),
  csharp: () => import("highlight.js/lib/languages/csharp"),
  css: () => import("highlight.js/lib/languages/css"),
  diff: () => import("highlight.js/lib/languages/diff"),
  dockerfile: () => import("highlight.js/lib/languages/dockerfile"),
  go: () => import("highlight.js/lib/languages/go"),
  ini: () => import("highlight.js/lib/languages/ini"),
  java: () => import("highlight.js/lib/languages/java"),
  javascript: () => import("highlight.js/lib/languages/javascript"),
  json: () => import("highlight.js/lib/languages/json"),
  kotlin: () => import("highlight.js/lib/languages/kotlin"),
  markdown: () => import("highlight.js/lib/languages/markdown"),
  php: () => import("highlight.js/lib/languages/php"),
  python: () => import("highlight.js/lib/languages/python"),
  ruby: () => import("highlight.js/lib/languages/ruby"),
  rust: () => import("highlight.js/lib/languages/rust"),
  sql: () => import("highlight.js/lib/languages/sql"),
  swift: () => import("highlight.js/lib/languages/swift"),
  typescript: () => import("highlight.js/lib/languages/typescript"),
  xml: () => import("highlight.js/lib/languages/xml"),
  yaml: () => import("highlight.js/lib/languages/yaml"),
};

const ALIASES: Record<string, string> = {
  sh: "bash",
  shell: "bash",
  zsh: "bash",
  console: "bash",
  "c++": "cpp",
  cs: "csharp",
  docker: "dockerfile",
  golang: "go",
  toml: "ini",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  kt: "kotlin",
  md: "markdown",
  py: "python",
  rb: "ruby",
  rs: "rust",
  ts: "typescript",
  tsx: "typescript",
  html: "xml",
  svg: "xml",
  yml: "yaml",
  patch: "diff",
};

/** The highlight.js language name for a fence label, or null when none is bundled. */
export function languageFor(label: string): string | null {
  const name = label.toLowerCase();
  const resolved = ALIASES[name] ?? name;
  return resolved in LANGUAGES ? resolved : null;
}

let core: Promise<HLJSApi> | null = null;
const registered = new Map<string, Promise<boolean>>();

async function ensureLanguage(language: string): Promise<HLJSApi | null> {
  core ??= import("highlight.js/lib/core").then((m) => m.default);
  const hljs = await core;
  let ready = registered.get(language);
  if (!ready) {
    const loader = LANGUAGES[language];
    ready = loader
      ? loader().then(
          (m) => {
            hljs.registerLanguage(language, m.default);
            return true;
          },
          () => false,
        )
      : Promise.resolve(false);
    registered.set(language, ready);
  }
  return (await ready) ? hljs : null;
}

/** Highlights every fenced block under `root` that names a known language. */
export async function highlightWithin(root: HTMLElement): Promise<void> {
  const blocks = [...root.querySelectorAll<HTMLElement>("pre > code[class*='language-']")];
  for (const code of blocks) {
    const text = code.textContent ?? "";
    if (code.dataset.highlighted === text.length.toString()) continue;
    const label = [...code.classList].find((c) => c.startsWith("language-"))?.slice("language-".length) ?? "";
    const language = languageFor(label);
    if (!language) continue;
    const hljs = await ensureLanguage(language);
    // The block may have been re-rendered while the language loaded.
    if (!hljs || !code.isConnected || code.textContent !== text) continue;
    code.innerHTML = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    code.dataset.highlighted = text.length.toString();
    code.classList.add("hljs");
  }
}
