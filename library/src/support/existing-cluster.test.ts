import { describe, expect, it } from "vitest";
import { usesExistingCluster } from "./existing-cluster.ts";

describe("usesExistingCluster", () => {
  it("is on only when USE_EXISTING_CLUSTER says so: a KUBECONFIG alone keeps the local control plane", () => {
    expect(usesExistingCluster({})).toBe(false);
    expect(usesExistingCluster({ KUBECONFIG: "/home/me/.kube/config" })).toBe(false);
    expect(usesExistingCluster({ USE_EXISTING_CLUSTER: "true" })).toBe(true);
    expect(usesExistingCluster({ USE_EXISTING_CLUSTER: "1", KUBECONFIG: "/k" })).toBe(true);
    expect(usesExistingCluster({ USE_EXISTING_CLUSTER: "false", KUBECONFIG: "/k" })).toBe(false);
    expect(usesExistingCluster({ USE_EXISTING_CLUSTER: "" })).toBe(false);
  });

  it("refuses a value it cannot read rather than guess", () => {
    expect(() => usesExistingCluster({ USE_EXISTING_CLUSTER: "yes" })).toThrow(/USE_EXISTING_CLUSTER/);
  });
});
