import { describe, expect, it } from "vitest";
import { checkEqual, checkFields, checkShapeRef } from "./converged.ts";
import type { Shape, ShapeRef } from "./kube.ts";

describe("checkFields", () => {
  it("passes when every expected field is there with an equal value, whatever else the object holds", () => {
    expect(() =>
      checkFields("Ready", { type: "Ready", status: "True", observedGeneration: 2 }, { status: "True" }),
    ).not.toThrow();
    expect(() =>
      checkFields("tags", { owner: "k8s-1", extra: { a: [1] } }, { extra: { a: [1] } }),
    ).not.toThrow();
  });

  it("fails naming what, the fields expected and the whole observed value", () => {
    expect(() =>
      checkFields("Ready", { type: "Ready", status: "False", reason: "Pending" }, { status: "True" }),
    ).toThrow(
      'Ready: expected the fields {"status":"True"}, observed {"type":"Ready","status":"False","reason":"Pending"}',
    );
  });

  it("fails on a missing object (no condition yet), and on a field that is absent", () => {
    expect(() => checkFields("Synced", undefined, { status: "True" })).toThrow(
      'Synced: expected the fields {"status":"True"}, observed undefined',
    );
    expect(() => checkFields("Synced", {}, { observedGeneration: undefined, status: "True" })).toThrow(
      /Synced/,
    );
  });
});

describe("checkEqual", () => {
  it("compares deeply and strictly", () => {
    expect(() => checkEqual("spec", { color: "red", size: 3 }, { color: "red", size: 3 })).not.toThrow();
    expect(() => checkEqual("status.cloudId", undefined, "s-1")).toThrow(
      'status.cloudId: expected "s-1", observed undefined',
    );
    expect(() => checkEqual("size", "3", 3)).toThrow('size: expected 3, observed "3"');
  });
});

describe("checkShapeRef", () => {
  const shape = { metadata: { namespace: "ns", name: "sq", uid: "u-1" } } as Shape;
  const cloud = { id: "shp_1", name: "ns.sq" };
  const ref = (fields: Partial<ShapeRef> = {}): ShapeRef => ({
    metadata: { name: "ns.sq" },
    spec: { shape: { namespace: "ns", name: "sq", uid: "u-1" }, cloudName: "ns.sq" },
    ...fields,
  });

  it("the ShapeRef exists for the Shape's uid, with no status (created before the create; the controller never writes one)", () => {
    expect(() => checkShapeRef(ref(), shape, cloud)).not.toThrow();
    expect(() => checkShapeRef(undefined, shape, cloud)).toThrow(
      "ShapeRef ns.sq: expected it, observed none",
    );
    const other = ref({ spec: { shape: { namespace: "ns", name: "sq", uid: "u-0" }, cloudName: "ns.sq" } });
    expect(() => checkShapeRef(other, shape, cloud)).toThrow(
      'ShapeRef ns.sq spec.shape.uid: expected "u-1", observed "u-0"',
    );
    expect(() =>
      checkShapeRef(ref({ status: { phase: "Created", cloudId: "shp_1" } }), shape, cloud),
    ).toThrow(/ShapeRef ns\.sq status \(the controller writes none\): expected undefined/);
  });
});
