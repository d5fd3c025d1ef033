/**
 * Injecting each planned fault, and healing it: one function per kind, each resolving once the fault is
 * over (faults cleared, the killed controller started again, the API server back, the process resumed)
 * with a record of what was done. A fault that cannot be aimed (no leader to kill, no write to trap) does
 * the closest thing and says so in its record; it never throws for that. With `sharded`, which has no
 * leader, a fault aimed at "the leader" acts on the running replica of the ring its plan's `pick` names
 * (ControllerSet.victim).
 */
import { ApiException } from "@kubernetes/client-node";
import { setTimeout as sleep } from "node:timers/promises";
import type { FaultRule } from "@shapes/mock-cloud";
import type { ChaosCloud, TrapHit } from "./cloud.ts";
import type { ControllerSet, Replica } from "./replicas.ts";
import type { ChaosCluster } from "./stack.ts";
import type { FaultKind, FaultPlan, HumanEdit } from "./plan.ts";
import type { Workload } from "./workload.ts";

/** One cluster as a fault sees it: its control plane, its controllers, its workload. */
export interface ClusterContext {
  cluster: ChaosCluster;
  controllers: ControllerSet;
  workload: Workload;
}

/** What a fault needs to act on. */
export interface FaultContext {
  /** The cloud every cluster shares. */
  cloud: ChaosCloud;
  /** The trial's clusters (one, or two): a fault that acts on one cluster acts on the one it is given. */
  clusters: readonly ClusterContext[];
}

/** What was done. Times are epoch milliseconds. */
export interface FaultRecord {
  kind: FaultKind;
  /** The episode it belongs to (0: none). */
  episode: number;
  /** True for a human edit mixed into another fault's episode. */
  background: boolean;
  startedAtMs: number;
  /** When it was over: the moment from which the system is on its own. */
  healedAtMs: number;
  /** What exactly happened, for people. */
  detail: string;
  /** With several clusters, the one it acted on (absent for a fault of the shared cloud). */
  cluster?: string;
}

/** How long to wait for a leader, or for a trapped write, before doing the nearest thing. */
const AIM_TIMEOUT_MS = 15_000;

/**
 * Injects `fault`, waits until it is healed, and says what happened. A fault that acts on one cluster
 * acts on cluster `cluster` (an index into `ctx.clusters`; undefined: the first, the only one mostly).
 */
export async function injectFault(
  fault: FaultPlan,
  ctx: FaultContext,
  episode: number,
  cluster: number | undefined,
): Promise<FaultRecord> {
  const startedAtMs = Date.now();
  const target = clusterAt(ctx, cluster);
  const detail = await run(fault, ctx.cloud, target);
  return {
    kind: fault.kind,
    episode,
    background: false,
    startedAtMs,
    healedAtMs: Date.now(),
    detail,
    ...(cluster === undefined ? {} : { cluster: target.cluster.name }),
  };
}

/** A person's edit, of the shapes cluster `cluster` owns, in the middle of another fault's episode. */
export async function injectBackgroundEdit(
  edit: HumanEdit,
  ctx: FaultContext,
  episode: number,
  cluster: number | undefined,
): Promise<FaultRecord> {
  const startedAtMs = Date.now();
  const target = clusterAt(ctx, cluster);
  const outcome = await target.workload.humanEdit(edit);
  return {
    kind: "cloud-human-edit",
    episode,
    background: true,
    startedAtMs,
    healedAtMs: Date.now(),
    detail: outcome.skipped ? `${outcome.what}: not done (${outcome.skipped})` : outcome.what,
    ...(cluster === undefined ? {} : { cluster: target.cluster.name }),
  };
}

function clusterAt(ctx: FaultContext, index: number | undefined): ClusterContext {
  const target = ctx.clusters[index ?? 0];
  if (!target)
    throw new Error(`cannot aim a fault at cluster ${index}: the trial has ${ctx.clusters.length}`);
  return target;
}

/** Injects one fault: on the shared cloud, or on cluster `ctx` (its controllers, API server, workload). */
async function run(fault: FaultPlan, cloud: ChaosCloud, ctx: ClusterContext): Promise<string> {
  switch (fault.kind) {
    case "controller-kill":
    case "leader-kill": {
      const victim = await ctx.controllers.waitForVictim(fault.pick ?? 0, AIM_TIMEOUT_MS);
      if (!victim) return "no leader found to kill";
      const identity = victim.current?.identity;
      await victim.kill();
      await sleep(fault.restartAfterMs);
      await victim.start(false);
      return `killed ${identity}, restarted as ${victim.current?.identity} after ${fault.restartAfterMs} ms`;
    }

    case "kill-after-cloud-write": {
      let victim: Replica | undefined;
      const trap = cloud.armTrap({
        method: fault.method,
        moment: fault.moment,
        // A write of this cluster's controllers (with two clusters, the other's are left alone).
        from: (clientId) => ctx.controllers.byIdentity(clientId) !== undefined,
        // Synchronous, inside the cloud's answer: SIGKILL before (or right after) the response leaves.
        spring: (hit) => {
          victim = ctx.controllers.byIdentity(hit.clientId);
          victim?.killNow();
        },
      });
      const hit = await waitForTrap(trap.sprung);
      trap.disarm();
      let what: string;
      if (hit && victim) {
        what = `killed ${hit.clientId} ${fault.moment} of its ${hit.method} ${hit.path} (→ ${hit.status})`;
      } else {
        victim = await ctx.controllers.waitForVictim(fault.pick ?? 0, AIM_TIMEOUT_MS);
        if (!victim) return `no ${fault.method} within ${AIM_TIMEOUT_MS} ms and no leader to kill`;
        what = `no ${fault.method} by a controller within ${AIM_TIMEOUT_MS / 1000} s: killed ${victim.current?.identity} at a random moment instead`;
      }
      await victim.kill();
      await sleep(fault.restartAfterMs);
      await victim.start(false);
      return `${what}; restarted as ${victim.current?.identity} after ${fault.restartAfterMs} ms`;
    }

    case "leader-pause": {
      let victim: Replica | undefined;
      let when = "at a random moment";
      if (fault.during === "cloud-write") {
        // Frozen inside a write: the write committed, its answer waits in the socket for the whole pause.
        const trap = cloud.armTrap({
          method: fault.method,
          moment: "before-answer",
          from: (clientId) => ctx.controllers.byIdentity(clientId) !== undefined,
          spring: (hit) => {
            victim = ctx.controllers.byIdentity(hit.clientId);
            victim?.pause();
          },
        });
        const hit = await waitForTrap(trap.sprung);
        trap.disarm();
        when = hit
          ? `the instant its ${hit.method} ${hit.path} committed (→ ${hit.status}, answer held)`
          : `at a random moment (no ${fault.method} within ${AIM_TIMEOUT_MS / 1000} s)`;
      }
      if (!victim) {
        victim = await ctx.controllers.waitForVictim(fault.pick ?? 0, AIM_TIMEOUT_MS);
        if (!victim) return "no leader found to pause";
        victim.pause();
      }
      await sleep(fault.pauseMs);
      victim.resume();
      return `paused ${victim.current?.identity} (SIGSTOP) ${when} for ${fault.pauseMs} ms, then SIGCONT`;
    }

    case "cloud-5xx":
    case "cloud-429":
    case "cloud-latency":
    case "cloud-outage":
    case "cloud-list-lag": {
      const rule = ruleOf(fault);
      cloud.setFaults([rule]);
      try {
        await sleep(fault.durationMs);
      } finally {
        cloud.clearFaults();
      }
      return `${JSON.stringify(rule)} for ${fault.durationMs} ms`;
    }

    case "cloud-watch-cut": {
      const cut: number[] = [];
      for (let i = 0; i < fault.cuts; i++) {
        cut.push(cloud.cutWatches());
        await sleep(fault.gapMs);
      }
      return `cut the change-feed connections ${fault.cuts} time(s), ${fault.gapMs} ms apart (${cut.join(", ")} open)`;
    }

    case "apiserver-restart": {
      const { controlPlane } = ctx.cluster;
      const before = controlPlane.pids().apiServer;
      await controlPlane.restartApiServer();
      return `kube-apiserver restarted (pid ${before} → ${controlPlane.pids().apiServer})`;
    }

    case "missed-deletion": {
      const victims = await ctx.workload.lock.run(async () => {
        // Every replica down first: nobody may see the deletion.
        await Promise.all(ctx.controllers.replicas.map((r) => r.kill()));
        const names: string[] = [];
        for (const pick of fault.picks) {
          const name = ctx.workload.takeVictim(pick);
          if (name === undefined) continue;
          await deleteBehindTheControllersBack(ctx, name);
          names.push(name);
        }
        return names;
      });
      await sleep(fault.downMs);
      await Promise.all(ctx.controllers.replicas.map((r) => r.start(false)));
      return victims.length === 0
        ? "no live Shape to delete; the controllers were killed and restarted"
        : `controllers killed; ${victims.map((n) => `${ctx.workload.namespace}/${n}`).join(", ")} deleted with the finalizer stripped; restarted after ${fault.downMs} ms`;
    }

    case "cloud-human-edit": {
      const done: string[] = [];
      for (const edit of fault.edits) {
        const outcome = await ctx.workload.humanEdit(edit);
        done.push(outcome.skipped ? `${outcome.what}: not done (${outcome.skipped})` : outcome.what);
      }
      return done.join("; ");
    }
  }
}

/** The trap's hit, or undefined when no write sprang it within {@link AIM_TIMEOUT_MS}. */
async function waitForTrap(sprung: Promise<TrapHit>): Promise<TrapHit | undefined> {
  const timeout = new AbortController();
  try {
    return await Promise.race([
      sprung,
      sleep(AIM_TIMEOUT_MS, undefined, { signal: timeout.signal }).then(() => undefined),
    ]);
  } finally {
    timeout.abort();
  }
}

/** The mock cloud's fault rule for a cloud fault. */
export function ruleOf(
  fault: Extract<
    FaultPlan,
    { kind: "cloud-5xx" | "cloud-429" | "cloud-latency" | "cloud-outage" | "cloud-list-lag" }
  >,
): FaultRule {
  switch (fault.kind) {
    case "cloud-5xx":
      return { path: "/v1/*", errorRate: fault.errorRate };
    case "cloud-429":
      return { path: "/v1/*", throttleRate: fault.throttleRate, retryAfterSeconds: fault.retryAfterSeconds };
    case "cloud-latency":
      return fault.onlyPost
        ? { method: "POST", path: "/v1/shapes", latencyMs: fault.latencyMs }
        : { path: "/v1/*", latencyMs: fault.latencyMs };
    case "cloud-outage":
      return { path: "/v1/*", outage: true };
    case "cloud-list-lag":
      return { listLagMs: fault.listLagMs };
  }
}

/** Deletes a Shape and strips the controller's finalizer, as a person "unsticking" it would. */
async function deleteBehindTheControllersBack(ctx: ClusterContext, name: string): Promise<void> {
  const { kube } = ctx.cluster;
  const ns = ctx.workload.namespace;
  for (let attempt = 0; ; attempt++) {
    try {
      if (!(await kube.getShape(ns, name))) return;
      await kube.deleteShape(ns, name);
      if (await kube.getShape(ns, name)) await kube.stripFinalizer(ns, name);
      return;
    } catch (error) {
      const gone = error instanceof ApiException && error.code === 404;
      if (gone) return;
      if (attempt >= 10) throw error;
      await sleep(500);
    }
  }
}
