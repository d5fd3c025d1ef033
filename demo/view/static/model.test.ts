/**
 * The two worlds as rows (static/model.js): which verdict each combination of Shape, ShapeRef and cloud
 * shape gets, and how the page's copy follows a snapshot and changes.
 */
import { describe, expect, it } from "vitest";
import type { Changes, Snapshot, ViewCloudShape, ViewShape, ViewShapeRef } from "../wire.ts";
import {
  Worlds,
  countVerdicts,
  filterRows,
  highlightedKeys,
  isAbout,
  rowsOf,
  shapeRefLabel,
  verdictOf,
} from "./model.js";

const OWNER = "k8s-ours";

function shape(name: string, extra: Partial<ViewShape> = {}): ViewShape {
  return {
    namespace: "default",
    name,
    uid: `uid-${name}`,
    generation: 1,
    observedGeneration: 1,
    type: "square",
    color: "red",
    size: undefined,
    deletionPolicy: "Delete",
    paused: false,
    managementPolicies: ["*"],
    adoptionPolicy: undefined,
    finalizers: ["shapes.example.com/cloud-shape"],
    deletionTimestamp: undefined,
    ready: { status: "True", reason: "Available", message: "" },
    synced: { status: "True", reason: "ReconcileSuccess", message: "" },
    cloudId: `shp_default.${name}`,
    driftRepairs: 0,
    ...extra,
  };
}

/** A ShapeRef as the controller leaves it by default: no status (no phase, no cloud id). */
function ref(name: string, extra: Partial<ViewShapeRef> = {}): ViewShapeRef {
  return {
    name: `default.${name}`,
    shape: { namespace: "default", name, uid: `uid-${name}` },
    cloudName: `default.${name}`,
    phase: undefined,
    cloudId: undefined,
    owner: OWNER,
    deletionPolicy: "Delete",
    ...extra,
  };
}

function cloud(name: string, tags: Record<string, string>, id = `shp_${name}`): ViewCloudShape {
  return {
    id,
    name,
    type: "square",
    color: "red",
    tags,
    revision: 1,
    createdAt: "2030-01-01T00:00:00.000Z",
    updatedAt: "2030-01-01T00:00:00.000Z",
  };
}

const ours = (name: string, uid = `uid-${name}`) =>
  cloud(`default.${name}`, { owner: OWNER, "k8s-uid": uid, "k8s-name": `default/${name}` });

describe("verdictOf", () => {
  it.each([
    {
      reason:
        "all three, ours, with the Shape's uid, the Shape's status naming the id: linked (the ShapeRef holds none)",
      args: [shape("a"), ref("a"), ours("a")] as const,
      want: "linked",
    },
    {
      reason: "a ShapeRef that also records the id (from an older controller): linked too",
      args: [shape("a"), ref("a", { phase: "Created", cloudId: "shp_default.a" }), ours("a")] as const,
      want: "linked",
    },
    {
      reason: "no ShapeRef yet is still linked (the why says so)",
      args: [shape("a"), undefined, ours("a")] as const,
      want: "linked",
    },
    {
      reason:
        "ours with the uid, but the Shape's status names no id (right after a create, or a crash in it): not recorded",
      args: [shape("a", { cloudId: undefined }), ref("a"), ours("a")] as const,
      want: "unrecorded",
    },
    {
      reason:
        "the Shape's status names an earlier id (the cloud shape was re-created, the status not written yet): not recorded",
      args: [shape("a", { cloudId: "shp_earlier" }), ref("a"), ours("a")] as const,
      want: "unrecorded",
    },
    {
      reason:
        "the ShapeRef names the id, the Shape's status not yet (an older controller, between its two writes): not recorded, the Shape's status is the record",
      args: [
        shape("a", { cloudId: undefined }),
        ref("a", { phase: "Created", cloudId: "shp_default.a" }),
        ours("a"),
      ] as const,
      want: "unrecorded",
    },
    {
      reason: "no cloud shape yet: pending",
      args: [shape("a", { cloudId: undefined }), ref("a"), undefined] as const,
      want: "pending",
    },
    {
      reason: "Synced=False: failing, whatever the cloud says",
      args: [
        shape("a", { synced: { status: "False", reason: "CannotCreateCloudShape", message: "503" } }),
        ref("a"),
        undefined,
      ] as const,
      want: "failing",
    },
    {
      reason: "a deletionTimestamp wins: being deleted",
      args: [shape("a", { deletionTimestamp: "2030-01-01T00:00:00Z" }), ref("a"), ours("a")] as const,
      want: "deleting",
    },
    {
      reason: "the name is held by a foreign shape: conflict",
      args: [shape("a"), undefined, cloud("default.a", {})] as const,
      want: "conflict",
    },
    {
      reason: "the name is held by another owner's shape (another cluster): conflict",
      args: [shape("a"), undefined, cloud("default.a", { owner: "k8s-theirs" })] as const,
      want: "conflict",
    },
    {
      reason: "ours, but another Shape's uid (an earlier Shape of that name): conflict",
      args: [shape("a"), ref("a"), ours("a", "uid-old")] as const,
      want: "conflict",
    },
    { reason: "paused", args: [shape("a", { paused: true }), ref("a"), ours("a")] as const, want: "paused" },
    {
      reason: "the Shape is gone, its ShapeRef and our cloud shape are left: a leak the ShapeRef leads to",
      args: [undefined, ref("a"), ours("a")] as const,
      want: "leak",
    },
    {
      reason: "the Shape and the cloud shape are gone, the ShapeRef is left: dangling",
      args: [undefined, ref("a"), undefined] as const,
      want: "dangling",
    },
    {
      reason:
        "a ShapeRef whose name is now held by a foreign shape: dangling, the foreign shape is not ours to delete",
      args: [undefined, ref("a"), cloud("default.a", {})] as const,
      want: "dangling",
    },
    {
      reason: "a cloud shape with our owner tag that nothing claims: a leak (the sweep's)",
      args: [undefined, undefined, ours("a")] as const,
      want: "leak",
    },
    {
      reason: "another owner's cloud shape alone",
      args: [undefined, undefined, cloud("x", { owner: "k8s-theirs" })] as const,
      want: "other-owner",
    },
    {
      reason: "a cloud shape with no owner tag",
      args: [undefined, undefined, cloud("x", {})] as const,
      want: "foreign",
    },
    {
      reason: "observe only, a foreign shape of its name: observed, not a conflict",
      args: [
        shape("a", { managementPolicies: ["Observe"], cloudId: undefined }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "observed",
    },
    {
      reason: "observe only, another owner's shape of its name: observed too (it is never written)",
      args: [
        shape("a", { managementPolicies: ["Observe"], cloudId: undefined }),
        undefined,
        cloud("default.a", { owner: "k8s-theirs" }),
      ] as const,
      want: "observed",
    },
    {
      reason: "observe only, no cloud shape: observed (nothing is created)",
      args: [
        shape("a", { managementPolicies: ["Observe"], cloudId: undefined }),
        undefined,
        undefined,
      ] as const,
      want: "observed",
    },
    {
      reason:
        "Observe among other policies is not observe only: a foreign shape holding the name is a conflict",
      args: [
        shape("a", { managementPolicies: ["Observe", "Create"] }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "conflict",
    },
    {
      reason: "Observe and LateInitialize, no Create: observe only too",
      args: [
        shape("a", { managementPolicies: ["Observe", "LateInitialize"], cloudId: undefined }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "observed",
    },
    {
      reason: "adopt, a foreign shape of its name: adopting",
      args: [
        shape("a", { adoptionPolicy: "adopt", cloudId: undefined }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "adopting",
    },
    {
      reason: "adopt-or-create, a foreign shape of its name: adopting",
      args: [
        shape("a", { adoptionPolicy: "adopt-or-create", cloudId: undefined }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "adopting",
    },
    {
      reason: "adopt, another owner's shape: a conflict (never adopted)",
      args: [
        shape("a", { adoptionPolicy: "adopt", cloudId: undefined }),
        undefined,
        cloud("default.a", { owner: "k8s-theirs" }),
      ] as const,
      want: "conflict",
    },
    {
      reason: "an unknown adoption policy asks nothing: a foreign shape holding the name is a conflict",
      args: [
        shape("a", { adoptionPolicy: "take-it", cloudId: undefined }),
        undefined,
        cloud("default.a", {}),
      ] as const,
      want: "conflict",
    },
    {
      reason: "adopted: ours with this Shape's uid and recorded, the annotation no longer matters: linked",
      args: [shape("a", { adoptionPolicy: "adopt" }), ref("a"), ours("a")] as const,
      want: "linked",
    },
  ])("$reason", ({ args, want }) => {
    const got = verdictOf(args[0], args[1], args[2], OWNER);
    expect(got.verdict).toBe(want);
    expect(got.why.length).toBeGreaterThan(10);
  });
});

describe("a cloud shape of ours renamed behind our back", () => {
  const renamed = cloud("default.a-old", { owner: OWNER, "k8s-uid": "uid-a" }, "shp_default.a");
  it.each([
    {
      reason: "its Shape lives (claims it by the uid tag): renamed, never a leak",
      claimant: shape("a"),
      want: "renamed",
    },
    { reason: "no live Shape claims it: a leak (the sweep's)", claimant: undefined, want: "leak" },
  ])("$reason", ({ claimant, want }) => {
    const got = verdictOf(undefined, undefined, renamed, OWNER, { claimant });
    expect(got.verdict).toBe(want);
    if (claimant) expect(got.why).toContain("default/a");
  });

  it("rowsOf finds the claimant by the uid tag", () => {
    const rows = rowsOf({
      shapes: new Map([["default/a", shape("a", { cloudId: "shp_default.a" })]]),
      shapeRefs: new Map([["default.a", ref("a")]]),
      cloud: new Map([[renamed.id, renamed]]),
      ownerId: OWNER,
    });
    expect(rows.map((r) => `${r.key} ${r.verdict}`)).toEqual(["default.a renamed", "default.a-old renamed"]);
  });
});

describe("shapeRefLabel", () => {
  it.each([
    {
      reason: "no status (the controller writes none): the intent, not a missing id",
      extra: {},
      want: "ShapeRef · intent recorded",
    },
    {
      reason: "from an older controller: its phase and the id",
      extra: { phase: "Created", cloudId: "shp_1" },
      want: "ShapeRef Created · shp_1",
    },
    {
      reason: "a status that names no id (written by hand)",
      extra: { phase: "Pending" },
      want: "ShapeRef Pending · no id",
    },
  ])("$reason", ({ extra, want }) => {
    expect(shapeRefLabel(ref("a", extra))).toBe(want);
  });
});

describe("rowsOf", () => {
  it("puts a Shape, its ShapeRef and its cloud shape on one row, keyed by cloud name, sorted", () => {
    const rows = rowsOf({
      shapes: new Map([["default/b", shape("b")]]),
      shapeRefs: new Map([
        ["default.b", ref("b")],
        ["default.a", ref("a")],
      ]),
      cloud: new Map([
        ["shp_b", ours("b")],
        ["shp_z", cloud("z.foreign", {})],
      ]),
      ownerId: OWNER,
    });
    expect(rows.map((r) => [r.key, r.verdict])).toEqual([
      ["default.a", "dangling"],
      ["default.b", "linked"],
      ["z.foreign", "foreign"],
    ]);
    expect(rows[1]?.shape?.name).toBe("b");
    expect(rows[1]?.shapeRef?.name).toBe("default.b");
    expect(rows[1]?.cloud?.id).toBe("shp_default.b");
  });
});

describe("Worlds (the page's copy)", () => {
  const snapshot: Snapshot = {
    ownerId: OWNER,
    synced: true,
    shapes: [shape("a")],
    shapeRefs: [ref("a")],
    cloud: [ours("a")],
    events: [],
    controller: { state: "running", pid: 1, answersWhy: true },
    tour: null,
    faults: { rules: [] },
  };
  const none: Changes = {
    shapes: [],
    shapesGone: [],
    shapeRefs: [],
    shapeRefsGone: [],
    cloud: [],
    cloudGone: [],
    events: [],
  };

  it("follows a snapshot, then changes: a cloud delete breaks the link, a new shape appears", () => {
    const worlds = new Worlds();
    worlds.reset(snapshot);
    expect(worlds.rows().map((r) => r.verdict)).toEqual(["linked"]);
    worlds.apply({ ...none, cloudGone: ["shp_default.a"], cloud: [cloud("other", {})] });
    expect(worlds.rows().map((r) => [r.key, r.verdict])).toEqual([
      ["default.a", "pending"],
      ["other", "foreign"],
    ]);
    worlds.apply({ ...none, shapesGone: ["default/a"] });
    expect(worlds.rows().map((r) => [r.key, r.verdict])).toEqual([
      ["default.a", "dangling"],
      ["other", "foreign"],
    ]);
  });

  it("computes rows for 1,000 Shapes", () => {
    const worlds = new Worlds();
    const names = Array.from({ length: 1000 }, (_, i) => `s-${String(i).padStart(4, "0")}`);
    worlds.reset({
      ...snapshot,
      shapes: names.map((n) => shape(n)),
      shapeRefs: names.map((n) => ref(n)),
      cloud: names.map((n) => ours(n)),
    });
    const rows = worlds.rows();
    expect(rows).toHaveLength(1000);
    expect(countVerdicts(rows).linked).toBe(1000);
  });
});

describe("filters and highlights", () => {
  const rows = rowsOf({
    shapes: new Map([
      ["default/a", shape("a")],
      ["tour-1/b", shape("b", { namespace: "tour-1" })],
    ]),
    shapeRefs: new Map(),
    cloud: new Map([["shp_f", cloud("someone.else", {})]]),
    ownerId: OWNER,
  });

  it.each([
    { reason: "no filter: everything", filter: { text: "", verdicts: new Set<string>() }, want: 3 },
    { reason: "text in the namespace", filter: { text: "TOUR", verdicts: new Set<string>() }, want: 1 },
    { reason: "by verdict", filter: { text: "", verdicts: new Set(["foreign"]) }, want: 1 },
    {
      reason: "text and verdict together",
      filter: { text: "default", verdicts: new Set(["foreign"]) },
      want: 0,
    },
  ])("$reason", ({ filter, want }) => {
    expect(filterRows(rows, filter)).toHaveLength(want);
  });

  it("highlights a tour moment's Shapes (in its namespace) and cloud names", () => {
    const keys = highlightedKeys(rows, {
      namespace: "tour-1",
      shapes: ["b", "missing"],
      cloudNames: ["someone.else"],
    });
    expect([...keys].sort()).toEqual(["someone.else", "tour-1.b"]);
    expect(highlightedKeys(rows, null).size).toBe(0);
  });

  it("tells which Events are about a row: its Shape by namespace/name (dots in names too), its ShapeRef by name", () => {
    const [row] = rowsOf({
      shapes: new Map([["default/a.b", shape("a.b")]]),
      shapeRefs: new Map(),
      cloud: new Map(),
      ownerId: OWNER,
    });
    if (!row) throw new Error("no row");
    expect(isAbout(row, { kind: "Shape", namespace: "default", name: "a.b" })).toBe(true);
    expect(isAbout(row, { kind: "ShapeRef", namespace: "", name: "default.a.b" })).toBe(true);
    expect(isAbout(row, { kind: "Shape", namespace: "default", name: "a" })).toBe(false);
  });
});
