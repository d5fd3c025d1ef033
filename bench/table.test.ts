import { describe, expect, test } from "vitest";
import {
  formatBytes,
  formatDuration,
  formatNumber,
  formatRatio,
  formatSpread,
  renderMarkdown,
  renderText,
  type Table,
} from "./table.ts";

const table: Table = {
  headers: ["figure", "default", "one-worker"],
  rows: [
    ["converge", "8.10 s", "31.2 s ×3.85"],
    ["  p99", "950 ms", "2.40 s ×2.53"],
  ],
  align: ["left", "right", "right"],
};

describe("renderText", () => {
  test("pads every column to its widest cell, numbers to the right, with a rule under the header", () => {
    expect(renderText(table)).toBe(
      [
        "figure    default    one-worker",
        "--------  -------  ------------",
        "converge   8.10 s  31.2 s ×3.85",
        "  p99      950 ms  2.40 s ×2.53",
        "",
      ].join("\n"),
    );
  });

  test("counts '×' and '–' as one character each, so columns stay aligned", () => {
    const text = renderText({ headers: ["a", "b"], rows: [["x", "1–2 ×3"]], align: ["left", "right"] });
    const [header, , row] = text.split("\n");
    expect([...(header ?? "")].length).toBe([...(row ?? "")].length);
  });

  test("a row of the wrong width is an error, not a garbled table", () => {
    expect(() => renderText({ headers: ["a", "b"], rows: [["only one"]] })).toThrow(
      "cannot render the table: row 1 has 1 cells for 2 columns",
    );
  });
});

describe("renderMarkdown", () => {
  test("a GitHub table with right-aligned number columns", () => {
    expect(renderMarkdown(table)).toBe(
      [
        "| figure | default | one-worker |",
        "| --- | ---: | ---: |",
        "| converge | 8.10 s | 31.2 s ×3.85 |",
        "|   p99 | 950 ms | 2.40 s ×2.53 |",
        "",
      ].join("\n"),
    );
  });

  test("escapes pipes and flattens newlines inside cells", () => {
    expect(renderMarkdown({ headers: ["a"], rows: [["x|y\nz"]] })).toContain("| x\\|y z |");
  });
});

describe("number formats", () => {
  test.each([
    { reason: "whole numbers stay whole, with thousands separators", value: 12345, want: "12,345" },
    { reason: "zero", value: 0, want: "0" },
    { reason: "three significant digits above 10", value: 12.345, want: "12.3" },
    { reason: "three significant digits below 10", value: 1.2345, want: "1.23" },
    { reason: "no fraction at 100 or more", value: 123.6, want: "124" },
    { reason: "small fractions keep two significant digits", value: 0.0012345, want: "0.0012" },
    { reason: "negative values keep their sign", value: -2.5, want: "-2.50" },
  ])("formatNumber: $reason", ({ value, want }) => {
    expect(formatNumber(value)).toBe(want);
  });

  test.each([
    { reason: "below a second: milliseconds", ms: 850, want: "850 ms" },
    { reason: "seconds", ms: 12_345, want: "12.3 s" },
    { reason: "two minutes or more: minutes and seconds", ms: 125_000, want: "2 m 05 s" },
    { reason: "sub-millisecond", ms: 0.5, want: "0.500 ms" },
  ])("formatDuration: $reason", ({ ms, want }) => {
    expect(formatDuration(ms)).toBe(want);
  });

  test("formatBytes in binary megabytes", () => {
    expect(formatBytes(150 * 1024 * 1024)).toBe("150 MB");
  });

  test.each([
    { reason: "the same as the default", value: 1, want: "×1.00" },
    { reason: "less than the default", value: 0.25, want: "×0.25" },
    { reason: "ten times or more: one decimal", value: 12.34, want: "×12.3" },
    { reason: "a hundred times or more: none", value: 1234.5, want: "×1,235" },
  ])("formatRatio: $reason", ({ value, want }) => {
    expect(formatRatio(value)).toBe(want);
  });

  test.each([
    {
      reason: "repeats that disagree show min–max",
      s: { median: 11.2, min: 10.1, max: 12.5, count: 3 },
      want: "11.2 s (10.1 s–12.5 s)",
    },
    {
      reason: "a single repeat shows the value alone",
      s: { median: 11.5, min: 11.5, max: 11.5, count: 1 },
      want: "11.5 s",
    },
    {
      reason: "repeats that agree show the value alone",
      s: { median: 3, min: 3, max: 3, count: 2 },
      want: "3 s",
    },
  ])("formatSpread: $reason", ({ s, want }) => {
    expect(formatSpread(s, (v) => formatDuration(v * 1000))).toBe(want);
  });
});
