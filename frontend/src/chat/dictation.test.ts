import { describe, expect, it } from "vitest";
import { appendDictation, speechRecognition } from "./dictation";

describe("dictation", () => {
  it("finds the browser's recognizer, prefixed or not, and nothing where there is none", () => {
    class R {}
    expect(speechRecognition({ webkitSpeechRecognition: R })).toBe(R);
    expect(speechRecognition({ SpeechRecognition: R })).toBe(R);
    expect(speechRecognition({})).toBeNull();
  });

  it("adds spoken words after what is typed, capitalising a new sentence", () => {
    expect(appendDictation("", "hello there")).toBe("Hello there");
    expect(appendDictation("Buy", "milk")).toBe("Buy milk");
    expect(appendDictation("Done. ", "next thing")).toBe("Done. Next thing");
    expect(appendDictation("Done.", "next")).toBe("Done. Next");
    expect(appendDictation("keep", "   ")).toBe("keep");
  });
});
