//! What an app may ask of the shell (the host requests, an install for apps that manage apps,
//! plus a crash report).

/** What an app that manages apps may ask the owner to do to another app. */
export type ManageAction = "update" | "uninstall";

export type HostRequest =
  | { kind: "new-chat"; title: string | null; draft: string }
  | { kind: "open-chat"; chatId: string; draft: string }
  /** An app by id or slug, with a deep-link intent for it. */
  | { kind: "open-app"; appId: number | string; intent: string | null }
  /** An app with `permissions.manage_apps` asks to install `source`: the owner reviews it first. */
  | { kind: "install-app"; source: string }
  /** An app with `permissions.manage_apps` asks to update or uninstall an app: the owner sees the preview or the choice first. */
  | { kind: "manage-app"; action: ManageAction; appId: number }
  | { kind: "open-settings"; section: string | null }
  | { kind: "report"; message: string };

/** Deep-link intent names, the original platform's alphabet. */
const INTENT_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A valid intent name, or null. */
export function intentName(raw: unknown): string | null {
  return typeof raw === "string" && INTENT_NAME.test(raw) ? raw : null;
}

/** The draft that asks the agent to fix a crashed app. */
export function crashDraft(appName: string, message: string): string {
  return `The app “${appName}” failed:\n\n${message.trim() || "(no details)"}\n\nPlease look into it and fix it.`;
}
