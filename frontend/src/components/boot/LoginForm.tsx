//! Sign-in for the owner, with a note when the previous session ended or was signed out.

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { pairDevice, signIn } from "../../api/auth";
import { describeAuthFailure } from "../../auth/errors";
import { completeSignIn, verifyToken } from "../../auth/signIn";
import { firstInvalid, validateLogin, type LoginValues } from "../../auth/validation";
import { AuthLayout } from "./AuthLayout";
import { Field } from "../ui/Field";
import { FormAlert } from "../ui/FormAlert";

/** Why the owner is looking at the sign-in form, when it is not a plain first visit. */
export type LoginNotice = "session-ended" | "signed-out" | "signed-out-everywhere";

const NOTICE_TEXT: Record<LoginNotice, string> = {
  "session-ended": "Your session ended — sign in again.",
  "signed-out": "You've signed out.",
  "signed-out-everywhere": "You've signed out on every device.",
};

const ORDER = ["username", "password"] as const;

/** The code a pairing address (`/pair?code=…`, the QR code of a signed-in device) carries. */
function pairingCodeOfAddress(): string | null {
  if (!/^\/pair\/?$/.test(window.location.pathname)) return null;
  return new URLSearchParams(window.location.search).get("code") ?? "";
}

export function LoginForm({ notice }: { notice: LoginNotice | null }) {
  const [pairing, setPairing] = useState<string | null>(pairingCodeOfAddress);
  if (pairing !== null) return <PairForm initialCode={pairing} onPassword={() => setPairing(null)} />;
  return <PasswordForm notice={notice} onPair={() => setPairing("")} />;
}

/** A new device signs in with the code a signed-in device shows. */
function PairForm({ initialCode, onPassword }: { initialCode: string; onPassword: () => void }) {
  const queryClient = useQueryClient();
  const [code, setCode] = useState(initialCode);
  const [failure, setFailure] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: async (value: string) => verifyToken(await pairDevice(value.trim())),
    onSuccess: (signedIn) => {
      if (/^\/pair\/?$/.test(window.location.pathname)) window.history.replaceState(null, "", "/");
      completeSignIn(queryClient, signedIn);
    },
    onError: (error) => setFailure(describeAuthFailure(error, "login").message),
  });
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (mutation.isPending) return;
    setFailure(null);
    if (code.trim() === "") {
      setFailure("Enter the code the other device shows.");
      return;
    }
    mutation.mutate(code);
  }
  return (
    <AuthLayout title="Pair this device">
      <title>Pair · Möbius</title>
      <p className="notice">On a device that is signed in, open Settings › Account › Pair a new device, then enter the code it shows (or scan its QR code).</p>
      <form className="auth-form" onSubmit={submit} noValidate aria-label="Pair this device">
        <Field label="Pairing code" name="code" autoComplete="one-time-code" value={code} onChange={setCode} autoFocus />
        <FormAlert>{failure}</FormAlert>
        <button className="button button-primary" type="submit" disabled={mutation.isPending} aria-busy={mutation.isPending}>
          {mutation.isPending ? "Pairing…" : "Pair"}
        </button>
        <button className="link-button" type="button" onClick={onPassword}>
          Sign in with the password instead
        </button>
      </form>
    </AuthLayout>
  );
}

function PasswordForm({ notice, onPair }: { notice: LoginNotice | null; onPair: () => void }) {
  const queryClient = useQueryClient();
  const [values, setValues] = useState<LoginValues>({ username: "", password: "" });
  const [attempted, setAttempted] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const usernameRef = useRef<HTMLInputElement>(null);
  const passwordRef = useRef<HTMLInputElement>(null);

  const mutation = useMutation({
    mutationFn: async (form: LoginValues) =>
      verifyToken(await signIn({ username: form.username.trim(), password: form.password })),
    onSuccess: (signedIn) => completeSignIn(queryClient, signedIn),
    onError: (error) => {
      setFailure(describeAuthFailure(error, "login").message);
      passwordRef.current?.focus();
      passwordRef.current?.select();
    },
  });

  const errors = attempted ? validateLogin(values) : {};
  const set = (field: keyof LoginValues) => (value: string) => setValues((current) => ({ ...current, [field]: value }));

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (mutation.isPending) return;
    setAttempted(true);
    setFailure(null);
    const invalid = firstInvalid(ORDER, validateLogin(values));
    if (invalid) {
      (invalid === "username" ? usernameRef : passwordRef).current?.focus();
      return;
    }
    mutation.mutate(values);
  }

  return (
    <AuthLayout title="Sign in to Möbius">
      <title>Sign in · Möbius</title>
      {/* The note explains why this form is showing; once the owner acts on it, it has served. */}
      {notice && !attempted && (
        <p className="notice" role="status">
          {NOTICE_TEXT[notice]}
        </p>
      )}
      <form className="auth-form" onSubmit={submit} noValidate aria-label="Sign in">
        <Field
          ref={usernameRef}
          label="Username"
          name="username"
          autoComplete="username"
          value={values.username}
          onChange={set("username")}
          error={errors.username}
          autoFocus
        />
        <Field
          ref={passwordRef}
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          value={values.password}
          onChange={set("password")}
          error={errors.password}
        />
        <FormAlert>{failure}</FormAlert>
        <button className="button button-primary" type="submit" disabled={mutation.isPending} aria-busy={mutation.isPending}>
          {mutation.isPending ? "Signing in…" : "Sign in"}
        </button>
        <button className="link-button" type="button" onClick={onPair}>
          Pair with a code from a signed-in device
        </button>
      </form>
    </AuthLayout>
  );
}
