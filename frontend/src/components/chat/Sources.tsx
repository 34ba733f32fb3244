//! The web pages a reply's searches and fetches brought back, as chips under it (title and
//! domain; a tap opens the page in a new tab, with no referrer).

import { useState } from "react";
import type { WebSource } from "../../api/types";
import { domainOf } from "../../chat/diff";

/** Chips shown before "+N more". */
const SHOWN_SOURCES = 8;

export function Sources({ sources }: { sources: WebSource[] }) {
  const [all, setAll] = useState(false);
  const shown = all ? sources : sources.slice(0, SHOWN_SOURCES);
  return (
    <section className="sources" aria-label="Sources">
      <ul className="sources-list">
        {shown.map((source) => (
          <li key={source.url}>
            <a className="source-chip" href={source.url} target="_blank" rel="noopener noreferrer nofollow">
              <span className="source-title">{source.title ?? domainOf(source.url)}</span>
              {source.title && <span className="source-domain">{domainOf(source.url)}</span>}
            </a>
          </li>
        ))}
      </ul>
      {sources.length > shown.length && (
        <button type="button" className="sources-more" onClick={() => setAll(true)}>
          +{sources.length - shown.length} more
        </button>
      )}
    </section>
  );
}
