//! Entry point: applies the theme, mounts the app inside the query client, and registers the
//! service worker.

import { QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { chatKey, fetchChat } from "./api/chats";
import { createQueryClient } from "./api/queryClient";
import { readToken } from "./auth/token";
import { preloadMarkdown } from "./components/Markdown";
import { redeemInstallPass } from "./api/apps";
import { redeemInstallPass as redeemFromUrl, readStandaloneIdentity } from "./apps/standalone";
import { writeToken } from "./auth/token";
import "./pwa/install";
import { registerServiceWorker } from "./pwa/register";
import { parseRoute } from "./shell/router";
import { initTheme } from "./shell/theme";
import "./styles.css";

initTheme();
const queryClient = createQueryClient();

// An installed home-screen app opened with its one-use install pass signs in with it.
void redeemFromUrl(readStandaloneIdentity(), readToken() !== null, redeemInstallPass, writeToken);

// Signed in already: fetch the open chat and the Markdown renderer while the session is checked.
if (readToken() !== null) {
  void preloadMarkdown();
  const route = parseRoute(location.pathname, location.search);
  if (route.name === "chat") void queryClient.prefetchQuery({ queryKey: chatKey(route.id), queryFn: () => fetchChat(route.id) });
}

const root = document.getElementById("root");
if (!root) throw new Error("index.html has no #root element");

createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);

registerServiceWorker();
