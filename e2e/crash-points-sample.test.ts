/**
 * Scenario: a crash, or a failed write, at any write of any lifecycle loses nothing, duplicates nothing and
 * touches nothing foreign — the sample of the crash explorer (reconcile-kit/crash-points) that `npm test`
 * runs, for the Shapes controller, the DNS example and the etcd example, each on its own local control plane
 * (the etcd example's writes are base64 transactions: its subject attributes them, `attributeEtcdWrite`).
 *
 * For every lifecycle (create, update, drift, re-create, delete, Orphan, name held then freed, adoption
 * under an earlier owner id, pause and resume, missed deletion) the explorer records the controller's writes
 * and then tries ONE of them with one fault: lifecycle k takes the k-th write (modulo their count) among the
 * first occurrences of their labels, and fault k modulo four (crash-before, crash-after, fail, answer-lost),
 * so every lifecycle and every fault is in the sample. A label's second occurrence (a retry, an echo's
 * redundant write) is never sampled: a run may or may not repeat it.
 * The full run, every write at every fault, is docs/crash-points.md (`npm run crash-points`).
 *
 * A sampled point whose write did not come again fails the test: a point the sample claims must be tried.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type CrashSubject, exploreCrashPoints, LIFECYCLES } from "reconcile-kit/crash-points";
import { dnsCrashSubject } from "@shapes/dns-controller/conformance";
import { etcdCrashSubject } from "@shapes/etcd-controller/conformance";
import { shapesCrashSubject } from "./conformance/subjects/shapes.ts";
import { subjectOptions } from "./support/stack.ts";

/** Eleven lifecycles, two trials each, on 2 busy cores: minutes, not seconds. */
const SAMPLE_TIMEOUT_MS = 20 * 60_000;

const SUBJECTS: readonly { name: string; make: () => CrashSubject; skipped: string[] }[] = [
  { name: "shapes", make: shapesCrashSubject, skipped: [] },
  // The example has no earlier owner ids to adopt from.
  {
    name: "dns records",
    make: () => dnsCrashSubject(subjectOptions("crash-points-dns")),
    skipped: ["adopt"],
  },
  {
    name: "etcd keys",
    make: () => etcdCrashSubject(subjectOptions("crash-points-etcd")),
    skipped: ["adopt"],
  },
];

describe.each(SUBJECTS)("crash points, sampled: $name", ({ make, skipped }) => {
  const subject = make();

  beforeAll(async () => {
    await subject.setUp();
    await subject.startController();
  });
  afterAll(async () => {
    await subject.tearDown();
  });

  test(
    "one write of every lifecycle, at one fault each: converged, nothing duplicated, leaked, foreign written or stuck",
    async () => {
      const report = await exploreCrashPoints(subject, {
        sample: true,
        onProgress: (line) => process.stderr.write(`crash-points: ${line}\n`),
      });

      expect(report.lifecycles.map((l) => l.id)).toEqual(LIFECYCLES.map((l) => l.id));
      expect(report.lifecycles.filter((l) => l.skipped).map((l) => l.id)).toEqual(skipped);
      const explored = report.lifecycles.filter((l) => !l.skipped);
      for (const lifecycle of explored) {
        expect(lifecycle.recordingViolations, `${lifecycle.id}, without a fault`).toEqual([]);
        expect(lifecycle.recorded.length, `${lifecycle.id}: the writes recorded`).toBeGreaterThan(0);
        expect(lifecycle.points.length, `${lifecycle.id}: one point sampled`).toBe(1);
      }
      const points = explored.flatMap((l) => l.points);
      expect(
        points.filter((p) => !p.reached).map((p) => `${p.lifecycle} #${p.index} ${p.write} ${p.fault}`),
        "sampled points whose write did not come again",
      ).toEqual([]);
      expect(
        points.flatMap((p) =>
          p.violations.map((v) => `${p.lifecycle} #${p.index} ${p.write} ${p.fault}: ${v}`),
        ),
      ).toEqual([]);
      // Every fault is in the sample.
      expect(new Set(points.map((p) => p.fault)).size).toBe(4);
      expect(report.tried).toBe(points.length);
    },
    SAMPLE_TIMEOUT_MS,
  );
});
