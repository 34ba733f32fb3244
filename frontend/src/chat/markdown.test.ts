import { describe, expect, it } from "vitest";
import { languageFor, renderMarkdown, renderMathWithin, safeHref } from "./markdown";

describe("markdown", () => {
  it("keeps http, https and mailto links and opens web links in a new tab", () => {
    const html = renderMarkdown("[a](https://example.com/x) [b](mailto:me@example.com)");
    expect(html).toContain('href="https://example.com/x"');
    expect(html).toContain('target="_blank"');
    expect(html).toContain('rel="noopener noreferrer nofollow"');
    expect(html).toContain('href="mailto:me@example.com"');
  });

  it("drops javascript:, data: and relative links but keeps their text", () => {
    const html = renderMarkdown("[x](javascript:alert(1)) [y](data:text/html,hi) [z](/etc/passwd) <a href=\"JaVaScRiPt:alert(1)\">w</a>");
    expect(html).not.toMatch(/<a[^>]*href="javascript:/i);
    expect(html).toContain("&lt;a href=");
    expect(html).not.toContain("data:text");
    expect(html).not.toContain('href="/etc/passwd"');
    expect(html).toContain("x");
    expect(html).toContain("z");
  });

  it("shows raw HTML as text and never lets script or handlers through", () => {
    const html = renderMarkdown('<script>alert(1)</script><img src=x onerror="alert(1)">\n\n**bold** <b onclick="x()">b</b>');
    expect(html).not.toMatch(/<[^>]+onclick/);
    expect(html).not.toContain("<script");
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;script&gt;");
    expect(html).toContain("<strong>bold</strong>");
  });

  it("renders images as links (the CSP blocks remote images)", () => {
    expect(renderMarkdown("![chart](https://example.com/c.png)")).toContain('<a href="https://example.com/c.png"');
  });

  it("marks the chat's own images for the message view and leaves other local paths as text", () => {
    const html = renderMarkdown("![chart](/api/chats/c1/media/chart-1a.png) ![x](/api/chats/c1/media/..%2Fkey) ![y](/etc/passwd)");
    expect(html).toContain('<span class="md-media" data-src="/api/chats/c1/media/chart-1a.png" data-alt="chart">chart</span>');
    expect(html).not.toContain("<img");
    expect(html).not.toContain('data-src="/etc/passwd"');
    expect(html).not.toContain("..%2Fkey\"");
  });

  it("renders GFM tables and fenced code with its language class", () => {
    const html = renderMarkdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n```ts\nconst x = 1;\n```");
    expect(html).toContain("<table>");
    expect(html).toContain('class="language-ts"');
  });

  it("maps fence labels to bundled languages", () => {
    expect(languageFor("ts")).toBe("typescript");
    expect(languageFor("Rust")).toBe("rust");
    expect(languageFor("sh")).toBe("bash");
    expect(languageFor("brainfuck")).toBeNull();
    expect(safeHref(" https://a.b ")).toBe("https://a.b/");
    expect(safeHref("vbscript:x")).toBeNull();
  });

  it("keeps math as its TeX source for KaTeX and leaves prices and code alone", () => {
    const inline = renderMarkdown("Euler: $e^{i\\pi} + 1 = 0$ and \\(a<b\\).");
    expect(inline).toContain('<span class="math-inline">e^{i\\pi} + 1 = 0</span>');
    expect(inline).toContain('<span class="math-inline">a&lt;b</span>');
    const display = renderMarkdown("Area:\n\n$$\n\\int_0^1 x\\,dx\n$$\n\nDone.");
    expect(display).toContain('<div class="math-display">\\int_0^1 x\\,dx</div>');
    expect(display).toContain("<p>Done.</p>");
    expect(renderMarkdown("It costs $5 and $10 today.")).not.toContain("math-");
    expect(renderMarkdown("Use `$x$` in the template.")).not.toContain("math-");
    expect(renderMarkdown("Price: $ 20$ flat")).not.toContain("math-");
    // TeX can't smuggle markup: it is text inside the element.
    expect(renderMarkdown("$<img src=x onerror=alert(1)>$")).not.toContain("<img");
  });

  it("typesets math with KaTeX and shows a bad formula's source instead of failing", async () => {
    const root = document.createElement("div");
    root.innerHTML = renderMarkdown("Ratio $\\frac{a}{b}$ and $\\badmacro{x}$ and $\\href{javascript:alert(1)}{x}$");
    document.body.append(root);
    await renderMathWithin(root);
    const maths = root.querySelectorAll(".math-inline");
    expect(maths).toHaveLength(3);
    expect(maths[0]?.querySelector(".katex")).not.toBeNull();
    expect(maths[0]?.getAttribute("data-tex")).toBe("\\frac{a}{b}");
    expect(maths[1]?.textContent).toContain("badmacro");
    expect(root.querySelector("a[href^='javascript']")).toBeNull();
    root.remove();
  });
});
