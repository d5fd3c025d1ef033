/**
 * Gives the heap pages V8 keeps back to the system after the heap has shrunk: without it, a controller's RSS
 * only ever grows to the largest heap it once had, and more.
 *
 * V8 (13.6, node 24) keeps every 256 KB page that a garbage collection empties in a pool, committed and
 * resident, to reuse it; the pool is emptied only by a memory-reducing collection ("cached until memory
 * reducing GC", V8's memory-allocator.cc). V8's memory reducer makes those only when the process allocates
 * slowly, and a controller that handles a watch event every few hundred milliseconds never does
 * (`--trace-memory-reducer` prints "Memory reducer: high alloc" every 8 s, idle or not). Measured here: the
 * 10,000-Shape soak held 186 MB of anonymous memory for a V8 heap of 74 MB, 157 MB of it in 627 resident 256 KB
 * pages; a script that churns a 40,000-object Map held 336 MB for a 155 MB heap, and 68 MB after one
 * memory-reducing collection (about 170 ms of CPU, most of it on V8's background thread). With this release the
 * same soak held 140 MB of RSS after its load and did not grow (docs/benchmarks.md, "V8's pooled pages").
 *
 * So every `intervalMs` (5 s; a check is one `process.memoryUsage()`) this asks V8 for a memory-reducing
 * ("last-resort") major collection, asynchronously (`gc({ type: "major", execution: "async", flavor:
 * "last-resort" })`), in two cases:
 * - `pooled`: the memory the process holds outside the V8 heap (RSS less the heap's committed size) has grown
 *   by `thresholdBytes` or more since the last release: a collection emptied pages and V8 pooled them.
 * - `quiet`: the heap's use moved by less than `quietBytes` since the last check (the process allocates
 *   little: what V8's memory reducer waits for, and cannot see in node) while the heap's unused part and the
 *   pooled pages add up to `thresholdBytes` or more: once per quiet spell, as V8 would after a burst.
 *
 * That needs node's `--expose-gc` (controller/src/node-flags.ts); without it {@link HeapPageRelease.start}
 * answers `unavailable` and the process keeps V8's own behaviour. After a release the next check measures the
 * new baseline instead of comparing, so memory the process really keeps (malloc's, sockets') raises the
 * baseline and never asks for a collection per interval.
 */
import type { Logger } from "../observability/logger.ts";

/** V8's collection as node's `--expose-gc` gives it (`globalThis.gc`), with the options this uses. */
export type ExposedGc = (options: { type: "major"; execution: "async"; flavor: "last-resort" }) => unknown;

/** The figures a check reads: `process.memoryUsage()`'s. */
export interface HeapPageMemory {
  rss: number;
  heapTotal: number;
  heapUsed: number;
}

/** How {@link HeapPageRelease} checks. */
export interface HeapPageReleaseOptions {
  /** Time between two checks. Default 5 s. */
  intervalMs?: number;
  /** Growth of the memory outside the V8 heap since the last release that asks for one. Default 16 MiB. */
  thresholdBytes?: number;
  /** A change of the heap's use between two checks below this is a quiet process. Default 1 MiB. */
  quietBytes?: number;
  /** Default: `process.memoryUsage()`. */
  memory?: () => HeapPageMemory;
  /** Default: `globalThis.gc`, there only under `node --expose-gc`. */
  gc?: ExposedGc | undefined;
  log: Logger;
}

/** What one check did. */
export type HeapPageCheck =
  | { kind: "baseline"; outsideHeapBytes: number }
  | { kind: "below-threshold"; grownBytes: number }
  | { kind: "released"; why: "pooled" | "quiet"; grownBytes: number };

/** Whether the checks run: `unavailable` when node was started without `--expose-gc`. */
export type HeapPageReleaseStart = { kind: "started" } | { kind: "unavailable"; reason: string };

/** The default time between two checks. */
export const HEAP_PAGE_CHECK_INTERVAL_MS = 5_000;
/** The default growth outside the heap that asks for a release. */
export const HEAP_PAGE_RELEASE_THRESHOLD_BYTES = 16 * 1024 * 1024;
/** The default change of the heap's use between two checks that is still quiet. */
export const HEAP_PAGE_QUIET_BYTES = 1024 * 1024;

/** See the file's header. */
export class HeapPageRelease {
  readonly #intervalMs: number;
  readonly #thresholdBytes: number;
  readonly #quietBytes: number;
  readonly #memory: () => HeapPageMemory;
  readonly #gc: ExposedGc | undefined;
  readonly #log: Logger;
  /** What the process held outside the heap after the last release; undefined: measure it next. */
  #baseline: number | undefined;
  /** The heap's use at the last check. */
  #lastUsed: number | undefined;
  /** Released in this quiet spell already: the next quiet release waits for the process to work again. */
  #releasedWhileQuiet = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: HeapPageReleaseOptions) {
    this.#intervalMs = options.intervalMs ?? HEAP_PAGE_CHECK_INTERVAL_MS;
    this.#thresholdBytes = options.thresholdBytes ?? HEAP_PAGE_RELEASE_THRESHOLD_BYTES;
    this.#quietBytes = options.quietBytes ?? HEAP_PAGE_QUIET_BYTES;
    this.#memory = options.memory ?? (() => process.memoryUsage());
    this.#gc = "gc" in options ? options.gc : (globalThis as { gc?: ExposedGc }).gc;
    this.#log = options.log;
  }

  /** Starts the checks (the timer never keeps the process alive); `stop()` ends them. */
  start(): HeapPageReleaseStart {
    if (this.#gc === undefined) {
      const reason =
        "node was started without --expose-gc: V8 keeps the heap pages a collection empties until its own memory reducer runs";
      this.#log.info(reason);
      return { kind: "unavailable", reason };
    }
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.check(), this.#intervalMs);
      this.#timer.unref();
    }
    return { kind: "started" };
  }

  /** Ends the checks. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One check (the timer's; public for tests). */
  check(): HeapPageCheck {
    const { rss, heapTotal, heapUsed } = this.#memory();
    const outside = rss - heapTotal;
    const change = this.#lastUsed === undefined ? undefined : heapUsed - this.#lastUsed;
    const quiet = change !== undefined && Math.abs(change) < this.#quietBytes;
    this.#lastUsed = heapUsed;
    // Working again is allocating again; a fall (our own collection's) is not.
    if (change !== undefined && change >= this.#quietBytes) this.#releasedWhileQuiet = false;
    if (this.#baseline === undefined || this.#gc === undefined) {
      this.#baseline = outside;
      return { kind: "baseline", outsideHeapBytes: outside };
    }
    const grownBytes = outside - this.#baseline;
    const why =
      grownBytes >= this.#thresholdBytes
        ? "pooled"
        : quiet && !this.#releasedWhileQuiet && grownBytes + heapTotal - heapUsed >= this.#thresholdBytes
          ? "quiet"
          : undefined;
    if (why === undefined) return { kind: "below-threshold", grownBytes };
    this.#gc({ type: "major", execution: "async", flavor: "last-resort" });
    this.#baseline = undefined;
    if (quiet) this.#releasedWhileQuiet = true;
    this.#log.debug(
      { why, rssMB: mb(rss), heapTotalMB: mb(heapTotal), heapUsedMB: mb(heapUsed), grownMB: mb(grownBytes) },
      "asked V8 for a memory-reducing collection, which gives its pooled and unused heap pages back",
    );
    return { kind: "released", why, grownBytes };
  }
}

function mb(bytes: number): number {
  return Math.round(bytes / 104857.6) / 10;
}
