import { describe, expect, it } from "vitest";
import { checkEqual, checkFields } from "./converged.ts";

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
