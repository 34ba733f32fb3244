//! What an app may ask of the shell (the host requests, an install for apps that manage apps,
//! plus a crash report).

export type HostRequest =
  | { kind: "new-chat"; title: string | null; draft: string }
  | { kind: "open-chat"; chatId: string; draft: string }
  | { kind: "open-app"; appId: number }
  /** An app with `permissions.manage_apps` asks to install `source`: the owner reviews it first. */
  | { kind: "install-app"; source: string }
  | { kind: "open-settings"; section: string | null }
  | { kind: "report"; message: string };

/** The draft that asks the agent to fix a crashed app. */
export function crashDraft(appName: string, message: string): string {
  return `The app “${appName}” failed:\n\n${message.trim() || "(no details)"}\n\nPlease look into it and fix it.`;
}
