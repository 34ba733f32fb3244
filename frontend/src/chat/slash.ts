//! The composer's slash commands: typing `/` at the start of an empty box lists them, the
//! command word typed so far narrows the list. Pure, so the rules are unit-tested.

export interface SlashCommand {
  /** What goes in the box when picked (`/goal ` waits for the goal's words). */
  insert: string;
  name: string;
  /** One line saying what it does. */
  hint: string;
}

export const SLASH_COMMANDS: readonly SlashCommand[] = [
  { name: "/goal", insert: "/goal ", hint: "Work toward a goal; its plan stays pinned at the top" },
  { name: "/plan", insert: "/plan ", hint: "Plan first: approve the plan before anything changes" },
  { name: "/compact", insert: "/compact", hint: "Summarise the chat so far into a fresh session" },
];

/** The commands the box's text could be starting: it is `/` and part of one command's name. */
export function slashMatches(text: string): SlashCommand[] {
  if (!text.startsWith("/") || /\s/.test(text)) return [];
  const typed = text.toLowerCase();
  return SLASH_COMMANDS.filter((c) => c.name.startsWith(typed) && c.insert.trimEnd() !== text);
}
