/** Reading a controller's log lines by field: which of them tell of a 403 from the API server. */
import { describe, expect, it } from "vitest";
import { forbiddenLines, type LogLine } from "./process.ts";

const line = (fields: Partial<LogLine>): LogLine => ({ level: 40, msg: "", time: 0, ...fields });

describe("forbiddenLines", () => {
  it.each([
    {
      reason: "an error whose status field is 403",
      line: line({ msg: "cannot list", err: { type: "ApiException", message: "HTTP error", code: 403 } }),
      forbidden: true,
    },
    {
      reason: "an error whose message says Forbidden",
      line: line({ err: { message: 'cannot patch shapes: HTTP 403: shapes "x" is forbidden' } }),
      forbidden: true,
    },
    {
      reason: "a 403 in the error's cause",
      line: line({ err: { message: "cannot sync", cause: { message: "boom", statusCode: 403 } } }),
      forbidden: true,
    },
    {
      reason: "the message itself says 403",
      line: line({ msg: "the API server answered 403" }),
      forbidden: true,
    },
    { reason: "a status field of the line", line: line({ msg: "answered", status: 403 }), forbidden: true },
    {
      reason: "a revision 403 is no status (the debug line of an informer's listing)",
      line: line({ level: 20, informer: "external-shapes", revision: 403, msg: "listed" }),
      forbidden: false,
    },
    {
      reason: 'a resourceVersion "403" is no status either',
      line: line({ level: 20, informer: "shapes", revision: "403", objects: 2, msg: "listed" }),
      forbidden: false,
    },
    {
      reason: "a source line 403 in a stack trace is no status",
      line: line({
        err: { message: "cannot sync: boom", stack: "Error: boom\n    at reconciler.ts:403:18" },
      }),
      forbidden: false,
    },
    { reason: "a 503 is no 403", line: line({ err: { message: "HTTP 503", code: 503 } }), forbidden: false },
  ])("$reason", ({ line: l, forbidden }) => {
    expect(forbiddenLines([l])).toEqual(forbidden ? [l] : []);
  });
});
