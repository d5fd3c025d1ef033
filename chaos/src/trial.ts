/**
 * One chaos trial, from a fresh stack to its verdict:
 *
 * 1. a fresh stack (one control plane, or two sharing the cloud; CRDs, RBAC, cloud); the foreign shapes
 *    seeded and their state recorded;
 * 2. the controllers started (one, two with leader election, one per cluster, or three in a ring with
 *    `--sharding`); the initial Shapes created; settle;
 * 3. each episode: the workload runs its operations while the fault is injected and healed (and maybe a
 *    person edits the cloud); then the harness stops acting and measures how long the system takes to
 *    SETTLE — every invariant true, in every cluster — from the moment the fault was healed and the
 *    workload quiet;
 * 4. the verdict: the invariants once more, the request log's checks (single writer per cluster — per
 *    cloud shape with `sharded` —, no write to another owner's shape), and the health of every controller
 *    process (no crash, no stray output).
 *
 * A settle that times out records the violations seen at the deadline; they are not counted again in
 * later episodes (a persistent problem is one violation, not one per episode).
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import { cloudNameOf, OPTIONS, TAG_OWNER } from "@shapes/controller";
import { CLOUD_TOKEN } from "@shapes/stack";
import type { ChaosCloud } from "./cloud.ts";
import {
  injectBackgroundEdit,
  injectFault,
  type ClusterContext,
  type FaultContext,
  type FaultRecord,
} from "./faults.ts";
import {
  checkClusters,
  violationKey,
  type ClusterView,
  type CloudShape,
  type Violation,
  type World,
} from "./invariants.ts";
import { clusterCount, type EpisodePlan, type FaultKind, type TrialPlan, type Topology } from "./plan.ts";
import { createRng, deriveSeed } from "./prng.ts";
import { ControllerSet, manifestsFor } from "./replicas.ts";
import { startChaosStack, type ChaosStack } from "./stack.ts";
import { Workload, type ActionOutcome, type WorkloadCounts } from "./workload.ts";
import {
  checkOwnWrites,
  checkShardedWriters,
  checkSingleWriter,
  type ChaosRequestLogEntry,
  type Term,
  type Writer,
} from "./writers.ts";

/** The controllers' --adopt-owner-ids when not given (the trial gives none): controller/src/config.ts. */
const DEFAULT_ADOPT_OWNER_IDS = (OPTIONS.find((o) => o.flag === "adopt-owner-ids")?.default ?? "")
  .split(",")
  .map((id) => id.trim())
  .filter(Boolean);

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
  /** The clusters sharing the cloud (one, but with `two-clusters`), each with its owner id. */
  clusters: { name: string; ownerId: string }[];
  startedAt: string;
  /** Wall time of the whole trial, stack included. */
  wallMs: number;
  faults: FaultRecord[];
  settles: Settle[];
  /** How long the initial Shapes took to settle. */
  initialSettleMs: number | undefined;
  violations: Violation[];
  workload: WorkloadCounts;
  /**
   * Orphan deletions whose cloud shape had to stay, shapes a person disowned (foreign from then on), and
   * shapes a person renamed (to stay while their Shape lives).
   */
  expectations: { orphans: number; disowned: number; renamed: number };
  /** Every action of the workload and of people, in order (with two clusters, each names its cluster). */
  actions: (ActionOutcome & { atMs: number })[];
  /**
   * Writes the cloud answered during the trial: all of them, the controllers', and the controllers' writes
   * of a shape by id that the cloud carried out (each checked for its owner id: no-foreign-write).
   */
  cloudWrites: { total: number; byControllers: number; ownerChecked: number };
  /**
   * With two clusters: the Shapes (cluster/namespace/name) seen reporting NameConflict while the other
   * cluster's shape held their cloud name (the twins that came second).
   */
  crossClusterConflicts?: string[];
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
    clusters: [],
    startedAt: new Date(started).toISOString(),
    wallMs: 0,
    faults: [],
    settles: [],
    initialSettleMs: undefined,
    violations: [],
    workload: { creates: 0, updates: 0, deletes: 0, humanEdits: 0, skipped: 0 },
    expectations: { orphans: 0, disowned: 0, renamed: 0 },
    actions: [],
    cloudWrites: { total: 0, byControllers: 0, ownerChecked: 0 },
    identities: [],
  };
  const say = (line: string) => settings.progress(`trial ${plan.trial} (${plan.topology}): ${line}`);
  let stack: ChaosStack | undefined;
  let clusters: ClusterContext[] = [];
  let evidence: { terms: Term[]; requests: ChaosRequestLogEntry[] } = { terms: [], requests: [] };
  const stopControllers = () => Promise.all(clusters.map((c) => c.controllers.stopAll()));
  try {
    await mkdir(artifactsDir, { recursive: true });
    stack = await startChaosStack({
      seedRandom: createRng(deriveSeed(plan.seed, 1)).next,
      clusters: clusterCount(plan.topology),
      manifests: manifestsFor(plan.topology),
    });
    const { cloud } = stack;
    const several = stack.clusters.length > 1;
    result.clusters = stack.clusters.map((c) => ({ name: c.name, ownerId: c.ownerId }));
    // The same namespace in every cluster: same-named Shapes of two clusters ask for the same cloud name.
    for (const c of stack.clusters) {
      await c.kubeConfig
        .makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name: namespace } } });
    }
    const foreign = await seedForeign(cloud, plan, namespace);
    say(
      `stack up in ${seconds(Date.now() - started)}; ${foreign.length} foreign shapes seeded` +
        (several ? `; owner ids ${stack.clusters.map((c) => `${c.name}=${c.ownerId}`).join(", ")}` : ""),
    );

    clusters = stack.clusters.map((cluster) => ({
      cluster,
      workload: new Workload({ namespace, kube: cluster.kube, cloud, ownerId: cluster.ownerId }),
      controllers: new ControllerSet({
        topology: plan.topology,
        trial: plan.trial,
        ...(several ? { cluster: cluster.name } : {}),
        artifactsDir,
        kubeconfigPath: cluster.controllerIdentity.kubeconfigPath,
        adminKubeConfig: cluster.kubeConfig,
        cloudUrl: cloud.url,
        cloudToken: CLOUD_TOKEN,
        leakGrace: settings.leakGrace,
        logLevel: settings.logLevel,
      }),
    }));
    const workloadOf = (index: number | undefined): Workload => {
      const target = clusters[index ?? 0];
      if (!target)
        throw new Error(`cannot run an operation in cluster ${index}: there are ${clusters.length}`);
      return target.workload;
    };
    // The uids of each cluster's Shapes and ShapeRefs ever seen: the only shapes under an earlier owner id
    // its controllers may adopt (no-foreign-write).
    const localUids = clusters.map(() => new Set<string>());
    const conflicts = new Set<string>();
    const snapshot = async (): Promise<ClusterView[]> => {
      const seen: Omit<World, "cloud">[] = [];
      for (const { cluster } of clusters) {
        const shapes = await cluster.kube.listShapes(namespace);
        seen.push({ shapes, shapeRefs: await cluster.kube.listShapeRefs() });
      }
      const cloudShapes = cloud.shapes();
      // A shape a person disowned is foreign from then on, to every cluster.
      const disowned = clusters.flatMap((c) => c.workload.disowned);
      const owners = new Map(cloudShapes.map((c) => [c.name, c.tags[TAG_OWNER]]));
      const ownerIds = new Set(clusters.map((c) => c.cluster.ownerId));
      return clusters.map(({ cluster, workload }, i) => {
        const { shapes: local, shapeRefs } = seen[i] as Omit<World, "cloud">;
        for (const s of local) {
          localUids[i]?.add(s.metadata.uid);
          const owner = owners.get(cloudNameOf(namespace, s.metadata.name));
          const ready = s.status?.conditions?.find((c) => c.type === "Ready");
          if (ready?.reason === "NameConflict" && owner !== cluster.ownerId && ownerIds.has(owner ?? ""))
            conflicts.add(`${cluster.name}/${namespace}/${s.metadata.name}`);
        }
        for (const r of shapeRefs) localUids[i]?.add(r.spec.shape.uid);
        return {
          name: cluster.name,
          world: { shapes: local, shapeRefs, cloud: cloudShapes },
          expect: {
            ownerId: cluster.ownerId,
            foreign: [...foreign, ...disowned],
            orphans: workload.orphans,
            renamed: workload.renamed,
          },
        };
      });
    };
    const known = new Map<string, Violation>();
    const settle = async (): Promise<{ settledMs?: number; waitedFor: string[] }> => {
      const outcome = await settleWorld(snapshot, known, settings.settleTimeoutMs);
      for (const v of outcome.violations) known.set(violationKey(v), v);
      return outcome;
    };

    await Promise.all(clusters.map((c) => c.controllers.start()));
    for (const op of plan.initial) await workloadOf(op.cluster).apply(op);
    result.initialSettleMs = (await settle()).settledMs;
    say(
      `${plan.initial.length} Shapes ` +
        (result.initialSettleMs === undefined
          ? "did NOT settle"
          : `settled in ${seconds(result.initialSettleMs)}`),
    );

    const ctx: FaultContext = { cloud, clusters };
    for (const episode of plan.episodes) {
      const { records, quietAtMs } = await runEpisode(episode, ctx, workloadOf);
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
      const main = records.find((r) => !r.background);
      say(
        `episode ${episode.index}/${plan.episodes.length} ${episode.fault.kind}` +
          `${main?.cluster ? ` in ${main.cluster}` : ""}: ${main?.detail ?? ""} — ` +
          (settleMs === undefined
            ? `did NOT settle within ${seconds(settings.settleTimeoutMs)}`
            : `settled in ${seconds(settleMs)}`),
      );
    }

    // The verdict: the world once more, then what only the whole trial shows.
    await settle();
    const identities = new Set(clusters.flatMap((c) => [...c.controllers.identities()]));
    result.identities = [...identities];
    const requests = cloud.requests();
    const byControllers = requests.filter((e) => e.clientId !== undefined && identities.has(e.clientId));
    result.cloudWrites = {
      total: requests.length,
      byControllers: byControllers.length,
      ownerChecked: byControllers.filter((e) => e.before !== undefined).length,
    };
    if (several) result.crossClusterConflicts = [...conflicts].sort();
    say(
      `${result.cloudWrites.ownerChecked} controller writes by id checked against the owner id they found` +
        (several ? `; ${conflicts.size} Shape(s) seen in NameConflict with the other cluster's shape` : ""),
    );
    await stopControllers();
    const terms = await Promise.all(clusters.map((c) => c.controllers.terms()));
    evidence = { terms: terms.flat(), requests };
    const verdict: Violation[] = [];
    // Each cluster's controllers take turns by their own Lease; two clusters' controllers write side by side.
    // A ring's replicas all write, each for its part: one writer at a time per cloud shape.
    clusters.forEach((c, i) => {
      const own = c.controllers.identities();
      const isOwn = (id: string) => own.has(id);
      verdict.push(
        ...(plan.topology === "sharded"
          ? checkShardedWriters(requests, isOwn)
          : checkSingleWriter(requests, terms[i] ?? [], isOwn)),
      );
    });
    const writers = new Map<string, Writer>();
    clusters.forEach(({ cluster, controllers }, i) => {
      const uids = localUids[i] ?? new Set<string>();
      for (const id of controllers.identities()) {
        writers.set(id, {
          cluster: cluster.name,
          ownerId: cluster.ownerId,
          adoptOwnerIds: DEFAULT_ADOPT_OWNER_IDS,
          isLocalUid: (uid) => uids.has(uid),
        });
      }
    });
    verdict.push(...checkOwnWrites(requests, (id) => writers.get(id)));
    for (const { cluster, controllers } of clusters) {
      // While the API server restarts (and a few seconds after), its RBAC authorizer answers 403.
      const restarts = result.faults.filter(
        (f) => f.kind === "apiserver-restart" && (f.cluster === undefined || f.cluster === cluster.name),
      );
      verdict.push(
        ...(await controllers.health((t) =>
          restarts.some((f) => t >= f.startedAtMs && t <= f.healedAtMs + 5_000),
        )),
      );
    }
    result.violations = [...known.values(), ...verdict];
    for (const { cluster, workload } of clusters) {
      for (const key of Object.keys(result.workload) as (keyof WorkloadCounts)[])
        result.workload[key] += workload.counts[key];
      result.expectations.orphans += workload.orphans.length;
      result.expectations.disowned += workload.disowned.length;
      result.expectations.renamed += workload.renamed.length;
      result.actions.push(
        ...workload.actions.map((a) => (several ? { ...a, what: `${cluster.name}: ${a.what}` } : a)),
      );
    }
    result.actions.sort((a, b) => a.atMs - b.atMs);
  } catch (error) {
    result.error = (error as Error).stack ?? String(error);
    say(`harness error: ${(error as Error).message}`);
  } finally {
    await stopControllers().catch(() => {});
    await stack?.stop().catch(() => {});
  }
  result.wallMs = Date.now() - started;
  if (result.violations.length > 0 && stack) {
    // What the request-log checks read, for whoever investigates.
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
 * One episode: the workload's operations at their planned times (each in its cluster), the fault at its
 * time, a background edit maybe. Resolves when all of it is over, with the fault records and the moment it
 * all went quiet.
 */
async function runEpisode(
  episode: EpisodePlan,
  ctx: FaultContext,
  workloadOf: (cluster: number | undefined) => Workload,
): Promise<{ records: FaultRecord[]; quietAtMs: number }> {
  const start = Date.now();
  const at = (ms: number) => sleep(Math.max(0, start + ms - Date.now()));
  const workload = (async () => {
    for (const op of episode.ops) {
      await at(op.atMs);
      await workloadOf(op.cluster).apply(op);
    }
  })();
  const fault = (async () => {
    await at(episode.faultAtMs);
    return injectFault(episode.fault, ctx, episode.index, episode.cluster);
  })();
  const background = episode.background;
  const edit = background
    ? (async () => {
        await at(background.atMs);
        return injectBackgroundEdit(background.edit, ctx, episode.index, background.cluster);
      })()
    : Promise.resolve(undefined);
  const [, record, editRecord] = await Promise.all([workload, fault, edit]);
  return { records: editRecord ? [record, editRecord] : [record], quietAtMs: Date.now() };
}

/**
 * Polls the world until no invariant is broken in any cluster (leaving out the violations already
 * `known`), or the timeout passes. Resolves with the time it took, or with the violations at the
 * deadline; and with what was still pending at the last look that found something.
 */
async function settleWorld(
  snapshot: () => Promise<ClusterView[]>,
  known: ReadonlyMap<string, Violation>,
  timeoutMs: number,
): Promise<{ settledMs?: number; violations: Violation[]; waitedFor: string[] }> {
  const start = Date.now();
  let last: Violation[] = [];
  let pending: Violation[] = [];
  const waitedFor = () => pending.slice(0, 5).map((v) => `${v.invariant} — ${v.subject}: ${v.detail}`);
  for (;;) {
    try {
      last = checkClusters(await snapshot()).filter((v) => !known.has(violationKey(v)));
      if (last.length === 0) return { settledMs: Date.now() - start, violations: [], waitedFor: waitedFor() };
      pending = last;
    } catch {
      // An API server is restarting: look again.
    }
    if (Date.now() - start > timeoutMs) return { violations: last, waitedFor: waitedFor() };
    await sleep(250);
  }
}

/** Seeds the plan's foreign shapes and returns them as created (with their revisions). */
async function seedForeign(cloud: ChaosCloud, plan: TrialPlan, namespace: string): Promise<CloudShape[]> {
  const created: CloudShape[] = [];
  for (const seed of plan.foreign) {
    created.push(
      await cloud.api.create({
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
