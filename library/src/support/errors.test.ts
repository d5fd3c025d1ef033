import { describe, expect, it } from "vitest";
import { asError } from "./errors.ts";

/** An API client's error, as one would throw it. */
class CloudError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

describe("asError", () => {
  const cloud = new CloudError("cannot create cloud shapes: HTTP 503: outage", 503);
  it.each<{ reason: string; err: unknown; message: string; same?: true }>([
    {
      reason:
        "regression: an Error that already says what failed is passed through, not wrapped (the logger prints causes, so a wrapper repeated the message)",
      err: cloud,
      message: "cannot create cloud shapes: HTTP 503: outage",
      same: true,
    },
    {
      reason: "an Error that does not say what failed gets the context in front, and keeps it as the cause",
      err: new TypeError("fetch failed"),
      message: "cannot delete cloud shape default.foo: fetch failed",
    },
    {
      reason: "something thrown that is not an Error becomes one",
      err: "boom",
      message: "cannot delete cloud shape default.foo: boom",
    },
  ])("$reason", ({ err, message, same }) => {
    const got = asError(err, "cannot delete cloud shape default.foo");
    expect(got.message).toBe(message);
    if (same) expect(got).toBe(err);
    else expect(got.cause).toBe(err);
  });
});
