import { describe, expect, it, vi } from "vitest";
import { readStandaloneIdentity, redeemInstallPass } from "./standalone";

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

describe("install pass", () => {
  const identity = { id: 3, slug: "hello", name: "Hello", theme_color: null, background_color: null };

  it("is traded once for a session and taken out of the address", async () => {
    history.replaceState(null, "", "/apps/hello/?install_pass=abc&x=1");
    const redeem = vi.fn(() => Promise.resolve({ access_token: "tok" }));
    const store = vi.fn();
    await redeemInstallPass(identity, false, redeem, store);
    expect(redeem).toHaveBeenCalledWith("abc", "hello");
    expect(store).toHaveBeenCalledWith("tok");
    expect(location.search).toBe("?x=1");
  });

  it("is only dropped when signed in already, and a refused pass leaves the sign-in form", async () => {
    history.replaceState(null, "", "/apps/hello/?install_pass=abc");
    const redeem = vi.fn(() => Promise.reject(new Error("401")));
    const store = vi.fn();
    await redeemInstallPass(identity, true, redeem, store);
    expect(redeem).not.toHaveBeenCalled();
    expect(location.search).toBe("");
    history.replaceState(null, "", "/apps/hello/?install_pass=abc");
    await redeemInstallPass(identity, false, redeem, store);
    expect(store).not.toHaveBeenCalled();
  });
});
