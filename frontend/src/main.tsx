//! Entry point: applies the theme, mounts the app inside the query client, and registers the
//! service worker.

import { QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { fetchSession, SESSION_STALE_MS, sessionKey } from "./api/auth";
import { chatKey, fetchChat } from "./api/chats";
import { createQueryClient } from "./api/queryClient";
import { readToken } from "./auth/token";
import { preloadMarkdown } from "./components/chat/Markdown";
import { redeemInstallPass } from "./api/apps";
import { redeemInstallPass as redeemFromUrl, readStandaloneIdentity } from "./apps/standalone";
import { writeToken } from "./auth/token";
import "./pwa/install";
import { registerServiceWorker } from "./pwa/register";
import { parseRoute } from "./shell/router";
import { preloadRoute } from "./shell/routeModules";
import { chatListQuery } from "./shell/useChatList";
import { initTheme } from "./shell/theme";
import { initCustomTheme } from "./shell/customTheme";
import "./styles/index.css";

initTheme();
initCustomTheme();
const queryClient = createQueryClient();

// An installed home-screen app opened with its one-use install pass signs in with it.
void redeemFromUrl(readStandaloneIdentity(), readToken() !== null, redeemInstallPass, writeToken);

// Signed in already: ask for the session, the drawer's first page and the page's own code now,
// while the scripts still run (the shell would ask only after its first render), and on a
// chat's page for that chat and the Markdown renderer too (elsewhere the shell loads it when
// idle: it would hold up the first paint).
if (readToken() !== null) {
  void queryClient.prefetchQuery({ queryKey: sessionKey, queryFn: ({ signal }) => fetchSession({ signal }), staleTime: SESSION_STALE_MS });
  void queryClient.prefetchQuery(chatListQuery(queryClient));
  const route = parseRoute(location.pathname, location.search);
  preloadRoute(route);
  if (route.name === "chat") {
    void preloadMarkdown();
    void queryClient.prefetchQuery({ queryKey: chatKey(route.id), queryFn: () => fetchChat(route.id) });
  }
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
