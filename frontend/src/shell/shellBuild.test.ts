import { afterEach, describe, expect, it, vi } from "vitest";
import { noteShellUpdated, reportShellReady, runningBuild, shellUpdateStore } from "./shellBuild";

function page(meta: string | null): Document {
  const doc = document.implementation.createHTMLDocument("t");
  if (meta !== null) {
    const tag = doc.createElement("meta");
    tag.name = "mobius-shell-build";
    tag.content = meta;
    doc.head.append(tag);
  }
  return doc;
}

describe("shell builds", () => {
  afterEach(() => shellUpdateStore.set(null));

  it("reads the build the server marked, and none on the stock shell", () => {
    expect(runningBuild(page("12"))).toBe(12);
    expect(runningBuild(page(null))).toBeNull();
    expect(runningBuild(page("x"))).toBeNull();
  });

  it("reports only a marked build as ready", async () => {
    const fetch = vi.spyOn(globalThis, "fetch").mockResolvedValue(new Response(null, { status: 204 }));
    await reportShellReady(null);
    expect(fetch).not.toHaveBeenCalled();
    await reportShellReady(3);
    expect(fetch).toHaveBeenCalledTimes(1);
    const call = fetch.mock.calls[0] as [string, RequestInit | undefined];
    expect(call[0]).toBe("/api/shell/ready");
    expect(JSON.parse(call[1]?.body as string)).toEqual({ build: 3 });
  });

  it("offers a reload only when another build than this page's is served", () => {
    noteShellUpdated(2, null, 2);
    expect(shellUpdateStore.get()).toBeNull();
    noteShellUpdated(3, null, 2);
    expect(shellUpdateStore.get()).toEqual({ build: 3, reason: null });
    noteShellUpdated(null, "rolled back", 3);
    expect(shellUpdateStore.get()).toEqual({ build: null, reason: "rolled back" });
  });
});
