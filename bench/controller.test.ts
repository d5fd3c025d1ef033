import { describe, expect, test } from "vitest";
import { decisionHistoryOf } from "./controller.ts";

describe("decisionHistoryOf", () => {
  test.each([
    {
      reason: "a controller with a decision history says its size",
      status: 200,
      text: '{"subjects":1000,"entries":4210,"bytes":1234567}',
      want: { subjects: 1000, entries: 4210, bytes: 1234567 },
    },
    {
      reason: "other fields are ignored",
      status: 200,
      text: '{"subjects":0,"entries":0,"bytes":2,"limit":100}',
      want: { subjects: 0, entries: 0, bytes: 2 },
    },
    {
      reason: "a 404 is a controller without one: absent, not zero",
      status: 404,
      text: "not found\n",
      want: null,
    },
  ])("$reason", ({ status, text, want }) => {
    expect(decisionHistoryOf(status, text, "default")).toEqual(want);
  });

  test.each([
    {
      reason: "a server error",
      status: 500,
      text: "boom",
      want: "cannot read default's /why: HTTP 500: boom",
    },
    {
      reason: "a body that is not JSON",
      status: 200,
      text: "<html>",
      want: "cannot read default's /why: not JSON: <html>",
    },
    {
      reason: "a count missing",
      status: 200,
      text: '{"subjects":3,"entries":"9"}',
      want: 'cannot read default\'s /why: expected numbers subjects, entries and bytes, got {"subjects":3,"entries":"9"}',
    },
    {
      reason: "JSON null",
      status: 200,
      text: "null",
      want: "cannot read default's /why: expected numbers subjects, entries and bytes, got null",
    },
  ])("throws on $reason", ({ status, text, want }) => {
    expect(() => decisionHistoryOf(status, text, "default")).toThrow(want);
  });
});
