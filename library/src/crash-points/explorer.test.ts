/**
 * The end states the crash explorer checks after every step (`expectationUnmet`): one row that holds per
 * expectation, and the rows that must not, each a state a controller recovering from a crash could leave.
 */
import { describe, expect, it } from "vitest";
import type { ExternalView, ResourceView } from "../conformance/subject.ts";
import { expectationUnmet } from "./explorer.ts";
import type { Expectation } from "./lifecycles.ts";

const OWNER = "k8s-shapes";
const FOREIGN = "someone-else";
const START_ID = "ext-1";

type Conditions = ResourceView["conditions"];
const cond = (status: string, reason: string) => ({ status, reason, message: "" });
const READY: Conditions = {
  Ready: cond("True", "Available"),
  Synced: cond("True", "ReconcileSuccess"),
};
const CONFLICT: Conditions = {
  Ready: cond("False", "NameConflict"),
  Synced: cond("False", "NameConflict"),
};
const PAUSED: Conditions = {
  Ready: cond("Unknown", "ReconcilePaused"),
  Synced: cond("False", "ReconcilePaused"),
};

/** A live resource at generation 2, observed, with our finalizer, Ready. */
function resource(overrides: Partial<ResourceView> = {}): ResourceView {
  return {
    uid: "uid-1",
    generation: 2,
    finalizers: ["shapes.example.com/cleanup"],
    deleting: false,
    conditions: READY,
    observedGeneration: 2,
    ...overrides,
  };
}

/** Our external object of that resource, the one the steps started with, matching "first". */
function external(overrides: Partial<ExternalView> = {}): ExternalView {
  return { id: START_ID, name: "ns1.a", owner: OWNER, uid: "uid-1", matches: "first", ...overrides };
}

interface Row {
  reason: string;
  expect: Expectation;
  resource: ResourceView | undefined;
  external: ExternalView | undefined;
  /** Whether the intent record exists (default true). */
  intent?: boolean;
  /** The external object the steps started with (default START_ID). */
  startId?: string | undefined;
  /** Empty: it holds. Otherwise, substrings the unmet list must contain (each in some entry). */
  unmet: string[];
}

const converged: Expectation = { kind: "converged", variant: "first" };
const gone: Expectation = { kind: "gone" };
const orphaned: Expectation = { kind: "orphaned", variant: "first" };

const ROWS: Row[] = [
  // ---- converged ----
  {
    reason: "Ready and Synced for the generation, ours, the right variant, the record there: it holds",
    expect: converged,
    resource: resource(),
    external: external(),
    unmet: [],
  },
  {
    reason: "sameObject true with the very object the steps started with: an update in place holds",
    expect: { kind: "converged", variant: "first", sameObject: true },
    resource: resource(),
    external: external(),
    unmet: [],
  },
  {
    reason: "sameObject false with a new object: a re-create after a deletion behind our back holds",
    expect: { kind: "converged", variant: "first", sameObject: false },
    resource: resource(),
    external: external({ id: "ext-2" }),
    unmet: [],
  },
  {
    reason: "sameObject undefined: a new object is fine too",
    expect: converged,
    resource: resource(),
    external: external({ id: "ext-2" }),
    unmet: [],
  },
  {
    reason: "no resource: nothing else is worth saying",
    expect: converged,
    resource: undefined,
    external: external(),
    unmet: ["the resource does not exist"],
  },
  {
    reason: "Ready=True from an earlier generation: the controller has not looked at the current spec yet",
    expect: converged,
    resource: resource({ generation: 3 }),
    external: external(),
    unmet: ["observedGeneration 2 is not generation 3"],
  },
  {
    reason: "no observedGeneration at all is not the current generation either",
    expect: converged,
    resource: resource({ observedGeneration: undefined }),
    external: external(),
    unmet: ["observedGeneration undefined is not generation 2"],
  },
  {
    reason: "Ready=True while the external object still matches the other variant: the status lies",
    expect: { kind: "converged", variant: "second" },
    resource: resource(),
    external: external({ matches: "first" }),
    unmet: ["the external object matches first, not second"],
  },
  {
    reason: "a drifted object is not converged, whatever the conditions say",
    expect: converged,
    resource: resource(),
    external: external({ matches: "neither" }),
    unmet: ["matches neither, not first"],
  },
  {
    reason: "the name held by someone else's object: never ours to call converged",
    expect: converged,
    resource: resource(),
    external: external({ owner: FOREIGN, uid: undefined }),
    unmet: [`the external object's owner is ${FOREIGN}`, "the external object's uid is none"],
  },
  {
    reason: "an object without an owner mark (a crash between create and marking) is not ours yet",
    expect: converged,
    resource: resource(),
    external: external({ owner: undefined }),
    unmet: ["the external object's owner is none"],
  },
  {
    reason: "ours but another resource's uid: a re-created resource must not reuse the old object blindly",
    expect: converged,
    resource: resource(),
    external: external({ uid: "uid-old" }),
    unmet: ["the external object's uid is uid-old"],
  },
  {
    reason: "the finalizer missing: a deletion would not wait for the cleanup",
    expect: converged,
    resource: resource({ finalizers: [] }),
    external: external(),
    unmet: ["the resource has no finalizer"],
  },
  {
    reason: "the intent record missing: a crash after the create would lose track of the object",
    expect: converged,
    resource: resource(),
    external: external(),
    intent: false,
    unmet: ["no intent record"],
  },
  {
    reason: "no external object: Ready=True with nothing behind it",
    expect: converged,
    resource: resource(),
    external: undefined,
    unmet: ["no external object holds its name"],
  },
  {
    reason: "being deleted is not converged",
    expect: converged,
    resource: resource({ deleting: true }),
    external: external(),
    unmet: ["the resource is being deleted"],
  },
  {
    reason: "Ready missing (a status never written)",
    expect: converged,
    resource: resource({ conditions: { Synced: READY.Synced! } }),
    external: external(),
    unmet: ["Ready is missing, not True (Available)"],
  },
  {
    reason: "Ready=True with another reason than Available is not the converged state",
    expect: converged,
    resource: resource({ conditions: { ...READY, Ready: cond("True", "Adopted") } }),
    external: external(),
    unmet: ["Ready is True (Adopted), not True (Available)"],
  },
  {
    reason: "Synced=False: the last reconcile failed, whatever Ready says",
    expect: converged,
    resource: resource({ conditions: { ...READY, Synced: cond("False", "ApiError") } }),
    external: external(),
    unmet: ["Synced is False (ApiError), not True"],
  },
  {
    reason: "sameObject true but a new object: an update became a re-create (a duplicate, once)",
    expect: { kind: "converged", variant: "first", sameObject: true },
    resource: resource(),
    external: external({ id: "ext-2" }),
    unmet: [`the external object is ext-2, not the one it had (${START_ID})`],
  },
  {
    reason: "sameObject false but still the deleted object's id: the re-create never happened",
    expect: { kind: "converged", variant: "first", sameObject: false },
    resource: resource(),
    external: external(),
    unmet: [`the external object is still the deleted one (${START_ID})`],
  },
  {
    reason: "sameObject false with no object at the start of the steps: any object of ours is a new one",
    expect: { kind: "converged", variant: "first", sameObject: false },
    resource: resource(),
    external: external(),
    startId: undefined,
    unmet: [],
  },
  // ---- conflict ----
  {
    reason: "a foreign object holds the name and both conditions say NameConflict: it holds",
    expect: { kind: "conflict" },
    resource: resource({ conditions: CONFLICT }),
    external: external({ owner: FOREIGN, uid: undefined, matches: "neither" }),
    unmet: [],
  },
  {
    reason: "conflict but the name held by nothing: the foreign object was deleted",
    expect: { kind: "conflict" },
    resource: resource({ conditions: CONFLICT }),
    external: undefined,
    unmet: ["the name is held by nothing, not the foreign object"],
  },
  {
    reason: "conflict but the name now held by us: the controller took the foreign object over",
    expect: { kind: "conflict" },
    resource: resource({ conditions: CONFLICT }),
    external: external(),
    unmet: [`the name is held by owner ${OWNER}, not the foreign object`],
  },
  {
    reason: "the conflict reported Ready=True: a status that hides the collision",
    expect: { kind: "conflict" },
    resource: resource({ conditions: { ...CONFLICT, Ready: cond("True", "Available") } }),
    external: external({ owner: FOREIGN }),
    unmet: ["Ready is True (Available), not False (NameConflict)"],
  },
  {
    reason: "the conflict reported for an earlier generation",
    expect: { kind: "conflict" },
    resource: resource({ conditions: CONFLICT, observedGeneration: 1 }),
    external: external({ owner: FOREIGN }),
    unmet: ["observedGeneration 1 is not generation 2"],
  },
  {
    reason: "conflict without a resource",
    expect: { kind: "conflict" },
    resource: undefined,
    external: external({ owner: FOREIGN }),
    unmet: ["the resource does not exist"],
  },
  // ---- paused ----
  {
    reason: "paused: Synced=False ReconcilePaused, Ready=Unknown, the drift left alone: it holds",
    expect: { kind: "paused", external: "neither" },
    resource: resource({ conditions: PAUSED }),
    external: external({ matches: "neither" }),
    unmet: [],
  },
  {
    reason: "paused but Ready still True: the status claims a state nobody checks any more",
    expect: { kind: "paused", external: "neither" },
    resource: resource({ conditions: { ...PAUSED, Ready: cond("True", "Available") } }),
    external: external({ matches: "neither" }),
    unmet: ["Ready is True (Available), not Unknown"],
  },
  {
    reason: "paused but the drift repaired: the controller wrote while paused",
    expect: { kind: "paused", external: "neither" },
    resource: resource({ conditions: PAUSED }),
    external: external({ matches: "first" }),
    unmet: ["the external object matches first, not neither"],
  },
  {
    reason: "paused but the object gone: pausing must keep it",
    expect: { kind: "paused", external: "neither" },
    resource: resource({ conditions: PAUSED }),
    external: undefined,
    unmet: ["the external object is not ours any more"],
  },
  {
    reason: "paused but Synced says something else",
    expect: { kind: "paused", external: "first" },
    resource: resource({ conditions: { ...PAUSED, Synced: cond("True", "ReconcileSuccess") } }),
    external: external(),
    unmet: ["Synced is True (ReconcileSuccess), not False (ReconcilePaused)"],
  },
  // ---- gone ----
  {
    reason: "resource, record and our object gone: it holds",
    expect: gone,
    resource: undefined,
    external: undefined,
    intent: false,
    unmet: [],
  },
  {
    reason: "a foreign object under the name is not ours to delete: gone holds",
    expect: gone,
    resource: undefined,
    external: external({ owner: FOREIGN }),
    intent: false,
    unmet: [],
  },
  {
    reason: "stuck deleting: the finalizer was never released",
    expect: gone,
    resource: resource({ deleting: true }),
    external: undefined,
    intent: false,
    unmet: ["the resource is stuck deleting"],
  },
  {
    reason: "the resource still there, not even deleting",
    expect: gone,
    resource: resource(),
    external: undefined,
    intent: false,
    unmet: ["the resource exists"],
  },
  {
    reason: "the intent record left behind",
    expect: gone,
    resource: undefined,
    external: undefined,
    intent: true,
    unmet: ["the intent record exists"],
  },
  {
    reason: "our external object left behind: a leak",
    expect: gone,
    resource: undefined,
    external: external(),
    intent: false,
    unmet: ["our external object still exists"],
  },
  // ---- orphaned ----
  {
    reason: "resource and record gone, the object stays without our mark, as it was: it holds",
    expect: orphaned,
    resource: undefined,
    external: external({ owner: undefined, uid: undefined }),
    intent: false,
    unmet: [],
  },
  {
    reason: "orphaned but still carrying our owner mark: not handed over",
    expect: orphaned,
    resource: undefined,
    external: external(),
    intent: false,
    unmet: ["the external object still carries our owner mark"],
  },
  {
    reason: "orphaned but the object deleted: Orphan must never delete",
    expect: orphaned,
    resource: undefined,
    external: undefined,
    intent: false,
    unmet: ["the external object is gone"],
  },
  {
    reason: "orphaned with its managed fields changed",
    expect: orphaned,
    resource: undefined,
    external: external({ owner: undefined, matches: "second" }),
    intent: false,
    unmet: ["the external object matches second, not first"],
  },
  {
    reason: "orphaned but the resource stuck deleting and the record kept",
    expect: orphaned,
    resource: resource({ deleting: true }),
    external: external({ owner: undefined }),
    intent: true,
    unmet: ["the resource is stuck deleting", "the intent record exists"],
  },
  // ---- unchecked ----
  {
    reason: "unchecked holds whatever the state, even nothing at all",
    expect: { kind: "unchecked" },
    resource: undefined,
    external: undefined,
    intent: false,
    unmet: [],
  },
  {
    reason: "unchecked holds over a state every other expectation would reject",
    expect: { kind: "unchecked" },
    resource: resource({ deleting: true, finalizers: [], conditions: {} }),
    external: external({ owner: FOREIGN }),
    unmet: [],
  },
];

describe("expectationUnmet", () => {
  it.each(ROWS)("$expect.kind: $reason", (row) => {
    const unmet = expectationUnmet(
      row.expect,
      row.resource,
      row.external,
      row.intent ?? true,
      OWNER,
      "startId" in row ? row.startId : START_ID,
      FOREIGN,
    );
    if (row.unmet.length === 0) expect(unmet).toEqual([]);
    else {
      for (const part of row.unmet)
        expect(
          unmet.some((u) => u.includes(part)),
          unmet.join("; "),
        ).toBe(true);
    }
  });

  it("says only what is wrong: one unmet part for one fault", () => {
    // The observedGeneration row alone: no other complaint rides along with it.
    expect(
      expectationUnmet(converged, resource({ generation: 3 }), external(), true, OWNER, START_ID, FOREIGN),
    ).toEqual(["observedGeneration 2 is not generation 3"]);
  });
});
