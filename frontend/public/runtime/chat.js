// `window.mobius.chat`: conversations with the owner's agent, asked of the shell.

import { post } from "./bridge.js";

export const chat = {
  /** A new chat with the agent, its composer holding `draft`. */
  start({ title, draft } = {}) {
    post({ type: "moebius:new-chat", title: title ? String(title) : null, draft: draft ? String(draft) : "" });
  },
  open(chatId, { draft } = {}) {
    post({ type: "moebius:open-chat", chatId: String(chatId), draft: draft ? String(draft) : "" });
  },
};
