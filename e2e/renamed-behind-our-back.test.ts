/**
 * Scenario: a person renames our cloud shape behind the controller's back (the cloud lets anyone PATCH a
 * shape's `name`). The shape is still ours, and still this Shape's: its owner and k8s-uid tags say so; only
 * its name is no longer the one the Shape maps to. Whatever the Shape's policies, the controller never
 * deletes it while the Shape lives, never creates a second shape with the Shape's uid, and says what
 * happened: a Warning Event RenamedCloudShape naming the new name. With Update allowed it renames the shape
 * back (the same shape, one PATCH); without Update it leaves it where the person put it, and the Shape says
 * Ready=False and Synced=False, reason Renamed, naming the new name. Deleting the Shape, or a deletion the
 * controller missed, acts on the renamed shape, found by its uid.
 *
 * The stack's leak grace is 2 s. "Past the sweep's grace" is a condition, not a sleep: two leaks of ours
 * created after the rename, one after the other, are swept ({@link pastTheSweepsGrace}).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  type ShapeSpec,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/** The Event a rename is reported with, whatever the controller did about it. */
const RENAMED_EVENT = "RenamedCloudShape";
/** The reason of Ready and Synced while the shape stays under a name the controller did not give it. */
const RENAMED = "Renamed";

/** Management policies without Update: created, then never written (a rename back included). */
const WITHOUT_UPDATE = ["Observe", "Create", "Delete"] as const;

/** A Shape's policies, and what deleting it does to its cloud shape. */
interface PolicyCase {
  what: string;
  /** Part of the Shape's name. */
  slug: string;
  spec: Pick<ShapeSpec, "deletionPolicy" | "managementPolicies">;
  /** What deleting the Shape does to its cloud shape. */
  deletion: "deleted" | "released";
  reason: string;
}

/** Policies that allow Update: the shape is renamed back. */
const UPDATE_ALLOWED: readonly PolicyCase[] = [
  {
    what: "deletionPolicy Delete",
    slug: "delete",
    spec: {},
    deletion: "deleted",
    reason: "the default: the Shape and its cloud shape live and die together",
  },
  {
    what: "deletionPolicy Orphan",
    slug: "orphan",
    spec: { deletionPolicy: "Orphan" },
    deletion: "released",
    reason: "kept on deletion, so a leak sweep that deleted it would break the Shape's promise twice",
  },
  {
    what: "no Delete",
    slug: "no-delete",
    spec: { managementPolicies: ["Observe", "Create", "Update"] },
    deletion: "released",
    reason: "without Delete the controller may never delete it, renamed or not",
  },
];

/** Policies without Update: the shape stays under its new name. */
const UPDATE_LEFT_OUT: readonly PolicyCase[] = [
  {
    what: "deletionPolicy Delete",
    slug: "delete",
    spec: { managementPolicies: [...WITHOUT_UPDATE] },
    deletion: "deleted",
    reason: "Delete is allowed: the Shape's deletion deletes the shape where it is",
  },
  {
    what: "deletionPolicy Orphan",
    slug: "orphan",
    spec: { managementPolicies: [...WITHOUT_UPDATE], deletionPolicy: "Orphan" },
    deletion: "released",
    reason: "the Shape's deletion lets go of the shape where it is",
  },
];

describe("renamed behind our back", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  let leaks = 0;

  beforeAll(async () => {
    stack = await startStack("renamed-behind-our-back");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("renamed");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** A person renames the cloud shape `id` of Shape `name` in the console, to `<its cloud name>-old`. */
  async function renameInTheCloud(id: string, name: string): Promise<CloudShape> {
    const renamed = await stack.cloud.patch(id, { name: `${ns}.${name}-old` });
    expect(renamed, "the renamed shape").toMatchObject({ id, name: `${ns}.${name}-old` });
    return renamed;
  }

  /**
   * Waits until the sweep has had its grace period for every shape the controller's cache held when
   * called: a leak of ours (our owner tag, claimed by nothing) created then is swept, and after it a second
   * one, whose grace ends a whole period after the first one's deletion.
   */
  async function pastTheSweepsGrace(): Promise<void> {
    for (let i = 0; i < 2; i++) {
      const leak = await stack.cloud.create({
        name: `${ns}.control-leak-${++leaks}`,
        type: "circle",
        color: "red",
        tags: { owner: stack.ownerId },
      });
      await waitFor(`the sweep to delete the control leak ${leak.name}`, async () => {
        expect(await stack.cloud.get(leak.id), "the control leak").toBeUndefined();
      });
    }
  }

  /** The cloud shapes that carry `uid` in their k8s-uid tag, wherever they are named. */
  async function carrying(uid: string): Promise<CloudShape[]> {
    return (await stack.cloud.list()).filter((s) => s.tags["k8s-uid"] === uid);
  }

  /** The messages of the Shape's Events with `reason`. */
  async function eventMessages(name: string, reason: string): Promise<string[]> {
    return (await stack.kube.eventsFor(ns, name))
      .filter((e) => e.reason === reason)
      .map((e) => e.message ?? "");
  }

  /** The controller's writes to the cloud shape `id`, as [method, status]. */
  async function controllerWritesTo(id: string): Promise<[string, number][]> {
    return writesTo(await stack.cloud.requests(), id)
      .filter((r) => r.clientId === "controller")
      .map((r) => [r.method, r.status]);
  }

  /** Waits until the Shape and its ShapeRef are both gone. */
  async function shapeGone(name: string): Promise<void> {
    await waitFor(`Shape ${ns}/${name} and its ShapeRef to be gone`, async () => {
      expect(await stack.kube.getShape(ns, name), "the Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.${name}`), "the ShapeRef").toBeUndefined();
    });
  }

  /** The cloud shape as a deletion with `deletion` leaves it: gone, or where it was without our tags. */
  async function expectDeletedOrReleased(deletion: PolicyCase["deletion"], was: CloudShape): Promise<void> {
    const now = await stack.cloud.get(was.id);
    if (deletion === "deleted") {
      expect(now, `cloud shape ${was.id}`).toBeUndefined();
      return;
    }
    expect(now, `cloud shape ${was.id}, released`).toMatchObject({
      name: was.name,
      type: was.type,
      color: was.color,
    });
    expect(now?.tags, "its tags: ours removed").toEqual({});
  }

  test.each(UPDATE_ALLOWED)(
    "$what: renamed back (the same shape, one PATCH), an Event names the name it was given; never deleted while the Shape lives; the deletion: $deletion",
    async ({ slug, spec, deletion }: PolicyCase) => {
      const name = `back-${slug}`;
      await stack.kube.applyShape(ns, name, { type: "square", color: "blue", ...spec });
      const before = await waitConverged(stack, ns, name);
      const uid = before.shape.metadata.uid;

      const { name: renamed } = await renameInTheCloud(before.cloud.id, name);

      const back = await waitFor(`the cloud shape to be renamed back from ${renamed}`, async () => {
        const c = await waitConverged(stack, ns, name, { timeoutMs: 1_000 });
        expect(c.cloud.id, "the same cloud shape").toBe(before.cloud.id);
        expect(await stack.cloud.getByName(renamed), `a shape named ${renamed}`).toBeUndefined();
        return c;
      });
      const events = await waitFor(`the ${RENAMED_EVENT} Event`, async () => {
        const messages = await eventMessages(name, RENAMED_EVENT);
        expect(messages, `${RENAMED_EVENT} Events`).toHaveLength(1);
        return messages;
      });
      expect(events[0], "the Event names the name the person gave it").toContain(renamed);
      expect(events[0], "the Event says it was renamed back").toContain(`renamed it back to ${ns}.${name}`);
      // The status counts the rename given back as drift repaired.
      await waitFor("status.driftRepairs to count the rename given back", async () => {
        expect((await stack.kube.getShape(ns, name))?.status?.driftRepairs).toBe(1);
      });

      await pastTheSweepsGrace();
      expect(await carrying(uid), "the cloud shapes with the Shape's uid").toEqual([back.cloud]);
      // One write: the rename back. No delete, no second create.
      expect(await controllerWritesTo(before.cloud.id), "the controller's writes to the shape").toEqual([
        ["PATCH", 200],
      ]);
      expect(await waitConverged(stack, ns, name, { timeoutMs: 1_000 })).toMatchObject({
        cloud: { id: before.cloud.id },
      });

      await stack.kube.deleteShape(ns, name);
      await shapeGone(name);
      await expectDeletedOrReleased(deletion, back.cloud);
    },
  );

  test.each(UPDATE_LEFT_OUT)(
    "no Update, $what: left under its new name; Ready=False and Synced=False Renamed and an Event name it; never deleted while the Shape lives; the deletion: $deletion where it is",
    async ({ slug, spec, deletion }: PolicyCase) => {
      const name = `left-${slug}`;
      await stack.kube.applyShape(ns, name, { type: "hexagon", color: "green", ...spec });
      const before = await waitConverged(stack, ns, name);
      const uid = before.shape.metadata.uid;

      const afterRename = await renameInTheCloud(before.cloud.id, name);
      const renamed = afterRename.name;

      await waitFor(`Shape ${ns}/${name} to report the rename`, async () => {
        const shape = await stack.kube.shape(ns, name);
        for (const type of ["Ready", "Synced"] as const) {
          const condition = conditionOf(shape, type);
          expect(condition, type).toMatchObject({
            status: "False",
            reason: RENAMED,
            observedGeneration: shape.metadata.generation,
          });
          expect(condition?.message, `the ${type} message names the new name`).toContain(renamed);
        }
      });
      const events = await waitFor(`the ${RENAMED_EVENT} Event`, async () => {
        const messages = await eventMessages(name, RENAMED_EVENT);
        expect(messages, `${RENAMED_EVENT} Events`).toHaveLength(1);
        return messages;
      });
      expect(events[0], "the Event names the new name").toContain(renamed);

      await pastTheSweepsGrace();
      // Exactly as the person left it (same revision: not written since), our tags on it.
      expect(await stack.cloud.get(before.cloud.id), "the renamed shape").toEqual(afterRename);
      expect(afterRename.tags, "its tags").toEqual(before.cloud.tags);
      expect(await stack.cloud.getByName(`${ns}.${name}`), "a shape under the Shape's name").toBeUndefined();
      expect(await carrying(uid), "the cloud shapes with the Shape's uid").toEqual([afterRename]);
      expect(await controllerWritesTo(before.cloud.id), "the controller's writes to the shape").toEqual([]);
      expect(conditionOf(await stack.kube.shape(ns, name), "Ready")?.reason, "Ready").toBe(RENAMED);
      expect(await eventMessages(name, RENAMED_EVENT), `${RENAMED_EVENT} Events`).toHaveLength(1);

      await stack.kube.deleteShape(ns, name);
      await shapeGone(name);
      await expectDeletedOrReleased(deletion, afterRename);
      expect(await stack.cloud.getByName(`${ns}.${name}`), "a shape under the Shape's name").toBeUndefined();
    },
  );

  // Renamed while the controller is down, and the Shape deleted then too (its finalizer stripped by hand):
  // at the start the ShapeRef dangles, and nothing is under its name. Only the uid leads to the shape.
  test.each(UPDATE_ALLOWED.slice(0, 2))(
    "a missed deletion (controller down: renamed, finalizer stripped, deleted), $what: the ShapeRef leads to the renamed shape by its uid; $deletion before the ShapeRef goes",
    async ({ slug, spec, deletion }: PolicyCase) => {
      const name = `missed-${slug}`;
      await stack.kube.applyShape(ns, name, { type: "triangle", color: "orange", size: 5, ...spec });
      const before = await waitConverged(stack, ns, name);

      await controller.stop();
      const renamed = await renameInTheCloud(before.cloud.id, name);
      await stack.kube.stripFinalizer(ns, name);
      await stack.kube.deleteShape(ns, name);
      await waitFor(`Shape ${ns}/${name} to be gone`, async () => {
        expect(await stack.kube.getShape(ns, name)).toBeUndefined();
      });
      await controller.start();

      await waitFor(`the ShapeRef ${ns}.${name} to be gone`, async () => {
        expect(await stack.kube.getShapeRef(`${ns}.${name}`), "the ShapeRef").toBeUndefined();
      });
      // The ShapeRef goes only once its shape is dealt with: the missed deletion did it, where the shape is.
      // (A sweep deleting it as unclaimed would come a grace period after the ShapeRef is gone.)
      await expectDeletedOrReleased(deletion, renamed);
      expect(await stack.cloud.getByName(`${ns}.${name}`), "a shape under the Shape's name").toBeUndefined();
    },
  );

  test("the name taken meanwhile by someone else: left under its new name and reported (Renamed); renamed back once the name is free", async () => {
    const name = "contested";
    await stack.kube.applyShape(ns, name, { type: "circle", color: "purple" });
    const before = await waitConverged(stack, ns, name);
    const uid = before.shape.metadata.uid;

    // While the controller is down, a person renames our shape and another takes its name.
    await controller.stop();
    const { name: renamed } = await renameInTheCloud(before.cloud.id, name);
    const squatter = await stack.cloud.create({
      name: `${ns}.${name}`,
      type: "triangle",
      color: "green",
      tags: { owner: "someone-else" },
    });
    await controller.start();

    await waitFor(`Shape ${ns}/${name} to report the rename`, async () => {
      const shape = await stack.kube.shape(ns, name);
      const ready = conditionOf(shape, "Ready");
      expect(ready, "Ready").toMatchObject({ status: "False", reason: RENAMED });
      expect(ready?.message, "the Ready message names the new name").toContain(renamed);
      expect(conditionOf(shape, "Synced"), "Synced").toMatchObject({ status: "False", reason: RENAMED });
    });
    await pastTheSweepsGrace();
    expect(await stack.cloud.get(squatter.id), "the other's shape, untouched").toEqual(squatter);
    const left = await stack.cloud.get(before.cloud.id);
    expect(left, "ours, where the person put it").toMatchObject({ name: renamed, tags: before.cloud.tags });
    expect(await carrying(uid), "the cloud shapes with the Shape's uid").toEqual([left]);

    // The other lets go of the name: ours is renamed back, the same shape.
    await stack.cloud.delete(squatter.id);
    const back = await waitFor(`the cloud shape to be renamed back from ${renamed}`, async () => {
      const c = await waitConverged(stack, ns, name, { timeoutMs: 1_000 });
      expect(c.cloud.id, "the same cloud shape").toBe(before.cloud.id);
      return c;
    });
    expect(await carrying(uid), "the cloud shapes with the Shape's uid").toEqual([back.cloud]);
  });
});
