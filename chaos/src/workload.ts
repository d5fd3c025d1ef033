/**
 * The steady workload of a trial, and the people around it: creates, updates and deletes of Shapes (as a
 * user with kubectl would), and edits of owned shapes in the cloud console (as a person who should not,
 * but does). Every action runs under one lock, so an action never races another action of the harness
 * (only the controllers, which is the point).
 *
 * The workload keeps the model the invariants need: which Shapes it created and has not deleted (to pick
 * targets), which cloud shapes an Orphan deletion must leave in place, and which ones a person renamed
 * (they must stay while their Shape lives).
 */
import { ApiException } from "@kubernetes/client-node";
import { type ShapeSpec, TAG_NAME, TAG_OWNER, TAG_UID } from "@shapes/controller";
import { maxSizeOf } from "@shapes/mock-cloud";
import type { KubeApi } from "@shapes/stack";
import type { ChaosCloud } from "./cloud.ts";
import type { CloudShape, OrphanExpectation, RenamedExpectation } from "./invariants.ts";
import { COLORS, type HumanEdit, type SpecChange, type WorkloadOp } from "./plan.ts";

/** Runs async actions one at a time, in call order. */
export class ActionLock {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `action` once every action queued before it has settled. */
  run<T>(action: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(action, action);
    this.#tail = result.catch(() => {});
    return result;
  }
}

/** What became of one action. */
export interface ActionOutcome {
  /** `create s3`, `human recolor shp_12`, ... */
  what: string;
  /** Undefined when it was done; else why not (the API refused, nothing to act on). */
  skipped?: string;
}

/** Counts of what the workload did, for the report. */
export interface WorkloadCounts {
  creates: number;
  updates: number;
  deletes: number;
  humanEdits: number;
  /** Actions that could not be done (API down, nothing to pick). */
  skipped: number;
}

/**
 * The Shapes of one namespace of one cluster, as a busy user changes them. With two clusters, each has its
 * own Workload (same namespace name), under its cluster's owner id.
 */
export class Workload {
  readonly namespace: string;
  readonly lock = new ActionLock();
  readonly counts: WorkloadCounts = { creates: 0, updates: 0, deletes: 0, humanEdits: 0, skipped: 0 };
  /** Every action, in order, with when it started (epoch ms): the trial's story, for whoever investigates. */
  readonly actions: (ActionOutcome & { atMs: number })[] = [];
  readonly #kube: KubeApi;
  readonly #cloud: ChaosCloud;
  readonly #ownerId: string;
  /** Shapes created and not deleted by the harness, oldest first, with the spec last applied. */
  readonly #live: { name: string; spec: ShapeSpec }[] = [];
  readonly #orphans: OrphanExpectation[] = [];
  readonly #disowned: CloudShape[] = [];
  /** Cloud shapes a person renamed and did not delete or disown after, by id. */
  readonly #renamed = new Map<string, RenamedExpectation>();
  /** How many renames a person made: each new name is `<name>-renamed-<n>`, never a Shape's cloud name. */
  #renames = 0;
  /** Uids of Shapes deleted with Orphan: a person must not touch their cloud shape any more. */
  readonly #orphaning = new Set<string>();

  constructor({
    namespace,
    kube,
    cloud,
    ownerId,
  }: {
    namespace: string;
    kube: KubeApi;
    cloud: ChaosCloud;
    ownerId: string;
  }) {
    this.namespace = namespace;
    this.#kube = kube;
    this.#cloud = cloud;
    this.#ownerId = ownerId;
  }

  /** The cloud shapes Orphan deletions must have left in place. */
  get orphans(): readonly OrphanExpectation[] {
    return this.#orphans;
  }

  /** Cloud shapes a person disowned, as they were right after: foreign from then on. */
  get disowned(): readonly CloudShape[] {
    return this.#disowned;
  }

  /** Cloud shapes a person renamed (and did not delete or disown after): each must stay while its Shape lives. */
  get renamed(): readonly RenamedExpectation[] {
    return [...this.#renamed.values()];
  }

  /** How many Shapes the workload believes alive. */
  get liveCount(): number {
    return this.#live.length;
  }

  /** Runs one planned operation (under the lock). */
  apply(op: WorkloadOp): Promise<ActionOutcome> {
    return this.lock.run(async () => {
      const atMs = Date.now();
      const outcome = await this.#apply(op);
      if (outcome.skipped) this.counts.skipped += 1;
      this.actions.push({ atMs, ...outcome });
      return outcome;
    });
  }

  /** One person's edit of an owned cloud shape, over the cloud's HTTP API (under the lock). */
  humanEdit(edit: HumanEdit): Promise<ActionOutcome> {
    return this.lock.run(async () => {
      const atMs = Date.now();
      const outcome = await this.#humanEdit(edit);
      if (outcome.skipped) this.counts.skipped += 1;
      else this.counts.humanEdits += 1;
      this.actions.push({ atMs, ...outcome });
      return outcome;
    });
  }

  /**
   * The `pick`-th live Shape, removed from the model: the caller deletes it behind the controller's back
   * (a missed deletion). Call under the lock. Undefined when none is alive.
   */
  takeVictim(pick: number): string | undefined {
    if (this.#live.length === 0) return undefined;
    const [victim] = this.#live.splice(Math.floor(pick * this.#live.length), 1);
    return victim?.name;
  }

  async #apply(op: WorkloadOp): Promise<ActionOutcome> {
    switch (op.op) {
      case "create":
      case "create-colliding":
      case "create-twin": {
        const what = `${op.op} ${op.name}`;
        const spec = accepted(op.spec);
        const error = await retrying(() => this.#kube.applyShape(this.namespace, op.name, spec));
        if (error) return { what, skipped: error };
        const existing = this.#live.find((l) => l.name === op.name);
        if (existing) existing.spec = spec;
        else this.#live.push({ name: op.name, spec });
        this.counts.creates += 1;
        return { what };
      }
      case "update": {
        const target = this.#live[Math.floor(op.pick * this.#live.length)];
        if (!target) return { what: "update", skipped: "no live Shape" };
        const spec = changed(target.spec, op.change);
        const what = `update ${target.name} ${JSON.stringify(op.change)}`;
        const error = await retrying(() => this.#kube.applyShape(this.namespace, target.name, spec));
        if (error) return { what, skipped: error };
        target.spec = spec;
        this.counts.updates += 1;
        return { what };
      }
      case "churn": {
        const created = await this.#apply({ atMs: op.atMs, op: "create", name: op.name, spec: op.spec });
        if (created.skipped) return { what: `churn ${op.name}`, skipped: created.skipped };
        await new Promise((r) => setTimeout(r, op.gapMs));
        const deleted = await this.#delete(this.#live.length - 1);
        return {
          what: `churn ${op.name} (deleted ${op.gapMs} ms after: ${deleted.what})`,
          ...(deleted.skipped ? { skipped: deleted.skipped } : {}),
        };
      }
      case "delete":
        return this.#delete(op.newest ? this.#live.length - 1 : Math.floor(op.pick * this.#live.length));
    }
  }

  /** Deletes the `index`-th live Shape; an Orphan one adds the cloud shape it must leave to the model. */
  async #delete(index: number): Promise<ActionOutcome> {
    const target = this.#live[index];
    if (!target) return { what: "delete", skipped: "no live Shape" };
    const what = `delete ${target.name}`;
    let orphan: OrphanExpectation | undefined;
    const error = await retrying(async () => {
      const shape = await this.#kube.getShape(this.namespace, target.name);
      if (!shape) return;
      if (shape.spec.deletionPolicy === "Orphan") {
        const uid = shape.metadata.uid;
        this.#orphaning.add(uid);
        const cloud = this.#cloud
          .shapes()
          .find((c) => c.tags[TAG_OWNER] === this.#ownerId && c.tags[TAG_UID] === uid);
        orphan = cloud && { id: cloud.id, shape: `${this.namespace}/${target.name}` };
      }
      try {
        await this.#kube.deleteShape(this.namespace, target.name);
      } catch (error) {
        // Gone already (an earlier attempt got through before the API server went away): done.
        if (!(error instanceof ApiException && error.code === 404)) throw error;
      }
    });
    if (error) return { what, skipped: error };
    if (orphan) this.#orphans.push(orphan);
    this.#live.splice(index, 1);
    this.counts.deletes += 1;
    return { what: orphan ? `${what} (Orphan: ${orphan.id} must stay)` : what };
  }

  async #humanEdit(edit: HumanEdit): Promise<ActionOutcome> {
    const candidates = this.#cloud
      .shapes()
      .filter((c) => c.tags[TAG_OWNER] === this.#ownerId && !this.#orphaning.has(c.tags[TAG_UID] ?? ""));
    const target = candidates[Math.floor(edit.pick * candidates.length)];
    if (!target) return { what: `human ${edit.action}`, skipped: "no owned cloud shape" };
    const what = `human ${edit.action} ${target.id} (${target.name})`;
    try {
      switch (edit.action) {
        case "recolor": {
          const color = edit.color === target.color ? nextColor(edit.color) : (edit.color as Color);
          await this.#cloud.api.patch(target.id, { color });
          break;
        }
        case "delete":
          await this.#cloud.api.delete(target.id);
          this.#renamed.delete(target.id);
          break;
        case "drop-size":
          await this.#cloud.api.patch(target.id, { size: target.size === undefined ? 500 : null });
          break;
        case "retag-name":
          await this.#cloud.api.patch(target.id, { tags: { [TAG_NAME]: "someone/else" } });
          break;
        case "disown":
          // Not ours any more: from now on it is a foreign shape, to be left exactly as it is.
          this.#disowned.push(await this.#cloud.api.patch(target.id, { tags: { [TAG_OWNER]: null } }));
          this.#renamed.delete(target.id);
          break;
        case "rename": {
          // Still ours (its tags say so), under a name no Shape asks for.
          const name = `${target.name}-renamed-${++this.#renames}`;
          await this.#cloud.api.patch(target.id, { name });
          const uid = target.tags[TAG_UID];
          if (uid !== undefined) this.#renamed.set(target.id, { id: target.id, uid, name });
          return { what: `${what} → ${name}` };
        }
      }
    } catch (error) {
      return { what, skipped: `the cloud refused: ${(error as Error).message.slice(0, 200)}` };
    }
    return { what };
  }
}

/** The spec after one change, as the trial asks for it ({@link accepted}). */
export function changed(spec: ShapeSpec, change: SpecChange): ShapeSpec {
  return accepted(applied(spec, change));
}

/**
 * A spec of the plan as the trial asks for it: within the cloud's size limit for its type (a triangle of
 * size 800 asks for 500, the limit). The trials ask only for what the cloud accepts: a spec it refuses for
 * good is the conformance suite's scenario (rejected input), not chaos's. Applied here, when the plan is
 * carried out, not when it is drawn: a seed keeps naming the plan the committed runs drew.
 */
export function accepted(spec: ShapeSpec): ShapeSpec {
  const max = maxSizeOf(spec.type ?? "");
  return spec.size !== undefined && spec.size > max ? { ...spec, size: max } : spec;
}

function applied(spec: ShapeSpec, change: SpecChange): ShapeSpec {
  switch (change.field) {
    case "color":
      return { ...spec, color: change.color };
    case "type":
      return { ...spec, type: change.type };
    case "size": {
      const { size: _old, ...rest } = spec;
      return change.size === null ? rest : { ...rest, size: change.size };
    }
    case "deletionPolicy":
      return { ...spec, deletionPolicy: change.deletionPolicy };
  }
}

function nextColor(color: string): Color {
  const i = COLORS.indexOf(color as Color);
  return COLORS[(i + 1) % COLORS.length] as Color;
}

type Color = (typeof COLORS)[number];

/**
 * Runs a Kubernetes call, retrying a few times while the API server is unreachable or restarting (a
 * person would retry too). Resolves undefined when it succeeded, else the last error's message.
 */
async function retrying(call: () => Promise<unknown>): Promise<string | undefined> {
  let last = "";
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      await call();
      return undefined;
    } catch (error) {
      last = error instanceof ApiException ? `HTTP ${error.code}` : (error as Error).message;
      const transient = !(error instanceof ApiException) || error.code === 429 || error.code >= 500;
      if (!transient) return last;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  return last;
}
