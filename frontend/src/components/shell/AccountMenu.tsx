//! The top bar's account menu: who is signed in, "Sign out" and "Sign out everywhere".
//! Keyboard: arrows move, Escape closes and returns focus, Tab leaves.

import { useEffect, useId, useRef, useState, type KeyboardEvent } from "react";

export interface AccountMenuProps {
  username: string;
  onSignOut: () => void;
  onSignOutEverywhere: () => void;
  signingOutEverywhere: boolean;
  error: string | null;
}

export function AccountMenu({ username, onSignOut, onSignOutEverywhere, signingOutEverywhere, error }: AccountMenuProps) {
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const buttonRef = useRef<HTMLButtonElement>(null);
  const menuRef = useRef<HTMLDivElement>(null);

  const items = () => [...(menuRef.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? [])];

  useEffect(() => {
    if (!open) return;
    items()[0]?.focus();
    const onPointerDown = (event: PointerEvent) => {
      const target = event.target as Node;
      if (!menuRef.current?.contains(target) && !buttonRef.current?.contains(target)) setOpen(false);
    };
    document.addEventListener("pointerdown", onPointerDown);
    return () => document.removeEventListener("pointerdown", onPointerDown);
  }, [open]);

  function close(returnFocus: boolean) {
    setOpen(false);
    if (returnFocus) buttonRef.current?.focus();
  }

  function onMenuKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const list = items().filter((item) => !item.disabled);
    const index = list.indexOf(document.activeElement as HTMLButtonElement);
    const focusAt = (next: number) => list[(next + list.length) % list.length]?.focus();
    switch (event.key) {
      case "Escape":
        event.preventDefault();
        close(true);
        break;
      case "ArrowDown":
        event.preventDefault();
        focusAt(index + 1);
        break;
      case "ArrowUp":
        event.preventDefault();
        focusAt(index - 1);
        break;
      case "Home":
        event.preventDefault();
        focusAt(0);
        break;
      case "End":
        event.preventDefault();
        focusAt(-1);
        break;
      case "Tab":
        close(false);
        break;
    }
  }

  function onButtonKeyDown(event: KeyboardEvent<HTMLButtonElement>) {
    if (event.key === "ArrowDown" && !open) {
      event.preventDefault();
      setOpen(true);
    }
  }

  return (
    <div className="account">
      <button
        ref={buttonRef}
        type="button"
        className="account-button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? menuId : undefined}
        aria-label={`Account menu for ${username}`}
        onClick={() => setOpen((shown) => !shown)}
        onKeyDown={onButtonKeyDown}
      >
        <span className="avatar" aria-hidden="true">
          {[...username][0]?.toUpperCase() ?? "?"}
        </span>
      </button>
      {open && (
        <div ref={menuRef} id={menuId} className="menu" role="menu" aria-label="Account" onKeyDown={onMenuKeyDown}>
          <p className="menu-caption" role="presentation">
            Signed in as <strong>{username}</strong>
          </p>
          <button type="button" role="menuitem" className="menu-item" onClick={onSignOut}>
            Sign out
          </button>
          <button
            type="button"
            role="menuitem"
            className="menu-item"
            onClick={onSignOutEverywhere}
            disabled={signingOutEverywhere}
            aria-busy={signingOutEverywhere}
          >
            <span>{signingOutEverywhere ? "Signing out everywhere…" : "Sign out everywhere"}</span>
            <span className="menu-item-note">Ends the session on every device</span>
          </button>
          <p className="menu-error" role="alert">
            {error}
          </p>
        </div>
      )}
    </div>
  );
}
