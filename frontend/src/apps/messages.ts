//! The names of the frame messages (`public/runtime/messages.js`, which the runtime imports too)
//! and the types the shell builds on them: a name that is not in that module does not compile.

import type { CHAT_EMBED, FROM_FRAME, TO_FRAME } from "../../public/runtime/messages.js";

export { CHAT_EMBED, CHAT_EMBED_PREFIX, FROM_FRAME, TO_FRAME } from "../../public/runtime/messages.js";

/** The name of a message a frame sends the shell. */
export type FromFrameType = (typeof FROM_FRAME)[keyof typeof FROM_FRAME];
/** The name of a message the shell sends a frame. */
export type ToFrameType = (typeof TO_FRAME)[keyof typeof TO_FRAME];
/** A message the shell sends a frame (its fields are the runtime's to read). */
export type ToFrameMessage = { type: ToFrameType } & Record<string, unknown>;
/** The name of a message between `mobius.chat` and the nested chat page (src/embed/). */
export type ChatEmbedType = (typeof CHAT_EMBED)[keyof typeof CHAT_EMBED];
