//! A labelled text input with an optional hint, an inline error and a show/hide toggle for
//! passwords. Errors are tied to the input with `aria-describedby` and `aria-invalid`.

import { useId, useState, type Ref } from "react";

export interface FieldProps {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  type?: "text" | "password";
  autoComplete: string;
  hint?: string;
  error?: string | undefined;
  autoFocus?: boolean;
  ref?: Ref<HTMLInputElement>;
}

export function Field({
  label,
  name,
  value,
  onChange,
  type = "text",
  autoComplete,
  hint,
  error,
  autoFocus,
  ref,
}: FieldProps) {
  const id = useId();
  const [revealed, setRevealed] = useState(false);
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  // The error replaces the hint while it shows, so only one of them describes the input.
  const describedBy = error ? errorId : hint ? hintId : undefined;
  const isPassword = type === "password";

  return (
    <div className="field" data-invalid={error ? "" : undefined}>
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      <div className="field-control">
        <input
          ref={ref}
          id={id}
          name={name}
          className="field-input"
          type={isPassword && !revealed ? "password" : "text"}
          value={value}
          onChange={(event) => onChange(event.target.value)}
          autoComplete={autoComplete}
          autoCapitalize="none"
          autoCorrect="off"
          spellCheck={false}
          required
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy}
          autoFocus={autoFocus}
        />
        {isPassword && (
          <button
            type="button"
            className="field-reveal"
            aria-pressed={revealed}
            aria-controls={id}
            onClick={() => setRevealed((shown) => !shown)}
          >
            {revealed ? "Hide" : "Show"}
            <span className="visually-hidden"> password</span>
          </button>
        )}
      </div>
      {hint && !error && (
        <p className="field-hint" id={hintId}>
          {hint}
        </p>
      )}
      {error && (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      )}
    </div>
  );
}
