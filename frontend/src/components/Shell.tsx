//! The signed-in shell: top bar with the account menu, an honest empty state, and the
//! composer's place, inactive until chats exist.

import { useMutation } from "@tanstack/react-query";
import { signOutEverywhere, type Session } from "../api/auth";
import { ApiError } from "../api/client";
import { AccountMenu } from "./AccountMenu";
import { BrandMark } from "./BrandMark";

export interface ShellProps {
  session: Session;
  onSignOut: (everywhere: boolean) => void;
}

export function Shell({ session, onSignOut }: ShellProps) {
  const everywhere = useMutation({
    mutationFn: signOutEverywhere,
    onSuccess: () => onSignOut(true),
  });
  const error =
    everywhere.error instanceof ApiError && everywhere.error.status !== 401
      ? `Couldn't sign out everywhere: ${everywhere.error.message}`
      : null;

  return (
    <div className="shell">
      <title>Möbius</title>
      <header className="topbar">
        <div className="topbar-brand">
          <BrandMark size={28} />
          <span className="topbar-name">Möbius</span>
        </div>
        <AccountMenu
          username={session.username}
          onSignOut={() => onSignOut(false)}
          onSignOutEverywhere={() => everywhere.mutate()}
          signingOutEverywhere={everywhere.isPending}
          error={error}
        />
      </header>
      <main className="shell-main">
        <section className="empty" aria-labelledby="empty-title">
          <svg className="empty-icon" viewBox="0 0 48 48" aria-hidden="true" focusable="false">
            <path d="M10 12h28a4 4 0 0 1 4 4v14a4 4 0 0 1-4 4H22l-8 6v-6h-4a4 4 0 0 1-4-4V16a4 4 0 0 1 4-4Z" />
          </svg>
          <h1 id="empty-title" className="empty-title">
            No chats yet
          </h1>
        </section>
      </main>
      <div className="composer" aria-hidden="true">
        <div className="composer-box">
          <span className="composer-placeholder">Message Möbius</span>
          <span className="composer-send">
            <svg viewBox="0 0 24 24" focusable="false">
              <path d="M12 19V5M6 11l6-6 6 6" />
            </svg>
          </span>
        </div>
      </div>
    </div>
  );
}
