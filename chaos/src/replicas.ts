/**
 * The controller processes of one cluster of a trial: one replica, two with leader election
 * (`--leader-elect` with a 4 s lease, 3 s renew deadline and 500 ms retry period, so takeovers fit in a
 * short trial), or three sharing the Shapes out by a ring of Leases (`--sharding`, the same timings; the
 * ring's extra Lease verbs come from deploy/sharding/rbac.yaml, see {@link manifestsFor}). With two
 * clusters, each has a set of one replica, named after its cluster.
 *
 * Each run of a replica is a fresh `node controller/src/main.ts` process (stack/'s
 * ControllerProcess) with its OWN identity, `t<trial>-<replica><run>` (e.g. `t3-b2`, `t6-west1`): the
 * cloud's request log then tells every process apart, which is what the single-writer and no-foreign-write
 * checks need. Every process runs with the default ownership settings (no --owner-id): it derives its
 * cluster's owner id itself. The set remembers
 * which processes the harness killed or stopped, so any other exit is a crash.
 */
import { CoordinationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ControllerProcess, describeLogLine, forbiddenLines, type LogLine, REPO_ROOT } from "@shapes/stack";
import { CONTROLLER_NAMESPACE } from "./stack.ts";
import type { Topology } from "./plan.ts";
import type { Violation } from "./invariants.ts";
import type { Term } from "./writers.ts";

/** The Lease the replicas of a trial compete for (in the namespace deploy/rbac.yaml grants Leases in). */
export const LEASE_NAME = "shapes-controller";
/** Short lease timings: a takeover within about 5 s. */
export const LEASE_FLAGS = ["--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"] as const;

/**
 * The manifests a topology needs in each of its clusters on top of the project's (deploy/, which the stack
 * installs): with `sharded`, the ring's Lease verbs (list, delete) of deploy/sharding/rbac.yaml.
 */
export function manifestsFor(topology: Topology): string[] {
  return topology === "sharded" ? [join(REPO_ROOT, "deploy", "sharding", "rbac.yaml")] : [];
}

/** The names of a cluster's replicas: `cluster` names the one replica of a cluster of two-clusters. */
function replicaNames(topology: Topology, cluster: string | undefined): string[] {
  switch (topology) {
    case "ha":
      return ["a", "b"];
    case "sharded":
      return ["a", "b", "c"];
    case "single":
    case "two-clusters":
      return [cluster ?? "c"];
  }
}

/** The flags a topology adds to the stack's defaults (ControllerProcess), for every replica. */
function topologyArgs(topology: Topology) {
  switch (topology) {
    case "ha":
      return {
        leaderElection: { namespace: CONTROLLER_NAMESPACE, name: LEASE_NAME },
        extraArgs: [...LEASE_FLAGS],
      };
    case "sharded":
      // The ring is named by --leader-election-name (default shapes-controller, like LEASE_NAME).
      return { extraArgs: ["--sharding", ...LEASE_FLAGS] };
    case "single":
    case "two-clusters":
      return {};
  }
}

/** pino's level of a fatal error. */
const FATAL = 60;

/** How the trial's controllers are run. */
export interface ControllerSetOptions {
  topology: Topology;
  trial: number;
  /** With several clusters: this set's cluster, which names its one replica. */
  cluster?: string;
  /** Where every run's log file goes. */
  artifactsDir: string;
  /** The least-privilege kubeconfig the controllers use. */
  kubeconfigPath: string;
  /** An admin KubeConfig, to read the Lease. */
  adminKubeConfig: KubeConfig;
  cloudUrl: string;
  cloudToken: string;
  /** --leak-grace. */
  leakGrace: string;
  /** --log-level. */
  logLevel: string;
}

/** One run of a replica and what the harness did to it. */
interface Run {
  process: ControllerProcess;
  identity: string;
  /** True once the harness killed or stopped it: its exit is expected. */
  ended: boolean;
}

/** One replica: a name and its successive runs. */
export class Replica {
  readonly name: string;
  readonly runs: Run[] = [];
  readonly #options: ControllerSetOptions;

  constructor(name: string, options: ControllerSetOptions) {
    this.name = name;
    this.#options = options;
  }

  /** The latest run, if any. */
  get current(): Run | undefined {
    return this.runs.at(-1);
  }

  /** True while the latest run's process lives. */
  get running(): boolean {
    return this.current?.process.running ?? false;
  }

  /** Starts a new run (a new identity). Waits for its metrics URL, and for /readyz when `waitReady`. */
  async start(waitReady: boolean): Promise<void> {
    const o = this.#options;
    const identity = `t${o.trial}-${this.name}${this.runs.length + 1}`;
    const process = new ControllerProcess({
      name: `${this.name}${this.runs.length + 1}`,
      artifactsDir: o.artifactsDir,
      kubeconfigPath: o.kubeconfigPath,
      cloudUrl: o.cloudUrl,
      cloudToken: o.cloudToken,
      leakGrace: o.leakGrace,
      logLevel: o.logLevel,
      identity,
      ...topologyArgs(o.topology),
    });
    this.runs.push({ process, identity, ended: false });
    await process.start({ waitReady, timeoutMs: 120_000 });
  }

  /** SIGKILL of the latest run; resolves once it is gone. */
  async kill(): Promise<void> {
    const run = this.current;
    if (!run) return;
    run.ended = true;
    if (run.process.running) process.kill(run.process.pid, "SIGCONT"); // a paused process dies too
    await run.process.kill();
  }

  /**
   * SIGKILL of the latest run, synchronously (inside the cloud's answer to its write); {@link kill} then
   * waits for the exit.
   */
  killNow(): void {
    const run = this.current;
    if (!run?.process.running) return;
    run.ended = true;
    process.kill(run.process.pid, "SIGKILL");
  }

  /** SIGSTOP: the process freezes (timers, sockets and all) until {@link resume}. */
  pause(): void {
    const run = this.current;
    if (run?.process.running) process.kill(run.process.pid, "SIGSTOP");
  }

  /** SIGCONT. */
  resume(): void {
    const run = this.current;
    if (run?.process.running) process.kill(run.process.pid, "SIGCONT");
  }

  /** A graceful stop of the latest run. */
  async stop(): Promise<void> {
    const run = this.current;
    if (!run) return;
    run.ended = true;
    if (run.process.running) process.kill(run.process.pid, "SIGCONT");
    await run.process.stop(5_000);
  }
}

/** The replicas of a trial. */
export class ControllerSet {
  readonly replicas: Replica[];
  readonly #options: ControllerSetOptions;
  readonly #leases: CoordinationV1Api;

  constructor(options: ControllerSetOptions) {
    this.#options = options;
    this.replicas = replicaNames(options.topology, options.cluster).map((n) => new Replica(n, options));
    this.#leases = options.adminKubeConfig.makeApiClient(CoordinationV1Api);
  }

  /**
   * Starts every replica and waits until each is ready (the leader resynced; a standby synced; a replica of
   * the ring resynced its part).
   */
  async start(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.start(true)));
  }

  /** Every identity any run of this trial had. */
  identities(): Set<string> {
    return new Set(this.replicas.flatMap((r) => r.runs.map((run) => run.identity)));
  }

  /**
   * The replica whose run holds the Lease (the only one without leader election), or undefined. A ring
   * (`sharded`) has no leader: see {@link victim}.
   */
  async leader(): Promise<Replica | undefined> {
    if (this.#options.topology === "sharded") return undefined;
    if (this.#options.topology !== "ha") return this.replicas[0]?.running ? this.replicas[0] : undefined;
    let holder: string | undefined;
    try {
      const lease = await this.#leases.readNamespacedLease({
        name: LEASE_NAME,
        namespace: CONTROLLER_NAMESPACE,
      });
      holder = lease.spec?.holderIdentity;
    } catch {
      return undefined; // no Lease yet, or the API server is restarting
    }
    return this.replicas.find((r) => r.running && r.current?.identity === holder);
  }

  /**
   * The replica a fault aimed at "the leader" acts on: the {@link leader}, or with `sharded` (no leader,
   * every replica writes for its part) the `pick`-th of the running replicas, in name order, `pick` in
   * [0, 1). Undefined when there is none.
   */
  async victim(pick: number): Promise<Replica | undefined> {
    if (this.#options.topology !== "sharded") return this.leader();
    const running = this.replicas.filter((r) => r.running);
    if (running.length === 0) return undefined;
    return running[Math.min(running.length - 1, Math.floor(pick * running.length))];
  }

  /** Waits until there is a {@link victim}; undefined when there is none within `timeoutMs`. */
  async waitForVictim(pick: number, timeoutMs: number): Promise<Replica | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const victim = await this.victim(pick);
      if (victim || Date.now() > deadline) return victim;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The replica whose latest run has this identity. */
  byIdentity(identity: string): Replica | undefined {
    return this.replicas.find((r) => r.current?.identity === identity);
  }

  /**
   * The `controller-healthy` violations: a process that exited without the harness killing it (a crash);
   * output that is not a JSON log line (a stack trace, Node's report of an unhandled rejection); a log line
   * about an unhandled or uncaught error, or a fatal one; and a 403 — an RBAC gap — unless `expected403`
   * says its time falls where a 403 is the API server's doing (while it restarts, its RBAC authorizer
   * answers 403 until its caches fill). Warnings and errors are otherwise expected: faults cause them.
   */
  async health(expected403: (timeMs: number) => boolean): Promise<Violation[]> {
    const violations: Violation[] = [];
    for (const replica of this.replicas) {
      for (const run of replica.runs) {
        const subject = `controller ${run.identity}`;
        const add = (detail: string) => violations.push({ invariant: "controller-healthy", subject, detail });
        if (!run.ended && !run.process.running) {
          const tail = (await run.process.logs()).slice(-5).map((l) => l.msg);
          add(`exited by itself (a crash); last log messages: ${JSON.stringify(tail)}`);
        }
        let text: string;
        try {
          text = await readFile(run.process.logFile, "utf8");
        } catch {
          continue; // never started far enough to log
        }
        for (const raw of text.split("\n")) {
          if (raw.trim() === "") continue;
          if (!raw.startsWith("{")) {
            add(`not a log line: ${raw.slice(0, 300)}`);
            continue;
          }
          let line: LogLine;
          try {
            line = JSON.parse(raw) as LogLine;
          } catch {
            continue; // the last line, cut short by SIGKILL
          }
          if (line.level >= FATAL || /unhandled|uncaught/i.test(raw))
            add(describeLogLine(line).slice(0, 400));
          else if (forbiddenLines([line]).length > 0 && !expected403(line.time)) {
            add(`an RBAC gap (403): ${describeLogLine(line).slice(0, 400)}`);
          }
        }
      }
    }
    return violations;
  }

  /**
   * The leadership terms of the trial, from the controllers' own logs: each "started leading" line (with
   * leader election) or the first line of a run (without: the one process is the leader from its start).
   * None with `sharded`: every replica of the ring writes, each for its own part (checkShardedWriters).
   */
  async terms(): Promise<Term[]> {
    const terms: Term[] = [];
    if (this.#options.topology === "sharded") return terms;
    for (const replica of this.replicas) {
      for (const run of replica.runs) {
        const lines = await run.process.logs();
        const starts =
          this.#options.topology === "ha"
            ? lines.filter((l) => l.msg === "started leading")
            : lines.slice(0, 1);
        for (const line of starts) terms.push({ atMs: line.time, identity: run.identity });
      }
    }
    return terms;
  }

  /** Stops every replica that still runs (gracefully, then SIGKILL). */
  async stopAll(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.stop()));
  }

  /** The log files of every run. */
  logFiles(): string[] {
    return this.replicas.flatMap((r) => r.runs.map((run) => run.process.logFile));
  }
}
