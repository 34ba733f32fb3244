//! The centred card that frames the setup, sign-in and "couldn't reach" screens.

import type { ReactNode } from "react";
import { BrandMark } from "../ui/BrandMark";

export function AuthLayout({ title, lead, children }: { title: string; lead?: ReactNode; children: ReactNode }) {
  return (
    <main className="auth">
      <div className="auth-card">
        <header className="auth-header">
          <BrandMark size={44} className="auth-mark" />
          <h1 className="auth-title">{title}</h1>
          {lead && <p className="auth-lead">{lead}</p>}
        </header>
        {children}
      </div>
    </main>
  );
}
