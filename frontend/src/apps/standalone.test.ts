import { describe, expect, it } from "vitest";
import { readStandaloneIdentity } from "./standalone";

function docWith(slot: string | null): Document {
  const doc = document.implementation.createHTMLDocument("t");
  if (slot !== null) {
    const el = doc.createElement("script");
    el.type = "application/json";
    el.id = "__mobius-standalone-app__";
    el.textContent = slot;
    doc.head.appendChild(el);
  }
  return doc;
}

describe("standalone identity", () => {
  it("is read from the JSON slot the server injects", () => {
    const doc = docWith('{"id":3,"slug":"hello","name":"Hello","theme_color":"#112233","background_color":null}');
    expect(readStandaloneIdentity(doc)).toEqual({ id: 3, slug: "hello", name: "Hello", theme_color: "#112233", background_color: null });
  });

  it("is absent in the regular shell and when the slot is malformed", () => {
    expect(readStandaloneIdentity(docWith(null))).toBeNull();
    expect(readStandaloneIdentity(docWith("not json"))).toBeNull();
    expect(readStandaloneIdentity(docWith('{"id":"3","slug":"hello"}'))).toBeNull();
    expect(readStandaloneIdentity(docWith('{"id":3,"slug":"../x"}'))).toBeNull();
  });
});
