import { describe, expect, test } from "vitest";
import { FencedError, WriteFence } from "./fence.ts";

class Writer {
  #calls = 0;
  readonly label = "writer";
  write(value: string): string {
    this.#calls += 1;
    return `${value}#${this.#calls}`;
  }
  get calls(): number {
    return this.#calls;
  }
}

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

  test.each(cases)("$reason", ({ setUp, allowed }) => {
    const fence = new WriteFence();
    setUp(fence);
    const writer = new Writer();
    const guarded = fence.guard(writer);
    expect(fence.isOpen).toBe(allowed);
    if (allowed) {
      expect(guarded.write("a")).toBe("a#1");
    } else {
      expect(() => guarded.write("a")).toThrow(FencedError);
      expect(() => guarded.write("a")).toThrow(/^cannot write: /);
    }
    expect(writer.calls).toBe(allowed ? 1 : 0);
  });

  test("guarded methods keep their own `this` (private fields) and non-functions pass through", () => {
    const fence = new WriteFence();
    fence.open(new AbortController().signal);
    const guarded = fence.guard(new Writer());
    expect(guarded.label).toBe("writer");
    guarded.write("x");
    expect(guarded.calls).toBe(1);
  });

  test("an async method refused by the fence throws before it starts (no request is sent)", async () => {
    const fence = new WriteFence();
    let sent = 0;
    const guarded = fence.guard({
      send: () => {
        sent += 1;
        return Promise.resolve();
      },
    });
    expect(() => guarded.send()).toThrow(FencedError);
    await Promise.resolve();
    expect(sent).toBe(0);
  });
});
