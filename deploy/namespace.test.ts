/**
 * deploy/namespace.yaml holds the controller's namespace to the Kubernetes restricted Pod Security Standard:
 * enforced at the version whose API server e2e/deploy-manifests.test.ts admits deployment.yaml's pod template
 * on (envtest's Kubernetes), warned and audited at the latest. The admission itself, against a real API
 * server, is that e2e test's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { KUBERNETES_VERSION } from "@shapes/envtest";

const namespace = parse(readFileSync(join(import.meta.dirname, "namespace.yaml"), "utf8")) as {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
};
/** `v1.36` of `v1.36.3`: Pod Security versions are minor versions. */
const minor = /^v\d+\.\d+/.exec(KUBERNETES_VERSION)?.[0];

describe("deploy/namespace.yaml's Pod Security labels", () => {
  it("is the controller's namespace", () => {
    expect(namespace).toMatchObject({ kind: "Namespace", metadata: { name: "shapes-system" } });
  });

  it.each([
    {
      reason: "a pod that breaks the restricted standard is refused, not only reported",
      label: "pod-security.kubernetes.io/enforce",
      want: "restricted",
    },
    {
      reason:
        "enforced as of the Kubernetes the e2e test admits the pod template on: an upgrade cannot refuse the pods",
      label: "pod-security.kubernetes.io/enforce-version",
      want: minor,
    },
    {
      reason: "kubectl warns when the latest standard would refuse a pod",
      label: "pod-security.kubernetes.io/warn",
      want: "restricted",
    },
    { reason: "…the latest", label: "pod-security.kubernetes.io/warn-version", want: "latest" },
    {
      reason: "the audit log records a pod the latest standard would refuse",
      label: "pod-security.kubernetes.io/audit",
      want: "restricted",
    },
    { reason: "…the latest", label: "pod-security.kubernetes.io/audit-version", want: "latest" },
  ])("$label: $reason", ({ label, want }) => {
    expect(want).toBeDefined();
    expect(namespace.metadata.labels?.[label]).toBe(want);
  });
});
