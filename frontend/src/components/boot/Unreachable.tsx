//! Shown when a boot check fails for any reason other than a 401: says what happened and
//! offers Retry, never a guessed screen.

import { ApiError } from "../../api/client";
import { AuthLayout } from "./AuthLayout";

function explain(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "timeout") return "The server took too long to answer.";
    if (error.isNetwork) return "The server didn't answer. Check that it's running and that you're online.";
    if (error.code === "bad_response") return "The server sent a reply this app couldn't read.";
    if (error.code.startsWith("http_")) return `The server answered with an error (HTTP ${error.status}).`;
    return `The server answered with an error: ${error.message}`;
  }
  return "Something unexpected went wrong while starting up.";
}

export function Unreachable({ error, retrying, onRetry }: { error: unknown; retrying: boolean; onRetry: () => void }) {
  return (
    <AuthLayout title="Couldn't reach Möbius" lead={explain(error)}>
      <title>Offline · Möbius</title>
      <button
        className="button button-primary"
        type="button"
        onClick={onRetry}
        disabled={retrying}
        aria-busy={retrying}
        autoFocus
      >
        {retrying ? "Trying again…" : "Retry"}
      </button>
    </AuthLayout>
  );
}
