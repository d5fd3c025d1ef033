import { KubeConfig } from "@kubernetes/client-node";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ControllerProcess } from "@shapes/stack";
import type { Topology } from "./plan.ts";
import { ControllerSet, manifestsFor } from "./replicas.ts";

/** A set of replicas that never start: the tests mark runs as running by hand. */
function set(topology: Topology): ControllerSet {
  const adminKubeConfig = new KubeConfig();
  adminKubeConfig.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:1" }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return new ControllerSet({
    topology,
    trial: 4,
    artifactsDir: "/nonexistent",
    kubeconfigPath: "/nonexistent",
    adminKubeConfig,
    cloudUrl: "http://127.0.0.1:1",
    cloudToken: "t",
    leakGrace: "5s",
    logLevel: "info",
  });
}

/** Gives replica `name` a run whose process lives (or not). */
function run(controllers: ControllerSet, name: string, running: boolean): void {
  const replica = controllers.replicas.find((r) => r.name === name);
  const process = { running } as ControllerProcess;
  replica?.runs.push({ process, identity: `t4-${name}${replica.runs.length + 1}`, ended: false });
}

describe("ControllerSet", () => {
  it("runs three replicas a, b and c for sharded, two for ha, one otherwise", () => {
    expect(set("sharded").replicas.map((r) => r.name)).toEqual(["a", "b", "c"]);
    expect(set("ha").replicas.map((r) => r.name)).toEqual(["a", "b"]);
    expect(set("single").replicas.map((r) => r.name)).toEqual(["c"]);
  });

  it.each<{ reason: string; running: string[]; pick: number; want: string | undefined }>([
    { reason: "the first running replica for a pick near 0", running: ["a", "b", "c"], pick: 0, want: "a" },
    { reason: "the middle third names the second", running: ["a", "b", "c"], pick: 0.5, want: "b" },
    { reason: "a pick near 1 names the last", running: ["a", "b", "c"], pick: 0.999, want: "c" },
    { reason: "only running replicas count", running: ["a", "c"], pick: 0.6, want: "c" },
    { reason: "no running replica: no victim", running: [], pick: 0.3, want: undefined },
  ])(
    "sharded: the victim of a pick is a running replica of the ring ($reason)",
    async ({ running, pick, want }) => {
      const controllers = set("sharded");
      for (const name of ["a", "b", "c"]) run(controllers, name, running.includes(name));
      expect((await controllers.victim(pick))?.name).toBe(want);
      // A ring has no leader, and no leadership terms.
      expect(await controllers.leader()).toBeUndefined();
      expect(await controllers.terms()).toEqual([]);
    },
  );

  it("without leader election, the victim is the one controller whatever the pick", async () => {
    const controllers = set("single");
    run(controllers, "c", true);
    expect((await controllers.victim(0.9))?.name).toBe("c");
  });
});

describe("manifestsFor", () => {
  it("adds the ring's Lease verbs for sharded, nothing for the others", () => {
    const [rbac, ...more] = manifestsFor("sharded");
    expect(rbac).toMatch(/deploy\/sharding\/rbac\.yaml$/);
    expect(existsSync(rbac as string)).toBe(true);
    expect(more).toEqual([]);
    for (const topology of ["single", "ha", "two-clusters"] as const)
      expect(manifestsFor(topology)).toEqual([]);
  });
});
