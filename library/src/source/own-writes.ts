/**
 * The echoes of our own writes. Every write a reconcile makes comes back through a watch: the finalizer it
 * added, the external object it created or repaired. The reconcile that wrote it already acted on what the
 * write answered, so reconciling again on the echo costs a worker slot and CPU and decides nothing new; worse,
 * it may run before the reconcile's later writes reached the cache, and write them again. This tells the
 * echo from news by the revision: around each write it notes the revision the write produced, and an event
 * carrying exactly that revision is the echo and is dropped. Anything else — a person's edit, a deletion, a
 * write of ours followed by someone else's — carries another revision and is handled as before.
 *
 * The echo can arrive BEFORE the write's answer (the watch and the answer race: both are on their way when
 * the server commits). So while a write to a key is in flight, events about that key are held, and settled
 * when the answer comes: the echo dropped, anything else handed on. A failed write hands on everything held.
 *
 * Why it is safe: the reconcile that wrote continues with the write's answer; if it fails later it requeues
 * itself (with backoff), and the periodic resync still reconciles everything. What it saves is measured in
 * docs/benchmarks.md (the `own-echoes` column: with every echo reconciled, 2.10 reconciles per Shape against 1.38).
 */

/** What to do with an event that was not an echo: usually, enqueue its key. */
export type Handoff = () => void;

interface Pending {
  /** Writes to the key in flight (a reconcile makes one at a time; more is allowed). */
  writes: number;
  /** Events that arrived meanwhile: their revision, and what to do if it is not the echo. */
  held: { revision: string | undefined; handoff: Handoff }[];
}

/** Revisions our writes produced, by object key, until their echo arrives. Bounded: oldest forgotten first. */
export class OwnWrites {
  /** Revisions of finished writes whose echo has not come yet. */
  readonly #awaiting = new Map<string, string>();
  readonly #inFlight = new Map<string, Pending>();
  readonly #limit: number;

  /** `limit`: finished writes remembered at most (an echo that never came, e.g. a deleted object, is forgotten). */
  constructor(limit = 50_000) {
    this.#limit = limit;
  }

  /**
   * Runs `write` to the object `key`, noting the revision its answer carries (`revisionOf`) as ours. Events
   * about `key` that arrive meanwhile are held until it settles. Resolves or rejects as `write` does.
   */
  async write<T>(
    key: string,
    write: () => Promise<T>,
    revisionOf: (answer: T) => string | undefined,
  ): Promise<T> {
    const pending = this.#inFlight.get(key) ?? { writes: 0, held: [] };
    pending.writes++;
    this.#inFlight.set(key, pending);
    let revision: string | undefined;
    try {
      const answer = await write();
      revision = revisionOf(answer);
      return answer;
    } finally {
      this.#settle(key, pending, revision);
    }
  }

  /**
   * An event about `key` carrying `revision`: dropped when it is the echo of our last write to it, held while
   * a write to it is in flight, else handed on (`handoff`). Only the first event after a write can be its
   * echo: the note is used up either way.
   */
  offer(key: string, revision: string | undefined, handoff: Handoff): void {
    const pending = this.#inFlight.get(key);
    if (pending) {
      pending.held.push({ revision, handoff });
      return;
    }
    const ours = this.#awaiting.get(key);
    if (ours !== undefined) {
      this.#awaiting.delete(key);
      if (revision !== undefined && revision === ours) return;
    }
    handoff();
  }

  /** Writes in flight and finished writes still waiting for their echo (for tests). */
  get size(): number {
    return this.#inFlight.size + this.#awaiting.size;
  }

  #settle(key: string, pending: Pending, revision: string | undefined): void {
    pending.writes--;
    if (pending.writes > 0) {
      if (revision !== undefined) this.#remember(key, revision);
      return;
    }
    this.#inFlight.delete(key);
    let echoed = false;
    for (const event of pending.held) {
      if (!echoed && revision !== undefined && event.revision === revision) {
        echoed = true;
      } else {
        event.handoff();
      }
    }
    if (revision !== undefined && !echoed) this.#remember(key, revision);
  }

  #remember(key: string, revision: string): void {
    this.#awaiting.delete(key); // re-inserted last: Map order is the age order
    this.#awaiting.set(key, revision);
    if (this.#awaiting.size > this.#limit) {
      const oldest = this.#awaiting.keys().next().value;
      if (oldest !== undefined) this.#awaiting.delete(oldest);
    }
  }
}
