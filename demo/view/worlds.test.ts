/**
 * What the page gets of each object (worlds.ts): cut down to what it shows, never the object as is. The live
 * caches themselves run against the real demo in e2e/two-worlds-page.test.ts.
 */
import type { CoreV1Event } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ADOPTION_POLICY_ANNOTATION, type Shape, type ShapeRef } from "@shapes/controller";
import { viewEvent, viewShape, viewShapeRef } from "./worlds.ts";

const shape: Shape = {
  apiVersion: "shapes.example.com/v1alpha1",
  kind: "Shape",
  metadata: {
    name: "red-square",
    namespace: "default",
    uid: "u-1",
    generation: 3,
    finalizers: ["shapes.example.com/cloud-shape"],
    annotations: { "shapes.example.com/paused": "true" },
    managedFields: [{ manager: "kubectl", operation: "Apply" }],
  },
  spec: { type: "square", color: "red" },
  status: {
    observedGeneration: 2,
    cloudId: "shp_1",
    conditions: [
      {
        type: "Ready",
        status: "True",
        reason: "Available",
        message: "ok",
        lastTransitionTime: "1970-01-01T00:00:00Z",
      },
      {
        type: "Synced",
        status: "False",
        reason: "ReconcilePaused",
        message: "paused",
        lastTransitionTime: "1970-01-01T00:00:00Z",
      },
    ],
  },
};

describe("what the page gets", () => {
  it("of a Shape: spec, conditions, generations, finalizers, paused, defaults; no managedFields", () => {
    const view = viewShape(shape);
    expect(view).toEqual({
      namespace: "default",
      name: "red-square",
      uid: "u-1",
      generation: 3,
      observedGeneration: 2,
      type: "square",
      color: "red",
      size: undefined,
      deletionPolicy: "Delete",
      paused: true,
      managementPolicies: ["*"],
      adoptionPolicy: undefined,
      finalizers: ["shapes.example.com/cloud-shape"],
      deletionTimestamp: undefined,
      ready: { status: "True", reason: "Available", message: "ok" },
      synced: { status: "False", reason: "ReconcilePaused", message: "paused" },
      cloudId: "shp_1",
      driftRepairs: 0,
    });
    expect(JSON.stringify(view)).not.toContain("managedFields");
  });

  it("of a Shape that observes only and one that asks for adoption: the policies and the annotation, as set", () => {
    const observing = viewShape({
      ...shape,
      spec: { managementPolicies: ["Observe"] },
    });
    expect(observing).toMatchObject({
      type: "",
      color: "",
      managementPolicies: ["Observe"],
      adoptionPolicy: undefined,
    });
    const adopting = viewShape({
      ...shape,
      metadata: { ...shape.metadata, annotations: { [ADOPTION_POLICY_ANNOTATION]: "adopt" } },
    });
    expect(adopting).toMatchObject({ managementPolicies: ["*"], adoptionPolicy: "adopt" });
  });

  it("of a ShapeRef with no status (the default: the controller writes none): no phase, no id, the default deletion policy", () => {
    const ref: ShapeRef = {
      apiVersion: "shapes.example.com/v1alpha1",
      kind: "ShapeRef",
      metadata: { name: "default.red-square" },
      spec: {
        shape: { namespace: "default", name: "red-square", uid: "u-1" },
        cloudName: "default.red-square",
      },
    };
    expect(viewShapeRef(ref)).toEqual({
      name: "default.red-square",
      shape: { namespace: "default", name: "red-square", uid: "u-1" },
      cloudName: "default.red-square",
      phase: undefined,
      cloudId: undefined,
      owner: undefined,
      deletionPolicy: "Delete",
    });
  });

  it("of a ShapeRef with a status (from an older controller): its phase and cloud id", () => {
    const ref: ShapeRef = {
      apiVersion: "shapes.example.com/v1alpha1",
      kind: "ShapeRef",
      metadata: { name: "default.red-square" },
      spec: {
        shape: { namespace: "default", name: "red-square", uid: "u-1" },
        cloudName: "default.red-square",
        deletionPolicy: "Orphan",
        owner: "k8s-1",
      },
      status: { phase: "Created", cloudId: "shp_1" },
    };
    expect(viewShapeRef(ref)).toMatchObject({
      phase: "Created",
      cloudId: "shp_1",
      owner: "k8s-1",
      deletionPolicy: "Orphan",
    });
  });

  it.each([
    {
      reason: "an Event about a Shape is kept, with its time",
      event: {
        metadata: { uid: "e-1" },
        involvedObject: {
          apiVersion: "shapes.example.com/v1alpha1",
          kind: "Shape",
          namespace: "default",
          name: "a",
        },
        reason: "CreatedCloudShape",
        message: "Created",
        type: "Normal",
        lastTimestamp: new Date("2030-01-01T00:00:00Z"),
      },
      want: {
        id: "e-1",
        kind: "Shape",
        reason: "CreatedCloudShape",
        at: "2030-01-01T00:00:00.000Z",
        count: 1,
      },
    },
    {
      reason: "an Event about anything else (a Pod) is not the page's",
      event: { involvedObject: { apiVersion: "v1", kind: "Pod", name: "p" }, reason: "Started" },
      want: undefined,
    },
  ] as { reason: string; event: CoreV1Event; want: object | undefined }[])("$reason", ({ event, want }) => {
    const view = viewEvent(event);
    if (want === undefined) expect(view).toBeUndefined();
    else expect(view).toMatchObject(want);
  });
});
