//! Dictation with the browser's own speech recognition (Chrome, Safari, Edge: the prefixed
//! `webkitSpeechRecognition`); where it does not exist the composer offers no microphone.

/** The parts of the Web Speech API the composer uses. */
export interface Recognizer {
  lang: string;
  continuous: boolean;
  interimResults: boolean;
  onresult: ((event: { resultIndex: number; results: ArrayLike<{ isFinal: boolean; 0: { transcript: string } }> }) => void) | null;
  onend: (() => void) | null;
  onerror: ((event: { error: string }) => void) | null;
  start(): void;
  stop(): void;
}

type RecognizerClass = new () => Recognizer;

/** The browser's speech recognition, or null where there is none. */
export function speechRecognition(scope: object = globalThis): RecognizerClass | null {
  const w = scope as { SpeechRecognition?: RecognizerClass; webkitSpeechRecognition?: RecognizerClass };
  return w.SpeechRecognition ?? w.webkitSpeechRecognition ?? null;
}

/** `text` with dictated `words` added: a space between, a capital after a sentence's end. */
export function appendDictation(text: string, words: string): string {
  const spoken = words.trim();
  if (spoken === "") return text;
  if (text.trim() === "") return spoken.charAt(0).toUpperCase() + spoken.slice(1);
  const sentenceEnded = /[.!?]\s*$/.test(text);
  const piece = sentenceEnded ? spoken.charAt(0).toUpperCase() + spoken.slice(1) : spoken;
  return /\s$/.test(text) ? `${text}${piece}` : `${text} ${piece}`;
}
