//! Renders assistant Markdown once the (lazy) Markdown module is loaded; until then the raw
//! text, wrapped, so nothing is missing for the split second it takes.

import { memo, useEffect, useRef, useSyncExternalStore } from "react";
import type * as MarkdownExports from "../../chat/markdown";
import { copyToClipboard } from "../../chat/clipboard";
import { useMediaToken, withToken } from "../../chat/media";
import { openChatImages } from "./ChatFiles";

type MarkdownModule = typeof MarkdownExports;

let loaded: MarkdownModule | null = null;
let loading: Promise<void> | null = null;
const listeners = new Set<() => void>();

/** Starts loading the Markdown module (idempotent); the shell calls it when idle. */
export function preloadMarkdown(): Promise<void> {
  loading ??= import("../../chat/markdown").then(
    (m) => {
      loaded = m;
      for (const listener of [...listeners]) listener();
    },
    () => {
      loading = null;
    },
  );
  return loading;
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export const Markdown = memo(function Markdown({ text, chatId }: { text: string; chatId?: string }) {
  const module = useSyncExternalStore(subscribe, () => loaded, () => null);
  const ref = useRef<HTMLDivElement>(null);
  const html = module ? module.renderMarkdown(text) : null;
  const hasMedia = html?.includes("md-media") ?? false;
  const token = useMediaToken(chatId ?? "", hasMedia && chatId !== undefined);

  // The chat's own images: a thumbnail (with the media token) that opens the lightbox.
  useEffect(() => {
    const root = ref.current;
    if (!root || !hasMedia || !token || !chatId) return;
    const spans = [...root.querySelectorAll<HTMLElement>("span.md-media")];
    const images = spans.map((span) => ({ url: span.dataset.src ?? "", name: span.dataset.alt ?? "image" }));
    spans.forEach((span, i) => {
      const url = images[i]?.url ?? "";
      if (span.dataset.ready === url + token) return;
      span.dataset.ready = url + token;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "file-thumb md-image";
      button.setAttribute("aria-label", `Open image ${images[i]?.name ?? ""}`);
      const img = document.createElement("img");
      img.src = withToken(url, token, true);
      img.alt = images[i]?.name ?? "image";
      img.loading = "lazy";
      button.appendChild(img);
      button.addEventListener("click", () => void openChatImages(chatId, images, i));
      span.replaceChildren(button);
    });
  }, [html, hasMedia, token, chatId]);

  useEffect(() => {
    if (!module) void preloadMarkdown();
  }, [module]);

  useEffect(() => {
    if (!module || !ref.current || !html?.includes("language-")) return;
    const root = ref.current;
    const timer = setTimeout(() => void module.highlightWithin(root), 120);
    return () => clearTimeout(timer);
  }, [module, html]);

  // Every code block gets a Copy button (added after render: the HTML is set whole).
  useEffect(() => {
    const root = ref.current;
    if (!module || !root || !html?.includes("<pre")) return;
    for (const pre of root.querySelectorAll("pre")) {
      if (pre.parentElement?.classList.contains("code-wrap")) continue;
      const wrap = document.createElement("div");
      wrap.className = "code-wrap";
      pre.replaceWith(wrap);
      wrap.appendChild(pre);
      const button = document.createElement("button");
      button.type = "button";
      button.className = "code-copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy code");
      button.addEventListener("click", () => {
        // Without the block's last line break, so a pasted command does not run by itself.
        void copyToClipboard((pre.textContent ?? "").replace(/\n$/, "")).then((ok) => {
          // The name holds the visible words (a label that hides them fails voice control).
          const said = ok ? "Copied" : "Copy failed";
          button.textContent = said;
          button.setAttribute("aria-label", said);
          setTimeout(() => {
            button.textContent = "Copy";
            button.setAttribute("aria-label", "Copy code");
          }, 1500);
        });
      });
      wrap.appendChild(button);
    }
  }, [module, html]);

  useEffect(() => {
    if (!module || !ref.current || !html?.includes("math-")) return;
    void module.renderMathWithin(ref.current);
  }, [module, html]);

  if (html === null) return <div className="md md-plain">{text}</div>;
  return <div ref={ref} className="md" dangerouslySetInnerHTML={{ __html: html }} />;
});
