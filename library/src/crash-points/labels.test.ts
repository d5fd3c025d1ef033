/**
 * The labels of Kubernetes writes: the same write of the next run must get the same label (no object name in
 * it), and writes that do different things must get different labels, since the explorer finds a crash
 * point again by its label and occurrence.
 */
import { describe, expect, it } from "vitest";
import { kubeWriteLabel } from "./labels.ts";
import type { TappedWrite } from "./subject.ts";

const KINDS = { shapes: "Shape", shaperefs: "ShapeRef" };

/** A Kubernetes write as the tap saw it: only the method, the path and the body matter to a label. */
function write(method: string, path: string, requestBody = ""): TappedWrite {
  return {
    seq: 1,
    side: "kube",
    method,
    path,
    requestBody,
    status: 200,
    responseBody: "",
    fault: undefined,
  };
}

const SHAPE = "/apis/shapes.example.com/v1alpha1/namespaces/ns1/shapes/a";

describe("kubeWriteLabel", () => {
  it.each([
    {
      write: write("PUT", SHAPE, '{"spec":{"size":2}}'),
      label: "PUT Shape",
      reason: "a namespaced custom resource is named by its kind, never by its namespace or name",
    },
    {
      write: write("PUT", "/apis/shapes.example.com/v1alpha1/namespaces/other-ns/shapes/b"),
      label: "PUT Shape",
      reason: "another namespace and name give the same label: how the next run finds the same write",
    },
    {
      write: write("PATCH", "/apis/shapes.example.com/v1alpha1/shaperefs/x", '{"spec":{}}'),
      label: "PATCH ShapeRef",
      reason: "a cluster-scoped custom resource has no namespaces/<ns> segment",
    },
    {
      write: write("POST", "/apis/shapes.example.com/v1alpha1/shaperefs", '{"metadata":{"name":"x"}}'),
      label: "POST ShapeRef",
      reason: "a create is a POST to the collection (no name in the path)",
    },
    {
      write: write("POST", "/apis/shapes.example.com/v1alpha1/namespaces/ns1/shapes"),
      label: "POST Shape",
      reason: "a namespaced create: the collection path after namespaces/<ns>",
    },
    {
      write: write("PATCH", `${SHAPE}/status`, '{"status":{"observedGeneration":1}}'),
      label: "PATCH Shape status",
      reason: "the status subresource is a different write from the object's own",
    },
    {
      write: write("PATCH", `${SHAPE}/status`, '{"metadata":{"finalizers":["x"]}}'),
      label: "PATCH Shape status",
      reason: "a subresource patch is never labelled finalizers, whatever its body says",
    },
    {
      write: write("PATCH", SHAPE, '{"metadata":{"finalizers":["shapes.example.com/cleanup"]}}'),
      label: "PATCH Shape finalizers",
      reason: "a merge patch setting metadata.finalizers says so: that is its whole point",
    },
    {
      write: write("PATCH", SHAPE, '{"metadata": {"finalizers" : null}}'),
      label: "PATCH Shape finalizers",
      reason: "removing the finalizers (null) is a finalizers patch too, spaces around the colon allowed",
    },
    {
      write: write("PATCH", SHAPE, '{"metadata":{"annotations":{"a":"b"}}}'),
      label: "PATCH Shape",
      reason: "a merge patch that does not touch the finalizers is a plain PATCH",
    },
    {
      write: write("PATCH", SHAPE, '{"metadata":{"annotations":{"note":"\\"finalizers\\": none"}}}'),
      label: "PATCH Shape",
      reason: "the word inside an escaped string value is not the finalizers key",
    },
    {
      write: write("PUT", SHAPE, '{"metadata":{"name":"a","finalizers":["x"]}}'),
      label: "PUT Shape",
      reason: "only a PATCH is labelled finalizers: a full update carries them whatever it changes",
    },
    {
      write: write("POST", "/api/v1/namespaces/ns/events", '{"reason":"Created"}'),
      label: "POST Event",
      reason: "core events are known without the subject naming them",
    },
    {
      write: write("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/shapes-controller"),
      label: "PUT Lease",
      reason: "the leader election's lease is known without the subject naming it",
    },
    {
      write: write("DELETE", SHAPE),
      label: "DELETE Shape",
      reason: "a DELETE keeps its method",
    },
    {
      write: write("DELETE", SHAPE, '{"metadata":{"finalizers":[]}}'),
      label: "DELETE Shape",
      reason: "only a PATCH is labelled finalizers, not a DELETE with a body",
    },
    {
      write: write("PATCH", "/apis/apps/v1/namespaces/ns/deployments/web"),
      label: "PATCH deployments",
      reason: "a plural the subject did not name falls back to the plural",
    },
    {
      write: write("POST", "/api/v1/namespaces/ns/configmaps/"),
      label: "POST configmaps",
      reason: "a trailing slash still parses",
    },
    {
      write: write("PATCH", "/healthz/ready"),
      label: "PATCH /healthz/ready",
      reason: "a path outside /api and /apis does not parse: method and path, as sent",
    },
    {
      write: write("PATCH", `${SHAPE}/status/extra`),
      label: `PATCH ${SHAPE}/status/extra`,
      reason: "a path with more segments than plural/name/subresource does not parse",
    },
    {
      write: write("POST", "/apis/shapes.example.com"),
      label: "POST /apis/shapes.example.com",
      reason: "a group path without a version and a plural does not parse",
    },
  ])("$write.method $write.path → $label: $reason", ({ write, label }) => {
    expect(kubeWriteLabel(write, KINDS)).toBe(label);
  });

  it("lets the subject's kinds override the known ones", () => {
    expect(kubeWriteLabel(write("POST", "/api/v1/namespaces/ns/events"), { events: "CoreEvent" })).toBe(
      "POST CoreEvent",
    );
  });
});
