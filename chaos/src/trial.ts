/**
 * One chaos trial, from a fresh stack to its verdict:
 *
 * 1. a fresh stack (control plane, CRDs, RBAC, cloud); the foreign shapes seeded and their state recorded;
 * 2. the controllers started (one, or two with leader election); the initial Shapes created; settle;
 * 3. each episode: the workload runs its operations while the fault is injected and healed (and maybe a
 *    person edits the cloud); then the harness stops acting and measures how long the system takes to
 *    SETTLE — every invariant true — from the moment the fault was healed and the workload quiet;
 * 4. the verdict: the invariants once more, the request log's single-writer check, and the health of
 *    every controller process (no crash, no stray output).
 *
 * A settle that times out records the violations seen at the deadline; they are not counted again in
 * later episodes (a persistent problem is one violation, not one per episode).
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import { CLOUD_TOKEN } from "../../e2e/harness/cloud.ts";
import { injectBackgroundEdit, injectFault, type FaultContext, type FaultRecord } from "./faults.ts";
import {
  checkWorld,
  violationKey,
  type CloudShape,
  type Expectations,
  type Violation,
  type World,
} from "./invariants.ts";
import type { EpisodePlan, FaultKind, TrialPlan, Topology } from "./plan.ts";
import { createRng, deriveSeed } from "./prng.ts";
import { ControllerSet } from "./replicas.ts";
import { startChaosStack, type ChaosStack } from "./stack.ts";
import { Workload, type WorkloadCounts } from "./workload.ts";
import { checkSingleWriter, type RequestLogEntry, type Term } from "./writers.ts";

/** The controllers' owner id (their default). */
export const OWNER_ID = "k8s";

/** How a trial runs, beyond its plan. */
export interface TrialSettings {
  /** How long the system may take to settle after an episode before the violations are recorded. */
  settleTimeoutMs: number;
  /** Where the trial's controller logs go (a folder per trial is made inside). */
  artifactsDir: string;
  /** Keep the controller logs of a trial without violations (they are always kept otherwise). */
  keepLogs: boolean;
  /** The controllers' --log-level. */
  logLevel: string;
  /** --leak-grace of the controllers. */
  leakGrace: string;
  /** Progress lines for people. */
  progress: (line: string) => void;
}

/** The settle time of one episode. */
export interface Settle {
  episode: number;
  kind: FaultKind;
  /** From the heal (and the workload's last action) to every invariant true; undefined if it timed out. */
  settleMs: number | undefined;
  /** For a slow settle: what was still not so at the last look before it settled (at most 5). */
  waitedFor?: string[];
}

/** A settle slower than this records what it waited for. */
const SLOW_SETTLE_MS = 10_000;

/** What one trial did and found. */
export interface TrialResult {
  trial: number;
  seed: number;
  topology: Topology;
  startedAt: string;
  /** Wall time of the whole trial, stack included. */
  wallMs: number;
  faults: FaultRecord[];
  settles: Settle[];
  /** How long the initial Shapes took to settle. */
  initialSettleMs: number | undefined;
  violations: Violation[];
  workload: WorkloadCounts;
  /** Orphan deletions whose cloud shape had to stay, and shapes a person disowned (foreign from then on). */
  expectations: { orphans: number; disowned: number };
  /** Every action of the workload and of people, in order. */
  actions: Workload["actions"];
  /** Writes the cloud answered during the trial: all of them, and the controllers'. */
  cloudWrites: { total: number; byControllers: number };
  /** Every controller identity of the trial. */
  identities: string[];
  /** The folder of the controller logs, when kept. */
  logs?: string;
  /** Set when the harness itself failed (the stack did not start, ...): the trial proves nothing. */
  error?: string;
}

/** Runs one trial. Never throws: a harness failure is recorded in `error`. */
export async function runTrial(plan: TrialPlan, settings: TrialSettings): Promise<TrialResult> {
  const started = Date.now();
  const namespace = `chaos-t${plan.trial}`;
  const artifactsDir = join(settings.artifactsDir, `trial-${plan.trial}`);
  const result: TrialResult = {
    trial: plan.trial,
    seed: plan.seed,
    topology: plan.topology,
    startedAt: new Date(started).toISOString(),
    wallMs: 0,
    faults: [],
    settles: [],
    initialSettleMs: undefined,
    violations: [],
    workload: { creates: 0, updates: 0, deletes: 0, humanEdits: 0, skipped: 0 },
    expectations: { orphans: 0, disowned: 0 },
    actions: [],
    cloudWrites: { total: 0, byControllers: 0 },
    identities: [],
  };
  const say = (line: string) => settings.progress(`trial ${plan.trial} (${plan.topology}): ${line}`);
  let stack: ChaosStack | undefined;
  let controllers: ControllerSet | undefined;
  let evidence: { terms: Term[]; requests: RequestLogEntry[] } = { terms: [], requests: [] };
  try {
    await mkdir(artifactsDir, { recursive: true });
    stack = await startChaosStack({ seedRandom: createRng(deriveSeed(plan.seed, 1)).next });
    await stack.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } });
    const foreign = await seedForeign(stack, plan, namespace);
    say(`stack up in ${seconds(Date.now() - started)}; ${foreign.length} foreign shapes seeded`);

    const workload = new Workload({ namespace, kube: stack.kube, cloud: stack.cloud, ownerId: OWNER_ID });
    const expectations = (): Expectations => ({
      ownerId: OWNER_ID,
      foreign: [...foreign, ...workload.disowned],
      orphans: workload.orphans,
    });
    const live = stack;
    const snapshot = async (): Promise<World> => ({
      shapes: await live.kube.listShapes(namespace),
      shapeRefs: await live.kube.listShapeRefs(),
      cloud: live.cloud.shapes(),
    });
    const known = new Map<string, Violation>();
    const settle = async (): Promise<{ settledMs?: number; waitedFor: string[] }> => {
      const outcome = await settleWorld(snapshot, expectations, known, settings.settleTimeoutMs);
      for (const v of outcome.violations) known.set(violationKey(v), v);
      return outcome;
    };

    controllers = new ControllerSet({
      topology: plan.topology,
      trial: plan.trial,
      artifactsDir,
      kubeconfigPath: stack.controllerIdentity.kubeconfigPath,
      adminKubeConfig: stack.kubeConfig,
      cloudUrl: stack.cloud.url,
      cloudToken: CLOUD_TOKEN,
      leakGrace: settings.leakGrace,
      logLevel: settings.logLevel,
    });
    await controllers.start();
    for (const op of plan.initial) await workload.apply(op);
    result.initialSettleMs = (await settle()).settledMs;
    say(
      `${plan.initial.length} Shapes ` +
        (result.initialSettleMs === undefined
          ? "did NOT settle"
          : `settled in ${seconds(result.initialSettleMs)}`),
    );

    const ctx: FaultContext = { stack, controllers, workload };
    for (const episode of plan.episodes) {
      const { records, quietAtMs } = await runEpisode(episode, ctx);
      result.faults.push(...records);
      const waited = Date.now() - quietAtMs;
      const { settledMs, waitedFor } = await settle();
      const settleMs = settledMs === undefined ? undefined : settledMs + waited;
      result.settles.push({
        episode: episode.index,
        kind: episode.fault.kind,
        settleMs,
        ...(settleMs !== undefined && settleMs > SLOW_SETTLE_MS ? { waitedFor } : {}),
      });
      say(
        `episode ${episode.index}/${plan.episodes.length} ${episode.fault.kind}: ` +
          `${records.find((r) => !r.background)?.detail ?? ""} — ` +
          (settleMs === undefined
            ? `did NOT settle within ${seconds(settings.settleTimeoutMs)}`
            : `settled in ${seconds(settleMs)}`),
      );
    }

    // The verdict: the world once more, then what only the whole trial shows.
    await settle();
    const identities = controllers.identities();
    result.identities = [...identities];
    const requests = stack.cloud.requests();
    result.cloudWrites = {
      total: requests.length,
      byControllers: requests.filter((e) => e.clientId !== undefined && identities.has(e.clientId)).length,
    };
    await controllers.stopAll();
    evidence = { terms: await controllers.terms(), requests };
    const writerViolations = checkSingleWriter(requests, evidence.terms, (id) => identities.has(id));
    // While the API server restarts (and a few seconds after), its RBAC authorizer answers 403.
    const restarts = result.faults.filter((f) => f.kind === "apiserver-restart");
    const healthViolations = await controllers.health((t) =>
      restarts.some((f) => t >= f.startedAtMs && t <= f.healedAtMs + 5_000),
    );
    result.violations = [...known.values(), ...writerViolations, ...healthViolations];
    result.workload = workload.counts;
    result.expectations = { orphans: workload.orphans.length, disowned: workload.disowned.length };
    result.actions = workload.actions;
  } catch (error) {
    result.error = (error as Error).stack ?? String(error);
    say(`harness error: ${(error as Error).message}`);
  } finally {
    await controllers?.stopAll().catch(() => {});
    await stack?.stop().catch(() => {});
  }
  result.wallMs = Date.now() - started;
  if (result.violations.length > 0 && stack) {
    // What the single-writer check read, for whoever investigates.
    await writeFile(join(artifactsDir, "requests.json"), JSON.stringify(evidence, null, 1)).catch(() => {});
  }
  if (result.violations.length > 0 || result.error || settings.keepLogs) result.logs = artifactsDir;
  else await rm(artifactsDir, { recursive: true, force: true });
  say(
    `${result.violations.length} violation(s)${result.error ? ", harness error" : ""} in ${seconds(result.wallMs)}`,
  );
  return result;
}

/**
 * One episode: the workload's operations at their planned times, the fault at its time, a background edit
 * maybe. Resolves when all of it is over, with the fault records and the moment it all went quiet.
 */
async function runEpisode(
  episode: EpisodePlan,
  ctx: FaultContext,
): Promise<{ records: FaultRecord[]; quietAtMs: number }> {
  const start = Date.now();
  const at = (ms: number) => sleep(Math.max(0, start + ms - Date.now()));
  const workload = (async () => {
    for (const op of episode.ops) {
      await at(op.atMs);
      await ctx.workload.apply(op);
    }
  })();
  const fault = (async () => {
    await at(episode.faultAtMs);
    return injectFault(episode.fault, ctx, episode.index);
  })();
  const background = episode.background;
  const edit = background
    ? (async () => {
        await at(background.atMs);
        return injectBackgroundEdit(background.edit, ctx, episode.index);
      })()
    : Promise.resolve(undefined);
  const [, record, editRecord] = await Promise.all([workload, fault, edit]);
  return { records: editRecord ? [record, editRecord] : [record], quietAtMs: Date.now() };
}

/**
 * Polls the world until no invariant is broken (leaving out the violations already `known`), or the
 * timeout passes. Resolves with the time it took, or with the violations at the deadline; and with what
 * was still pending at the last look that found something.
 */
async function settleWorld(
  snapshot: () => Promise<World>,
  expectations: () => Expectations,
  known: ReadonlyMap<string, Violation>,
  timeoutMs: number,
): Promise<{ settledMs?: number; violations: Violation[]; waitedFor: string[] }> {
  const start = Date.now();
  let last: Violation[] = [];
  let pending: Violation[] = [];
  const waitedFor = () => pending.slice(0, 5).map((v) => `${v.invariant} — ${v.subject}: ${v.detail}`);
  for (;;) {
    try {
      const world = await snapshot();
      last = checkWorld(world, expectations()).filter((v) => !known.has(violationKey(v)));
      if (last.length === 0) return { settledMs: Date.now() - start, violations: [], waitedFor: waitedFor() };
      pending = last;
    } catch {
      // The API server is restarting: look again.
    }
    if (Date.now() - start > timeoutMs) return { violations: last, waitedFor: waitedFor() };
    await sleep(250);
  }
}

/** Seeds the plan's foreign shapes and returns them as created (with their revisions). */
async function seedForeign(stack: ChaosStack, plan: TrialPlan, namespace: string): Promise<CloudShape[]> {
  const created: CloudShape[] = [];
  for (const seed of plan.foreign) {
    created.push(
      await stack.cloud.api.create({
        name: seed.colliding ? `${namespace}.${seed.name}` : seed.name,
        type: seed.type as CloudShape["type"],
        color: seed.color as CloudShape["color"],
        tags: seed.tags,
      }),
    );
  }
  return created;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
