import { describe, expect, it } from "vitest";
import type { Shape, ShapeRef } from "@shapes/controller";
import {
  checkClusters,
  checkWorld,
  type CloudShape,
  type ClusterView,
  type Expectations,
  type Violation,
  type World,
} from "./invariants.ts";

const NS = "chaos-t1";

function shape(
  name: string,
  uid: string,
  overrides: {
    deleting?: boolean;
    ready?: Partial<{ status: string; reason: string; message: string; gen: number }>;
    cloudId?: string;
    generation?: number;
    size?: number;
  } = {},
): Shape {
  const generation = overrides.generation ?? 1;
  return {
    apiVersion: "shapes.example.com/v1alpha1",
    kind: "Shape",
    metadata: {
      name,
      namespace: NS,
      uid,
      generation,
      ...(overrides.deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
    spec: { type: "square", color: "red", ...(overrides.size === undefined ? {} : { size: overrides.size }) },
    status: {
      cloudId: overrides.cloudId ?? `id-${name}`,
      conditions: [
        {
          type: "Ready",
          status: (overrides.ready?.status ?? "True") as "True",
          reason: overrides.ready?.reason ?? "Available",
          message: overrides.ready?.message ?? "",
          observedGeneration: overrides.ready?.gen ?? generation,
          lastTransitionTime: "",
        },
      ],
    },
  };
}

function cloud(name: string, tags: Record<string, string>, overrides: Partial<CloudShape> = {}): CloudShape {
  return {
    id: `id-${name.split(".").slice(1).join(".")}`,
    name,
    type: "square",
    color: "red",
    tags,
    revision: 5,
    createdAt: "",
    updatedAt: "",
    ...overrides,
  };
}

const ours = (name: string, uid: string) => ({ owner: "k8s", "k8s-uid": uid, "k8s-name": `${NS}/${name}` });

function ref(name: string, uid: string): ShapeRef {
  return {
    metadata: { name: `${NS}.${name}` },
    spec: { shape: { namespace: NS, name, uid }, cloudName: `${NS}.${name}` },
    // no status: the controller writes none (an older version wrote phase Created and the id)
  };
}

const good: World = {
  shapes: [shape("a", "u1")],
  shapeRefs: [ref("a", "u1")],
  cloud: [cloud(`${NS}.a`, ours("a", "u1"))],
};
const foreign = cloud(`${NS}.taken`, { owner: "someone-else" }, { id: "f1", revision: 3 });
const expect0: Expectations = { ownerId: "k8s", foreign: [], orphans: [], renamed: [] };
/** Shape `a`'s cloud shape, renamed by a person to `chaos-t1.a-renamed-1`. */
const renamedA = { id: "id-a", uid: "u1", name: `${NS}.a-renamed-1` };

interface Case {
  reason: string;
  world: World;
  expectations?: Expectations;
  /** The invariants broken, with a fragment of each detail. */
  want: [Violation["invariant"], RegExp][];
}

const cases: Case[] = [
  { reason: "a converged Shape breaks nothing", world: good, want: [] },
  {
    reason: "a Shape whose cloud name a foreign shape holds is right to say NameConflict",
    world: {
      shapes: [shape("taken", "u2", { ready: { status: "False", reason: "NameConflict" } })],
      shapeRefs: [ref("taken", "u2")],
      cloud: [foreign],
    },
    expectations: { ...expect0, foreign: [foreign] },
    want: [],
  },
  {
    reason: "a Shape that claims Ready while a foreign shape holds its name is wrong",
    world: { shapes: [shape("taken", "u2")], shapeRefs: [ref("taken", "u2")], cloud: [foreign] },
    want: [["shape-ready", /held by foreign shape f1/]],
  },
  {
    reason: "a live Shape without its cloud shape is not ready",
    world: { ...good, cloud: [] },
    want: [["shape-ready", /no cloud shape named chaos-t1.a/]],
  },
  {
    reason: "a cloud shape that differs from the spec (a drift not repaired)",
    world: { ...good, cloud: [cloud(`${NS}.a`, ours("a", "u1"), { color: "blue", size: 3 })] },
    want: [["shape-ready", /color blue ≠ red, size 3 ≠ undefined/]],
  },
  {
    reason: "a rewritten k8s-name tag is a drift too",
    world: { ...good, cloud: [cloud(`${NS}.a`, { ...ours("a", "u1"), "k8s-name": "x/y" })] },
    want: [["shape-ready", /k8s-name tag "x\/y"/]],
  },
  {
    reason: "the cloud shape of an earlier Shape (another uid) under this name",
    world: { ...good, cloud: [cloud(`${NS}.a`, ours("a", "u0"))] },
    want: [
      ["shape-ready", /carries uid u0, not u1/],
      ["no-leak", /uid u0/],
    ],
  },
  {
    reason: "Ready for an older generation is not ready",
    world: { ...good, shapes: [shape("a", "u1", { generation: 3, ready: { gen: 2 } })] },
    want: [["shape-ready", /generation 2, the spec is at 3/]],
  },
  {
    reason: "Ready=False",
    world: { ...good, shapes: [shape("a", "u1", { ready: { status: "False", reason: "CannotCreate" } })] },
    want: [["shape-ready", /Ready=False \(CannotCreate/]],
  },
  {
    reason: "status pointing at another cloud id",
    world: { ...good, shapes: [shape("a", "u1", { cloudId: "id-old" })] },
    want: [["shape-ready", /status.cloudId is id-old/]],
  },
  {
    reason: "an owned cloud shape with neither Shape nor ShapeRef is a leak",
    world: { ...good, cloud: [...good.cloud, cloud(`${NS}.gone`, ours("gone", "u9"))] },
    want: [["no-leak", /uid u9/]],
  },
  {
    reason:
      "an owned cloud shape whose ShapeRef is still being cleaned up is not (yet) a leak, but the ShapeRef needs its Shape",
    world: {
      ...good,
      shapeRefs: [...good.shapeRefs, ref("gone", "u9")],
      cloud: [...good.cloud, cloud(`${NS}.gone`, ours("gone", "u9"))],
    },
    want: [["shaperef-justified", /chaos-t1\/gone \(uid u9\) is gone/]],
  },
  {
    reason: "our owner tag without a uid is a leak",
    world: { ...good, cloud: [...good.cloud, cloud("odd", { owner: "k8s" })] },
    want: [["no-leak", /no k8s-uid/]],
  },
  {
    reason: "two cloud shapes claiming one Shape",
    world: { ...good, cloud: [...good.cloud, cloud(`${NS}.copy`, ours("a", "u1"))] },
    want: [["one-cloud-shape", /2 cloud shapes claim it/]],
  },
  {
    reason: "a foreign shape deleted",
    world: good,
    expectations: { ...expect0, foreign: [foreign] },
    want: [["foreign-untouched", /was deleted/]],
  },
  {
    reason: "a foreign shape modified (its revision moved)",
    world: { ...good, cloud: [...good.cloud, { ...foreign, revision: 4, color: "blue" }] },
    expectations: { ...expect0, foreign: [foreign] },
    want: [["foreign-untouched", /revision 3 → 4/]],
  },
  {
    reason: "a Shape still deleting",
    world: { ...good, shapes: [shape("a", "u1", { deleting: true })] },
    want: [["no-stuck-deletion", /deleting since/]],
  },
  {
    reason: "a ShapeRef whose Shape was replaced by a new one (same name, another uid)",
    world: { ...good, shapeRefs: [ref("a", "u0")] },
    want: [["shaperef-justified", /uid u0/]],
  },
  {
    reason: "an Orphan deletion that left the cloud shape without our tags is right",
    world: { ...good, cloud: [...good.cloud, cloud(`${NS}.o`, { team: "x" }, { id: "o1" })] },
    expectations: { ...expect0, orphans: [{ id: "o1", shape: `${NS}/o` }] },
    want: [],
  },
  {
    reason: "an Orphan deletion that deleted the cloud shape",
    world: good,
    expectations: { ...expect0, orphans: [{ id: "o1", shape: `${NS}/o` }] },
    want: [["orphan-kept", /was deleted, but the Shape's deletionPolicy was Orphan/]],
  },
  {
    reason: "an Orphan deletion that left our tags on",
    world: { ...good, cloud: [...good.cloud, cloud(`${NS}.o`, { "k8s-name": `${NS}/o` }, { id: "o1" })] },
    expectations: { ...expect0, orphans: [{ id: "o1", shape: `${NS}/o` }] },
    want: [["orphan-kept", /still carries our owner tags/]],
  },
  {
    reason: "a renamed cloud shape renamed back: the same id under its Shape's name again",
    world: good,
    expectations: { ...expect0, renamed: [renamedA] },
    want: [],
  },
  {
    reason: "a renamed cloud shape left where the person put it, nothing taking its name, is not ready",
    world: { ...good, cloud: [cloud(renamedA.name, ours("a", "u1"), { id: "id-a" })] },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [
      [
        "shape-ready",
        /no cloud shape named chaos-t1.a \(its cloud shape id-a is named chaos-t1.a-renamed-1\)/,
      ],
    ],
  },
  {
    reason: "a renamed cloud shape replaced by a new one under the Shape's name: the renamed one was deleted",
    world: {
      ...good,
      cloud: [cloud(`${NS}.a`, ours("a", "u1"), { id: "id-new" })],
      shapes: [shape("a", "u1", { cloudId: "id-new" })],
    },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [
      [
        "renamed-kept",
        /was deleted while its Shape lives \(a person had renamed it to chaos-t1.a-renamed-1\)/,
      ],
    ],
  },
  {
    reason: "a renamed cloud shape kept AND a new one created under the Shape's name: two claim one uid",
    world: {
      shapes: [shape("a", "u1", { cloudId: "id-new" })],
      shapeRefs: good.shapeRefs,
      cloud: [
        cloud(`${NS}.a`, ours("a", "u1"), { id: "id-new" }),
        cloud(renamedA.name, ours("a", "u1"), { id: "id-a" }),
      ],
    },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [
      ["one-cloud-shape", /2 cloud shapes claim it: id-new \(chaos-t1.a\), id-a \(chaos-t1.a-renamed-1\)/],
    ],
  },
  {
    reason:
      "a renamed cloud shape whose Shape is gone is the deletion's (deleted with it here): nothing to keep",
    world: { shapes: [], shapeRefs: [], cloud: [] },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [],
  },
  {
    reason:
      "renamed, and its name taken before the rename back: left where it is, the Shape saying Renamed and where",
    world: {
      shapes: [
        shape("a", "u1", {
          ready: { status: "False", reason: "Renamed", message: `Renamed to ${renamedA.name}` },
        }),
      ],
      shapeRefs: good.shapeRefs,
      cloud: [
        cloud(`${NS}.a`, { owner: "someone-else" }, { id: "f2" }),
        cloud(renamedA.name, ours("a", "u1"), { id: "id-a" }),
      ],
    },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [],
  },
  {
    reason: "renamed, its name taken, but the Shape says NameConflict-free Ready: wrong",
    world: {
      shapes: [shape("a", "u1")],
      shapeRefs: good.shapeRefs,
      cloud: [
        cloud(`${NS}.a`, { owner: "someone-else" }, { id: "f2" }),
        cloud(renamedA.name, ours("a", "u1"), { id: "id-a" }),
      ],
    },
    expectations: { ...expect0, renamed: [renamedA] },
    want: [["shape-ready", /held by foreign shape f2, but Ready=True/]],
  },
];

describe("checkWorld", () => {
  it.each(cases)("$reason", ({ world, expectations, want }) => {
    const got = checkWorld(world, expectations ?? expect0);
    expect(got.map((v) => v.invariant)).toEqual(want.map(([i]) => i));
    got.forEach((v, i) => expect(v.detail).toMatch(want[i]![1]));
  });
});

describe("checkClusters", () => {
  // Two clusters sharing the cloud, each with its own owner id; both have a Shape `a` (one cloud name).
  const EAST = "k8s-east-uid";
  const WEST = "k8s-west-uid";
  const owned = (owner: string, name: string, uid: string) => ({ ...ours(name, uid), owner });
  const eastA = cloud(`${NS}.a`, owned(EAST, "a", "e1"), { id: "id-a" });
  const westB = cloud(`${NS}.b`, owned(WEST, "b", "w2"), { id: "id-b" });
  const conflicted = (name: string, uid: string) =>
    shape(name, uid, { ready: { status: "False", reason: "NameConflict" }, cloudId: "" });
  const view = (name: string, ownerId: string, world: Omit<World, "cloud">, cloudShapes: CloudShape[]) =>
    ({
      name,
      world: { ...world, cloud: cloudShapes },
      expect: { ownerId, foreign: [foreign], orphans: [], renamed: [] },
    }) satisfies ClusterView;
  const both = (
    east: Omit<World, "cloud">,
    west: Omit<World, "cloud">,
    cloudShapes: CloudShape[] = [eastA, westB, foreign],
  ) => [view("east", EAST, east, cloudShapes), view("west", WEST, west, cloudShapes)];
  const eastWorld = { shapes: [shape("a", "e1")], shapeRefs: [ref("a", "e1")] };
  const westWorld = {
    shapes: [conflicted("a", "w1"), shape("b", "w2")],
    shapeRefs: [ref("a", "w1"), ref("b", "w2")],
  };

  it.each<{ reason: string; clusters: ClusterView[]; want: string[] }>([
    {
      reason: "the same name in both: the first holds it, the second says NameConflict; nothing is wrong",
      clusters: both(eastWorld, westWorld),
      want: [],
    },
    {
      reason: "the second claims Ready while the other cluster's shape holds the name: its cluster is named",
      clusters: both(eastWorld, { ...westWorld, shapes: [shape("a", "w1"), shape("b", "w2")] }),
      want: ["shape-ready west: Shape chaos-t1/a"],
    },
    {
      reason: "another cluster's shape is never a leak of this one, but a leak of its own owner's",
      clusters: both(eastWorld, { shapes: [conflicted("a", "w1")], shapeRefs: [ref("a", "w1")] }),
      want: ["no-leak west: cloud shape id-b (chaos-t1.b)"],
    },
    {
      reason: "a shape retagged to the other cluster's owner id is wrong for the Shape that lost it",
      clusters: both(eastWorld, westWorld, [
        cloud(`${NS}.a`, owned(WEST, "a", "e1"), { id: "id-a" }),
        westB,
        foreign,
      ]),
      want: [
        "shape-ready east: Shape chaos-t1/a",
        "shape-ready west: Shape chaos-t1/a", // west's own tag, on east's Shape's uid: not its shape either
        "no-leak west: cloud shape id-a (chaos-t1.a)",
      ],
    },
    {
      reason: "a foreign shape touched is everyone's violation, reported once",
      clusters: both(eastWorld, westWorld, [eastA, westB, { ...foreign, revision: 4 }]),
      want: ["foreign-untouched foreign shape f1 (chaos-t1.taken)"],
    },
    {
      reason: "one cluster: the subjects are checkWorld's, unnamed",
      clusters: [view("east", EAST, { shapes: [], shapeRefs: [] }, [eastA, foreign])],
      want: ["no-leak cloud shape id-a (chaos-t1.a)"],
    },
  ])("$reason", ({ clusters, want }) => {
    expect(checkClusters(clusters).map((v) => `${v.invariant} ${v.subject}`)).toEqual(want);
  });
});
