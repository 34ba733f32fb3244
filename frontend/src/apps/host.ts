//! What an app may ask of the shell (the four host requests, plus a crash report).

export type HostRequest =
  | { kind: "new-chat"; title: string | null; draft: string }
  | { kind: "open-chat"; chatId: string; draft: string }
  | { kind: "open-app"; appId: number }
  | { kind: "open-settings"; section: string | null }
  | { kind: "report"; message: string };

/** The draft that asks the agent to fix a crashed app. */
export function crashDraft(appName: string, message: string): string {
  return `The app “${appName}” failed:\n\n${message.trim() || "(no details)"}\n\nPlease look into it and fix it.`;
}
