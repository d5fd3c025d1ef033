import { describe, expect, it } from "vitest";
import { deadline } from "./clock.ts";
import { ManualClock } from "../testing/manual-clock.ts";

describe("deadline", () => {
  it.each([
    { reason: "time runs out: aborts with the reason", advanceMs: 1_000, cancel: false, aborted: true },
    { reason: "time has not run out yet", advanceMs: 999, cancel: false, aborted: false },
    { reason: "cancelled when the work ended: never aborts", advanceMs: 5_000, cancel: true, aborted: false },
  ])("$reason", async ({ advanceMs, cancel, aborted }) => {
    const clock = new ManualClock();
    const limit = deadline(clock, 1_000, "cannot reach it in time");
    if (cancel) limit.cancel();
    await clock.advance(advanceMs);
    expect(limit.signal.aborted).toBe(aborted);
    if (aborted) expect((limit.signal.reason as Error).message).toBe("cannot reach it in time");
  });

  it("aborts with its parent, before its time", async () => {
    const clock = new ManualClock();
    const parent = new AbortController();
    const limit = deadline(clock, 1_000, "cannot reach it in time", parent.signal);
    parent.abort(new Error("stopping"));
    expect(limit.signal.aborted).toBe(true);
    expect((limit.signal.reason as Error).message).toBe("stopping");
    limit.cancel();
    await clock.advance(1_000);
    expect((limit.signal.reason as Error).message).toBe("stopping");
  });
});
