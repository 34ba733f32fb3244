//! Markdown as a one-line preview (a notification's body): the words without the marks —
//! emphasis, inline code, fences, headings, list and quote markers; a link or an image becomes
//! its text. The server writes turn notices the same way (`push/notice.rs::plain_text`).

const LIST_MARK = /^(?:[-*+]|\d+\.)\s+/;

function inlinePlain(line: string): string {
  return line
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\*\*|__|~~|`/g, "")
    .replace(/\*(?=\S)|(?<=\S)\*/g, "");
}

export function plainText(markdown: string): string {
  const words: string[] = [];
  for (const raw of markdown.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("```") || line.startsWith("~~~")) continue;
    const bare = line.replace(/^#+\s*/, "").replace(/^>\s*/, "").replace(LIST_MARK, "");
    if (bare !== "") words.push(inlinePlain(bare));
  }
  return words.join(" ").trim();
}
