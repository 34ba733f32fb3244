//! A file's edit as a compact unified diff (added and removed lines, long unchanged stretches
//! folded until tapped, syntax colours once painted), shown a page of rows at a time; the rest
//! of a diff the server cut comes from its stored copy on "Show the rest". And the per-turn
//! "Files changed" list under a reply (tap a file for its diffs).

import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { fetchToolOutput } from "../../api/chats";
import type { FileDiff } from "../../api/types";
import { type ChangedFile, countsText, DIFF_FIRST_ROWS, DIFF_PAGE_ROWS, DIFF_ROWS_PER_FRAME, type DiffRow, foldContext, formatCount, languageOfPath, leadingRows, parseDiff } from "../../chat/diff";

/** Diffs shown coloured at most, in rows (past it, plain text: colouring is per line). */
const MAX_HIGHLIGHT_ROWS = 1500;

const CHANGE_TEXT: Record<FileDiff["change"], string> = {
  add: "added",
  update: "edited",
  delete: "deleted",
  write: "written",
};

/** What the owner made of a diff: the whole of a cut diff once fetched, the unchanged runs
 *  opened, the rows asked for (a page, then more on "Show more") and the rows on screen so far. */
export interface DiffView {
  whole: string | null;
  open: ReadonlySet<number>;
  limit: number;
  count: number;
}

/** A diff as it opens. */
const FRESH: DiffView = { whole: null, open: new Set(), limit: DIFF_PAGE_ROWS, count: DIFF_FIRST_ROWS };

/** A file's diff. `views` (an open stretch's, `Blocks.tsx` `KeptSteps`) keeps its view under
 *  `viewKey` while its step is out of the page, so it comes back as the owner left it. */
export function FileDiffView({ chatId, file, views, viewKey = "" }: { chatId: string; file: FileDiff; views?: Map<string, DiffView> | undefined; viewKey?: string }) {
  const [view, setView] = useState(() => views?.get(viewKey) ?? FRESH);
  const { whole, open, limit, count } = view;
  const [loading, setLoading] = useState(false);
  const [failed, setFailed] = useState(false);
  // Kept once changed (by the owner, or by its rows filling in): a diff left as it opens, or
  // outside a stretch, costs nothing.
  useEffect(() => {
    if (views && view !== FRESH) views.set(viewKey, view);
  }, [views, viewKey, view]);
  const ref = useRef<HTMLDivElement>(null);
  const text = whole ?? file.diff;
  // While the first page fills, each batch parses only the lines its rows need (a 2,000-line
  // diff's tap parses a screenful); once it is full, the whole diff, for what "Show more" counts.
  const early = count < DIFF_PAGE_ROWS;
  const head = useMemo(() => (early ? leadingRows(text, count, open) : null), [early, count, text, open]);
  const lines = useMemo(() => (early ? null : parseDiff(text)), [early, text]);
  const rows = useMemo(() => head?.rows ?? foldContext(lines ?? [], open), [head, lines, open]);
  const total = head && !head.whole ? Infinity : rows.length;
  const wanted = Math.min(limit, total);
  const filling = count < wanted;
  const shown = rows.length > Math.min(limit, count) ? rows.slice(0, Math.min(limit, count)) : rows;
  const language = languageOfPath(file.path);

  useEffect(() => {
    if (!filling) return;
    const frame = requestAnimationFrame(() => setView((v) => ({ ...v, count: v.count + DIFF_ROWS_PER_FRAME })));
    return () => cancelAnimationFrame(frame);
  }, [filling, count]);

  useEffect(() => {
    const root = ref.current;
    if (!root || !language || filling || shown.length > MAX_HIGHLIGHT_ROWS) return;
    let cancelled = false;
    // After the plain rows are on screen: colouring never delays the first paint.
    const idle = requestAnimationFrame(() => {
      void import("../../chat/markdown").then((m) => (cancelled ? undefined : m.highlightLinesWithin(root, ".diff-code", language)));
    });
    return () => {
      cancelled = true;
      cancelAnimationFrame(idle);
    };
  }, [language, shown, filling]);

  if (file.binary) return <p className="diff-binary">Binary file {CHANGE_TEXT[file.change]}</p>;

  async function loadRest(stashId: string) {
    setLoading(true);
    setFailed(false);
    try {
      const rest = await fetchToolOutput(chatId, stashId);
      setView((v) => ({ ...v, whole: rest }));
    } catch {
      setFailed(true);
    } finally {
      setLoading(false);
    }
  }

  const more = rows.length - wanted;
  const cut = whole === null && typeof file.stash_id === "string" && file.stash_id !== "";
  return (
    <div className="diff" ref={ref} data-path={file.path} aria-busy={filling || undefined}>
      {shown.length === 0 && <p className="diff-empty">No lines changed.</p>}
      {shown.map((row) => (
        // Keyed by the line's place in the diff: a row's text never changes under its key, so
        // the colours set on it stay true.
        <DiffRowView key={row.type === "fold" ? `f${row.id}` : `l${row.at}`} row={row} onOpen={(id) => setView((v) => ({ ...v, open: new Set(v.open).add(id) }))} />
      ))}
      {more > 0 && !filling && (
        <button type="button" className="diff-more" onClick={() => setView((v) => ({ ...v, limit: v.limit + DIFF_PAGE_ROWS * 4 }))}>
          Show more ({formatCount(more)} more lines)
        </button>
      )}
      {more === 0 && !filling && cut && file.stash_id && (
        <button type="button" className="diff-more" disabled={loading} aria-busy={loading} onClick={() => void loadRest(file.stash_id as string)}>
          {loading ? "Loading…" : `Show the rest (${formatCount(Math.max(0, (file.full_len ?? 0) - file.diff.length))} more characters)`}
        </button>
      )}
      {failed && (
        <p className="tool-meta tool-meta-error" role="alert">
          Couldn't load the rest of the diff.
        </p>
      )}
    </div>
  );
}

function DiffRowView({ row, onOpen }: { row: DiffRow; onOpen: (id: number) => void }) {
  if (row.type === "fold") {
    return (
      <button type="button" className="diff-fold" onClick={() => onOpen(row.id)}>
        ⋯ {formatCount(row.lines.length)} unchanged {row.lines.length === 1 ? "line" : "lines"}
      </button>
    );
  }
  const { kind, text } = row.line;
  if (kind === "hunk") return <div className="diff-line diff-hunk" aria-hidden="true" />;
  // One element a line (its sign drawn by CSS): a long diff paints fast.
  return (
    <div className="diff-line diff-code" data-kind={kind}>
      {text}
    </div>
  );
}

/** "+12 −3", coloured, for a file or a tool head. */
export function DiffCounts({ added, removed }: { added: number; removed: number }) {
  return (
    <span className="diff-counts" aria-label={`${added} added, ${removed} removed`}>
      <span className="diff-count-add">+{formatCount(added)}</span> <span className="diff-count-del">{"\u2212"}{formatCount(removed)}</span>
    </span>
  );
}

/** The files a reply changed, under it: tap one for its diffs. */
export function FilesChanged({ chatId, files }: { chatId: string; files: ChangedFile[] }) {
  const [shown, setShown] = useState<string | null>(null);
  const toggle = useCallback((path: string) => setShown((s) => (s === path ? null : path)), []);
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  return (
    <section className="files-changed" aria-label="Files changed">
      <h3 className="files-changed-title">
        {files.length === 1 ? "1 file changed" : `${files.length} files changed`} <span className="visually-hidden">{countsText(added, removed)}</span>
        <DiffCounts added={added} removed={removed} />
      </h3>
      <ul className="files-changed-list">
        {files.map((file) => (
          <ChangedFileRow key={file.path} chatId={chatId} file={file} open={shown === file.path} onToggle={toggle} />
        ))}
      </ul>
    </section>
  );
}

/** One file of Files changed; only the file tapped renders again (a turn can change hundreds). */
const ChangedFileRow = memo(function ChangedFileRow({
  chatId,
  file,
  open,
  onToggle,
}: {
  chatId: string;
  file: ChangedFile;
  open: boolean;
  onToggle: (path: string) => void;
}) {
  return (
    <li>
      <button type="button" className="files-changed-file" aria-expanded={open} onClick={() => onToggle(file.path)}>
        <span className="files-changed-path">{file.path}</span>
        {file.binary ? <span className="diff-counts">binary</span> : <DiffCounts added={file.added} removed={file.removed} />}
      </button>
      {open && (
        <div className="files-changed-diffs">
          {file.edits.map((edit, i) => (
            <FileDiffView key={`${edit.toolUseId}:${i}`} chatId={chatId} file={edit.file} />
          ))}
        </div>
      )}
    </li>
  );
});
