import { describe, expect, it } from "vitest";
import { MAX_FILES_PER_MESSAGE, MAX_FILE_BYTES } from "../api/uploads";
import { admit, attachmentsOf, failed, pendingUploads, stagedReducer, type Staged } from "./attachments";

const staged = (id: string, over: Partial<Staged> = {}): Staged => ({
  id,
  name: `${id}.txt`,
  size: 3,
  type: "text/plain",
  status: "waiting",
  progress: 0,
  uploaded: null,
  error: null,
  previewUrl: null,
  ...over,
});

describe("composer attachments", () => {
  it("admits files up to the per-message count and size, saying why the rest are refused", () => {
    const full = Array.from({ length: MAX_FILES_PER_MESSAGE - 1 }, (_, i) => staged(`s${i}`));
    const { accepted, refusal } = admit(full, [
      { name: "big.mov", size: MAX_FILE_BYTES + 1 },
      { name: "ok.png", size: 10 },
      { name: "one-too-many.png", size: 10 },
    ]);
    expect(accepted).toEqual([1]);
    expect(refusal).toContain(`at most ${MAX_FILES_PER_MESSAGE} files`);
    expect(admit([], [{ name: "empty.txt", size: 0 }]).refusal).toContain("empty");
  });

  it("follows each upload from waiting to done, and a cut-off one resumes online", () => {
    const file = { name: "a.txt", path: "/d/a.txt", size: 3, mime_type: "text/plain", uploaded_at: 1, url: "/api/chats/c/uploads/a.txt", preview: false };
    let list = stagedReducer([], { type: "add", items: [staged("a"), staged("b")] });
    expect(pendingUploads(list)).toBe(true);
    list = stagedReducer(list, { type: "uploading", id: "a" });
    list = stagedReducer(list, { type: "progress", id: "a", progress: 0.5 });
    expect(list[0]?.progress).toBe(0.5);
    list = stagedReducer(list, { type: "done", id: "a", file });
    list = stagedReducer(list, { type: "failed", id: "b", error: "Waiting for the connection…", resumable: true });
    expect(pendingUploads(list)).toBe(true);
    expect(failed(list)).toBe(false);
    list = stagedReducer(list, { type: "resume" });
    expect(list[1]?.status).toBe("waiting");
    list = stagedReducer(list, { type: "failed", id: "b", error: "Programs are not accepted." });
    expect(failed(list)).toBe(true);
    list = stagedReducer(list, { type: "remove", id: "b" });
    expect(pendingUploads(list)).toBe(false);
    expect(attachmentsOf(list)).toEqual([{ name: "a.txt", mime_type: "text/plain", size: 3, preview: false }]);
  });
});
