//! Entry of the nested chat frame (`/shell/embed/chat`, embed-chat.html): no service worker, no
//! stored token — the session arrives from the app that embeds it.

import { QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createQueryClient } from "../api/queryClient";
import "../styles/index.css";
import { EmbedChat } from "./EmbedChat";

const root = document.getElementById("root");
if (!root) throw new Error("embed-chat.html has no #root element");

createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={createQueryClient()}>
      <EmbedChat />
    </QueryClientProvider>
  </StrictMode>,
);
