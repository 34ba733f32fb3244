//! Edit diffs as the transcript shows them (issue 37): a tool block's `files` (unified diffs the
//! server computed from the tool's input) split into rows, long unchanged stretches folded, the
//! language for syntax colours picked by file name, and a turn's "Files changed" summary.
//! Pure: no DOM, no fetch.

import type { Block, FileDiff, WebSource } from "../api/types";

/** Unchanged lines kept on each side of a change before the rest of a stretch folds. */
export const CONTEXT_LINES = 3;
/** Rows a diff shows at first, and how many more each "Show more" adds. */
export const DIFF_PAGE_ROWS = 200;
/** Rows a diff paints in its first frame (at least 390 px of lines, what shows below a tapped file
 *  on a phone), and how many join in each frame after until the rows asked for are there: a long
 *  diff opens at once (30 first rows cost a 2,000-line diff's tap ~30 ms more at 4× CPU slowdown
 *  on the shared machine, medians 78 → 48 ms). */
export const DIFF_FIRST_ROWS = 20;
export const DIFF_ROWS_PER_FRAME = 50;

export type DiffLineKind = "add" | "del" | "ctx" | "hunk";

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

/** A row on screen: a line, or a folded stretch of unchanged lines (expanded on tap). */
export type DiffRow = { type: "line"; line: DiffLine; at: number } | { type: "fold"; id: number; lines: DiffLine[] };

/** The lines of a unified diff (`+`, `-`, ` `, `@@`); any other line counts as unchanged. */
export function parseDiff(diff: string): DiffLine[] {
  if (diff === "") return [];
  const raw = diff.endsWith("\n") ? diff.slice(0, -1) : diff;
  return raw.split("\n").map((line): DiffLine => {
    const sign = line.charCodeAt(0);
    if (sign === 43 /* + */) return { kind: "add", text: line.slice(1) };
    if (sign === 45 /* - */) return { kind: "del", text: line.slice(1) };
    if (line.startsWith("@@")) return { kind: "hunk", text: line };
    return { kind: "ctx", text: sign === 32 /* space */ ? line.slice(1) : line };
  });
}

/**
 * The rows of a diff with every stretch of unchanged lines longer than `2 × context + 1` folded
 * to its first and last `context` lines (a stretch at the start or the end keeps only the side
 * next to a change). `open` names the folds already expanded.
 */
export function foldContext(lines: readonly DiffLine[], open: ReadonlySet<number> = new Set(), context = CONTEXT_LINES): DiffRow[] {
  const rows: DiffRow[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as DiffLine;
    if (line.kind !== "ctx") {
      rows.push({ type: "line", line, at: i });
      i += 1;
      continue;
    }
    let end = i;
    while (end < lines.length && (lines[end] as DiffLine).kind === "ctx") end += 1;
    const keepBefore = i === 0 ? 0 : context;
    const keepAfter = end === lines.length ? 0 : context;
    const id = i;
    if (end - i > keepBefore + keepAfter + 1 && !open.has(id)) {
      for (let k = i; k < i + keepBefore; k++) rows.push({ type: "line", line: lines[k] as DiffLine, at: k });
      rows.push({ type: "fold", id, lines: lines.slice(i + keepBefore, end - keepAfter) });
      for (let k = end - keepAfter; k < end; k++) rows.push({ type: "line", line: lines[k] as DiffLine, at: k });
    } else {
      for (let k = i; k < end; k++) rows.push({ type: "line", line: lines[k] as DiffLine, at: k });
    }
    i = end;
  }
  return rows;
}

/** The index of the `n`th line break of `text`, or -1 if it has fewer. */
function nthLineBreak(text: string, n: number): number {
  let at = -1;
  for (let k = 0; k < n; k++) {
    at = text.indexOf("\n", at + 1);
    if (at < 0) return -1;
  }
  return at;
}

/**
 * The first `count` rows of `foldContext(parseDiff(diff), open)`, parsing only the lines they
 * need: a tapped file's first frame shows a screenful of a long diff, and parsing and folding all
 * of a 2,000-line one then costs 8–13 ms at 4× CPU slowdown (cold code). `whole`: these are all
 * the diff's rows.
 */
export function leadingRows(diff: string, count: number, open: ReadonlySet<number> = new Set()): { rows: DiffRow[]; whole: boolean } {
  for (let want = Math.max(1, count) * 2; ; want *= 4) {
    const cut = nthLineBreak(diff, want);
    if (cut < 0) {
      const rows = foldContext(parseDiff(diff), open);
      return rows.length > count ? { rows: rows.slice(0, count), whole: false } : { rows, whole: true };
    }
    const head = parseDiff(diff.slice(0, cut));
    // A stretch of unchanged lines reaching the cut may go on past it (and fold otherwise): only
    // the rows before it are the diff's.
    let sure = head.length;
    while (sure > 0 && (head[sure - 1] as DiffLine).kind === "ctx") sure -= 1;
    const rows = foldContext(head, open).filter((row) => (row.type === "line" ? row.at : row.id) < sure);
    if (rows.length >= count) return { rows: rows.slice(0, count), whole: false };
  }
}

const EXTENSIONS: Record<string, string> = {
  sh: "bash",
  bash: "bash",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  hpp: "cpp",
  cs: "csharp",
  css: "css",
  go: "go",
  ini: "ini",
  toml: "ini",
  java: "java",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  json: "json",
  kt: "kotlin",
  md: "markdown",
  php: "php",
  py: "python",
  rb: "ruby",
  rs: "rust",
  sql: "sql",
  swift: "swift",
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  html: "xml",
  xml: "xml",
  svg: "xml",
  yml: "yaml",
  yaml: "yaml",
};

/** The highlight.js language for a path by its extension (`Dockerfile` by name), or null. */
export function languageOfPath(path: string): string | null {
  const name = path.split("/").pop() ?? path;
  if (/^dockerfile$/i.test(name)) return "dockerfile";
  const dot = name.lastIndexOf(".");
  if (dot <= 0) return null;
  return EXTENSIONS[name.slice(dot + 1).toLowerCase()] ?? null;
}

/** One file of a turn's "Files changed": its total counts and every edit of it, in order. */
export interface ChangedFile {
  path: string;
  added: number;
  removed: number;
  binary: boolean;
  edits: { toolUseId: string; file: FileDiff }[];
}

/** The files a reply changed, in the order first touched, with +/− summed over its edits
 *  (failed and stopped edits left out: they changed nothing). */
export function filesChanged(blocks: readonly Block[] | null | undefined): ChangedFile[] {
  const byPath = new Map<string, ChangedFile>();
  for (const block of blocks ?? []) {
    if (block.type !== "tool" || !block.files || block.status === "error" || block.status === "stopped") continue;
    for (const file of block.files) {
      let entry = byPath.get(file.path);
      if (!entry) {
        entry = { path: file.path, added: 0, removed: 0, binary: false, edits: [] };
        byPath.set(file.path, entry);
      }
      entry.added += file.added;
      entry.removed += file.removed;
      entry.binary ||= file.binary === true;
      entry.edits.push({ toolUseId: block.tool_use_id, file });
    }
  }
  return [...byPath.values()];
}

/** One formatter for every count a diff shows: `toLocaleString()` builds a new one each call,
 *  which cost a Files changed list of 200 files ~30 ms at 4× CPU slowdown. */
const COUNTS = new Intl.NumberFormat();

/** A count as the owner's locale writes it ("1,234"). */
export const formatCount = (n: number): string => COUNTS.format(n);

/** "+12 −3" (a typographic minus). */
export function countsText(added: number, removed: number): string {
  return `+${formatCount(added)} \u2212${formatCount(removed)}`;
}

/** The web pages a reply's searches and fetches brought back, each once, in order. */
export function sourcesOf(blocks: readonly Block[] | null | undefined): WebSource[] {
  const seen = new Set<string>();
  const out: WebSource[] = [];
  for (const block of blocks ?? []) {
    // A failed fetch brought nothing back.
    if (block.type !== "tool" || !block.sources || block.status === "error") continue;
    for (const source of block.sources) {
      if (seen.has(source.url) || !/^https?:\/\//.test(source.url)) continue;
      seen.add(source.url);
      out.push(source);
    }
  }
  return out;
}

/** A source's domain without `www.` (`https://www.rust-lang.org/x` → `rust-lang.org`). */
export function domainOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^www\./, "");
  } catch {
    return url;
  }
}
