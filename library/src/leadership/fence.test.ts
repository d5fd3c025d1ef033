import { describe, expect, test } from "vitest";
import type { ExternalClient } from "../reconcile/contract.ts";
import { FencedError, FencedEventRecorder, FencedExternalClient, WriteFence } from "./fence.ts";

/** An external client that counts the calls that reach it. */
function countingClient(): ExternalClient<string> & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    getByName: (name) => (sent.push(`get ${name}`), Promise.resolve(name)),
    create: (desired) => (sent.push(`create ${desired.name}`), Promise.resolve(desired.name)),
    update: (observed) => (sent.push(`update ${observed}`), Promise.resolve(observed)),
    delete: (observed) => (sent.push(`delete ${observed}`), Promise.resolve()),
    release: (observed) => (sent.push(`release ${observed}`), Promise.resolve()),
    classify: () => ({ failure: "failed" }),
  };
}

const signal = new AbortController().signal;

describe("WriteFence", () => {
  const cases: { reason: string; setUp: (fence: WriteFence) => void; allowed: boolean }[] = [
    { reason: "a new fence is closed: nothing writes before leadership", setUp: () => {}, allowed: false },
    {
      reason: "open with a live signal lets writes through",
      setUp: (f) => f.open(new AbortController().signal),
      allowed: true,
    },
    {
      reason: "the signal aborting closes it at once, with no call to close()",
      setUp: (f) => {
        const c = new AbortController();
        f.open(c.signal);
        c.abort();
      },
      allowed: false,
    },
    {
      reason: "close() closes it",
      setUp: (f) => {
        f.open(new AbortController().signal);
        f.close();
      },
      allowed: false,
    },
    {
      reason: "re-opened with a new signal after a lost leadership, writes flow again",
      setUp: (f) => {
        const lost = new AbortController();
        f.open(lost.signal);
        lost.abort();
        f.open(new AbortController().signal);
      },
      allowed: true,
    },
  ];

  test.each(cases)("$reason", async ({ setUp, allowed }) => {
    const fence = new WriteFence();
    setUp(fence);
    const client = countingClient();
    const fenced = new FencedExternalClient(fence, client);
    expect(fence.isOpen).toBe(allowed);
    if (allowed) {
      expect(await fenced.create({ name: "a", fields: {} }, signal)).toBe("a");
    } else {
      expect(() => fenced.create({ name: "a", fields: {} }, signal)).toThrow(FencedError);
      expect(() => fenced.create({ name: "a", fields: {} }, signal)).toThrow(/^cannot write: /);
    }
    expect(client.sent).toEqual(allowed ? ["create a"] : []);
  });

  test("a closed fence refuses every call of the client, reads too, before it is sent; classify is no call", () => {
    const client = countingClient();
    const fenced = new FencedExternalClient(new WriteFence(), client);
    expect(() => fenced.getByName("a", signal)).toThrow(FencedError);
    expect(() => fenced.update("a", {}, signal)).toThrow(FencedError);
    expect(() => fenced.delete("a", signal)).toThrow(FencedError);
    expect(() => fenced.release("a", signal)).toThrow(FencedError);
    expect(fenced.classify(new Error("x"))).toEqual({ failure: "failed" });
    expect(client.sent).toEqual([]);
  });

  test("a closed fence refuses an Event, and the recorder never sees it", () => {
    const recorded: string[] = [];
    const fenced = new FencedEventRecorder(new WriteFence(), {
      record: (_object, _type, reason) => recorded.push(reason),
    });
    expect(() => fenced.record({}, "Normal", "Created", "made it")).toThrow(FencedError);
    expect(recorded).toEqual([]);
  });
});
