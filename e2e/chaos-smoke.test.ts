/**
 * The chaos harness, short and with a fixed seed, inside `npm test`: `node chaos/run.ts --trials 4 --seed
 * 1581 --shapes 5 --duration 18s` as its own process (it starts its own stacks: one trial with one
 * controller, one with two replicas under leader election, one with two clusters sharing the cloud, one with
 * three replicas splitting the Shapes with --sharding), every kind of fault injected at least once, and ZERO
 * invariant violations in its JSON results.
 *
 * A seed always draws the same plans (chaos/src/plan.ts is pure), so this is the same fault schedule every
 * time; only the timing of the system under test varies. Seed 1581 at 18 s is the shortest schedule of the
 * first 3,000 seeds whose four trials draw every fault kind: 14 episodes, about 87 s of them planned (seed 1
 * at 20 s, before: 14 episodes, 98 s, 9 of the 13 kinds). A failure prints every violation with what was
 * seen; replay it with `npm run chaos -- --seed 1581 --trials 4 --shapes 5 --duration 18s --keep-logs`.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { FAULT_KINDS } from "../chaos/src/plan.ts";
import { REPO_ROOT } from "@shapes/stack";

interface ChaosJson {
  seed: number;
  figures: {
    trials: number;
    trialErrors: number;
    faultsInjected: number;
    violations: number;
    episodes: number;
  };
  trials: {
    trial: number;
    topology: string;
    clusters: { name: string; ownerId: string }[];
    error?: string;
    violations: { invariant: string; subject: string; detail: string }[];
    settles: { settleMs?: number }[];
    faults: { kind: string; background: boolean }[];
    cloudWrites: { byControllers: number; ownerChecked: number };
  }[];
}

const SEED = 1581;
/** Four trials (mixed: one per topology, in turn), 5 Shapes, 18 s of episodes each. */
const ARGS = ["--trials", "4", "--seed", String(SEED), "--shapes", "5", "--duration", "18s"];

describe(`chaos smoke run (seed ${SEED})`, () => {
  let dir: string;
  let run: { code: number | null; output: string; json: ChaosJson };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "shapes-chaos-smoke-"));
    const jsonPath = join(dir, "chaos.json");
    const child = spawn(process.execPath, [join(REPO_ROOT, "chaos", "run.ts"), ...ARGS, "--json", jsonPath], {
      cwd: REPO_ROOT,
      // The binaries the e2e setup found; never a KUBECONFIG's cluster (the harness starts its own).
      env: { ...process.env, KUBEBUILDER_ASSETS: inject("envtestBinaries").dir, KUBECONFIG: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    let json: ChaosJson;
    try {
      json = JSON.parse(await readFile(jsonPath, "utf8")) as ChaosJson;
    } catch (error) {
      throw new Error(
        `cannot read the chaos results (exit code ${code}): ${(error as Error).message}\n${output}`,
        { cause: error },
      );
    }
    run = { code, output, json };
  }, 900_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("every trial ran to the end, every kind of fault injected: one controller, two replicas, two clusters, a ring of three", () => {
    const errors = run.json.trials.flatMap((t) => (t.error ? [`trial ${t.trial}: ${t.error}`] : []));
    expect(errors, run.output).toEqual([]);
    expect(run.json.seed).toBe(SEED);
    expect(run.json.trials.map((t) => t.topology)).toEqual(["single", "ha", "two-clusters", "sharded"]);
    // Every kind of fault the harness has, each as an episode's own fault (not only mixed into another).
    const injected = new Set(
      run.json.trials.flatMap((t) => t.faults.filter((f) => !f.background).map((f) => f.kind)),
    );
    expect(
      FAULT_KINDS.filter((k) => !injected.has(k)),
      `fault kinds seed ${SEED} did not inject (plans changed? pick a seed whose 4 trials draw every kind: planTrial is pure)`,
    ).toEqual([]);
    expect(run.json.figures.faultsInjected, run.output).toBeGreaterThanOrEqual(FAULT_KINDS.length);
    for (const t of run.json.trials) {
      expect(t.settles.length, `trial ${t.trial} ran episodes`).toBeGreaterThan(0);
      expect(t.cloudWrites.byControllers, `trial ${t.trial}: the controllers wrote`).toBeGreaterThan(0);
      // The no-foreign-write check had writes to look at: the controllers patched and deleted shapes.
      expect(t.cloudWrites.ownerChecked, `trial ${t.trial}: writes by id checked`).toBeGreaterThan(0);
    }
    // Two clusters, each under its own default owner id.
    const owners = run.json.trials[2]?.clusters.map((c) => c.ownerId) ?? [];
    expect(owners).toHaveLength(2);
    for (const id of owners) expect(id).toMatch(/^k8s-[0-9a-f-]{36}$/);
    expect(new Set(owners).size).toBe(2);
  });

  test("zero invariant violations", () => {
    const violations = run.json.trials.flatMap((t) =>
      t.violations.map((v) => `trial ${t.trial}: ${v.invariant} — ${v.subject}: ${v.detail}`),
    );
    expect(violations, run.output).toEqual([]);
    expect(run.json.figures.violations).toBe(0);
    expect(run.code, run.output).toBe(0);
  });
});
