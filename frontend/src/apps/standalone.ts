//! The standalone host (`/apps/<slug>/`): the server serves the shell's index.html with the
//! app's identity in `<script type="application/json" id="__mobius-standalone-app__">`, and the
//! shell then boots straight into that one app.

export interface StandaloneIdentity {
  id: number;
  slug: string;
  name: string;
  theme_color: string | null;
  background_color: string | null;
}

/** The identity this page was served with, or null in the regular shell. */
export function readStandaloneIdentity(doc: Document = document): StandaloneIdentity | null {
  const el = doc.getElementById("__mobius-standalone-app__");
  if (!el || el.getAttribute("type") !== "application/json") return null;
  try {
    const raw = JSON.parse(el.textContent || "null") as Partial<StandaloneIdentity> | null;
    if (!raw || typeof raw.id !== "number" || !Number.isSafeInteger(raw.id) || raw.id <= 0) return null;
    if (typeof raw.slug !== "string" || !/^[a-z0-9][a-z0-9_-]{0,127}$/.test(raw.slug)) return null;
    return {
      id: raw.id,
      slug: raw.slug,
      name: typeof raw.name === "string" && raw.name ? raw.name : raw.slug,
      theme_color: typeof raw.theme_color === "string" ? raw.theme_color : null,
      background_color: typeof raw.background_color === "string" ? raw.background_color : null,
    };
  } catch {
    return null;
  }
}

/**
 * On an installed home-screen app opened with `?install_pass=` (iOS gives it storage of its
 * own, so it starts signed out): trades the one-use pass for a session once, and takes the pass
 * out of the address either way.
 */
export async function redeemInstallPass(
  identity: StandaloneIdentity | null,
  hasToken: boolean,
  redeem: (pass: string, slug: string) => Promise<{ access_token: string }>,
  store: (token: string) => void,
): Promise<void> {
  if (!identity) return;
  const params = new URLSearchParams(location.search);
  const pass = params.get("install_pass");
  if (!pass) return;
  params.delete("install_pass");
  const rest = params.toString();
  history.replaceState(history.state, "", `${location.pathname}${rest ? `?${rest}` : ""}`);
  if (hasToken) return;
  try {
    store((await redeem(pass, identity.slug)).access_token);
  } catch {
    // Used, expired or for another app: the sign-in form shows instead.
  }
}
