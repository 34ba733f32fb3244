import { act, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { installPromptStore } from "../../pwa/install";
import { InstallOffer } from "./InstallOffer";

/** A `beforeinstallprompt` as Chromium fires it. */
function firePrompt(outcome: "accepted" | "dismissed") {
  const event = Object.assign(new Event("beforeinstallprompt", { cancelable: true }), {
    prompt: vi.fn(() => Promise.resolve()),
    userChoice: Promise.resolve({ outcome }),
  });
  act(() => {
    window.dispatchEvent(event);
  });
  return event;
}

beforeEach(() => {
  localStorage.clear();
  installPromptStore.set(null);
});
afterEach(() => vi.restoreAllMocks());

describe("the shell's install offer", () => {
  it("waits for the browser's prompt, shows it on Install, and does not come back", async () => {
    const { unmount } = render(<InstallOffer />);
    expect(screen.queryByRole("region", { name: "Install Möbius" })).toBeNull();
    const event = firePrompt("accepted");
    expect(event.defaultPrevented).toBe(true);
    fireEvent.click(screen.getByRole("button", { name: "Install" }));
    expect(event.prompt).toHaveBeenCalledOnce();
    await vi.waitFor(() => expect(screen.queryByRole("region", { name: "Install Möbius" })).toBeNull());
    unmount();
    render(<InstallOffer />);
    firePrompt("accepted");
    expect(screen.queryByRole("region", { name: "Install Möbius" })).toBeNull();
  });

  it("is dismissed for good", () => {
    const { unmount } = render(<InstallOffer />);
    firePrompt("dismissed");
    fireEvent.click(screen.getByRole("button", { name: "Dismiss the install offer" }));
    expect(screen.queryByRole("region", { name: "Install Möbius" })).toBeNull();
    unmount();
    render(<InstallOffer />);
    firePrompt("dismissed");
    expect(screen.queryByRole("region", { name: "Install Möbius" })).toBeNull();
  });

  it("on iOS, where no prompt exists, shows the Share › Add to Home Screen steps", () => {
    vi.spyOn(navigator, "userAgent", "get").mockReturnValue("Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Version/18.0 Mobile/15E148 Safari/604.1");
    render(<InstallOffer />);
    const offer = screen.getByRole("region", { name: "Install Möbius" });
    fireEvent.click(screen.getByRole("button", { name: "How" }));
    expect(offer.textContent).toContain("Add to Home Screen");
  });
});
