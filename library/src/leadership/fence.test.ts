import { describe, expect, test } from "vitest";
import type { ExternalClient } from "../reconcile/contract.ts";
import { ExternalResourceReconciler } from "../reconcile/reconciler.ts";
import { WidgetWorld, aWidget, type Item, type Widget } from "../testing/fake-plugin.ts";
import { resultSummary } from "../testing/fake-world.ts";
import {
  FencedError,
  FencedEventRecorder,
  FencedExternalClient,
  FencedResourceWriter,
  WriteFence,
} from "./fence.ts";

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

  test("a closed fence drops an Event without a throw, and the recorder never sees it", () => {
    const recorded: string[] = [];
    const fence = new WriteFence();
    const fenced = new FencedEventRecorder(fence, {
      record: (_object, _type, reason) => recorded.push(reason),
    });
    expect(() => fenced.record({}, "Normal", "Created", "made it")).not.toThrow();
    const leading = new AbortController();
    fence.open(leading.signal);
    fenced.record({}, "Normal", "Updated", "changed it");
    leading.abort(); // leadership lost
    expect(() => fenced.record({}, "Normal", "Deleted", "gone")).not.toThrow();
    expect(recorded).toEqual(["Updated"]);
  });
});

describe("a fence that closes mid-reconcile", () => {
  /**
   * A Widget reconciled through fenced ports (`fenced`: which of them), the fence closing as the API answers
   * the create: the create landed, and leadership was lost right after.
   */
  async function closingAfterTheCreate(fenced: { kube: boolean }) {
    const world = new WidgetWorld();
    const widget = aWidget();
    world.resourceObjects.set("default/foo", widget);
    const fence = new WriteFence();
    const leading = new AbortController();
    fence.open(leading.signal);
    const create = world.api.create.bind(world.api);
    world.api.create = async (desired) => {
      const made = await create(desired);
      leading.abort();
      return made;
    };
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: (k) => (k === "default/foo" ? widget : undefined), list: () => [] },
      kube: fenced.kube ? new FencedResourceWriter(fence, world) : world,
      events: new FencedEventRecorder(fence, world.eventSink),
    });
    const result = await reconciler.reconcile("default/foo", new AbortController().signal);
    const conditions = world.resourceObjects.get("default/foo")?.status?.conditions ?? [];
    return { world, result, conditions: conditions.map((c) => `${c.type}=${c.status} ${c.reason}`) };
  }

  test("the Event the closed fence drops never reports the create that landed as failed", async () => {
    const { world, result, conditions } = await closingAfterTheCreate({ kube: false });
    expect(world.calls).toEqual([
      "kube.addFinalizer",
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "kube.updateStatus",
    ]);
    expect(resultSummary(result)).toBe("done");
    expect(conditions).toEqual(["Ready=True Available", "Synced=True ReconcileSuccess"]);
    expect(world.events).toEqual([]);
  });

  test("every port fenced: one exit, failed with the FencedError, and nothing written after the fence closed", async () => {
    const { world, result, conditions } = await closingAfterTheCreate({ kube: true });
    expect(world.calls).toEqual([
      "kube.addFinalizer",
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
    ]);
    expect(result).toMatchObject({ kind: "failed", error: expect.any(FencedError) });
    expect(conditions).toEqual([]);
    expect(world.events).toEqual([]);
  });
});
