//! The decision screen: a question pushed with answer buttons, opened by tapping its
//! notification (`/chat/<id>?question=<id>`) where the platform shows no buttons (iOS). It reads
//! the question from the service worker's cache, so it opens without the network, and answers
//! with the notification's single-use action token.

import { useEffect, useState } from "react";
import { apiFetch, ApiError } from "../../api/client";
import { DECISIONS_CACHE } from "../../pwa/cachePolicy";
import { decisionKey, parsePayload, type PushPayload } from "../../pwa/push";

async function keptDecision(questionId: string): Promise<PushPayload | null> {
  if (!("caches" in window)) return null;
  const cache = await caches.open(DECISIONS_CACHE);
  const response = await cache.match(decisionKey(questionId));
  return response ? parsePayload(await response.text()) : null;
}

async function forget(questionId: string): Promise<void> {
  if ("caches" in window) await (await caches.open(DECISIONS_CACHE)).delete(decisionKey(questionId));
}

function dropQuestionParam(): void {
  const url = new URL(location.href);
  url.searchParams.delete("question");
  history.replaceState(history.state, "", url.pathname + url.search);
}

export default function DecisionSheet({ search }: { search: string }) {
  const questionId = new URLSearchParams(search).get("question");
  const [kept, setKept] = useState<{ questionId: string; payload: PushPayload | null } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!questionId) return;
    let current = true;
    void keptDecision(questionId)
      .catch(() => null)
      .then((payload) => {
        if (current) setKept({ questionId, payload });
      });
    return () => {
      current = false;
    };
  }, [questionId]);

  const decision = kept && kept.questionId === questionId ? kept.payload : null;
  if (!questionId || !decision) return null;
  const close = () => {
    setKept(null);
    setError(null);
    dropQuestionParam();
  };
  const answer = async (action: string) => {
    setBusy(true);
    setError(null);
    try {
      await apiFetch("/api/push/action", {
        method: "POST",
        auth: false,
        body: { token: decision.action_token, question_id: decision.question_id, action },
      });
      await forget(questionId);
      close();
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 410)) {
        await forget(questionId);
        setError("This question was already answered or has expired; the chat shows where it stands.");
      } else {
        setError("Couldn't send the answer. Check the connection and try again.");
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="decision-backdrop">
      <section className="decision-sheet" role="dialog" aria-modal="true" aria-labelledby="decision-title">
        <h2 id="decision-title" className="settings-title">
          {decision.title}
        </h2>
        {decision.body && <p className="settings-lead">{decision.body}</p>}
        <div className="inline-actions">
          {decision.actions.map((a) => (
            <button key={a.action} type="button" className="btn btn-primary" disabled={busy} onClick={() => void answer(a.action)}>
              {a.title}
            </button>
          ))}
          <button type="button" className="btn btn-ghost" onClick={close}>
            Open the chat
          </button>
        </div>
        {error && (
          <p className="settings-error" role="alert">
            {error}
          </p>
        )}
      </section>
    </div>
  );
}
