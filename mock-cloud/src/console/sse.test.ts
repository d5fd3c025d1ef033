/**
 * The console's Server-Sent Events parser (static/sse.js, browser code run here in Node): the cases of the
 * HTML standard the change feed can produce, and a property: any stream, cut into chunks anywhere and
 * written with any of the three line endings, parses to the events it was made of.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createSseParser, type SseMessage } from "./static/sse.js";

/** Feeds every chunk and returns the events and comments seen. */
function parse(chunks: readonly string[]): { events: SseMessage[]; comments: string[] } {
  const events: SseMessage[] = [];
  const comments: string[] = [];
  const parser = createSseParser(
    (m) => events.push(m),
    (c) => comments.push(c),
  );
  for (const chunk of chunks) parser.feed(chunk);
  return { events, comments };
}

describe("createSseParser", () => {
  const cases: { reason: string; chunks: string[]; events: SseMessage[]; comments?: string[] }[] = [
    {
      reason: "the cloud's format: id, data, blank line",
      chunks: ['id: 7\ndata: {"a":1}\n\n'],
      events: [{ id: "7", event: "message", data: '{"a":1}' }],
    },
    {
      reason: "a heartbeat is a comment, never an event",
      chunks: [": heartbeat\n\n"],
      events: [],
      comments: ["heartbeat"],
    },
    {
      reason: "only ONE space after the colon is dropped; no space is fine too",
      chunks: ["data:x\n\ndata:  y\n\n"],
      events: [
        { id: "", event: "message", data: "x" },
        { id: "", event: "message", data: " y" },
      ],
    },
    {
      reason: "data lines join with a newline",
      chunks: ["data: a\ndata: b\n\n"],
      events: [{ id: "", event: "message", data: "a\nb" }],
    },
    {
      reason: "an event without data is not dispatched, and its event type does not leak into the next",
      chunks: ["event: ping\n\ndata: x\n\n"],
      events: [{ id: "", event: "message", data: "x" }],
    },
    {
      reason: "the last event id carries over to events without one",
      chunks: ["id: 3\ndata: a\n\ndata: b\n\n"],
      events: [
        { id: "3", event: "message", data: "a" },
        { id: "3", event: "message", data: "b" },
      ],
    },
    {
      reason: "an event cut before its blank line is not dispatched yet",
      chunks: ["id: 1\ndata: a\n"],
      events: [],
    },
    {
      reason: "a chunk may end in the middle of a field name",
      chunks: ["id: 1\nda", "ta: a\n", "\n"],
      events: [{ id: "1", event: "message", data: "a" }],
    },
    {
      reason: "a chunk may end between \\r and \\n: that is ONE line end, not an empty line",
      chunks: ["data: a\r", "\ndata: b\r\n\r\n"],
      events: [{ id: "", event: "message", data: "a\nb" }],
    },
    {
      reason: "a lone \\r ends a line",
      chunks: ["data: a\r\rdata: b\r\r"],
      events: [
        { id: "", event: "message", data: "a" },
        { id: "", event: "message", data: "b" },
      ],
    },
    {
      reason: "a field without a colon has an empty value; unknown fields and retry are ignored",
      chunks: ["data\nretry: 10\nfoo: bar\n\n"],
      events: [{ id: "", event: "message", data: "" }],
    },
    {
      reason: "an id with a NUL is ignored",
      chunks: ["id: 5\n\nid: a\0b\ndata: x\n\n"],
      events: [{ id: "5", event: "message", data: "x" }],
    },
  ];
  it.each(cases)("$reason", ({ chunks, events, comments }) => {
    const parsed = parse(chunks);
    expect(parsed.events).toEqual(events);
    if (comments) expect(parsed.comments).toEqual(comments);
  });

  it("parses any stream cut anywhere, with any line endings, into the events it was made of", () => {
    const event = fc.record({
      id: fc.integer({ min: 1, max: 1e9 }).map(String),
      // data may itself hold line breaks: each becomes a data line
      lines: fc.array(fc.string({ unit: fc.constantFrom("a", "é", "{", '"', ":", " ", "€") }), {
        minLength: 1,
        maxLength: 3,
      }),
      heartbeatBefore: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 8 }),
        fc.constantFrom("\n", "\r\n", "\r"),
        fc.array(fc.nat(), { maxLength: 10 }),
        (events, eol, cuts) => {
          const text = events
            .map(
              (e) =>
                (e.heartbeatBefore ? `: heartbeat${eol}` : "") +
                `id: ${e.id}${eol}` +
                e.lines.map((l) => `data: ${l}${eol}`).join("") +
                eol,
            )
            .join("");
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points].map((from, i) => text.slice(from, [...points, text.length][i]));
          const parsed = parse(chunks);
          expect(parsed.events).toEqual(
            events.map((e) => ({ id: e.id, event: "message", data: e.lines.join("\n") })),
          );
          expect(parsed.comments).toEqual(events.filter((e) => e.heartbeatBefore).map(() => "heartbeat"));
        },
      ),
      { numRuns: 300 },
    );
  });
});
