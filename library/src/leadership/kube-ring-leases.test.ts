import { describe, expect, it } from "vitest";
import { memberLeaseName } from "./kube-ring-leases.ts";

describe("memberLeaseName", () => {
  it.each([
    {
      identity: "shapes-controller-7d9f8-x2x4q",
      want: "ring-shapes-controller-7d9f8-x2x4q",
      reason: "a pod name as it is",
    },
    { identity: "replica-a", want: "ring-replica-a", reason: "a short name as it is" },
  ])("$reason", ({ identity, want }) => {
    expect(memberLeaseName("ring", identity)).toBe(want);
  });

  it("turns any other identity into a valid name, unique to it", () => {
    const names = ["Host_A-12", "host-a-12", "host a 12", "-host.a-"].map((id) =>
      memberLeaseName("ring", id),
    );
    for (const name of names) expect(name).toMatch(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/);
    expect(new Set(names).size).toBe(names.length);
    expect(memberLeaseName("ring", "x".repeat(400)).length).toBeLessThanOrEqual(253);
  });
});
