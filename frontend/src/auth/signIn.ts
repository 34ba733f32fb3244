//! Finishing a sign-in: verify the new token, cache its session, then store it, so the shell
//! appears in one step with no splash in between.

import type { QueryClient } from "@tanstack/react-query";
import { fetchSession, sessionKey, type Session, type TokenResponse } from "../api/auth";
import { writeToken } from "./token";

/** The verified result of setup or sign-in. */
export interface SignedIn {
  token: string;
  session: Session;
}

/** Checks a freshly issued token against the server before anything relies on it. */
export async function verifyToken(response: TokenResponse): Promise<SignedIn> {
  const session = await fetchSession({ token: response.access_token });
  return { token: response.access_token, session };
}

/** Makes the verified token current. */
export function completeSignIn(queryClient: QueryClient, { token, session }: SignedIn): void {
  queryClient.removeQueries();
  queryClient.setQueryData(sessionKey, session);
  writeToken(token);
}
