import { describe, expect, test } from "vitest";
import { OwnWrites } from "./own-writes.ts";

/** A write whose answer we release by hand, so a test can put events before or after it. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("OwnWrites", () => {
  const cases: {
    reason: string;
    /** Events offered after the write answered, by revision. */
    after: (string | undefined)[];
    /** The revision the write answered with. */
    wrote: string | undefined;
    /** Events offered while the write was in flight. */
    during?: (string | undefined)[];
    /** Which events (during first, then after) were handed on. */
    handed: string[];
  }[] = [
    {
      reason: "the echo after the answer is dropped",
      wrote: "7",
      after: ["7"],
      handed: [],
    },
    {
      reason: "the echo BEFORE the answer (the watch won the race) is held, then dropped",
      wrote: "7",
      during: ["7"],
      after: [],
      handed: [],
    },
    {
      reason: "someone else's change after ours has another revision: handed on",
      wrote: "7",
      after: ["7", "8"],
      handed: ["after:8"],
    },
    {
      reason: "an older event held during the write is handed on; the echo is still dropped",
      wrote: "7",
      during: ["6", "7"],
      after: [],
      handed: ["during:6"],
    },
    {
      reason: "only the first event after a write can be its echo: a stale one uses the note up",
      wrote: "7",
      after: ["6", "7"],
      handed: ["after:6", "after:7"],
    },
    {
      reason: "an answer without a revision recognises nothing",
      wrote: undefined,
      during: ["7"],
      after: ["7"],
      handed: ["during:7", "after:7"],
    },
  ];

  test.each(cases)("$reason", async ({ wrote, during = [], after, handed }) => {
    const echoes = new OwnWrites();
    const got: string[] = [];
    const answer = deferred<string | undefined>();
    const writing = echoes.write(
      "ns/foo",
      () => answer.promise,
      (rv) => rv,
    );
    for (const rv of during) echoes.offer("ns/foo", rv, () => got.push(`during:${rv}`));
    answer.resolve(wrote);
    await writing;
    for (const rv of after) echoes.offer("ns/foo", rv, () => got.push(`after:${rv}`));
    expect(got).toEqual(handed);
  });

  test("a failed write hands on every event it held, and remembers nothing", async () => {
    const echoes = new OwnWrites();
    const got: string[] = [];
    const answer = deferred<string>();
    const writing = echoes.write(
      "ns/foo",
      () => answer.promise,
      (rv) => rv,
    );
    echoes.offer("ns/foo", "7", () => got.push("7"));
    answer.reject(new Error("409 Conflict"));
    await expect(writing).rejects.toThrow("409 Conflict");
    expect(got).toEqual(["7"]);
    expect(echoes.size).toBe(0);
  });

  test("other keys are never held or dropped", async () => {
    const echoes = new OwnWrites();
    const got: string[] = [];
    const answer = deferred<string>();
    const writing = echoes.write(
      "ns/foo",
      () => answer.promise,
      (rv) => rv,
    );
    echoes.offer("ns/bar", "7", () => got.push("bar"));
    answer.resolve("7");
    await writing;
    echoes.offer("ns/baz", "7", () => got.push("baz"));
    expect(got).toEqual(["bar", "baz"]);
  });

  test("bounded: past the limit the oldest unanswered echo is forgotten (and its event handed on)", async () => {
    const echoes = new OwnWrites(2);
    for (const key of ["a", "b", "c"])
      await echoes.write(
        key,
        () => Promise.resolve("1"),
        (rv) => rv,
      );
    const got: string[] = [];
    for (const key of ["a", "b", "c"]) echoes.offer(key, "1", () => got.push(key));
    expect(got).toEqual(["a"]);
    expect(echoes.size).toBe(0);
  });
});
