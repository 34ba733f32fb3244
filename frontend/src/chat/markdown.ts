//! Markdown for assistant messages: marked (GFM) → DOMPurify, links limited to http, https and
//! mailto and opened in a new tab, raw HTML shown as text, images shown as links (the CSP
//! forbids remote images anyway) except the chat's own (`/api/chats/<id>/media/…`), which are
//! marked for the message view to show with a media token. Code is highlighted later, language by language, on demand.
//! Math (`$…$`, `\(…\)` inline; `$$…$$`, `\[…\]` on their own lines) is kept as its TeX
//! source in a marked element and typeset by KaTeX, loaded only when a message has math.
//! This module is loaded lazily; plain text shows until it arrives.

import DOMPurify from "dompurify";
import type { HLJSApi, LanguageFn } from "highlight.js";
import type * as KatexModule from "katex";
import { Marked, type Tokens } from "marked";

const ALLOWED_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
/** `/api/chats/<id>/media|uploads/<name>`: an image the chat's server keeps. */
const CHAT_FILE_URL = /^\/api\/chats\/[A-Za-z0-9_-]{1,64}\/(media|uploads)\/[A-Za-z0-9._-]{1,200}$/;

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

interface MathToken {
  type: "mathInline" | "mathDisplay";
  raw: string;
  tex: string;
}

/** `$$…$$` or `\[…\]` starting a line (may span lines). */
const DISPLAY_MATH = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[^\S\n]*(?:\n|$)/;
/** `$…$` that does not look like money: no space inside either dollar, no digit right after
 *  the closing one, no newline; or `\(…\)`. */
const INLINE_MATH = /^(?:\$(?![\s$])((?:\\.|[^\\\n$])+?)(?<!\s)\$(?!\d)|\\\(((?:\\.|[^\n])+?)\\\))/;

function mathToken(type: MathToken["type"], match: RegExpExecArray): MathToken {
  return { type, raw: match[0], tex: (match[1] ?? match[2] ?? "").trim() };
}

const marked = new Marked({
  gfm: true,
  async: false,
  extensions: [
    {
      name: "mathDisplay",
      level: "block",
      start: (src: string) => src.match(/^(?:\$\$|\\\[)/m)?.index,
      tokenizer(src: string) {
        const match = DISPLAY_MATH.exec(src);
        return match ? mathToken("mathDisplay", match) : undefined;
      },
      renderer: (token) => `<div class="math-display">${escapeHtml((token as unknown as MathToken).tex)}</div>\n`,
    },
    {
      name: "mathInline",
      level: "inline",
      start: (src: string) => src.match(/\$|\\\(/)?.index,
      tokenizer(src: string) {
        const match = INLINE_MATH.exec(src);
        return match ? mathToken("mathInline", match) : undefined;
      },
      renderer: (token) => `<span class="math-inline">${escapeHtml((token as unknown as MathToken).tex)}</span>`,
    },
  ],
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    image(token: Tokens.Image): string {
      const label = escapeHtml(token.text || token.href);
      // A chat's own image: shown by the message view, which adds the media token.
      if (CHAT_FILE_URL.test(token.href) && !token.href.includes("..")) {
        return `<span class="md-media" data-src="${escapeHtml(token.href)}" data-alt="${escapeHtml(token.text || "image")}">${label}</span>`;
      }
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

type Katex = typeof KatexModule.default;
let katex: Promise<Katex> | null = null;

/** Typesets every math element under `root` (KaTeX and its stylesheet load on first use). */
export async function renderMathWithin(root: HTMLElement): Promise<void> {
  const pending = [...root.querySelectorAll<HTMLElement>(".math-inline, .math-display")].filter((el) => !el.dataset.tex);
  if (pending.length === 0) return;
  katex ??= Promise.all([import("katex"), import("katex/dist/katex.min.css")]).then(([m]) => m.default);
  let engine: Katex;
  try {
    engine = await katex;
  } catch {
    katex = null;
    return;
  }
  for (const el of pending) {
    if (!el.isConnected || el.dataset.tex) continue;
    const tex = el.textContent ?? "";
    el.dataset.tex = tex;
    // `trust: false` (the default) keeps \href, \url and friends out; a bad formula shows
    // its source in the error colour instead of throwing.
    engine.render(tex, el, { displayMode: el.classList.contains("math-display"), throwOnError: false, maxSize: 50, maxExpand: 500 });
  }
}

/** Colours the text of every element under `root` that matches `selector` as `language`, one
 *  element at a time (a diff's lines: each keeps its own row). Elements done before are skipped. */
export async function highlightLinesWithin(root: HTMLElement, selector: string, language: string): Promise<void> {
  const hljs = await ensureLanguage(language);
  if (!hljs) return;
  for (const el of root.querySelectorAll<HTMLElement>(selector)) {
    const text = el.textContent ?? "";
    if (el.dataset.highlighted === "1" || text === "") continue;
    el.innerHTML = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    el.dataset.highlighted = "1";
  }
}
