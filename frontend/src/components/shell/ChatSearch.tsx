//! Search in the drawer: a field whose results (as you type, grouped by chat, matches marked)
//! replace the chat list while it holds words. Tapping a hit opens its chat at that message.

import { useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError } from "../../api/client";
import { MAX_QUERY_CHARS, groupHits, searchChats, snippetParts, type SearchHit } from "../../api/search";
import { Icon } from "../ui/Icon";

/** Typing pauses this long before a search is sent. */
const DEBOUNCE_MS = 150;
/** While the server still indexes an import, the search is asked again this often. */
const INDEXING_RETRY_MS = 1000;

/** A snippet with its matches in `<mark>`; the text is rendered as text, never as HTML. */
export function Snippet({ text }: { text: string }) {
  return (
    <>
      {snippetParts(text).map((part, i) => (part.match ? <mark key={i}>{part.text}</mark> : <span key={i}>{part.text}</span>))}
    </>
  );
}

interface Results {
  query: string;
  hits: SearchHit[];
  nextCursor: string | null;
  /** The server was still indexing imported messages when it answered. */
  indexing: boolean;
}

export interface ChatSearchProps {
  /** Opens a chat; `messageIdx` is the message to show, null for a title hit. */
  onOpenHit: (chatId: string, messageIdx: number | null) => void;
  /** What the drawer shows while the field is empty. */
  children: ReactNode;
}

export function ChatSearch({ onOpenHit, children }: ChatSearchProps) {
  const [query, setQuery] = useState("");
  const [results, setResults] = useState<Results | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  // Bumped to ask the same search again (while the server indexes an import).
  const [retry, setRetry] = useState(0);
  // Every search and page load takes a ticket; an answer for an older ticket is dropped.
  const ticket = useRef(0);
  const trimmed = query.trim();

  useEffect(() => {
    const mine = ++ticket.current;
    if (!trimmed) return;
    const controller = new AbortController();
    let again: ReturnType<typeof setTimeout> | undefined;
    const timer = setTimeout(() => {
      searchChats(query, { signal: controller.signal })
        .then((page) => {
          if (ticket.current !== mine) return;
          setResults({ query, hits: page.hits, nextCursor: page.next_cursor, indexing: page.indexing === true });
          setError(null);
          if (page.indexing) again = setTimeout(() => setRetry((n) => n + 1), INDEXING_RETRY_MS);
        })
        .catch((e: unknown) => {
          if (ticket.current !== mine || controller.signal.aborted) return;
          setError(e instanceof ApiError && e.isNetwork ? "You're offline. Search needs the server." : "Search didn't work. Try again.");
        });
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      clearTimeout(again);
      controller.abort();
    };
  }, [query, trimmed, retry]);

  const loadMore = () => {
    if (!results?.nextCursor) return;
    const mine = ++ticket.current;
    setLoadingMore(true);
    searchChats(results.query, { cursor: results.nextCursor })
      .then((page) => {
        if (ticket.current !== mine) return;
        setResults((r) => (r ? { ...r, hits: [...r.hits, ...page.hits], nextCursor: page.next_cursor } : r));
      })
      .catch(() => {
        if (ticket.current === mine) setError("Couldn't load more results.");
      })
      .finally(() => setLoadingMore(false));
  };

  const groups = results ? groupHits(results.hits) : [];
  return (
    <>
      <div className="drawer-search">
        <Icon name="search" size={16} className="drawer-search-icon" />
        <input
          type="search"
          className="drawer-search-input"
          placeholder="Search chats"
          aria-label="Search chats"
          maxLength={MAX_QUERY_CHARS}
          value={query}
          enterKeyHint="search"
          onChange={(event) => setQuery(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Escape" && query) {
              event.stopPropagation();
              setQuery("");
            }
          }}
        />
      </div>
      {!trimmed ? (
        children
      ) : (
        <div className="drawer-scroll search-results" role="region" aria-label="Search results" aria-busy={results?.query !== query || undefined}>
          {error && <p className="drawer-empty" role="alert">{error}</p>}
          {!error && results?.indexing && (
            <p className="drawer-empty search-indexing" role="status">
              Indexing recently imported messages… some may not be found yet.
            </p>
          )}
          {!error && results && results.hits.length === 0 && <p className="drawer-empty">No chats match “{results.query.trim()}”.</p>}
          {groups.map((group) => (
            <section key={group.chatId} className="drawer-section search-group" aria-label={group.title}>
              <h2 className="drawer-section-title search-group-title">{group.title}</h2>
              <ul className="drawer-list">
                {group.hits.map((hit) => (
                  <li key={`${hit.chat_id}:${hit.message_idx ?? "title"}`}>
                    <button type="button" className="search-hit" onClick={() => onOpenHit(hit.chat_id, hit.message_idx)}>
                      <span className="search-hit-snippet">
                        <Snippet text={hit.snippet} />
                      </span>
                      <span className="search-hit-meta">
                        {hit.message_idx === null ? "Title" : new Date(hit.ts).toLocaleDateString(undefined, { month: "short", day: "numeric", year: "numeric" })}
                      </span>
                    </button>
                  </li>
                ))}
              </ul>
            </section>
          ))}
          {results?.nextCursor && (
            <button type="button" className="link-button search-more" onClick={loadMore} disabled={loadingMore}>
              {loadingMore ? "Loading…" : "More results"}
            </button>
          )}
        </div>
      )}
    </>
  );
}
