//! The live region a form uses for server-side failures. It is always mounted so screen
//! readers announce the message the moment it appears.

import type { ReactNode } from "react";

export function FormAlert({ children }: { children?: ReactNode }) {
  return (
    <div className="form-alert" role="alert" aria-live="assertive" aria-atomic="true">
      {children}
    </div>
  );
}
