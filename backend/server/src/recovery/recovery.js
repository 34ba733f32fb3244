// Möbius recovery: sign in, see the theme and its versions, reset it or go back to one; see
// the shell's builds (the screens the agent rebuilt), go back to one or to the stock screens. Signing
// in here is this device's session, so the shell gets the token too ("Open Möbius" goes on
// signed in), and a change forgets the theme the shell remembered for its first paint.
"use strict";
(function () {
  let token = null;
  const $ = (id) => document.getElementById(id);

  async function call(path, method) {
    const response = await fetch(path, { method: method || "GET", headers: { Authorization: "Bearer " + token, Accept: "application/json" } });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.message || "Möbius answered " + response.status + ".");
    return body;
  }

  // The shell's keys (src/auth/token.ts, src/shell/customTheme.ts).
  function forgetRemembered() {
    try {
      localStorage.removeItem("mobius.customTheme");
    } catch {
      // Storage off: the shell refetches the theme anyway once signed in.
    }
  }

  function show(error, text) {
    error.textContent = text || "";
    error.hidden = !text;
  }

  async function refresh() {
    const theme = await call("/api/theme");
    $("theme-state").textContent = theme.stock ? "The stock theme is on." : "A custom theme is on (version " + theme.version.slice(0, 12) + ").";
    $("reset-theme").disabled = theme.stock;
    const { versions, current } = await call("/api/theme/versions");
    const list = $("versions");
    list.replaceChildren();
    for (const v of versions) {
      const row = document.createElement("li");
      const text = document.createElement("span");
      text.textContent = v.source + " · " + new Date(v.at).toLocaleString() + (v.id === current ? " (current)" : "");
      row.append(text);
      if (v.id !== current) {
        const use = document.createElement("button");
        use.type = "button";
        use.textContent = "Use";
        use.setAttribute("aria-label", "Use the theme from " + new Date(v.at).toLocaleString());
        use.addEventListener("click", () => act(() => call("/api/theme/versions/" + encodeURIComponent(v.id) + "/restore", "POST")));
        row.append(use);
      }
      list.append(row);
    }
  }

  async function act(work, errorId) {
    const error = $(errorId || "theme-error");
    show(error, "");
    try {
      await work();
      forgetRemembered();
      await refresh();
      await refreshShell();
    } catch (failure) {
      show(error, failure.message);
    }
  }

  function useShell(build) {
    return act(async () => {
      const response = await fetch("/api/shell/use", {
        method: "POST",
        headers: { Authorization: "Bearer " + token, Accept: "application/json", "Content-Type": "application/json" },
        body: JSON.stringify({ build: build }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.message || "Möbius answered " + response.status + ".");
    }, "shell-error");
  }

  async function refreshShell() {
    const shell = await call("/api/shell");
    $("shell-state").textContent =
      shell.serving === null ? "The stock screens are on." : "The agent's build " + shell.serving + " is on.";
    $("stock-shell").disabled = shell.serving === null;
    const list = $("shell-builds");
    list.replaceChildren();
    for (const b of shell.builds) {
      const row = document.createElement("li");
      const text = document.createElement("span");
      const when = new Date(b.at).toLocaleString();
      text.textContent =
        "Build " + b.n + " · " + when + (b.n === shell.serving ? " (current)" : "") + (b.failed ? " · rolled back" : "");
      row.append(text);
      if (b.n !== shell.serving) {
        const use = document.createElement("button");
        use.type = "button";
        use.textContent = "Use";
        use.setAttribute("aria-label", "Use shell build " + b.n);
        use.addEventListener("click", () => useShell(b.n));
        row.append(use);
      }
      list.append(row);
    }
  }

  $("sign-in").addEventListener("submit", async (event) => {
    event.preventDefault();
    show($("sign-in-error"), "");
    try {
      const response = await fetch("/api/auth/token", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ username: $("username").value, password: $("password").value }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.message || "Sign-in failed.");
      token = body.access_token;
      try {
        localStorage.setItem("mobius.token", token);
      } catch {
        // Storage off: the shell asks to sign in again.
      }
      $("sign-in").hidden = true;
      $("tools").hidden = false;
      await refresh();
      await refreshShell();
    } catch (error) {
      show($("sign-in-error"), error.message);
    }
  });
  $("reset-theme").addEventListener("click", () => act(() => call("/api/theme/reset", "POST")));
  $("stock-shell").addEventListener("click", () => useShell(null));
})();
