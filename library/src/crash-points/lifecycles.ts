/**
 * The lifecycles of a managed resource the crash explorer walks, written once against {@link CrashSubject}
 * and so the same for every plugin. A lifecycle is what people do, step by step, and the state each step
 * must end in:
 *
 *   - the PRELUDE brings the resource to where the lifecycle starts (created and converged, say). Its writes
 *     are not explored: they are another lifecycle's.
 *   - the STEPS are explored: every write the controller makes while they run is a crash point.
 *
 * Each step ends in an {@link Expectation}, which the explorer awaits (within a bound) and checks, with the
 * invariants, after every step: not only at the end.
 */
import type { Variant } from "../conformance/subject.ts";
import type { CrashSubject } from "./subject.ts";

/** Where one trial works: its namespace and resource, and what the prelude saw. */
export interface TrialContext {
  /** The subject under exploration. */
  readonly subject: CrashSubject;
  /** A fresh namespace for this trial ({@link CrashSubject.newNamespace}). */
  readonly namespace: string;
  /** The resource's name: the lifecycle's id. */
  readonly name: string;
  /** The resource's external name. */
  readonly externalName: string;
  /** The uid of the resource as the prelude left it (set once it exists). */
  uid: string | undefined;
  /** The owner mark foreign objects of this trial carry. */
  readonly foreignOwner: string;
}

/**
 * The state a step ends in.
 *
 * - `converged`: the resource is Ready=True and Synced=True for its generation; its external object has our
 *   owner mark and its uid and matches `variant`; the intent record exists. `sameObject`: the external
 *   object is the one the explored steps started with (`true`), a new one (`false`), or either (undefined).
 * - `conflict`: a foreign object holds the name: Ready=False and Synced=False, both `NameConflict`; the
 *   foreign object is untouched.
 * - `paused`: Synced=False `ReconcilePaused` for the current generation, Ready=Unknown; the external object
 *   is ours and matches `external` (a drift stays while paused).
 * - `gone`: the resource, its intent record and its external object are gone.
 * - `orphaned`: the resource and its intent record are gone; the external object stays, without our owner
 *   mark, with the managed fields of `variant`.
 * - `unchecked`: a prelude step that only sets things up for the next one (the controller stopped, a
 *   resource applied while it is down): nothing converges before the controller acts again.
 */
export type Expectation =
  | { kind: "converged"; variant: Variant; sameObject?: boolean }
  | { kind: "conflict" }
  | { kind: "paused"; external: Variant | "neither" }
  | { kind: "gone" }
  | { kind: "orphaned"; variant: Variant }
  | { kind: "unchecked" };

/** One step: what a person does, and the state it must end in. */
export interface Step {
  /** What the step does, in words ("kubectl apply, variant first"). */
  readonly title: string;
  /** Does it, in `trial` (through the subject, as a person would). */
  act(trial: TrialContext): Promise<void>;
  /** The state the step must end in, within the explorer's bound. */
  readonly expect: Expectation;
}

/** One lifecycle of a managed resource. */
export interface Lifecycle {
  /** A short id, for the command line and the tables ("create", "delete-orphan"). */
  readonly id: string;
  /** What it is, in a sentence. */
  readonly title: string;
  /** Brings the resource to the lifecycle's start; not explored. */
  readonly prelude: readonly Step[];
  /** The explored steps. */
  readonly steps: readonly Step[];
  /**
   * How many external objects the controller may create while the steps run (a successful create the
   * external API committed). One more is a duplicate: "no external object created twice".
   */
  readonly creates: number;
  /** A capability the subject must offer, or the lifecycle is skipped for it (with a line saying so). */
  readonly needs?: "earlierOwner";
  /**
   * True when the steps are to take over the object of the resource's name that carries no owner mark (an
   * adoption on request): that one is not foreign to the "nothing foreign written" check.
   */
  readonly adoptsUntagged?: true;
}

// ---- The steps every lifecycle is made of. ----

const apply = (variant: Variant, deletionPolicy?: "Delete" | "Orphan"): Step["act"] => {
  return async (t) => {
    await t.subject.apply(t.namespace, t.name, variant, deletionPolicy ? { deletionPolicy } : {});
  };
};

/** kubectl apply of `variant` (a create, or an update), ending converged on it. */
function applyStep(variant: Variant, sameObject?: boolean, deletionPolicy?: "Delete" | "Orphan"): Step {
  return {
    title: `kubectl apply (variant "${variant}"${deletionPolicy ? `, deletionPolicy ${deletionPolicy}` : ""})`,
    act: apply(variant, deletionPolicy),
    expect: { kind: "converged", variant, ...(sameObject === undefined ? {} : { sameObject }) },
  };
}

const CREATE: Step = applyStep("first");

const STOP_CONTROLLER: Step = {
  title: "the controller stops",
  act: (t) => t.subject.stopController(),
  expect: { kind: "unchecked" },
};

const START_CONTROLLER = (expect: Expectation): Step => ({
  title: "the controller starts",
  act: (t) => t.subject.startController(),
  expect,
});

const PERSON_DRIFT = (expect: Expectation): Step => ({
  title: "a person changes a managed field in the external API",
  act: (t) => t.subject.drift(t.externalName),
  expect,
});

const DELETE: Step = {
  title: "kubectl delete",
  act: (t) => t.subject.delete(t.namespace, t.name),
  expect: { kind: "gone" },
};

/** Every lifecycle, in the order the explorer walks them. */
export const LIFECYCLES: readonly Lifecycle[] = [
  {
    id: "create",
    title: "a resource is created and converges",
    prelude: [],
    steps: [CREATE],
    creates: 1,
  },
  {
    id: "update",
    title: "its spec changes: the same external object is updated",
    prelude: [CREATE],
    steps: [applyStep("second", true)],
    creates: 0,
  },
  {
    id: "drift",
    title: "a person changes the external object: the change is repaired in place",
    prelude: [CREATE],
    steps: [PERSON_DRIFT({ kind: "converged", variant: "first", sameObject: true })],
    creates: 0,
  },
  {
    id: "recreate",
    title: "a person deletes the external object: a new one is created",
    prelude: [CREATE],
    steps: [
      {
        title: "a person deletes the external object",
        act: (t) => t.subject.deleteExternal(t.externalName),
        expect: { kind: "converged", variant: "first", sameObject: false },
      },
    ],
    creates: 1,
  },
  {
    id: "delete",
    title: "the resource is deleted (deletionPolicy Delete): its external object goes with it",
    prelude: [CREATE],
    steps: [DELETE],
    creates: 0,
  },
  {
    id: "delete-orphan",
    title: "the resource is deleted with deletionPolicy Orphan: the external object stays, handed over",
    prelude: [applyStep("first", undefined, "Orphan")],
    steps: [{ ...DELETE, expect: { kind: "orphaned", variant: "first" } }],
    creates: 0,
  },
  {
    id: "name-held",
    title: "a foreign object holds the name (NameConflict), then its owner deletes it: ours is created",
    prelude: [
      {
        title: "someone else creates an object with the resource's external name",
        act: (t) => t.subject.createForeign(t.externalName, t.foreignOwner),
        expect: { kind: "unchecked" },
      },
    ],
    steps: [
      { title: 'kubectl apply (variant "first")', act: apply("first"), expect: { kind: "conflict" } },
      {
        title: "its owner deletes the foreign object",
        act: (t) => t.subject.deleteExternal(t.externalName),
        expect: { kind: "converged", variant: "first" },
      },
    ],
    creates: 1,
  },
  {
    id: "adopt",
    title: "an external object an earlier owner id of ours created is adopted, not created again",
    needs: "earlierOwner",
    prelude: [
      STOP_CONTROLLER,
      {
        title: 'kubectl apply (variant "first") while the controller is down',
        act: apply("first"),
        expect: { kind: "unchecked" },
      },
      {
        title: "the external object exists under the earlier owner id",
        act: async (t) => {
          if (!t.subject.earlierOwner) throw new Error("the subject has no earlier owner id");
          await t.subject.earlierOwner.create(t.namespace, t.name);
        },
        expect: { kind: "unchecked" },
      },
    ],
    steps: [START_CONTROLLER({ kind: "converged", variant: "first", sameObject: true })],
    creates: 0,
  },
  {
    id: "adopt-on-request",
    title:
      "an object with no owner mark holds the name: a resource asking to adopt it takes it over, none created",
    adoptsUntagged: true,
    prelude: [
      {
        title: "a person creates an object with the resource's external name and no owner mark",
        act: (t) => t.subject.createForeign(t.externalName, undefined),
        expect: { kind: "unchecked" },
      },
    ],
    steps: [
      {
        title: 'kubectl apply (variant "first", adoption-policy adopt)',
        act: (t) =>
          t.subject.apply(t.namespace, t.name, "first", {
            annotations: { [t.subject.annotations.adoptionPolicy]: "adopt" },
          }),
        expect: { kind: "converged", variant: "first", sameObject: true },
      },
    ],
    creates: 0,
  },
  {
    id: "pause",
    title: "paused, a drift stays; resumed, it is repaired",
    prelude: [CREATE],
    steps: [
      {
        title: "the paused annotation is set",
        act: (t) => t.subject.annotate(t.namespace, t.name, t.subject.annotations.paused, "true"),
        expect: { kind: "paused", external: "first" },
      },
      PERSON_DRIFT({ kind: "paused", external: "neither" }),
      {
        title: "the paused annotation is removed",
        act: (t) => t.subject.annotate(t.namespace, t.name, t.subject.annotations.paused, null),
        expect: { kind: "converged", variant: "first", sameObject: true },
      },
    ],
    creates: 0,
  },
  {
    id: "missed-deletion",
    title:
      "the resource was deleted while the controller was down, its finalizer stripped: the leak is swept",
    prelude: [
      CREATE,
      STOP_CONTROLLER,
      {
        title: "its finalizers are stripped and it is deleted, the controller down",
        act: async (t) => {
          await t.subject.stripFinalizers(t.namespace, t.name);
          await t.subject.delete(t.namespace, t.name);
        },
        // Only the resource is gone; the intent record and the external object wait for the controller.
        expect: { kind: "unchecked" },
      },
    ],
    steps: [START_CONTROLLER({ kind: "gone" })],
    creates: 0,
  },
];
