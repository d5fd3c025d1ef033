import { describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger.ts";
import { type HeapPageMemory, HeapPageRelease } from "./heap-pages.ts";

const MiB = 1024 * 1024;
type Reading = [rss: number, heapTotal: number, heapUsed: number];

/** A HeapPageRelease over readings given in MiB (rss, heapTotal, heapUsed), and the collections it asked for. */
function releaseOver(readings: Reading[], thresholdMiB = 16) {
  const calls: unknown[] = [];
  let i = 0;
  const memory = (): HeapPageMemory => {
    const [rss, heapTotal, heapUsed] = readings[Math.min(i++, readings.length - 1)]!;
    return { rss: rss * MiB, heapTotal: heapTotal * MiB, heapUsed: heapUsed * MiB };
  };
  const release = new HeapPageRelease({
    log: silentLogger(),
    memory,
    gc: (options) => calls.push(options),
    thresholdBytes: thresholdMiB * MiB,
  });
  return { release, calls };
}

describe("HeapPageRelease.check", () => {
  // heapUsed moves by 10 MiB between checks unless the row is about a quiet process (a change under 1 MiB).
  it.each<{ reason: string; readings: Reading[]; want: string[]; collections: number }>([
    {
      reason: "the first check only measures what the process holds outside the heap",
      readings: [[200, 100, 50]],
      want: ["baseline"],
      collections: 0,
    },
    {
      reason: "a working process whose heap grows with the memory outside it unchanged asks for nothing",
      readings: [
        [200, 100, 50],
        [260, 160, 60],
      ],
      want: ["baseline", "below-threshold"],
      collections: 0,
    },
    {
      reason:
        "the heap shrank and RSS did not: V8 pooled the emptied pages, so the growth outside the heap asks for a memory-reducing collection",
      readings: [
        [200, 100, 50],
        [200, 60, 40],
      ],
      want: ["baseline", "released pooled"],
      collections: 1,
    },
    {
      reason: "growth outside the heap just under the threshold, in a working process, asks for nothing",
      readings: [
        [200, 100, 50],
        [215, 100, 60],
      ],
      want: ["baseline", "below-threshold"],
      collections: 0,
    },
    {
      reason:
        "after a release the next check measures a new baseline, so memory the process really keeps (malloc's) does not ask for a collection every interval",
      readings: [
        [200, 100, 50],
        [240, 100, 60],
        [230, 100, 70],
        [235, 100, 80],
      ],
      want: ["baseline", "released pooled", "baseline", "below-threshold"],
      collections: 1,
    },
    {
      reason:
        "a quiet process (the heap's use moved under 1 MiB) with 16 MiB or more unused or pooled asks once: what V8's memory reducer would do after a burst",
      readings: [
        [200, 100, 50],
        [200, 100, 70],
        [200, 100, 70.5],
      ],
      want: ["baseline", "below-threshold", "released quiet"],
      collections: 1,
    },
    {
      reason:
        "once per quiet spell: the fall its own collection causes is not work, so a process that stays quiet is not collected again and again",
      readings: [
        [200, 100, 70],
        [200, 100, 70.5],
        [150, 80, 40],
        [150, 80, 40.2],
        [150, 80, 40.4],
      ],
      want: ["baseline", "released quiet", "baseline", "below-threshold", "below-threshold"],
      collections: 1,
    },
    {
      reason:
        "a quiet process that works again (its heap's use grows) may be collected in its next quiet spell",
      readings: [
        [200, 100, 70],
        [200, 100, 70.5],
        [150, 80, 40],
        [170, 100, 60],
        [170, 100, 60.5],
      ],
      want: ["baseline", "released quiet", "baseline", "below-threshold", "released quiet"],
      collections: 2,
    },
    {
      reason: "a quiet process with little unused heap and nothing pooled asks for nothing",
      readings: [
        [200, 100, 95],
        [200, 100, 95.5],
      ],
      want: ["baseline", "below-threshold"],
      collections: 0,
    },
  ])("$reason", ({ readings, want, collections }) => {
    const { release, calls } = releaseOver(readings);
    const got = readings
      .map(() => release.check())
      .map((c) => (c.kind === "released" ? `released ${c.why}` : c.kind));
    expect(got).toEqual(want);
    expect(calls).toHaveLength(collections);
    for (const call of calls)
      expect(call).toEqual({ type: "major", execution: "async", flavor: "last-resort" });
  });
});

describe("HeapPageRelease.start", () => {
  it("answers unavailable, and never asks for a collection, when node was started without --expose-gc", () => {
    const release = new HeapPageRelease({
      log: silentLogger(),
      gc: undefined,
      memory: () => ({ rss: 0, heapTotal: 0, heapUsed: 0 }),
    });
    expect(release.start()).toMatchObject({ kind: "unavailable" });
    expect(release.check().kind).toBe("baseline");
    expect(release.check().kind).toBe("baseline");
  });

  it("starts with a collection to call, and stops", () => {
    const { release } = releaseOver([[0, 0, 0]]);
    expect(release.start()).toEqual({ kind: "started" });
    release.stop();
  });
});
