import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deriveSeed } from "./prng.ts";
import {
  FAULT_DESCRIPTIONS,
  FAULT_KINDS,
  faultKindsFor,
  faultLengthMs,
  planTrial,
  TOPOLOGIES,
  type PlanOptions,
} from "./plan.ts";

const base: PlanOptions = { trial: 1, seed: 1234, topology: "ha", shapes: 6, durationMs: 60_000 };

describe("planTrial", () => {
  it("draws the same plan from the same seed, and another from another seed", () => {
    expect(planTrial(base)).toEqual(planTrial(base));
    expect(planTrial({ ...base, seed: 1235 })).not.toEqual(planTrial(base));
  });

  it("plans episodes until the duration is used up, and no further", () => {
    const plan = planTrial(base);
    expect(plan.plannedMs).toBeGreaterThanOrEqual(base.durationMs);
    const last = plan.episodes.at(-1);
    expect(last).toBeDefined();
    const lastLength = Math.max(last!.workloadMs, last!.faultAtMs + faultLengthMs(last!.fault));
    expect(plan.plannedMs - lastLength).toBeLessThan(base.durationMs);
    plan.episodes.forEach((e, i) => expect(e.index).toBe(i + 1));
  });

  it("creates the initial Shapes with fresh names, and never reuses a name for a plain create", () => {
    const plan = planTrial(base);
    expect(plan.initial).toHaveLength(base.shapes);
    const created = [...plan.initial, ...plan.episodes.flatMap((e) => e.ops)].flatMap((o) =>
      o.op === "create" ? [o.name] : [],
    );
    expect(new Set(created).size).toBe(created.length);
  });

  it("aims colliding creates only at the names its colliding foreign shapes hold", () => {
    const plan = planTrial({ ...base, durationMs: 300_000 });
    const colliding = new Set(plan.foreign.filter((f) => f.colliding).map((f) => f.name));
    const aimed = plan.episodes
      .flatMap((e) => e.ops)
      .flatMap((o) => (o.op === "create-colliding" ? [o.name] : []));
    expect(aimed.length).toBeGreaterThan(0);
    for (const name of aimed) expect(colliding.has(name)).toBe(true);
    // Foreign shapes never carry our owner tag: they are not ours, whatever else they say.
    for (const f of plan.foreign) expect(f.tags.owner).not.toBe("k8s");
  });

  it("uses every fault kind its topology allows over a long trial, and only those", () => {
    for (const topology of TOPOLOGIES) {
      const plan = planTrial({ ...base, topology, durationMs: 600_000 });
      const used = new Set(plan.episodes.map((e) => e.fault.kind));
      expect(used).toEqual(new Set(faultKindsFor(topology)));
    }
    expect(faultKindsFor("single")).not.toContain("leader-kill");
    expect(faultKindsFor("ha")).not.toContain("controller-kill");
    // Two clusters have one controller each: kills per cluster, no Lease to fight over.
    expect(faultKindsFor("two-clusters")).toEqual(faultKindsFor("single"));
    // A ring has several replicas, as ha does: its "leader" is a live replica of the ring.
    expect(faultKindsFor("sharded")).toEqual(faultKindsFor("ha"));
  });

  it("draws the plans of the committed runs unchanged, but for renames among a person's edits (they replay by seed)", () => {
    // `--seed 2026 --trials 24 --shapes 8 --duration 40s` when mixed took single, ha and two-clusters in
    // turn. Its 24 plans with every human edit's action blanked: the sha256 of them as the run's JSON
    // recorded them (trials[].plan). `rename` joined a person's actions after that run, taking half of
    // recolor's share (plan.ts, humanEdit), so half of its recolors are renames now; every other draw (the
    // faults, their moments and parameters, the workload, which shape a person edits) is the run's. A
    // change to the first hash means a seed no longer names the fault schedule docs/reliability.md reports;
    // the second one is the plans as they are drawn now, actions included.
    const committed = ["single", "ha", "two-clusters"] as const;
    const plans = Array.from({ length: 24 }, (_, i) =>
      planTrial({
        trial: i + 1,
        seed: deriveSeed(2026, i + 1),
        topology: committed[i % committed.length] as (typeof committed)[number],
        shapes: 8,
        durationMs: 40_000,
        kinds: FAULT_KINDS,
      }),
    );
    const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
    const blanked = JSON.stringify(plans, (key, value: unknown) => (key === "action" ? "" : value));
    expect(sha256(blanked)).toBe("a410d8b1cccfcf8d06f56d15c90df6d2a899e14e1a56ccea9bf3535e2487bc42");
    expect(sha256(JSON.stringify(plans))).toBe(
      "b8b079ce12bdfba873ddd2a110788e3878dc83f519f29e712c45d1cf83a5835c",
    );
  });

  it("draws only from the kinds it is given", () => {
    const plan = planTrial({ ...base, kinds: ["cloud-outage", "leader-kill"], durationMs: 120_000 });
    expect(new Set(plan.episodes.map((e) => e.fault.kind))).toEqual(new Set(["cloud-outage", "leader-kill"]));
  });

  it("refuses a plan whose kinds do not fit the topology", () => {
    expect(() => planTrial({ ...base, topology: "single", kinds: ["leader-pause"] })).toThrow(
      /^cannot plan trial 1: no fault kind applies to the single topology/,
    );
  });

  it("keeps every fault's parameters in their documented ranges", () => {
    const plan = planTrial({ ...base, durationMs: 900_000 });
    for (const { fault, faultAtMs, workloadMs } of plan.episodes) {
      expect(faultAtMs).toBeGreaterThanOrEqual(500);
      expect(faultAtMs).toBeLessThan(workloadMs);
      if (fault.kind === "leader-pause") expect(fault.pauseMs).toBeGreaterThan(4_000); // longer than the lease
      if (fault.kind === "cloud-5xx") expect(fault.errorRate).toBeGreaterThan(0);
      if (fault.kind === "missed-deletion") expect(fault.picks.length).toBeGreaterThanOrEqual(1);
    }
  });

  it("names no cluster with one cluster, and no twin", () => {
    for (const topology of ["single", "ha", "sharded"] as const) {
      const plan = planTrial({ ...base, topology, durationMs: 300_000 });
      const ops = [...plan.initial, ...plan.episodes.flatMap((e) => e.ops)];
      expect(ops.some((o) => "cluster" in o || o.op === "create-twin")).toBe(false);
      expect(plan.episodes.some((e) => "cluster" in e || (e.background && "cluster" in e.background))).toBe(
        false,
      );
    }
  });

  describe("sharded", () => {
    const plans = [1, 2, 3, 4].map((trial) =>
      planTrial({ ...base, trial, seed: base.seed + trial, topology: "sharded", durationMs: 300_000 }),
    );
    const faults = plans.flatMap((p) => p.episodes.map((e) => e.fault));

    it("uses only the kinds allowed for a ring of replicas: ha's, never controller-kill", () => {
      const allowed = new Set(faultKindsFor("sharded"));
      for (const fault of faults) expect(allowed.has(fault.kind), fault.kind).toBe(true);
      expect(faults.some((f) => f.kind === "controller-kill")).toBe(false);
      for (const kind of ["leader-kill", "leader-pause", "kill-after-cloud-write"])
        expect(faults.some((f) => f.kind === kind)).toBe(true);
    });

    it("aims every fault at a replica by a pick in [0, 1); other faults carry none", () => {
      const aimed = ["leader-kill", "leader-pause", "kill-after-cloud-write"];
      for (const fault of faults) {
        const pick = "pick" in fault ? fault.pick : undefined;
        if (aimed.includes(fault.kind)) {
          expect(pick).toBeGreaterThanOrEqual(0);
          expect(pick).toBeLessThan(1);
        } else expect(pick).toBeUndefined();
      }
    });

    it("draws no pick for the other topologies, whose plans stay as they were", () => {
      for (const topology of ["single", "ha", "two-clusters"] as const) {
        const plan = planTrial({ ...base, topology, durationMs: 300_000 });
        expect(plan.episodes.some((e) => "pick" in e.fault)).toBe(false);
      }
    });
  });

  describe("two clusters", () => {
    const plan = planTrial({ ...base, topology: "two-clusters", durationMs: 300_000 });
    const ops = [...plan.initial, ...plan.episodes.flatMap((e) => e.ops)];

    it("shares the initial Shapes out between the clusters, the first of each with a twin in the other", () => {
      const creates = plan.initial.filter((o) => o.op === "create");
      expect(creates).toHaveLength(base.shapes);
      expect(creates.filter((o) => o.cluster === 0)).toHaveLength(base.shapes / 2);
      expect(creates.filter((o) => o.cluster === 1)).toHaveLength(base.shapes / 2);
      const twins = plan.initial.filter((o) => o.op === "create-twin");
      expect(twins.map((o) => [o.cluster, "name" in o ? o.name : ""])).toEqual([
        [0, creates.find((o) => o.cluster === 1)?.name],
        [1, creates.find((o) => o.cluster === 0)?.name],
      ]);
    });

    it("runs every operation in a named cluster, and aims twins at names the other cluster created", () => {
      for (const op of ops) expect([0, 1]).toContain(op.cluster);
      const createdIn = (cluster: number) =>
        new Set(
          ops.flatMap((o) =>
            o.cluster === cluster && (o.op === "create" || o.op === "churn" || o.op === "create-twin")
              ? [o.name]
              : [],
          ),
        );
      const twins = ops.filter((o) => o.op === "create-twin");
      expect(twins.filter((o) => o.cluster === 0).length).toBeGreaterThan(2);
      expect(twins.filter((o) => o.cluster === 1).length).toBeGreaterThan(2);
      for (const twin of twins) {
        if (twin.op !== "create-twin") continue;
        expect(createdIn(1 - (twin.cluster ?? 0)).has(twin.name), twin.name).toBe(true);
      }
    });

    it("aims the faults that act on one cluster at one, both clusters over a trial; cloud faults at none", () => {
      const scoped = ["controller-kill", "kill-after-cloud-write", "apiserver-restart", "missed-deletion"];
      const aimed = plan.episodes.filter((e) => scoped.includes(e.fault.kind));
      expect(new Set(aimed.map((e) => e.cluster))).toEqual(new Set([0, 1]));
      for (const e of plan.episodes.filter(
        (e) => e.fault.kind.startsWith("cloud-") && e.fault.kind !== "cloud-human-edit",
      ))
        expect(e.cluster).toBeUndefined();
      for (const e of plan.episodes) if (e.background) expect([0, 1]).toContain(e.background.cluster);
    });
  });

  it("has a person do every kind of edit over a long trial, renames among them", () => {
    const plan = planTrial({ ...base, durationMs: 900_000 });
    const actions = plan.episodes.flatMap((e) => [
      ...(e.fault.kind === "cloud-human-edit" ? e.fault.edits.map((edit) => edit.action) : []),
      ...(e.background ? [e.background.edit.action] : []),
    ]);
    expect(new Set(actions)).toEqual(
      new Set(["recolor", "rename", "delete", "drop-size", "retag-name", "disown"]),
    );
  });

  it("describes every kind", () => {
    for (const kind of FAULT_KINDS) expect(FAULT_DESCRIPTIONS[kind]).toMatch(/\w/);
  });
});
