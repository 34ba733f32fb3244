// The frame message names are written once (public/runtime/messages.js): every name is unique,
// the shell's broker reads every message a frame sends, app-frame.js (which cannot import) spells
// only names of the module, and no other file of either side spells one out.
import { describe, expect, it } from "vitest";
import { parseFrameMessage } from "./broker";
import { CHAT_EMBED, CHAT_EMBED_PREFIX, FROM_FRAME, TO_FRAME, type FromFrameType } from "./messages";

const sources = {
  ...import.meta.glob<string>("../../public/**/*.js", { query: "?raw", import: "default", eager: true }),
  ...import.meta.glob<string>(["./**/*.{ts,tsx}", "../embed/**/*.{ts,tsx}", "!**/*.test.{ts,tsx}"], { query: "?raw", import: "default", eager: true }),
};
const MODULE = "../../public/runtime/messages.js";
const FRAME_BOOTSTRAP = "../../public/app-frame.js";

const names: string[] = [...Object.values(FROM_FRAME), ...Object.values(TO_FRAME), ...Object.values(CHAT_EMBED)];

/** The `moebius:…` string literals of `code`, comments left out. */
function spelled(code: string): string[] {
  const withoutComments = code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return [...withoutComments.matchAll(/["'`](moebius:[a-z:-]+)["'`]/g)].map((m) => m[1] ?? "");
}

describe("frame message names", () => {
  it("are unique, and each group keeps its prefix", () => {
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^moebius:[a-z][a-z-]*(:[a-z][a-z-]*)?$/);
    for (const name of Object.values(CHAT_EMBED)) expect(name.startsWith(CHAT_EMBED_PREFIX)).toBe(true);
  });

  it("are all read by the shell's broker when a frame sends them", () => {
    // The port's first message is checked where the port is opened (AppCanvas).
    const onWindow = Object.values(FROM_FRAME).filter((type) => type !== FROM_FRAME.storagePortReady);
    const fields: Partial<Record<FromFrameType, Record<string, unknown>>> = {
      [FROM_FRAME.moduleRequest]: { requestId: "r1" },
      [FROM_FRAME.storageRpc]: { requestId: "r1", method: "get", args: ["a"] },
      [FROM_FRAME.storageSet]: { key: "k", value: "v" },
      [FROM_FRAME.storageRemove]: { key: "k" },
      [FROM_FRAME.openChat]: { chatId: "c1" },
      [FROM_FRAME.openApp]: { appId: 3 },
      [FROM_FRAME.appIntentApplied]: { nonce: "n1" },
      [FROM_FRAME.installApp]: { source: "https://example.com/app.git" },
      [FROM_FRAME.manageApp]: { action: "update", appId: 3 },
      [FROM_FRAME.navForwardAck]: { requestId: "r1" },
      [FROM_FRAME.navForwardRejected]: { requestId: "r1" },
      [FROM_FRAME.capabilityOpen]: { requestId: "r1", capability: "camera" },
      [FROM_FRAME.capabilityControl]: { requestId: "r1", capability: "camera", action: "cancel" },
      [FROM_FRAME.immersive]: { value: true },
    };
    for (const type of onWindow) expect(parseFrameMessage({ type, ...fields[type] })?.type, type).toBe(type);
  });

  it("are spelled out only by app-frame.js, which spells no other", () => {
    expect(Object.keys(sources)).toContain(FRAME_BOOTSTRAP);
    expect(Object.keys(sources)).toContain("./AppCanvas.tsx");
    const bootstrap = spelled(sources[FRAME_BOOTSTRAP] ?? "");
    expect(bootstrap).toContain(TO_FRAME.frameInit);
    for (const name of bootstrap) expect(names, `app-frame.js sends or reads ${name}`).toContain(name);
    for (const [path, code] of Object.entries(sources)) {
      if (path === MODULE || path === FRAME_BOOTSTRAP) continue;
      const literal = spelled(code).filter((name) => names.includes(name) || name.startsWith(CHAT_EMBED_PREFIX));
      expect(literal, `${path} names its messages through runtime/messages.js`).toEqual([]);
    }
  });
});
