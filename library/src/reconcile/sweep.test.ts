/**
 * Every exit of the sweep, one row each, over the library's own fake plugin (no Shapes): the result it
 * returns, and what it did. It writes no condition (an unclaimed item has no resource to write on): each
 * row's `calls` shows that no status write happened. No row ends `terminal`.
 */
import { describe, expect, it } from "vitest";
import {
  throwingIn,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  ItemApiError,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import { kubeError, resultSummary } from "../testing/fake-world.ts";
import { Sweep, type SweepDeps } from "./sweep.ts";

interface Row {
  /** Why this exit exists. */
  reason: string;
  setup: (w: WidgetWorld) => void;
  deps?: (w: WidgetWorld) => Partial<SweepDeps<Widget, Item>>;
  result: string;
  calls: string[];
  /** Leaks removed (the counter). */
  leaks?: number;
  /** How often the Widget's CRD was read (a live read: not in `calls`), when the row says. */
  definitionReads?: number;
}

/** The Widget's CRD is being deleted: an uninstall (uninstall.ts). */
const terminating = {
  uid: "crd-uid",
  createdAt: "2026-01-01T00:00:00Z",
  deletingSince: "2026-02-01T00:00:00Z",
};

/** An item of ours for `default/foo` with the uid mark `uid` (none: no uid mark at all). */
const anItem = (w: WidgetWorld, uid?: string) =>
  w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "k8s", ...(uid ? { uid } : {}) } });
/** No grace period: an unclaimed item is swept at first sight. */
const noGrace = () => ({ graceMs: 0 });

const rows: Row[] = [
  {
    reason: "the item is gone: nothing to do",
    setup: () => {},
    result: "done",
    calls: [],
  },
  {
    reason: "an item whose owner tag is not exactly ours is never swept",
    setup: (w) => w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "k8s-old", uid: "x" } }),
    deps: (w) => ({
      cache: { get: () => w.api.items.get("f1"), list: () => [], withUid: () => [] },
      ...noGrace(),
    }),
    result: "done",
    calls: [],
  },
  {
    reason: "claimed by its live Widget: not a leak",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.resourceObjects.set("default/foo", aWidget());
    },
    deps: noGrace,
    result: "done",
    calls: [],
  },
  {
    reason: "claimed by an intent record (a missed deletion is the intent reconciler's): not a leak",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.intentObjects.set("default.foo", aWidgetRef());
    },
    deps: noGrace,
    result: "done",
    calls: [],
  },
  {
    reason: "unclaimed, first seen: a create may be in flight, look again after the grace period",
    setup: (w) => anItem(w, "uid-foo"),
    deps: () => ({ graceMs: 30_000 }),
    result: "requeueAfter:30000",
    calls: [],
  },
  {
    reason: "unclaimed past the grace period, confirmed by live reads: deleted",
    setup: (w) => anItem(w, "uid-foo"),
    deps: noGrace,
    result: "done",
    calls: ["items.delete i1"],
    leaks: 1,
  },
  {
    reason: "unclaimed past the grace period, the CRD read once (present, not being deleted): deleted",
    setup: (w) => anItem(w, "uid-foo"),
    deps: noGrace,
    result: "done",
    calls: ["items.delete i1"],
    leaks: 1,
    definitionReads: 1,
  },
  {
    reason: "unclaimed while the CRD is being deleted (an uninstall): left as it is, nothing deleted",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.definition = terminating;
    },
    deps: noGrace,
    result: "done",
    calls: [],
    definitionReads: 1,
  },
  {
    reason: "unclaimed when the CRD is gone (404): an uninstall, left as it is",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.definition = undefined;
    },
    deps: noGrace,
    result: "done",
    calls: [],
  },
  {
    reason: "the CRD cannot be read (403): failed, nothing deleted on a guess",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.kubeFailures.set("readDefinition", kubeError(403, "forbidden"));
    },
    deps: noGrace,
    result: "failed",
    calls: [],
  },
  {
    reason: "started with deleteOnUninstall: swept even during an uninstall, the CRD not read",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.definition = terminating;
    },
    deps: () => ({ ...noGrace(), deleteOnUninstall: true }),
    result: "done",
    calls: ["items.delete i1"],
    leaks: 1,
    definitionReads: 0,
  },
  {
    reason: "an item of ours without a uid mark: nothing can claim it, swept",
    setup: (w) => anItem(w),
    deps: noGrace,
    result: "done",
    calls: ["items.delete i1"],
    leaks: 1,
  },
  {
    reason: "the caches trail: a live read finds the claiming Widget, so no delete",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.resourceObjects.set("default/foo", aWidget());
    },
    deps: () => ({ ...noGrace(), resources: { get: () => undefined, list: () => [] } }),
    result: "done",
    calls: [],
  },
  {
    reason: "the live read fails: failed, nothing deleted on a guess",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.kubeFailures.set("readResource", kubeError(500, "etcd timeout"));
    },
    deps: noGrace,
    result: "failed",
    calls: [],
  },
  {
    reason: "the delete is throttled (503, Retry-After): failed after the wait",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.api.fail("delete", new ItemApiError(503, "unavailable", 2_000));
    },
    deps: noGrace,
    result: "failed:2000",
    calls: ["items.delete i1"],
  },
  {
    reason: "the delete fails otherwise (500): failed with backoff",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.api.fail("delete", new ItemApiError(500, "internal error"));
    },
    deps: noGrace,
    result: "failed",
    calls: ["items.delete i1"],
  },
  {
    reason: "the item changed meanwhile (412, stale; maybe adopted): done, the change feed brings it back",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.api.fail("delete", new ItemApiError(412, "changed"));
    },
    deps: noGrace,
    result: "done",
    calls: ["items.delete i1"],
  },
  {
    reason: "someone deleted it first (404): done",
    setup: (w) => {
      anItem(w, "uid-foo");
      w.api.fail("delete", new ItemApiError(404, "not found"));
    },
    deps: noGrace,
    result: "done",
    calls: ["items.delete i1"],
  },
  {
    reason: "an unforeseen throw (the plugin's resourceOf throws): failed, never a throw",
    setup: (w) => anItem(w, "uid-foo"),
    deps: (w) => ({
      ...noGrace(),
      plugin: throwingIn(w, "resource", "resourceOf", new TypeError("not a name")),
    }),
    result: "failed",
    calls: [],
  },
];

describe("Sweep: every exit", () => {
  it.each(rows)("$reason", async (row) => {
    const world = new WidgetWorld();
    row.setup(world);
    const sweep = new Sweep<Widget, Item>({ ...world.deps(), ...row.deps?.(world) });

    const got = await sweep.reconcile("default.foo", new AbortController().signal);

    expect(resultSummary(got)).toBe(row.result);
    expect(world.calls).toEqual(row.calls);
    expect(world.counts.leaksRemoved.sweep).toBe(row.leaks ?? 0);
    if (row.definitionReads !== undefined) expect(world.definitionReads).toBe(row.definitionReads);
  });

  /** The item of `default/foo` (uid-foo), renamed behind our back to `default.foo-old`. */
  const renamed = (w: WidgetWorld) =>
    w.api.put({ id: "i1", name: "default.foo-old", size: 1, tags: { owner: "k8s", uid: "uid-foo" } });
  it.each([
    {
      reason: "its live Widget claims it by its uid mark, whatever its name: never swept",
      setup: (w: WidgetWorld) => w.resourceObjects.set("default/foo", aWidget()),
      calls: [],
    },
    {
      reason:
        "its intent record claims it by the uid (the Widget deleted, its record still there): never swept",
      setup: (w: WidgetWorld) => w.intentObjects.set("default.foo", aWidgetRef()),
      calls: [],
    },
    {
      reason: "a Widget of another uid under its old name claims nothing: swept as a leak",
      setup: (w: WidgetWorld) => w.resourceObjects.set("default/foo", aWidget({ uid: "uid-other" })),
      calls: ["items.delete i1"],
    },
  ])("a renamed item of ours: $reason", async ({ setup, calls }) => {
    const world = new WidgetWorld();
    renamed(world);
    setup(world);
    const sweep = new Sweep<Widget, Item>({ ...world.deps(), graceMs: 0 });

    await expect(sweep.reconcile("default.foo-old", new AbortController().signal)).resolves.toEqual({
      kind: "done",
    });
    expect(world.calls).toEqual(calls);
  });

  it("the grace period runs on the sweep's own clock: swept once it has passed", async () => {
    const world = new WidgetWorld();
    anItem(world, "uid-foo");
    let now = Date.UTC(2026, 0, 1);
    const sweep = new Sweep<Widget, Item>({ ...world.deps(), graceMs: 10_000, now: () => new Date(now) });
    const signal = new AbortController().signal;
    expect(resultSummary(await sweep.reconcile("default.foo", signal))).toBe("requeueAfter:10000");
    now += 4_000;
    expect(resultSummary(await sweep.reconcile("default.foo", signal))).toBe("requeueAfter:6000");
    now += 6_000;
    expect(resultSummary(await sweep.reconcile("default.foo", signal))).toBe("done");
    expect(world.calls).toEqual(["items.delete i1"]);
  });
});
