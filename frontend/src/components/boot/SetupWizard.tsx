//! First-boot setup: creates the owner account, then signs straight in.

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { createOwner } from "../../api/auth";
import { describeAuthFailure, type AuthFailure } from "../../auth/errors";
import { completeSignIn, verifyToken } from "../../auth/signIn";
import { firstInvalid, PASSWORD_MIN_CHARS, validateSetup, type SetupValues } from "../../auth/validation";
import { AuthLayout } from "./AuthLayout";
import { Field } from "../ui/Field";
import { FormAlert } from "../ui/FormAlert";

const ORDER = ["username", "password", "confirm"] as const;

export function SetupWizard({ onAlreadyConfigured }: { onAlreadyConfigured: () => void }) {
  const queryClient = useQueryClient();
  const [values, setValues] = useState<SetupValues>({ username: "", password: "", confirm: "" });
  const [attempted, setAttempted] = useState(false);
  const [failure, setFailure] = useState<AuthFailure | null>(null);
  const usernameRef = useRef<HTMLInputElement>(null);
  const passwordRef = useRef<HTMLInputElement>(null);
  const confirmRef = useRef<HTMLInputElement>(null);
  const focus = (field: keyof SetupValues) =>
    ({ username: usernameRef, password: passwordRef, confirm: confirmRef })[field].current?.focus();

  const mutation = useMutation({
    mutationFn: async (form: SetupValues) =>
      verifyToken(await createOwner({ username: form.username.trim(), password: form.password })),
    onSuccess: (signedIn) => completeSignIn(queryClient, signedIn),
    onError: (error) => {
      const described = describeAuthFailure(error, "setup");
      setFailure(described);
      if (described.field) focus(described.field);
    },
  });

  const errors = attempted ? validateSetup(values) : {};
  const set = (field: keyof SetupValues) => (value: string) => setValues((current) => ({ ...current, [field]: value }));

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (mutation.isPending) return;
    setAttempted(true);
    setFailure(null);
    const invalid = firstInvalid(ORDER, validateSetup(values));
    if (invalid) {
      focus(invalid);
      return;
    }
    mutation.mutate(values);
  }

  return (
    <AuthLayout
      title="Welcome to Möbius"
      lead="Create the owner account for this server. You'll use it to sign in on every device."
    >
      <title>Set up · Möbius</title>
      <form className="auth-form" onSubmit={submit} noValidate aria-label="Create owner account">
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
          autoComplete="new-password"
          hint={`At least ${PASSWORD_MIN_CHARS} characters.`}
          value={values.password}
          onChange={set("password")}
          error={errors.password}
        />
        <Field
          ref={confirmRef}
          label="Confirm password"
          name="confirm"
          type="password"
          autoComplete="new-password"
          value={values.confirm}
          onChange={set("confirm")}
          error={errors.confirm}
        />
        <FormAlert>
          {failure && (
            <>
              <span>{failure.message}</span>
              {failure.alreadyConfigured && (
                <button type="button" className="link-button" onClick={onAlreadyConfigured}>
                  Go to sign in
                </button>
              )}
            </>
          )}
        </FormAlert>
        <button className="button button-primary" type="submit" disabled={mutation.isPending} aria-busy={mutation.isPending}>
          {mutation.isPending ? "Creating account…" : "Create account"}
        </button>
      </form>
    </AuthLayout>
  );
}
