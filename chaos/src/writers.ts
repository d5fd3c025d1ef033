/**
 * Two checks on the cloud's request log: "never two writers at once" and "never a write to a shape that is
 * not the writer's own".
 *
 * "Never two writers at once", read from the cloud's request log (`GET /admin/requests`, mock-cloud
 * request-log.ts): every API write records when it arrived, when it was answered, and the caller's
 * `X-Client-Id` — each controller run has its own identity (`--identity`).
 *
 * Leadership is a sequence of terms: a term starts when a replica acquires the Lease (it logs "started
 * leading" right after the Lease write succeeded; without leader election, a run's term starts with the
 * process) and lasts until the next term starts. A write of a controller is legal only inside its own
 * term: it must arrive after its writer's term started and be answered before the next term started.
 * A replica that comes back after a pause and writes on stale leadership breaks the first rule; a write
 * held up (in injected latency) past a takeover breaks the second. Independently of terms, no write of one
 * identity may overlap in time with a write of another.
 *
 * Sharded replicas (`--sharding`) have no terms: every replica writes, each for its part of the ring, so
 * their writes overlap all the time. For them the rule is per cloud shape: a shape may change writers at a
 * handover of its part, but the new writer's first write must arrive after the old writer's last one was
 * answered ({@link checkShardedWriters}).
 *
 * A write the cloud never answered (status 0: the caller went away while it waited in injected latency)
 * changed nothing and is left out.
 */
import { TAG_OWNER, TAG_UID } from "@shapes/controller";
import type { RequestLogEntry } from "@shapes/mock-cloud";
import type { ChaosRequestLogEntry } from "./cloud.ts";
import type { Violation } from "./invariants.ts";

export type { ChaosRequestLogEntry, RequestLogEntry };

/** The start of a leadership term: from `atMs` (epoch ms) on, `identity` may write. */
export interface Term {
  atMs: number;
  identity: string;
}

/**
 * The violations of the single-writer rule among the writes whose client id `isController` accepts,
 * given the leadership terms (any order).
 */
export function checkSingleWriter(
  entries: readonly RequestLogEntry[],
  terms: readonly Term[],
  isController: (clientId: string) => boolean,
): Violation[] {
  const writes = entries
    .filter((e) => e.clientId !== undefined && isController(e.clientId) && e.status !== 0)
    .sort((a, b) => a.startedAtMs - b.startedAtMs || a.seq - b.seq);
  const timeline = [...terms].sort((a, b) => a.atMs - b.atMs);
  const violations: Violation[] = [];
  const add = (identity: string, detail: string) =>
    violations.push({ invariant: "single-writer", subject: `writer ${identity}`, detail });

  for (const w of writes) {
    const id = w.clientId as string;
    const index = termIndexAt(timeline, w.startedAtMs);
    const term = timeline[index];
    const next = timeline[index + 1];
    if (term?.identity !== id) {
      add(
        id,
        term
          ? `${describe(w)} arrived while ${term.identity} led (since ${iso(term.atMs)}): a write on stale leadership`
          : `${describe(w)} arrived before any replica led`,
      );
    } else if (next && w.finishedAtMs > next.atMs) {
      add(
        id,
        `${describe(w)} was answered ${Math.round(w.finishedAtMs - next.atMs)} ms after ${next.identity} took over (${iso(next.atMs)}): a write across a takeover`,
      );
    }
  }

  // No overlap in time between writes of different identities, whatever the terms say.
  let latest: RequestLogEntry | undefined; // the write answered last so far
  for (const w of writes) {
    if (latest && latest.clientId !== w.clientId && w.startedAtMs < latest.finishedAtMs) {
      add(
        w.clientId as string,
        `${describe(w)} arrived ${Math.round(latest.finishedAtMs - w.startedAtMs)} ms before ${latest.clientId}'s ${describe(latest)} was answered: two writers at once`,
      );
    }
    if (!latest || w.finishedAtMs > latest.finishedAtMs) latest = w;
  }
  return violations;
}

/** The cloud shape id in a request's path. */
const SHAPE_PATH = /^\/v1\/shapes\/([^/?]+)/;

/**
 * The violations of "never two writers of one cloud shape at once" among the writes whose client id
 * `isController` accepts (sharded replicas: no terms). Per cloud shape, by the id in the path
 * (`/v1/shapes/<id>`; a create names none), no write may arrive while a write of another identity to the
 * same shape is still unanswered: where the writer changes, the new writer's first write starts after the
 * previous writer's last write ended. A writer may come back later (A, B, A) as long as nothing overlaps.
 */
export function checkShardedWriters(
  entries: readonly RequestLogEntry[],
  isController: (clientId: string) => boolean,
): Violation[] {
  const byShape = new Map<string, RequestLogEntry[]>();
  for (const e of entries) {
    if (e.clientId === undefined || !isController(e.clientId) || e.status === 0) continue;
    const id = SHAPE_PATH.exec(e.path)?.[1];
    if (id === undefined) continue;
    byShape.set(id, [...(byShape.get(id) ?? []), e]);
  }
  const violations: Violation[] = [];
  for (const [id, writes] of byShape) {
    writes.sort((a, b) => a.startedAtMs - b.startedAtMs || a.seq - b.seq);
    // Each identity's write answered last so far, for this shape.
    const latest = new Map<string, RequestLogEntry>();
    for (const w of writes) {
      const clientId = w.clientId as string;
      let overlapped: RequestLogEntry | undefined; // the other writer's write still unanswered the longest
      for (const [other, prev] of latest) {
        if (other === clientId || prev.finishedAtMs <= w.startedAtMs) continue;
        if (!overlapped || prev.finishedAtMs > overlapped.finishedAtMs) overlapped = prev;
      }
      if (overlapped) {
        violations.push({
          invariant: "single-writer",
          subject: `cloud shape ${id}`,
          detail:
            `${clientId}'s ${describe(w)} arrived ${Math.round(overlapped.finishedAtMs - w.startedAtMs)} ms ` +
            `before ${overlapped.clientId as string}'s ${describe(overlapped)} was answered: two writers of one cloud shape at once`,
        });
      }
      const mine = latest.get(clientId);
      if (!mine || w.finishedAtMs > mine.finishedAtMs) latest.set(clientId, w);
    }
  }
  return violations;
}

/** A controller as the no-foreign-write check knows it. */
export interface Writer {
  /** The cluster it runs in (one owner id per cluster). */
  cluster: string;
  /** The owner id it writes under: its cluster's. */
  ownerId: string;
  /** Its --adopt-owner-ids: earlier owner ids whose shapes of ITS cluster it retags to its own. */
  adoptOwnerIds: readonly string[];
  /** True for the uid of a Shape (or ShapeRef) of its cluster: the only shapes it may adopt. */
  isLocalUid: (uid: string) => boolean;
}

/**
 * "No controller ever writes a shape that carries another owner id", on every write of the request log:
 * each PATCH, PUT or DELETE of a shape by id that a controller (`writerOf` its X-Client-Id; others are
 * people and tools) got through must have found the shape (`before`, as it was the instant before) with
 * that controller's own owner id. One exception: an adoption, a PATCH of a shape whose owner id is one of
 * the writer's --adopt-owner-ids and whose k8s-uid is a Shape of the writer's cluster (it retags it in
 * that one PATCH). Creates take a free name and write nobody's shape; a refused write (412, 404) changed
 * nothing, and carries no `before`.
 */
export function checkOwnWrites(
  entries: readonly ChaosRequestLogEntry[],
  writerOf: (clientId: string) => Writer | undefined,
): Violation[] {
  const violations: Violation[] = [];
  for (const e of entries) {
    const writer = e.clientId === undefined ? undefined : writerOf(e.clientId);
    if (!writer || !e.before) continue;
    const owner = e.before.tags[TAG_OWNER];
    if (owner === writer.ownerId) continue;
    const uid = e.before.tags[TAG_UID];
    const adoption =
      e.method === "PATCH" &&
      owner !== undefined &&
      writer.adoptOwnerIds.includes(owner) &&
      uid !== undefined &&
      writer.isLocalUid(uid);
    if (adoption) continue;
    violations.push({
      invariant: "no-foreign-write",
      subject: `writer ${e.clientId as string}`,
      detail:
        `${describe(e)} wrote shape ${e.before.id} (${e.before.name}), which carried ` +
        `${owner === undefined ? "no owner tag" : `owner "${owner}"`}, not ${writer.cluster}'s "${writer.ownerId}"` +
        (owner !== undefined && writer.adoptOwnerIds.includes(owner)
          ? ` (an earlier owner id, but ${uid === undefined ? "no k8s-uid" : `k8s-uid ${uid} is no Shape of ${writer.cluster}`})`
          : ""),
    });
  }
  return violations;
}

/** The index of the term in force at `t` (the last one starting at or before it), or -1. */
function termIndexAt(timeline: readonly Term[], t: number): number {
  let found = -1;
  for (let i = 0; i < timeline.length && (timeline[i] as Term).atMs <= t; i++) found = i;
  return found;
}

function describe(e: RequestLogEntry): string {
  return `${e.method} ${e.path} → ${e.status} at ${e.time}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
