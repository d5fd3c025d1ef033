import { describe, expect, it } from "vitest";
import { screenshotName } from "./screenshots.ts";
import { STEPS } from "./tour-steps.ts";

describe("the screenshots' file names", () => {
  it.each([
    {
      index: 0,
      title: "Create a Shape",
      want: "01-create-a-shape.png",
      reason: "numbered from 1, two digits",
    },
    {
      index: 5,
      title: "A missed deletion is caught by the ShapeRef",
      want: "06-a-missed-deletion-is-caught-by-the-shaperef.png",
      reason: "lower case, words joined by dashes",
    },
    {
      index: 6,
      title: "A crash right after the create",
      want: "07-a-crash-right-after-the-create.png",
      reason: "the step's number, not the list's",
    },
    {
      index: 8,
      title: "Two clusters, one cloud",
      want: "09-two-clusters-one-cloud.png",
      reason: "punctuation goes",
    },
  ])("$reason", ({ index, title, want }) => {
    expect(screenshotName(index, title)).toBe(want);
  });

  it("gives every step of the tour its own file", () => {
    const names = STEPS.map((step, i) => screenshotName(i, step.title));
    expect(new Set(names).size).toBe(STEPS.length);
  });
});
