/**
 * The console's copy of the cloud (static/store.js): a listing, then feed events applied idempotently and
 * never backwards, as the cloud's list-then-watch contract requires; and who owns a shape.
 */
import { describe, expect, it } from "vitest";
import type { Shape, WatchEvent } from "../schemas.ts";
import { ShapeStore, ownershipOf } from "./static/store.js";

function shape(id: string, revision: number, extra: Partial<Shape> = {}): Shape {
  return {
    id,
    name: `n-${id}`,
    type: "square",
    color: "red",
    tags: {},
    revision,
    createdAt: "2030-01-01T00:00:00.000Z",
    updatedAt: "2030-01-01T00:00:00.000Z",
    ...extra,
  };
}

const event = (type: WatchEvent["type"], s: Shape, revision = s.revision): WatchEvent => ({
  type,
  shape: s,
  revision,
});

describe("ShapeStore", () => {
  const cases: {
    reason: string;
    listing: Shape[];
    listedAt: number;
    events: WatchEvent[];
    changed: boolean[];
    colors: Record<string, string>;
    revision: number;
  }[] = [
    {
      reason: "a new shape is added, a change replaces it",
      listing: [],
      listedAt: 4,
      events: [event("ADDED", shape("a", 5)), event("MODIFIED", shape("a", 6, { color: "blue" }))],
      changed: [true, true],
      colors: { a: "blue" },
      revision: 6,
    },
    {
      reason: "an ADDED for a shape the listing already has (created after its revision) changes nothing",
      listing: [shape("a", 5)],
      listedAt: 4,
      events: [event("ADDED", shape("a", 5))],
      changed: [false],
      colors: { a: "red" },
      revision: 5,
    },
    {
      reason: "an older state than the listing showed never replaces the newer one",
      listing: [shape("a", 7, { color: "green" })],
      listedAt: 4,
      events: [event("MODIFIED", shape("a", 5, { color: "blue" })), event("MODIFIED", shape("a", 7))],
      changed: [false, false],
      colors: { a: "green" },
      revision: 7,
    },
    {
      reason: "a DELETED for a shape the listing already missed is a no-op",
      listing: [shape("b", 1)],
      listedAt: 4,
      events: [event("DELETED", shape("a", 3), 5)],
      changed: [false],
      colors: { b: "red" },
      revision: 5,
    },
    {
      reason: "a DELETED removes the shape; a new shape may then take its name (another id)",
      listing: [shape("a", 1)],
      listedAt: 1,
      events: [event("DELETED", shape("a", 1), 2), event("ADDED", shape("c", 3, { name: "n-a" }))],
      changed: [true, true],
      colors: { c: "red" },
      revision: 3,
    },
  ];
  it.each(cases)("$reason", ({ listing, listedAt, events, changed, colors, revision }) => {
    const store = new ShapeStore();
    store.reset(listing, listedAt);
    expect(events.map((e) => store.apply(e))).toEqual(changed);
    expect(Object.fromEntries(store.sorted().map((s) => [s.id, s.color]))).toEqual(colors);
    expect(store.size).toBe(Object.keys(colors).length);
    expect(store.revision).toBe(revision);
  });

  it("reset replaces everything, and sorted() orders by name", () => {
    const store = new ShapeStore();
    store.reset([shape("x", 1)], 1);
    store.reset([shape("b", 2, { name: "zz" }), shape("a", 3, { name: "aa" })], 9);
    expect(store.sorted().map((s) => s.name)).toEqual(["aa", "zz"]);
    expect(store.get("x")).toBeUndefined();
    expect(store.revision).toBe(9);
  });
});

describe("ownershipOf", () => {
  const cases: { reason: string; tags: Record<string, string>; expected: ReturnType<typeof ownershipOf> }[] =
    [
      { reason: "no tags: foreign", tags: {}, expected: { ours: false } },
      { reason: "tags but no owner: foreign", tags: { team: "billing" }, expected: { ours: false } },
      {
        reason: "an owner tag: managed, by the Shape k8s-name names",
        tags: { owner: "k8s", "k8s-name": "default/foo", "k8s-uid": "u" },
        expected: { ours: true, owner: "k8s", k8sName: "default/foo" },
      },
      {
        reason: "an owner without k8s-name: managed, by an unknown Shape",
        tags: { owner: "other" },
        expected: { ours: true, owner: "other", k8sName: undefined },
      },
    ];
  it.each(cases)("$reason", ({ tags, expected }) => {
    expect(ownershipOf(shape("a", 1, { tags }))).toEqual(expected);
  });
});
