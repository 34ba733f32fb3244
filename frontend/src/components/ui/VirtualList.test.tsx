import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { VirtualList, visibleRange } from "./VirtualList";

describe("virtual list", () => {
  it("covers exactly the rows that reach into the window", () => {
    const heights = [10, 20, 30, 40, 50];
    expect(visibleRange(heights, 0, 5)).toMatchObject({ start: 0, end: 1 });
    expect(visibleRange(heights, 15, 35)).toMatchObject({ start: 1, end: 3 });
    expect(visibleRange(heights, 60, 1000)).toMatchObject({ start: 3, end: 5 });
    expect(visibleRange(heights, 500, 600)).toMatchObject({ start: 5, end: 5 });
    expect(visibleRange([], 0, 100)).toMatchObject({ start: 0, end: 0 });
  });

  it("renders the first screenful of a long list and spacers for the rest", () => {
    const items = Array.from({ length: 10_000 }, (_, i) => `row ${i}`);
    const scroller = document.createElement("div");
    document.body.appendChild(scroller);
    const { container } = render(
      <VirtualList items={items} itemKey={(s) => s} renderItem={(s) => <li key={s}>{s}</li>} estimate={40} scroller={scroller} />,
      { container: scroller },
    );
    expect(screen.getByText("row 0")).toBeTruthy();
    const rendered = container.querySelectorAll("li:not(.virtual-spacer)").length;
    expect(rendered).toBeGreaterThan(10);
    expect(rendered).toBeLessThan(100);
    const spacers = [...container.querySelectorAll<HTMLElement>(".virtual-spacer")];
    expect(parseFloat(spacers[1]?.style.height ?? "0")).toBe((10_000 - rendered) * 40);
  });
});
