/**
 * The conformance suite: the scenarios of the story (docs/scenarios/ in the reconcile-kit repository),
 * written ONCE against {@link Subject} and run for every controller built on the library. What the suite
 * promises a subject, and assumes of it, is on {@link Subject}; `conformance` registers it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Reason } from "../reconcile/status.ts";
import { usesExistingCluster } from "../support/existing-cluster.ts";
import { waitFor } from "../testing/wait.ts";
import type { ApplyOptions, ExternalView, ResourceView, Subject, Variant } from "./subject.ts";

/** A deadline for waits that span a controller start or an API server restart (2 busy cores). */
const SLOW_MS = 120_000;

type DeletionPolicy = NonNullable<ApplyOptions["deletionPolicy"]>;

/** A deletion policy, and what a deletion with it leaves behind. */
interface DeletionPolicyCase {
  policy: DeletionPolicy;
  expected: string;
  reason: string;
}

const DELETION_POLICY_CASES: readonly DeletionPolicyCase[] = [
  {
    policy: "Delete",
    expected: "the external object is deleted",
    reason: "the default: the resource and its external object live and die together",
  },
  {
    policy: "Orphan",
    expected: "the external object stays, without our owner mark",
    reason: "handed over: foreign from then on, so no later resource or sweep of ours ever takes it back",
  },
];

/** One thing that changes while the controller is down, and what it must look like once it is back. */
interface DowntimeCase {
  /** The resource's name. */
  name: string;
  change: "create" | "respec" | "drift" | "delete-external" | "delete";
  /** Whether the resource exists (converged on "first") before the controller stops. */
  existsBefore: boolean;
  /** The variant it converges on, or "gone" (resource, intent record and external object). */
  expect: Variant | "gone";
  /** Whether it keeps the external object it had (true), gets a new one (false), or had none (undefined). */
  sameObject?: boolean;
  reason: string;
}

const DOWNTIME_CASES: readonly DowntimeCase[] = [
  {
    name: "created",
    change: "create",
    existsBefore: false,
    expect: "first",
    reason: "a resource created while down arrives in the startup list, not as an event",
  },
  {
    name: "respecced",
    change: "respec",
    existsBefore: true,
    expect: "second",
    sameObject: true,
    reason: "a spec change made while down is an update of the same object",
  },
  {
    name: "drifted",
    change: "drift",
    existsBefore: true,
    expect: "first",
    sameObject: true,
    reason: "drift made while down is repaired in place",
  },
  {
    name: "lost",
    change: "delete-external",
    existsBefore: true,
    expect: "first",
    sameObject: false,
    reason: "an external object deleted while down is created again",
  },
  {
    name: "deleted",
    change: "delete",
    existsBefore: true,
    expect: "gone",
    reason: "a deletion the finalizer held while down is carried out",
  },
];

/**
 * Registers the conformance scenarios for `subject`: one Vitest `describe` ("conformance: <name>") whose
 * `beforeAll` sets the subject up and starts its controller and whose `afterAll` tears it down. Call it at
 * the top level of a test file, once per subject (`conformance(mySubject())`).
 *
 * # Guarantees
 * - The scenarios of the story, each in a namespace of its own, each failing against the controller bug it
 *   names; what they promise and assume of the subject is on {@link Subject}.
 * - The existing-cluster convention is read here, once, when the scenarios are registered: with
 *   USE_EXISTING_CLUSTER=true (reconcile-kit/harness's `usesExistingCluster`) the cluster outlives the suite,
 *   so the uninstall scenario (it deletes the CRD) and the API server restart are skipped, each with a line
 *   on stderr saying why, whatever the subject offers.
 *
 * # Errors
 * Throws on a USE_EXISTING_CLUSTER it cannot read (neither true/1 nor false/0). Needs Vitest (an optional peer dependency of the package): importing reconcile-kit/conformance fails
 * without it.
 */
export function conformance(subject: Subject): void {
  const existingCluster = usesExistingCluster();
  describe(`conformance: ${subject.name}`, () => {
    /** False between a stop (or a crash) and the next start: a failed scenario's `afterEach` starts it. */
    let running = false;
    const start = async () => {
      await subject.startController();
      running = true;
    };
    const stop = async () => {
      running = false;
      await subject.stopController();
    };

    beforeAll(async () => {
      await subject.setUp();
      await start();
    });
    afterAll(async () => {
      await subject.tearDown();
    });
    afterEach(async () => {
      // A scenario that failed while the controller was down must not take the next ones with it.
      if (!running) await start();
    });

    // ---- What every scenario looks at. ----

    const external = (ns: string, name: string) => subject.getExternal(subject.externalNameOf(ns, name));

    /**
     * Waits until `ns/name` is converged on `variant`, as a person would check it: Ready and Synced True
     * for the current generation, an external object with our owner mark and the resource's uid whose
     * managed fields match `variant`, and the intent record in place.
     */
    async function converged(
      ns: string,
      name: string,
      variant: Variant,
      timeoutMs?: number,
    ): Promise<{ resource: ResourceView; external: ExternalView }> {
      return waitFor(
        `${ns}/${name} to converge on "${variant}"`,
        async () => {
          const resource = await subject.read(ns, name);
          if (!resource) throw new Error(`${ns}/${name} does not exist`);
          expect(resource.conditions.Ready?.status, "Ready").toBe("True");
          expect(resource.conditions.Synced?.status, "Synced").toBe("True");
          expect(resource.observedGeneration, "observedGeneration").toBe(resource.generation);
          const object = await external(ns, name);
          expect(object, "the external object").toMatchObject({
            owner: subject.ownerId,
            uid: resource.uid,
            matches: variant,
          });
          expect(await subject.intentExists(ns, name), "the intent record exists").toBe(true);
          return { resource, external: object as ExternalView };
        },
        timeoutMs === undefined ? {} : { timeoutMs },
      );
    }

    /** Waits until the resource and its intent record are both gone. */
    async function gone(ns: string, name: string, timeoutMs?: number): Promise<void> {
      await waitFor(
        `${ns}/${name} and its intent record to be gone`,
        async () => {
          expect(await subject.read(ns, name), "the resource").toBeUndefined();
          expect(await subject.intentExists(ns, name), "the intent record exists").toBe(false);
        },
        timeoutMs === undefined ? {} : { timeoutMs },
      );
    }

    /** Waits until the controller finished at least `count` reconciles since the counter read `since`. */
    async function looked(what: string, since: number, count = 1): Promise<void> {
      await waitFor(`the controller to reconcile ${what}`, async () => {
        expect((await subject.reconciles()) - since, "reconciles since").toBeGreaterThanOrEqual(count);
      });
    }

    let refreshes = 0;
    /** Sets the refresh annotation to a value it never had: "look again, now". */
    /** The adoption-policy annotation of the subject's kind. */
    const adopt = subject.annotations.adoptionPolicy;
    const refresh = (ns: string, name: string) =>
      subject.annotate(ns, name, subject.annotations.refresh, `${Date.now()}-${++refreshes}`);

    /** Waits until the Synced condition has `reason` (and status False). */
    async function syncedFalse(ns: string, name: string, reason: string): Promise<ResourceView> {
      return waitFor(`${ns}/${name} to report Synced=False ${reason}`, async () => {
        const resource = await subject.read(ns, name);
        expect(resource?.conditions.Synced, "Synced").toMatchObject({ status: "False", reason });
        return resource as ResourceView;
      });
    }

    /** The external objects that carry the uid mark `uid`, wherever they are named. */
    async function carrying(uid: string): Promise<ExternalView[]> {
      return (await subject.listExternal()).filter((object) => object.uid === uid);
    }

    /**
     * Waits until the sweep has had its grace period for every object the controller's cache held when it
     * was called: a leak of ours (our owner mark, claimed by nothing) created then is swept, and after it a
     * second one. The first leak's grace ends after that of every object seen before it, but its deletion
     * may overtake theirs; the second one's comes a whole grace period after the first's.
     */
    async function sweepHadItsGrace(ns: string): Promise<void> {
      for (const n of [1, 2]) {
        const leak = subject.externalNameOf(ns, `control-leak-${n}`);
        await subject.createForeign(leak, subject.ownerId);
        await waitFor(`the sweep to delete the control leak ${leak}`, async () => {
          expect(await subject.getExternal(leak), "the leak").toBeUndefined();
        });
      }
    }

    // ---- The scenarios. ----

    // Catches: an external object created without our owner mark or the resource's uid (it could never be
    // told from a foreign one again), no finalizer (a deletion slips by), no intent record before the
    // create, or a status never written (Ready/Synced missing, observedGeneration behind).
    it("create: the external object carries our owner and the resource's uid; Ready and Synced", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "created", "first");

      const { resource, external: object } = await converged(ns, "created", "first");

      expect(resource.finalizers, "finalizers").not.toEqual([]);
      expect(object.name).toBe(subject.externalNameOf(ns, "created"));
      expect(object.uid).toBe(resource.uid);
    });

    // Catches: a controller that only creates and never compares (the spec change is ignored), or one that
    // replaces the object instead of updating it (a new id).
    it("update: a spec change is carried to the same external object", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "updated", "first");
      const before = await converged(ns, "updated", "first");

      await subject.apply(ns, "updated", "second");
      const after = await converged(ns, "updated", "second");

      expect(after.resource.generation).toBeGreaterThan(before.resource.generation);
      expect(after.external.id, "the same external object").toBe(before.external.id);
    });

    // Catches: a controller that watches only Kubernetes (nothing changed there, so nothing is repaired), or
    // one that repairs by recreating. Asserted on the external view only, whatever the drift counters say.
    it("drift: a change made behind the controller's back is repaired, in place", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "drifted", "first");
      const before = await converged(ns, "drifted", "first");
      const writesBefore = await subject.externalWrites();

      await subject.drift(subject.externalNameOf(ns, "drifted"));

      const after = await waitFor("the drift to be repaired by a write of the controller", async () => {
        const c = await converged(ns, "drifted", "first", 1_000);
        // The repair is the controller's write: a drift that never happened would not need one.
        expect(await subject.externalWrites(), "the controller's external writes").toBeGreaterThan(
          writesBefore,
        );
        return c;
      });
      expect(after.external.id, "the same external object").toBe(before.external.id);
    });

    // Catches: a controller that trusts its recorded id (Ready stays True over nothing) or reads by that id
    // and reports an error forever instead of creating the object again.
    it("deleted behind our back: the external object is created again, with a new id", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "recreated", "first");
      const before = await converged(ns, "recreated", "first");

      await subject.deleteExternal(subject.externalNameOf(ns, "recreated"));

      const after = await waitFor("a new external object for the resource", async () => {
        const c = await converged(ns, "recreated", "first", 1_000);
        expect(c.external.id, "the external id").not.toBe(before.external.id);
        return c;
      });
      expect(after.external.uid).toBe(before.resource.uid);
    });

    // Catches: a controller that finds its object by name only. Renamed, the object is taken for gone: a
    // second one is created under the desired name (two objects carry one uid), and the sweep, finding the
    // renamed one claimed by no name, deletes it as a leak while its resource lives. Or a cache that keeps
    // the object under its old key, so Ready stays True over a name that holds nothing.
    if (subject.renameExternal) {
      const renameExternal = (name: string): Promise<string> => {
        if (!subject.renameExternal) throw new Error(`${subject.name} says it can rename, but cannot`);
        return subject.renameExternal(name);
      };

      it("renamed behind our back: renamed back, the same object under the desired name, the only one with the uid", async () => {
        const ns = await subject.newNamespace();
        const name = subject.externalNameOf(ns, "renamed");
        await subject.apply(ns, "renamed", "first");
        const before = await converged(ns, "renamed", "first");

        const renamedTo = await renameExternal(name);

        const after = await waitFor(
          `the object to be renamed back from ${renamedTo} to ${name}`,
          async () => {
            const c = await converged(ns, "renamed", "first", 1_000);
            expect(c.external.id, "the same object").toBe(before.external.id);
            expect(await subject.getExternal(renamedTo), `the name ${renamedTo}`).toBeUndefined();
            return c;
          },
        );
        expect(await carrying(after.resource.uid), "the objects that carry the resource's uid").toEqual([
          after.external,
        ]);
      });

      // Without Update nothing may write the object, a rename back included: it stays where the person put
      // it and the resource says so. The sweep must still know it for ours (its uid mark names a live
      // resource), and the deletion must find it there.
      it.each(DELETION_POLICY_CASES)(
        "renamed behind our back, without Update: left under its new name (Renamed), never swept; deletionPolicy $policy: $expected",
        async ({ policy }: DeletionPolicyCase) => {
          const ns = await subject.newNamespace();
          const name = subject.externalNameOf(ns, "renamed");
          await subject.apply(ns, "renamed", "first", {
            deletionPolicy: policy,
            managementPolicies: ["Observe", "Create", "Delete"],
          });
          const before = await converged(ns, "renamed", "first");

          const renamedTo = await renameExternal(name);
          const left: ExternalView = { ...before.external, name: renamedTo };

          await waitFor(`${ns}/renamed to report that its object is now ${renamedTo}`, async () => {
            const resource = await subject.read(ns, "renamed");
            expect(resource?.conditions.Ready, "Ready").toMatchObject({
              status: "False",
              reason: Reason.Renamed,
            });
            expect(resource?.conditions.Synced, "Synced").toMatchObject({
              status: "False",
              reason: Reason.Renamed,
            });
            expect(resource?.conditions.Ready?.message, "the Ready message names the new name").toContain(
              renamedTo,
            );
          });
          // Past the sweep's grace for the renamed object, and the controller looked at the resource again.
          await sweepHadItsGrace(ns);
          const since = await subject.reconciles();
          await refresh(ns, "renamed");
          await looked(`${ns}/renamed after the refresh`, since);

          expect(await subject.getExternal(renamedTo), "the renamed object, as the person left it").toEqual(
            left,
          );
          expect(await subject.getExternal(name), `anything under ${name}`).toBeUndefined();
          expect(await carrying(before.resource.uid), "the objects that carry the resource's uid").toEqual([
            left,
          ]);
          expect((await subject.read(ns, "renamed"))?.conditions.Ready?.reason, "Ready").toBe(Reason.Renamed);

          // Deleted, the resource takes the renamed object with it (or releases it), where it is.
          await subject.delete(ns, "renamed");
          await gone(ns, "renamed");
          await expectDeletedOrReleased(policy, left);
          expect(await subject.getExternal(name), `anything under ${name}`).toBeUndefined();
        },
      );
    } else {
      const why = "its external API cannot rename an object (the subject has no renameExternal)";
      console.warn(`conformance ${subject.name}: the "renamed behind our back" scenarios skipped: ${why}`);
      it.skip("renamed behind our back: renamed back, the same object under the desired name, the only one with the uid", () => {});
      it.skip("renamed behind our back, without Update: left under its new name (Renamed), never swept", () => {});
    }

    // Catches: a controller that takes an object holding its name for its own (adopts and "repairs" it, or
    // deletes it to make room), and one that never tries again once the name is freed.
    it("name collision: a foreign object holding our name is left alone (NameConflict); freed, ours is created", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "contested");
      await subject.createForeign(name, "someone-else");
      const squatter = await subject.getExternal(name);
      expect(squatter, "the foreign object").toMatchObject({ owner: "someone-else", matches: "neither" });

      await subject.apply(ns, "contested", "first");
      const conflicted = await syncedFalse(ns, "contested", "NameConflict");
      expect(conflicted.conditions.Ready?.status, "Ready").not.toBe("True");

      // It looks again (the refresh), and still leaves the foreign object exactly as it was.
      const since = await subject.reconciles();
      await refresh(ns, "contested");
      await looked(`${ns}/contested after the refresh`, since);
      expect(await subject.getExternal(name), "the foreign object, untouched").toEqual(squatter);
      expect((await subject.read(ns, "contested"))?.conditions.Synced?.reason).toBe("NameConflict");

      // The owner frees the name: ours is created, a new object with our marks.
      await subject.deleteExternal(name);
      const ours = await converged(ns, "contested", "first");
      expect(ours.external.id, "our own object, not the foreign one").not.toBe(squatter?.id);
    });

    // Catches: an adoption that creates a second object, deletes and recreates, keeps the foreign values, or
    // leaves the object without our marks (the sweep or a deletion could then never find it).
    it("adopt: an untagged external object becomes ours and follows the spec", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "adopted");
      await subject.createForeign(name, undefined);
      const untagged = await subject.getExternal(name);
      expect(untagged, "the untagged object").toMatchObject({ owner: undefined, matches: "neither" });

      await subject.apply(ns, "adopted", "first", { annotations: { [adopt]: "adopt" } });
      const ours = await converged(ns, "adopted", "first");
      expect(ours.external.id, "the same object, taken over").toBe(untagged?.id);

      // And it is ours from then on: a spec change follows, in place.
      await subject.apply(ns, "adopted", "second", { annotations: { [adopt]: "adopt" } });
      const respecced = await converged(ns, "adopted", "second");
      expect(respecced.external.id, "still the same object").toBe(untagged?.id);
    });

    // Catches: an adoption that takes whatever holds the name (another controller's object: two owners
    // fighting over it), and a refusal that does not say whose it is.
    it("adopt refuses an object of another owner, naming it", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "held");
      await subject.createForeign(name, "another-cluster");
      const held = await subject.getExternal(name);

      await subject.apply(ns, "held", "first", { annotations: { [adopt]: "adopt-or-create" } });
      const refused = await syncedFalse(ns, "held", Reason.OwnedByAnother);
      expect(refused.conditions.Synced?.message, "the Synced message names the holder").toContain(
        "another-cluster",
      );
      expect(refused.conditions.Ready?.status, "Ready").not.toBe("True");
      const since = await subject.reconciles();
      await refresh(ns, "held");
      await looked(`${ns}/held after the refresh`, since);
      expect(await subject.getExternal(name), "the other owner's object, untouched").toEqual(held);

      // Deleted, it leaves the other owner's object as it was (and no conflict behind for later scenarios).
      await subject.delete(ns, "held");
      await gone(ns, "held");
      expect(await subject.getExternal(name), "the other owner's object, after the deletion").toEqual(held);
    });

    // Catches: adopt-or-create that waits for something to adopt (never creates), and "adopt" that creates.
    it("adopt-or-create creates when absent; adopt does not", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "fresh", "first", { annotations: { [adopt]: "adopt-or-create" } });
      await converged(ns, "fresh", "first");

      await subject.apply(ns, "awaited", "first", { annotations: { [adopt]: "adopt" } });
      await syncedFalse(ns, "awaited", Reason.NothingToAdopt);
      expect(await external(ns, "awaited"), "nothing created for adopt").toBeUndefined();
      await subject.delete(ns, "awaited");
      await gone(ns, "awaited");
    });

    // Catches: an untagged object taken (or "repaired") without anyone asking.
    it("without the annotation a foreign object stays untouched, even one with no owner mark", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "unasked");
      await subject.createForeign(name, undefined);
      const untagged = await subject.getExternal(name);

      await subject.apply(ns, "unasked", "first");
      await syncedFalse(ns, "unasked", Reason.NameConflict);
      const since = await subject.reconciles();
      await refresh(ns, "unasked");
      await looked(`${ns}/unasked after the refresh`, since);
      expect(await subject.getExternal(name), "the untagged object, untouched").toEqual(untagged);

      // Deleted, it leaves the untagged object as it was (and no conflict behind for later scenarios).
      await subject.delete(ns, "unasked");
      await gone(ns, "unasked");
      expect(await subject.getExternal(name), "the untagged object, after the deletion").toEqual(untagged);
    });

    // Catches: cleanup by exclusion (deleting every object no resource asks for: everyone else's too), and
    // an owner mark compared loosely (a prefix of ours). The control proves the controller looked: a leak
    // that IS ours (our owner mark, claimed by nothing) next to them is swept.
    it("foreign objects elsewhere are never touched, while a leak of ours next to them is swept", async () => {
      const ns = await subject.newNamespace();
      const bystanders = [
        { name: subject.externalNameOf(ns, "bystander"), owner: "someone-else" },
        { name: subject.externalNameOf(ns, "lookalike"), owner: `${subject.ownerId}-not-ours` },
      ];
      const before: ExternalView[] = [];
      for (const b of bystanders) {
        await subject.createForeign(b.name, b.owner);
        const view = await subject.getExternal(b.name);
        expect(view, b.name).toMatchObject({ owner: b.owner, matches: "neither" });
        before.push(view as ExternalView);
      }
      const leak = subject.externalNameOf(ns, "leak");
      await subject.createForeign(leak, subject.ownerId);

      await waitFor("the sweep to delete the leak of ours", async () => {
        expect(await subject.getExternal(leak), "the leak").toBeUndefined();
      });
      for (const view of before) {
        expect(await subject.getExternal(view.name), `${view.name}, untouched`).toEqual(view);
      }
    });

    // Catches: no finalizer (the resource is gone before the controller can delete anything: a leak), a
    // finalizer never removed (the resource hangs), the intent record left behind, and a deletion policy
    // ignored (an Orphan deleted, or orphaned with our mark still on, so it is never really let go).
    it.each(DELETION_POLICY_CASES)(
      "delete through the finalizer, deletionPolicy $policy: $expected",
      async ({ policy }: DeletionPolicyCase) => {
        const ns = await subject.newNamespace();
        await subject.apply(ns, "deleted", "first", { deletionPolicy: policy });
        const before = await converged(ns, "deleted", "first");
        expect(before.resource.finalizers, "finalizers").not.toEqual([]);

        await subject.delete(ns, "deleted");
        await gone(ns, "deleted");

        await expectDeletedOrReleased(policy, before.external);
      },
    );

    // Catches: a controller that keys everything on the resource: a deletion it never saw (stripped
    // finalizer while it was down) leaves the external object behind forever, or is carried out with the
    // wrong policy (the intent record must remember it).
    it.each(DELETION_POLICY_CASES)(
      "missed deletion (down, deleted, finalizers stripped), deletionPolicy $policy: $expected",
      async ({ policy }: DeletionPolicyCase) => {
        const ns = await subject.newNamespace();
        await subject.apply(ns, "missed", "first", { deletionPolicy: policy });
        const before = await converged(ns, "missed", "first");

        await stop();
        await subject.delete(ns, "missed");
        await subject.stripFinalizers(ns, "missed");
        await waitFor(`${ns}/missed to be gone from the API server`, async () => {
          expect(await subject.read(ns, "missed")).toBeUndefined();
        });
        // What the controller will find: no resource, the intent record, our external object.
        expect(await subject.intentExists(ns, "missed"), "the intent record, left behind").toBe(true);
        expect(await external(ns, "missed"), "the external object, left behind").toEqual(before.external);

        await start();
        await gone(ns, "missed", SLOW_MS);
        await expectDeletedOrReleased(policy, before.external);
      },
    );

    /** After a deletion with `policy`: the object is gone (Delete), or left as it was without our marks. */
    async function expectDeletedOrReleased(policy: DeletionPolicy, was: ExternalView): Promise<void> {
      await waitFor(`the external object to be ${policy === "Orphan" ? "released" : "deleted"}`, async () => {
        const now = await subject.getExternal(was.name);
        if (policy === "Orphan") {
          expect(now, "the orphaned object").toEqual({ ...was, owner: undefined, uid: undefined });
        } else {
          expect(now, "the deleted object").toBeUndefined();
        }
      });
    }

    // Catches: "create first, record later": after a crash between the external create and any bookkeeping,
    // the restarted controller creates a second object (a duplicate, or a conflict with itself forever)
    // instead of adopting the one it made, recognised by its uid mark.
    it("crash after create: restarted, the controller adopts the object it created; no second create", async () => {
      const ns = await subject.newNamespace();
      running = false; // from here on the controller is (or will be) killed
      await subject.crashAfterCreate(ns, "phoenix");

      // Proof the window was hit: the object exists, with our marks; nothing says it is Ready yet.
      const resource = await subject.read(ns, "phoenix");
      if (!resource) throw new Error(`${ns}/phoenix does not exist`);
      const created = await external(ns, "phoenix");
      expect(created, "the object created before the crash").toMatchObject({
        owner: subject.ownerId,
        uid: resource.uid,
        matches: "first",
      });
      expect(resource.conditions.Ready?.status, "Ready before the restart").not.toBe("True");
      expect(await subject.intentExists(ns, "phoenix"), "the intent record, written before the create").toBe(
        true,
      );
      const writesBefore = await subject.externalWrites();

      await start();
      const after = await converged(ns, "phoenix", "first", SLOW_MS);

      expect(after.external.id, "the object created before the crash").toBe(created?.id);
      // It already is what the resource asks for: adopting it costs no external write at all.
      expect((await subject.externalWrites()) - writesBefore, "external writes after the restart").toBe(0);
    });

    // Catches: a controller that trusts events: what changed while it was down never arrives as one, so
    // only a full resync at startup (before it says ready) catches it, not the next periodic one.
    it("downtime resync: everything changed while the controller was down converges once it is back", async () => {
      const ns = await subject.newNamespace();
      const existing = DOWNTIME_CASES.filter((c) => c.existsBefore);
      for (const c of existing) await subject.apply(ns, c.name, "first");
      const before = new Map<string, ExternalView>();
      for (const c of existing) before.set(c.name, (await converged(ns, c.name, "first")).external);

      await stop();
      for (const c of DOWNTIME_CASES) {
        const name = subject.externalNameOf(ns, c.name);
        switch (c.change) {
          case "create":
            await subject.apply(ns, c.name, "first");
            break;
          case "respec":
            await subject.apply(ns, c.name, "second");
            break;
          case "drift":
            await subject.drift(name);
            break;
          case "delete-external":
            await subject.deleteExternal(name);
            break;
          case "delete":
            await subject.delete(ns, c.name); // held by the finalizer until the controller is back
            break;
        }
      }
      await start();

      for (const c of DOWNTIME_CASES) {
        const was = before.get(c.name);
        if (c.expect === "gone") {
          await gone(ns, c.name, SLOW_MS);
          expect(await external(ns, c.name), `${c.name}: ${c.reason}`).toBeUndefined();
          continue;
        }
        const now = await converged(ns, c.name, c.expect, SLOW_MS);
        if (c.sameObject !== undefined && was) {
          expect(now.external.id === was.id, `${c.name} keeps its object: ${c.reason}`).toBe(c.sameObject);
        }
      }
    });

    // Catches: a controller that rewrites status on every pass (a fresh lastSyncTime, a condition's
    // transition time), or writes the external object unconditionally: every resync costs one write per
    // object, for nothing. The window is the controller's own activity: a forced full resync (the refresh
    // annotation on every resource), waited for on its reconcile counter — not a sleep.
    it("no churn: a forced full resync of converged resources writes nothing, to Kubernetes or outside", async () => {
      const ns = await subject.newNamespace();
      const names = ["calm-a", "calm-b", "calm-c", "calm-d", "calm-e"];
      const variantOf = (i: number): Variant => (i % 2 === 0 ? "first" : "second");
      for (const [i, n] of names.entries()) await subject.apply(ns, n, variantOf(i));
      for (const [i, n] of names.entries()) await converged(ns, n, variantOf(i));

      /** Refreshes every resource and waits until the controller reconciled that many times. */
      const fullResync = async (what: string) => {
        const since = await subject.reconciles();
        for (const n of names) await refresh(ns, n);
        await looked(what, since, names.length);
      };
      // A first round lets whatever the convergence set in motion land.
      await fullResync("every resource after a first refresh");
      const kubeBefore = await subject.kubeWrites();
      const externalBefore = await subject.externalWrites();
      const viewsBefore = await Promise.all(names.map((n) => subject.read(ns, n)));

      await fullResync("every resource after a second refresh");

      expect((await subject.kubeWrites()) - kubeBefore, "Kubernetes writes").toBe(0);
      expect((await subject.externalWrites()) - externalBefore, "external writes").toBe(0);
      const viewsAfter = await Promise.all(names.map((n) => subject.read(ns, n)));
      expect(viewsAfter, "generation, observedGeneration and conditions of every resource").toEqual(
        viewsBefore,
      );
      for (const [i, n] of names.entries()) await converged(ns, n, variantOf(i), 0);
    });

    // Catches: a pause honoured only for some triggers (a spec change) and not others (an external event,
    // a refresh), or not at all: the drift is repaired and the spec change carried while paused. And a
    // controller that forgets what happened while paused: unpausing must repair both.
    it("paused: drift stays and a spec change waits (Synced=False ReconcilePaused); unpaused, both are carried", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "held", "first");
      await subject.apply(ns, "control", "first");
      const held = await converged(ns, "held", "first");
      const control = await converged(ns, "control", "first");

      await subject.annotate(ns, "held", subject.annotations.paused, "true");
      await syncedFalse(ns, "held", "ReconcilePaused");

      await subject.drift(subject.externalNameOf(ns, "held"));
      await subject.apply(ns, "held", "second");
      await subject.drift(subject.externalNameOf(ns, "control"));
      // The controller is at work: the same drift on the unpaused control is repaired...
      await waitFor("the unpaused control's drift to be repaired", async () => {
        expect(await external(ns, "control")).toEqual(control.external);
      });
      // ...and it looked at the paused resource after every change (a refresh comes after them all).
      const since = await subject.reconciles();
      await refresh(ns, "held");
      await looked(`${ns}/held after the refresh`, since);

      const paused = await subject.read(ns, "held");
      expect(paused?.conditions.Synced, "Synced").toMatchObject({
        status: "False",
        reason: "ReconcilePaused",
      });
      expect(paused?.observedGeneration, "observedGeneration (the spec change waits)").toBeLessThan(
        paused?.generation ?? 0,
      );
      expect(await external(ns, "held"), "the drift stays, the spec change is not carried").toMatchObject({
        id: held.external.id,
        matches: "neither",
      });

      await subject.annotate(ns, "held", subject.annotations.paused, null);
      const after = await converged(ns, "held", "second");
      expect(after.external.id, "the same external object").toBe(held.external.id);
    });

    // Catches: a controller that only reacts to spec changes (a generation filter on update events): the
    // refresh annotation, a person's "look again now", would wait for the next resync, minutes away. And a
    // look at a converged resource must cost nothing.
    it("refresh: the annotation makes the controller look again at once; a converged resource costs no write", async () => {
      const ns = await subject.newNamespace();
      await subject.apply(ns, "refreshed", "first");
      const before = await converged(ns, "refreshed", "first");
      const externalBefore = await subject.externalWrites();
      const kubeBefore = await subject.kubeWrites();

      const since = await subject.reconciles();
      await refresh(ns, "refreshed");
      await looked(`${ns}/refreshed after the refresh`, since);

      expect((await subject.externalWrites()) - externalBefore, "external writes").toBe(0);
      expect((await subject.kubeWrites()) - kubeBefore, "Kubernetes writes").toBe(0);
      expect(await converged(ns, "refreshed", "first", 0)).toEqual(before);
    });

    // Catches: a controller that retries a spec the external API refused for good — with backoff, on every
    // resync, after every restart: requests that can never succeed, for as long as nobody looks — or that
    // hides the API's words behind a generic failure, or that gives up for good (an edited spec must be tried
    // at once, without a restart). "No retries" is asserted over a window of the controller's own activity,
    // never a sleep: a control resource reconciled again and again (a retrying controller's backoff starts
    // at a fraction of a second, so it would have written several times by then), then a restart, whose
    // full resync reconciles the refused resource itself before the controller says it is ready.
    // An API that refuses nothing for good gives no input to try it with: skipped, saying why.
    if (subject.refusesNothing !== undefined) {
      console.warn(`conformance ${subject.name}: rejected input skipped: ${subject.refusesNothing}`);
    }
    (subject.refusesNothing === undefined ? it : it.skip)(
      "rejected input: Synced=False with the API's message, no retries, fixed by editing the spec",
      async () => {
        const rejectedMessage = subject.rejectedMessage;
        if (rejectedMessage === undefined) {
          throw new Error(`${subject.name} gives neither rejectedMessage nor refusesNothing`);
        }
        const ns = await subject.newNamespace();
        await subject.apply(ns, "control", "first");
        await converged(ns, "control", "first");

        await subject.apply(ns, "refused", "rejected");
        const refused = await syncedFalse(ns, "refused", Reason.SpecRejected);
        expect(refused.conditions.Synced?.message, "the API's own words").toContain(rejectedMessage);
        expect(refused.conditions.Ready, "Ready: nothing was created").toMatchObject({
          status: "False",
          reason: Reason.Absent,
        });
        expect(await external(ns, "refused"), "the external object").toBeUndefined();
        const writesAtRefusal = await subject.externalWrites();

        // The controller keeps working: the control, refreshed, reconciled each time (a converged resource
        // costs no write: the refresh scenario)...
        for (let i = 1; i <= 10; i++) {
          const since = await subject.reconciles();
          await refresh(ns, "control");
          await looked(`${ns}/control after refresh ${i}`, since);
        }
        // ...and restarted, it reconciles every resource once before it says it is ready: the refused one too.
        await stop();
        await start();
        const since = await subject.reconciles();
        await refresh(ns, "control");
        await looked(`${ns}/control after the restart`, since);

        expect((await subject.externalWrites()) - writesAtRefusal, "external writes since the refusal").toBe(
          0,
        );
        const after = await subject.read(ns, "refused");
        expect(after?.conditions.Synced, "Synced, as the refusal left it").toEqual(refused.conditions.Synced);
        expect(after?.generation, "generation").toBe(refused.generation);

        // The refresh annotation is a person asking to look again: the spec is sent once more, refused again.
        const writesBeforeRefresh = await subject.externalWrites();
        await refresh(ns, "refused");
        await waitFor("the refresh to send the refused spec again", async () => {
          expect((await subject.externalWrites()) - writesBeforeRefresh, "external writes").toBeGreaterThan(
            0,
          );
        });
        await syncedFalse(ns, "refused", Reason.SpecRejected);

        // Editing the spec fixes it, at once: no restart, no refresh.
        await subject.apply(ns, "refused", "first");
        const fixed = await converged(ns, "refused", "first");
        expect(fixed.resource.generation, "the edit is a new generation").toBeGreaterThan(refused.generation);
      },
    );

    // Catches: an observe-only resource that takes the object it looks at for its own (retags, "repairs",
    // creates over, or deletes it on the way out), one that reads only its owner-filtered cache (a foreign
    // object is never seen: Ready stays False), or one that holds a finalizer it has nothing to do with.
    it("observe only: a foreign object is seen (Ready, atProvider), never written, also when the resource is deleted", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "observed");
      await subject.createForeign(name, "someone-else");
      const foreign = await subject.getExternal(name);
      expect(foreign, "the foreign object").toMatchObject({ owner: "someone-else", matches: "neither" });
      const writesBefore = await subject.externalWrites();

      await subject.apply(ns, "observed", "first", { managementPolicies: ["Observe"] });
      const seen = await waitFor(`${ns}/observed to report the foreign object`, async () => {
        const resource = await subject.read(ns, "observed");
        expect(resource?.conditions.Ready, "Ready").toMatchObject({
          status: "True",
          reason: Reason.Available,
        });
        expect(resource?.conditions.Synced, "Synced").toMatchObject({
          status: "True",
          reason: Reason.ObserveOnly,
        });
        expect(resource?.atProvider?.id, "status.atProvider.id").toBe(foreign?.id);
        return resource as ResourceView;
      });
      expect(seen.finalizers, "no finalizer: nothing to do on deletion").toEqual([]);
      expect(await subject.intentExists(ns, "observed"), "no intent record: nothing is created").toBe(false);

      // It looks again (the refresh), and writes nothing.
      const since = await subject.reconciles();
      await refresh(ns, "observed");
      await looked(`${ns}/observed after the refresh`, since);

      await subject.delete(ns, "observed");
      await waitFor(`${ns}/observed to be gone`, async () => {
        expect(await subject.read(ns, "observed"), "the resource").toBeUndefined();
      });
      expect(await subject.getExternal(name), "the foreign object, untouched").toEqual(foreign);
      expect((await subject.externalWrites()) - writesBefore, "external writes").toBe(0);
    });

    // Catches: a controller that ignores a policy without Update (drift repaired, a spec change written), or
    // one that then cannot create or delete at all.
    it("without Update: created, then drift and spec changes are left alone (reported); deleted with it", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "frozen");
      const managementPolicies = ["Observe", "Create", "Delete"] as const;
      await subject.apply(ns, "frozen", "first", { managementPolicies: [...managementPolicies] });
      const before = await converged(ns, "frozen", "first");
      const writesBefore = await subject.externalWrites();

      await subject.drift(name);
      await waitFor(`${ns}/frozen to report the drift, left alone`, async () => {
        const resource = await subject.read(ns, "frozen");
        expect(resource?.conditions.Synced, "Synced").toMatchObject({
          status: "True",
          reason: Reason.DriftLeftAlone,
        });
      });
      await subject.apply(ns, "frozen", "second", { managementPolicies: [...managementPolicies] });
      await waitFor(`${ns}/frozen to take in its new generation, without writing it`, async () => {
        const resource = await subject.read(ns, "frozen");
        expect(resource?.observedGeneration, "observedGeneration").toBe(resource?.generation);
        expect(resource?.generation, "generation").toBeGreaterThan(before.resource.generation);
        expect(resource?.conditions.Synced?.reason, "Synced").toBe(Reason.DriftLeftAlone);
      });
      expect(await subject.getExternal(name), "the external object, as drifted").toMatchObject({
        id: before.external.id,
        matches: "neither",
      });
      expect((await subject.externalWrites()) - writesBefore, "external writes").toBe(0);

      await subject.delete(ns, "frozen");
      await gone(ns, "frozen");
      expect(
        await subject.getExternal(name),
        "deleted with its resource (Delete is allowed)",
      ).toBeUndefined();
    });

    // Catches: an adoption that writes the spec though the policies leave out Update (the object's own
    // values overwritten), and one that, to obey them, does not take the object over at all.
    it("adopt without Update: the untagged object gets our marks and nothing else; the difference is reported", async () => {
      const ns = await subject.newNamespace();
      const name = subject.externalNameOf(ns, "taken-as-is");
      await subject.createForeign(name, undefined);
      const untagged = await subject.getExternal(name);
      const managementPolicies = ["Observe", "Create", "Delete"] as const;
      await subject.apply(ns, "taken-as-is", "first", {
        managementPolicies: [...managementPolicies],
        annotations: { [adopt]: "adopt" },
      });
      const adopted = await waitFor(`${ns}/taken-as-is to adopt, its difference left alone`, async () => {
        const resource = await subject.read(ns, "taken-as-is");
        expect(resource?.conditions.Ready, "Ready").toMatchObject({
          status: "True",
          reason: Reason.Available,
        });
        expect(resource?.conditions.Synced, "Synced").toMatchObject({
          status: "True",
          reason: Reason.DriftLeftAlone,
        });
        return resource as ResourceView;
      });
      expect(await subject.getExternal(name), "the same object: our marks, its own values").toEqual({
        ...untagged,
        owner: subject.ownerId,
        uid: adopted.uid,
        matches: "neither",
      });

      // Ours now, so deleted with its resource (Delete is allowed).
      await subject.delete(ns, "taken-as-is");
      await gone(ns, "taken-as-is");
      expect(await subject.getExternal(name), "deleted with its resource").toBeUndefined();
    });

    // Catches: a controller that takes an uninstall for deletions: deleting the CRD deletes every resource
    // at once, and each one's finalizer would take its external object with it (deletionPolicy Delete). They
    // must be released instead, and nothing else touched. Restarted after, so later scenarios find it as ever.
    const noUninstall = existingCluster
      ? "the cluster is an existing one (USE_EXISTING_CLUSTER=true), whose CRD this suite must not delete"
      : subject.uninstall
        ? undefined
        : "the subject cannot uninstall (it gives no uninstall)";
    if (noUninstall === undefined) {
      it("uninstall: deleting the CRD deletes nothing outside; every external object stays, released", async () => {
        if (!subject.uninstall) throw new Error(`${subject.name} says it can uninstall, but cannot`);
        const ns = await subject.newNamespace();
        await subject.apply(ns, "kept", "first");
        await subject.apply(ns, "kept-too", "second", { deletionPolicy: "Delete" });
        const kept = [
          (await converged(ns, "kept", "first")).external,
          (await converged(ns, "kept-too", "second")).external,
        ];
        const bystander = subject.externalNameOf(ns, "bystander");
        await subject.createForeign(bystander, "someone-else");
        const foreign = await subject.getExternal(bystander);

        await subject.uninstall();

        for (const was of kept) await expectDeletedOrReleased("Orphan", was);
        expect(await subject.getExternal(bystander), "the foreign object, untouched").toEqual(foreign);
        await stop();
        await start();
      });
    } else {
      console.warn(`conformance ${subject.name}: uninstall skipped: ${noUninstall}`);
      it.skip("uninstall: deleting the CRD deletes nothing outside; every external object stays, released", () => {});
    }

    // Catches: informers that stop for good when their watch breaks (client-node's do, on most errors): the
    // controller keeps running but never sees another change.
    const noRestart = existingCluster
      ? "the cluster is an existing one (USE_EXISTING_CLUSTER=true), which this suite must not restart"
      : subject.restartApiServer
        ? undefined
        : "the subject cannot restart its API server (it gives no restartApiServer)";
    if (noRestart === undefined) {
      it("API server restart: the watches recover; later creates, updates and deletes are carried", async () => {
        if (!subject.restartApiServer) throw new Error(`${subject.name} says it can restart, but cannot`);
        const ns = await subject.newNamespace();
        await subject.apply(ns, "before", "first");
        const before = await converged(ns, "before", "first");

        await subject.restartApiServer();

        // Created, changed and deleted after the restart: only recovered watches bring these in time.
        await subject.apply(ns, "after", "first");
        await converged(ns, "after", "first", SLOW_MS);
        await subject.apply(ns, "before", "second");
        const changed = await converged(ns, "before", "second", SLOW_MS);
        expect(changed.external.id, "the same external object").toBe(before.external.id);
        await subject.delete(ns, "before");
        await gone(ns, "before", SLOW_MS);
        expect(await external(ns, "before"), "the external object").toBeUndefined();
      });
    } else {
      console.warn(`conformance ${subject.name}: API server restart skipped: ${noRestart}`);
      it.skip("API server restart: the watches recover; later creates, updates and deletes are carried", () => {});
    }
  });
}
