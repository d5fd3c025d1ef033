/**
 * The decision history: the last few reconciles of every object, kept in memory, so "why did the controller
 * do that?" has an answer without a trace backend (`GET /why/<namespace>/<name>` on the metrics port,
 * `npm run why`).
 *
 * Bounded three ways: at most `perSubject` entries per object (the oldest go first); a reconcile that tells
 * the same story as the last one of the same controller, and called nothing, is folded into it (`repeats`),
 * so periodic resyncs of a settled object cost nothing; and at most `maxBytes` in all, measured as JSON (the
 * least recently touched objects go first), so the memory it takes does not grow with the number of objects.
 * An object found gone keeps its history for `retainGoneMs`, then it goes too.
 *
 * The default cap, 4 MiB, is sized by measurement (`npm run bench -- --heap-prof`, docs/benchmarks.md):
 * a converged Shape's story is 3–4 entries, 2.3–2.7 KB as JSON, and V8 holds 1.3–2.5 times the JSON size (the
 * more, the fewer entries an object keeps). At 10,000 Shapes 4 MiB held 10.3 MB of heap, 16 MiB held
 * about 23 MB (a heap snapshot): the largest thing the controller kept besides its caches, and V8 grows
 * its heap in proportion to what is alive.
 */
import type { ReconcileRecord } from "./reconcile-scope.ts";

/** An entry: a reconcile, or several identical ones in a row. */
export interface HistoryEntry extends ReconcileRecord {
  /** How many reconciles in a row this entry stands for (1 unless folded). */
  repeats: number;
  /** When the last of them started. */
  lastAt: string;
}

/** The history of one object. */
export interface SubjectHistory {
  /** The object the history is about: `namespace/name` of the resource. */
  subject: string;
  /** Which replica decided (its identity), when the history was told one: with sharding, its owner. */
  replica?: string;
  /** Oldest first. */
  entries: HistoryEntry[];
  /** When it was found gone, if it was. */
  goneAt?: string;
}

/** How much the history holds. */
export interface HistorySize {
  /** Objects with a history. */
  subjects: number;
  /** Entries, over all objects. */
  entries: number;
  /** The entries' size as JSON, in bytes: a stand-in for the memory they take. */
  bytes: number;
}

/** Options of a {@link DecisionHistory}. */
export interface DecisionHistoryOptions {
  /** Entries kept per object. Default 16. */
  perSubject?: number;
  /** The size of everything kept, as JSON, in bytes. Default 4 MiB (10.3 MB of heap at 10,000 Shapes: see the module comment). */
  maxBytes?: number;
  /** How long a gone object's history stays. Default 15 min. */
  retainGoneMs?: number;
  /** This replica's identity, told with every history (several replicas each keep their own). */
  replica?: string;
  /** The clock of the retention, in ms. Default `Date.now`. */
  now?: () => number;
}

interface Kept {
  /** Each entry with its size as JSON when it was added (folding changes it by a few bytes at most). */
  entries: { entry: HistoryEntry; bytes: number }[];
  /** The sum of the entries' `bytes`. */
  bytes: number;
  goneAtMs?: number;
}

/** See the module comment. */
export class DecisionHistory {
  readonly #perSubject: number;
  readonly #maxBytes: number;
  readonly #retainGoneMs: number;
  readonly #now: () => number;
  readonly #replica: string | undefined;
  /** Least recently touched first (a Map keeps insertion order; a touch re-inserts). */
  readonly #subjects = new Map<string, Kept>();
  /** Gone objects, by when they were found gone: the oldest first (marking one again re-inserts it). */
  readonly #gone = new Map<string, number>();
  #entries = 0;
  #bytes = 0;

  constructor(options: DecisionHistoryOptions = {}) {
    this.#perSubject = options.perSubject ?? 16;
    this.#maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
    this.#retainGoneMs = options.retainGoneMs ?? 15 * 60_000;
    this.#now = options.now ?? Date.now;
    this.#replica = options.replica;
  }

  /** Called by the controller after every reconcile. Cheap; never throws. */
  add(record: ReconcileRecord): void {
    this.#dropExpired();
    const kept = this.#subjects.get(record.subject) ?? { entries: [], bytes: 0 };
    this.#subjects.delete(record.subject);
    this.#subjects.set(record.subject, kept);
    // Gone stays gone until a reconcile finds the object present again (a new one of the same name).
    if (record.subjectState === "gone") {
      kept.goneAtMs = this.#now();
      this.#gone.delete(record.subject);
      this.#gone.set(record.subject, kept.goneAtMs);
    } else if (record.subjectState === "present") {
      delete kept.goneAtMs;
      this.#gone.delete(record.subject);
    }

    const last = kept.entries.findLast((e) => e.entry.controller === record.controller)?.entry;
    if (last && sameStory(last, record)) {
      last.repeats += 1;
      last.lastAt = record.at;
      return;
    }
    const entry: HistoryEntry = { ...record, repeats: 1, lastAt: record.at };
    const size = JSON.stringify(entry).length;
    kept.entries.push({ entry, bytes: size });
    kept.bytes += size;
    this.#entries += 1;
    this.#bytes += size;
    while (kept.entries.length > this.#perSubject) this.#dropOldest(kept);
    while (this.#bytes > this.#maxBytes && this.#subjects.size > 1) {
      const [oldest] = this.#subjects.keys();
      if (oldest === undefined) break;
      this.#forget(oldest);
    }
  }

  /** The history of `subject` (`namespace/name`), by start time, or undefined when nothing is kept. */
  get(subject: string): SubjectHistory | undefined {
    this.#dropExpired();
    const kept = this.#subjects.get(subject);
    if (!kept) return undefined;
    return {
      subject,
      ...(this.#replica === undefined ? {} : { replica: this.#replica }),
      // Kept in the order they finished; told in the order they started (a long one may finish last).
      entries: kept.entries.map((e) => ({ ...e.entry })).sort((a, b) => a.at.localeCompare(b.at)),
      ...(kept.goneAtMs === undefined ? {} : { goneAt: new Date(kept.goneAtMs).toISOString() }),
    };
  }

  /** How much is kept now. */
  size(): HistorySize {
    this.#dropExpired();
    return { subjects: this.#subjects.size, entries: this.#entries, bytes: this.#bytes };
  }

  #dropOldest(kept: Kept): void {
    const dropped = kept.entries.shift();
    if (!dropped) return;
    kept.bytes -= dropped.bytes;
    this.#entries -= 1;
    this.#bytes -= dropped.bytes;
  }

  #forget(subject: string): void {
    const kept = this.#subjects.get(subject);
    if (!kept) return;
    this.#subjects.delete(subject);
    this.#gone.delete(subject);
    this.#entries -= kept.entries.length;
    this.#bytes -= kept.bytes;
  }

  /** Drops the gone objects past their retention: the oldest first, stopping at the first one still kept. */
  #dropExpired(): void {
    const now = this.#now();
    for (const [subject, goneAtMs] of this.#gone) {
      if (now - goneAtMs < this.#retainGoneMs) break;
      this.#forget(subject);
    }
  }
}

/** A reconcile that adds nothing to `last` (the same controller's): the same decisions and result, no calls. */
function sameStory(last: HistoryEntry, next: ReconcileRecord): boolean {
  return (
    last.calls.length === 0 &&
    next.calls.length === 0 &&
    next.events.length === 0 &&
    last.controller === next.controller &&
    last.result === next.result &&
    JSON.stringify(last.decided) === JSON.stringify(next.decided) &&
    JSON.stringify(last.observed) === JSON.stringify(next.observed)
  );
}
