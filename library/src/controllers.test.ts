/**
 * The handlers' predicate (`reconcileWorthy`) and key (`keyOf`), over plain managed resources: the core
 * knows no plugin, so neither does this test.
 */
import { describe, expect, it } from "vitest";
import type { ManagedResource } from "./reconcile/contract.ts";
import { keyOf, reconcileWorthy } from "./controllers.ts";

const FINALIZER = "example.com/external";
const base: ManagedResource = {
  apiVersion: "example.com/v1",
  kind: "Widget",
  metadata: {
    name: "foo",
    namespace: "default",
    uid: "uid-foo",
    generation: 1,
    resourceVersion: "100",
    finalizers: [FINALIZER],
    annotations: { team: "a" },
  },
  spec: {},
};
const changed = (
  meta: Partial<ManagedResource["metadata"]>,
  rest: Partial<ManagedResource> = {},
): ManagedResource => ({
  ...base,
  ...rest,
  metadata: { ...base.metadata, resourceVersion: "101", ...meta },
});

describe("reconcileWorthy", () => {
  it.each<{ reason: string; next: ManagedResource; worthy: boolean }>([
    {
      reason:
        "regression: a status-only update (our own write echoing back) is no reason to reconcile, or a failing resource would be retried at once, ignoring its backoff and the external API's Retry-After",
      next: changed({}, { status: { conditions: [], observedGeneration: 1 } }),
      worthy: false,
    },
    {
      reason: "a spec change (new generation) is reconciled",
      next: changed({ generation: 2 }),
      worthy: true,
    },
    {
      reason: "a new refresh annotation forces a reconcile",
      next: changed({ annotations: { team: "a", "example.com/refresh": "1" } }),
      worthy: true,
    },
    {
      reason: "pausing or unpausing is reconciled (the condition must say so)",
      next: changed({ annotations: { team: "a", "example.com/paused": "true" } }),
      worthy: true,
    },
    {
      reason: "a finalizer stripped by hand is reconciled (put back, or the deletion handled)",
      next: changed({ finalizers: [] }),
      worthy: true,
    },
    {
      reason: "a deletion (deletionTimestamp set) is reconciled",
      next: changed({ deletionTimestamp: new Date("2026-01-01T00:00:00Z") }),
      worthy: true,
    },
    {
      reason: "a resource replaced by a namesake (another uid) is reconciled",
      next: changed({ uid: "uid-new" }),
      worthy: true,
    },
  ])("$reason", ({ next, worthy }) => {
    expect(reconcileWorthy(base, next)).toBe(worthy);
  });
});

describe("keyOf", () => {
  it("is namespace/name", () => {
    expect(keyOf(changed({ namespace: "team-a", name: "web.v2" }))).toBe("team-a/web.v2");
  });
});
