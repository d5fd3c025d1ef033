/**
 * The plan of a trial, drawn from a seeded generator BEFORE anything runs: the topology, the foreign shapes
 * seeded in the cloud, and a list of episodes, each a stretch of steady workload (creates, updates, deletes
 * of Shapes) with one fault injected in the middle of it. Same seed, same plan: a failing trial is replayed
 * by its seed (`--seed S --first-trial N --trials 1`).
 *
 * A plan never names a live object directly: a workload operation or a fault that needs a victim carries a
 * number `pick` in [0, 1), turned into "the k-th live Shape" when it runs. Runs therefore follow the same
 * plan, and differ only where the system under test behaves differently (which is the point).
 */
import type { DeletionPolicy, ShapeSpec } from "@shapes/controller";
import { COLORS, SHAPE_TYPES as TYPES } from "@shapes/mock-cloud";
import { createRng, type Rng } from "./prng.ts";

/**
 * How the controllers of a trial are laid out: one controller (`single`), two replicas with leader election
 * (`ha`), two clusters sharing the one cloud, each with its own control plane and its own controller
 * under the default owner id (`two-clusters`), or three replicas of one cluster splitting the Shapes by a
 * ring of Leases (`sharded`, `--sharding`: every replica writes, each for its own part).
 */
export const TOPOLOGIES = ["single", "ha", "two-clusters", "sharded"] as const;

/** A topology. */
export type Topology = (typeof TOPOLOGIES)[number];

/** How many clusters (control planes, each with its controllers and its workload) a topology has. */
export function clusterCount(topology: Topology): number {
  return topology === "two-clusters" ? 2 : 1;
}

/** Every kind of fault the harness injects, in the order the reports list them. */
export const FAULT_KINDS = [
  "controller-kill",
  "leader-kill",
  "kill-after-cloud-write",
  "leader-pause",
  "cloud-5xx",
  "cloud-429",
  "cloud-latency",
  "cloud-outage",
  "cloud-list-lag",
  "cloud-watch-cut",
  "apiserver-restart",
  "missed-deletion",
  "cloud-human-edit",
] as const;

/** A kind of fault. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One sentence per fault kind, for `--help`, the reports and docs/reliability.md. */
export const FAULT_DESCRIPTIONS: Readonly<Record<FaultKind, string>> = {
  "controller-kill":
    "SIGKILL of the only controller (of one cluster, with two) at a random moment, restarted after 0-3 s",
  "leader-kill":
    "two replicas with leader election: SIGKILL of the leader, restarted after 0-3 s (sharded: of a random live replica of the ring)",
  "kill-after-cloud-write":
    "SIGKILL of the writing controller the instant one of its cloud writes (POST, PATCH or DELETE) commits, before or just after the answer reaches it",
  "leader-pause":
    "SIGSTOP of the leader (sharded: a random live replica of the ring) for longer than the lease (5-8 s), at a random moment or the instant one of its cloud writes committed, then SIGCONT: a frozen VM or a long GC pause",
  "cloud-5xx": "a burst of 500s on a share (20-90 %) of the cloud API's requests for 2-6 s",
  "cloud-429": "a 429 storm with Retry-After (1-3 s) on 30-100 % of requests for 2-6 s",
  "cloud-latency":
    "0.2-3 s (sometimes 11 s, past the client's timeout) on every request or on POSTs, for 3-8 s",
  "cloud-outage": "every cloud API request answered 503 for 2-8 s",
  "cloud-list-lag": "lists and the change feed show the cloud as it was 0.5-5 s ago, for 3-10 s",
  "cloud-watch-cut": "the cloud's change-feed connections cut, 1-3 times",
  "apiserver-restart": "kube-apiserver restarted (etcd kept): every watch drops, then 429s and 410s",
  "missed-deletion":
    "the controllers killed, 1-2 Shapes deleted with their finalizer stripped by hand, then restarted",
  "cloud-human-edit":
    "a person recolors, deletes, resizes, retags, renames or disowns (removes our owner tag from) owned shapes in the cloud; also mixed into other episodes",
};

/**
 * Fault kinds that need several replicas of one cluster, and kinds that make sense only with one
 * controller per cluster. With `ha` the "leader" is the Lease holder; with `sharded`, which has no leader,
 * it is a live replica of the ring chosen by the fault's `pick` (the kinds keep their names). Two clusters
 * have one controller each: a kill, a kill aimed at a write, an API server restart, a missed deletion and a
 * person's edit act on one of them (the episode's `cluster`); the cloud's faults hit both at once.
 */
const HA_ONLY: readonly FaultKind[] = ["leader-kill", "leader-pause"];
const SINGLE_ONLY: readonly FaultKind[] = ["controller-kill"];
/** The topologies with several replicas in one cluster: they have HA_ONLY's kinds, not SINGLE_ONLY's. */
const REPLICATED: readonly Topology[] = ["ha", "sharded"];
/** Fault kinds that act on one cluster (the others act on the cloud, which every cluster shares). */
const CLUSTER_SCOPED: readonly FaultKind[] = [
  "controller-kill",
  "kill-after-cloud-write",
  "apiserver-restart",
  "missed-deletion",
  "cloud-human-edit",
];

/** The fault kinds a topology can have. */
export function faultKindsFor(topology: Topology): FaultKind[] {
  return FAULT_KINDS.filter((k) => !(REPLICATED.includes(topology) ? SINGLE_ONLY : HA_ONLY).includes(k));
}

/**
 * What a person does to an owned cloud shape. `disown` removes our owner tag: from then on the shape is
 * not ours (ownership is only what tags say), so it must never be written by the controller again.
 * `rename` gives it a name no Shape asks for: still ours (its tags say so), so it must stay while its Shape
 * lives.
 */
export type HumanAction = "recolor" | "delete" | "drop-size" | "retag-name" | "disown" | "rename";

/** One human edit: an action on the `pick`-th owned cloud shape. */
export interface HumanEdit {
  action: HumanAction;
  pick: number;
  /** For a recolor: the new color. */
  color: string;
}

/** A cloud write a kill can be aimed at. */
export type TrapMethod = "POST" | "PATCH" | "DELETE";

/**
 * One fault with its parameters. Durations in milliseconds. A fault aimed at "the leader" carries a `pick`
 * in [0, 1) with the `sharded` topology only (its other plans stay as they were): the ring has no leader, so
 * the victim is the `pick`-th running replica of the ring.
 */
export type FaultPlan =
  | { kind: "controller-kill" | "leader-kill"; restartAfterMs: number; pick?: number }
  | {
      kind: "kill-after-cloud-write";
      method: TrapMethod;
      /** Kill before the answer is sent (the controller never learns the result) or right after. */
      moment: "before-answer" | "after-answer";
      restartAfterMs: number;
      /** Sharded: the replica killed when no write comes (the writer is killed when one does). */
      pick?: number;
    }
  | {
      kind: "leader-pause";
      pauseMs: number;
      /** Paused at a random moment, or the instant one of its cloud writes committed (answer held back). */
      during: "idle" | "cloud-write";
      method: TrapMethod;
      /** Sharded: the replica paused at a random moment (the writer is paused when a write comes). */
      pick?: number;
    }
  | { kind: "cloud-5xx"; errorRate: number; durationMs: number }
  | { kind: "cloud-429"; throttleRate: number; retryAfterSeconds: number; durationMs: number }
  | { kind: "cloud-latency"; latencyMs: number; onlyPost: boolean; durationMs: number }
  | { kind: "cloud-outage"; durationMs: number }
  | { kind: "cloud-list-lag"; listLagMs: number; durationMs: number }
  | { kind: "cloud-watch-cut"; cuts: number; gapMs: number }
  | { kind: "apiserver-restart" }
  | { kind: "missed-deletion"; picks: number[]; downMs: number }
  | { kind: "cloud-human-edit"; edits: HumanEdit[] };

/**
 * One operation of the steady workload, `atMs` after its episode started, in cluster `cluster` (an index
 * into the trial's clusters; absent: the first, the only one but with `two-clusters`).
 */
export type WorkloadOp = { atMs: number; cluster?: number } & (
  | { op: "create"; name: string; spec: ShapeSpec }
  /** A Shape whose cloud name a foreign shape already holds: it must report NameConflict, never touch it. */
  | { op: "create-colliding"; name: string; spec: ShapeSpec }
  /**
   * A Shape with the namespace and name of one the OTHER cluster created (same cloud name): whichever
   * cluster's controller comes second must report NameConflict and never write the other's shape.
   */
  | { op: "create-twin"; name: string; spec: ShapeSpec }
  | { op: "update"; pick: number; change: SpecChange }
  /** `newest`: the Shape created last (a user changing their mind at once), else the `pick`-th. */
  | { op: "delete"; pick: number; newest: boolean }
  /** A Shape created, then deleted `gapMs` later: churn, where a cache trailing the create matters most. */
  | { op: "churn"; name: string; spec: ShapeSpec; gapMs: number }
);

/** A change to a Shape's spec. */
export type SpecChange =
  | { field: "color"; color: string }
  | { field: "type"; type: string }
  | { field: "size"; size: number | null }
  | { field: "deletionPolicy"; deletionPolicy: DeletionPolicy };

/** One episode: workload for `workloadMs`, the fault injected `faultAtMs` in, a human edit mixed in maybe. */
export interface EpisodePlan {
  /** 1-based. */
  index: number;
  fault: FaultPlan;
  faultAtMs: number;
  workloadMs: number;
  ops: WorkloadOp[];
  /**
   * The cluster (index) the fault acts on when it acts on one: the controller killed or aimed at, the API
   * server restarted, the Shapes deleted behind the controller's back, the owned shapes a person edits.
   * Absent: the first. A cloud fault hits every cluster.
   */
  cluster?: number;
  /** A person editing the cloud (shapes one cluster owns) in the middle of another fault. */
  background?: { atMs: number; edit: HumanEdit; cluster?: number };
}

/** A foreign shape to seed in the cloud before the trial: not ours, so never to be modified or deleted. */
export interface ForeignSeed {
  /** The cloud name, without the trial's namespace when `colliding` (then it is `<namespace>.<name>`). */
  name: string;
  /** True when a Shape of the trial will ask for the same cloud name. */
  colliding: boolean;
  tags: Record<string, string>;
  type: string;
  color: string;
}

/** Everything one trial will do. */
export interface TrialPlan {
  /** 1-based trial number. */
  trial: number;
  /** The seed this plan was drawn from (derived from the run's seed and the trial number). */
  seed: number;
  topology: Topology;
  /** Shapes created before the first episode. */
  initial: WorkloadOp[];
  foreign: ForeignSeed[];
  episodes: EpisodePlan[];
  /** The sum of the episodes' planned lengths (workload, or the fault when it lasts longer). */
  plannedMs: number;
}

/** What a trial plan is drawn from. */
export interface PlanOptions {
  trial: number;
  seed: number;
  topology: Topology;
  /** How many Shapes the workload keeps alive, roughly. */
  shapes: number;
  /** How long the episodes should last together (the trial's fault phase). */
  durationMs: number;
  /** Fault kinds to draw from (default: all the topology allows). */
  kinds?: readonly FaultKind[];
}

/** The palette and the types of the cloud: the mock cloud's schema is their one source. */
export { COLORS, TYPES };

/** Draws the plan of one trial. Pure: the same options give the same plan. */
export function planTrial(options: PlanOptions): TrialPlan {
  const rng = createRng(options.seed);
  const kinds = (options.kinds ?? faultKindsFor(options.topology)).filter((k) =>
    faultKindsFor(options.topology).includes(k),
  );
  if (kinds.length === 0) {
    throw new Error(
      `cannot plan trial ${options.trial}: no fault kind applies to the ${options.topology} topology`,
    );
  }
  const names = new NameSource();
  const foreign = planForeign(rng, options.shapes);
  const colliding = foreign.filter((f) => f.colliding).map((f) => f.name);

  // With several clusters, the Shapes are shared out among them (`target` each), every operation names its
  // cluster, and a cluster may create a Shape with a name another cluster created (a twin). With one
  // cluster, nothing more is drawn: its plans are what they were before clusters existed.
  const clusters = clusterCount(options.topology);
  const inCluster = (cluster: number) => (clusters > 1 ? { cluster } : {});
  const target = Math.ceil(options.shapes / clusters);
  const live: number[] = Array.from({ length: clusters }, () => 0);
  const created: string[][] = Array.from({ length: clusters }, () => []);
  const twinsFor = (cluster: number) => created.flatMap((n, c) => (c === cluster ? [] : n));

  // The initial Shapes, all at once; with two clusters, the first Shape of each has a twin in the other.
  const initial: WorkloadOp[] = [];
  for (let i = 0; i < options.shapes; i++) {
    const cluster = i % clusters;
    const name = names.next();
    initial.push({ atMs: 0, op: "create", name, spec: spec(rng), ...inCluster(cluster) });
    live[cluster] = (live[cluster] ?? 0) + 1;
    created[cluster]?.push(name);
  }
  for (let cluster = 0; clusters > 1 && cluster < clusters; cluster++) {
    const name = created[(cluster + 1) % clusters]?.[0];
    if (name === undefined) continue;
    initial.push({ atMs: 0, op: "create-twin", name, spec: spec(rng), cluster });
    live[cluster] = (live[cluster] ?? 0) + 1;
    created[cluster]?.push(name);
  }

  // Episodes until the planned time is used up. Fault kinds come from a shuffled deck, refilled when empty,
  // so that every kind turns up evenly over a run instead of by luck.
  const episodes: EpisodePlan[] = [];
  const deck: FaultKind[] = [];
  let plannedMs = 0;
  while (plannedMs < options.durationMs) {
    if (deck.length === 0) deck.push(...shuffle(rng, kinds));
    const kind = deck.pop() as FaultKind;
    const workloadMs = rng.int(3_000, 8_000);
    const faultAtMs = rng.int(500, Math.min(3_000, workloadMs - 500));
    const fault = planFault(rng, kind, options.topology);
    const ops: WorkloadOp[] = [];
    for (let at = rng.int(100, 400); at < workloadMs; at += rng.int(250, 700)) {
      const cluster = clusters > 1 ? rng.int(0, clusters - 1) : 0;
      const planned = planOp(rng, at, live[cluster] ?? 0, target, names, colliding, twinsFor(cluster));
      const op: WorkloadOp = { ...planned, ...inCluster(cluster) };
      if (op.op === "create" || op.op === "create-colliding" || op.op === "create-twin")
        live[cluster] = (live[cluster] ?? 0) + 1;
      if (op.op === "delete") live[cluster] = (live[cluster] ?? 0) - 1;
      if (op.op === "create" || op.op === "create-twin" || op.op === "churn") created[cluster]?.push(op.name);
      ops.push(op);
    }
    const episode: EpisodePlan = { index: episodes.length + 1, fault, faultAtMs, workloadMs, ops };
    if (clusters > 1 && CLUSTER_SCOPED.includes(kind)) episode.cluster = rng.int(0, clusters - 1);
    if (kind !== "cloud-human-edit" && rng.chance(0.25)) {
      episode.background = { atMs: rng.int(0, workloadMs), edit: humanEdit(rng) };
      if (clusters > 1) episode.background.cluster = rng.int(0, clusters - 1);
    }
    episodes.push(episode);
    plannedMs += Math.max(workloadMs, faultAtMs + faultLengthMs(fault));
  }
  return {
    trial: options.trial,
    seed: options.seed,
    topology: options.topology,
    initial,
    foreign,
    episodes,
    plannedMs,
  };
}

/** How long a fault is planned to last (0 for an instant one). */
export function faultLengthMs(fault: FaultPlan): number {
  switch (fault.kind) {
    case "controller-kill":
    case "leader-kill":
    case "kill-after-cloud-write":
      return fault.restartAfterMs;
    case "leader-pause":
      return fault.pauseMs;
    case "cloud-5xx":
    case "cloud-429":
    case "cloud-latency":
    case "cloud-outage":
    case "cloud-list-lag":
      return fault.durationMs;
    case "cloud-watch-cut":
      return fault.cuts * fault.gapMs;
    case "missed-deletion":
      return fault.downMs;
    case "apiserver-restart":
    case "cloud-human-edit":
      return 0;
  }
}

/**
 * `topology`: with `sharded`, a fault aimed at a replica also draws which one (`pick`), after its other
 * parameters; the other topologies draw nothing more, so their plans are what they were before `sharded`.
 */
function planFault(rng: Rng, kind: FaultKind, topology: Topology): FaultPlan {
  const aimed = () => (topology === "sharded" ? { pick: rng.next() } : {});
  switch (kind) {
    case "controller-kill":
    case "leader-kill":
      return { kind, restartAfterMs: rng.int(0, 3_000), ...aimed() };
    case "kill-after-cloud-write":
      return {
        kind,
        method: rng.weighted<TrapMethod>([
          ["POST", 6],
          ["DELETE", 3],
          ["PATCH", 2],
        ]),
        moment: rng.chance(0.5) ? "before-answer" : "after-answer",
        restartAfterMs: rng.int(0, 2_000),
        ...aimed(),
      };
    case "leader-pause":
      return {
        kind,
        pauseMs: rng.int(5_000, 8_000),
        during: rng.chance(0.5) ? "cloud-write" : "idle",
        method: rng.weighted<TrapMethod>([
          ["POST", 6],
          ["DELETE", 3],
          ["PATCH", 2],
        ]),
        ...aimed(),
      };
    case "cloud-5xx":
      return { kind, errorRate: round2(rng.between(0.2, 0.9)), durationMs: rng.int(2_000, 6_000) };
    case "cloud-429":
      return {
        kind,
        throttleRate: round2(rng.between(0.3, 1)),
        retryAfterSeconds: rng.int(1, 3),
        durationMs: rng.int(2_000, 6_000),
      };
    case "cloud-latency":
      return {
        kind,
        latencyMs: rng.chance(0.2) ? 11_000 : rng.int(200, 3_000),
        onlyPost: rng.chance(0.4),
        durationMs: rng.int(3_000, 8_000),
      };
    case "cloud-outage":
      return { kind, durationMs: rng.int(2_000, 8_000) };
    case "cloud-list-lag":
      return { kind, listLagMs: rng.int(500, 5_000), durationMs: rng.int(3_000, 10_000) };
    case "cloud-watch-cut":
      return { kind, cuts: rng.int(1, 3), gapMs: rng.int(500, 1_500) };
    case "apiserver-restart":
      return { kind };
    case "missed-deletion":
      return {
        kind,
        picks: Array.from({ length: rng.int(1, 2) }, () => rng.next()),
        downMs: rng.int(0, 2_000),
      };
    case "cloud-human-edit":
      return { kind, edits: Array.from({ length: rng.int(1, 3) }, () => humanEdit(rng)) };
  }
}

/** `twins`: names other clusters created, which this cluster may create too (none with one cluster). */
function planOp(
  rng: Rng,
  atMs: number,
  live: number,
  target: number,
  names: NameSource,
  colliding: readonly string[],
  twins: readonly string[],
): WorkloadOp {
  // Keep the number of live Shapes near the target: create more often below it, delete more often above.
  const below = live < target;
  const op = rng.weighted<WorkloadOp["op"]>([
    ["create", below ? 4 : 2],
    ["update", 5],
    ["delete", live === 0 ? 0 : below ? 2 : 4],
    ["create-colliding", colliding.length > 0 ? 0.4 : 0],
    ["churn", 1.5],
    // Last, and only when there is one: with one cluster, the draws are what they were without twins.
    ...(twins.length > 0 ? [["create-twin", 1] as const] : []),
  ]);
  switch (op) {
    case "create":
      return { atMs, op, name: names.next(), spec: spec(rng) };
    case "create-colliding":
      // The same colliding name may be asked for again after its Shape was deleted: that is fine.
      return { atMs, op, name: rng.pick(colliding), spec: spec(rng) };
    case "create-twin":
      return { atMs, op, name: rng.pick(twins), spec: spec(rng) };
    case "update":
      return { atMs, op, pick: rng.next(), change: specChange(rng) };
    case "delete":
      return { atMs, op, pick: rng.next(), newest: rng.chance(0.25) };
    case "churn":
      return { atMs, op, name: names.next(), spec: spec(rng), gapMs: rng.int(0, 1_500) };
  }
}

function spec(rng: Rng): ShapeSpec {
  return {
    type: rng.pick(TYPES),
    color: rng.pick(COLORS),
    ...(rng.chance(0.7) ? { size: rng.int(1, 1000) } : {}),
    // A share of Orphan Shapes: their deletion must leave the cloud shape, without our tags.
    ...(rng.chance(0.2) ? { deletionPolicy: "Orphan" as const } : {}),
  };
}

function specChange(rng: Rng): SpecChange {
  const field = rng.weighted<SpecChange["field"]>([
    ["color", 5],
    ["type", 2],
    ["size", 3],
    ["deletionPolicy", 1],
  ]);
  switch (field) {
    case "color":
      return { field, color: rng.pick(COLORS) };
    case "type":
      return { field, type: rng.pick(TYPES) };
    case "size":
      return { field, size: rng.chance(0.25) ? null : rng.int(1, 1000) };
    case "deletionPolicy":
      return { field, deletionPolicy: rng.chance(0.5) ? "Orphan" : "Delete" };
  }
}

function humanEdit(rng: Rng): HumanEdit {
  return {
    // `rename` takes half of what was recolor's share, right after it: a seed draws the same edits as
    // before renames existed, but for half of its recolors, now renames.
    action: rng.weighted<HumanAction>([
      ["recolor", 2],
      ["rename", 2],
      ["delete", 3],
      ["drop-size", 1],
      ["retag-name", 1],
      ["disown", 1],
    ]),
    pick: rng.next(),
    color: rng.pick(COLORS),
  };
}

/**
 * Foreign shapes: some hold the cloud name a Shape of the trial will ask for (`colliding`), the others
 * sit elsewhere. Their tags look like other systems' (another owner, no owner, an owner that differs from
 * ours only by case, stray k8s tags, markup): none is ours, so none may ever be written.
 */
function planForeign(rng: Rng, shapes: number): ForeignSeed[] {
  const tagSets: Record<string, string>[] = [
    { owner: "someone-else" },
    {},
    { owner: "K8S" },
    { owner: "k8s-other", "k8s-uid": "00000000-0000-0000-0000-000000000000", "k8s-name": "x/y" },
    { team: "billing", note: "<b>hands off</b>'; DROP TABLE shapes; --" },
    { "k8s-uid": "not-a-uid", "k8s-name": "default/impostor" },
  ];
  const count = Math.max(2, Math.round(shapes / 2));
  const seeds: ForeignSeed[] = [];
  for (let i = 0; i < count; i++) {
    seeds.push({
      name: `c${i + 1}`,
      colliding: true,
      tags: rng.pick(tagSets),
      type: rng.pick(TYPES),
      color: rng.pick(COLORS),
    });
  }
  for (let i = 0; i < count; i++) {
    seeds.push({
      name: `elsewhere.foreign-${i + 1}`,
      colliding: false,
      tags: rng.pick(tagSets),
      type: rng.pick(TYPES),
      color: rng.pick(COLORS),
    });
  }
  return seeds;
}

/** Fisher-Yates with the seeded generator. */
function shuffle<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Fresh Shape names, `s1`, `s2`, ... in creation order. */
class NameSource {
  #n = 0;
  next(): string {
    this.#n += 1;
    return `s${this.#n}`;
  }
}
