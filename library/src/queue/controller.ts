import type { SpanContext, Tracer } from "@opentelemetry/api";
import type { DecisionHistory } from "../observability/history.ts";
import type { Logger } from "../observability/logger.ts";
import type { CoreMetrics } from "../observability/metrics.ts";
import { WorkQueue, type WorkQueueOptions } from "./queue.ts";
import { failed, type ReconcileResult, type Reconciler } from "./result.ts";
import { CauseLog, ReconcileScope, coreTracer, type EnqueueCause } from "../observability/reconcile-scope.ts";

/** Options of a {@link Controller}. */
export interface ControllerOptions<K extends string> {
  /** Names the controller in logs and metric labels (e.g. `shape`). */
  name: string;
  /** Converges one object per call. */
  reconciler: Reconciler<K>;
  /**
   * Reconciles running at once, for different keys. Default 2 (controller-runtime defaults to 1): a reconcile
   * mostly waits on HTTP, so a few overlap well even on one core. Raise it for many objects or a slow API.
   */
  workers?: number;
  /** Backoff settings and clock of the work queue. */
  queue?: Pick<WorkQueueOptions, "baseDelayMs" | "maxDelayMs" | "now">;
  /** Where the controller logs; it adds `controller` and `key` fields. */
  logger: Logger;
  /** Where reconciles and queue depth/wait are counted. Optional (tests may leave it out). */
  metrics?: CoreMetrics;
  /** How long `stop()` waits for in-flight reconciles after aborting them. Default 30 s. */
  stopTimeoutMs?: number;
  /** Keeps what each reconcile saw, decided and did, for `GET /why` (observability/history.ts). Optional. */
  history?: DecisionHistory;
  /** The object a key's story is about, in the history (`namespace/name`). Default: the key itself. */
  subjectOf?: (key: K) => string;
  /** Makes the reconcile spans. Default: the global provider's (a no-op while tracing is off). */
  tracer?: Tracer;
}

/** Called after every finished reconcile, whatever its result. */
export type ReconciledListener<K extends string> = (key: K, result: ReconcileResult) => void;

/**
 * The controller loop, as in controller-runtime: event handlers `enqueue` keys, a work queue deduplicates them,
 * and `workers` workers call the reconciler, one key at a time per key. The worker turns each ReconcileResult
 * into a queue action in one place (`#apply`), so reconcilers never touch the queue.
 *
 * Keys can be enqueued before `start()` and while stopped: they wait. `start()`/`stop()` can be called any number
 * of times (lose and regain leadership); `shutDown()` ends the controller for good.
 */
export class Controller<K extends string = string> {
  /** The name given in the options. */
  readonly name: string;
  readonly #reconciler: Reconciler<K>;
  readonly #queue: WorkQueue<K>;
  readonly #logger: Logger;
  readonly #metrics: CoreMetrics | undefined;
  readonly #now: () => number;
  readonly #stopTimeoutMs: number;
  readonly #listeners = new Set<ReconciledListener<K>>();
  readonly #tracer: Tracer;
  readonly #causes: CauseLog<K>;
  readonly #history: DecisionHistory | undefined;
  readonly #subjectOf: (key: K) => string;
  /** Aborted by `stop()`; a fresh one is made by each `start()`. */
  #abort = new AbortController();
  #running = false;

  /** Builds a stopped controller: call `start()` to run workers. */
  constructor(options: ControllerOptions<K>) {
    this.name = options.name;
    this.#reconciler = options.reconciler;
    this.#logger = options.logger.child({ controller: options.name });
    this.#metrics = options.metrics;
    this.#now = options.queue?.now ?? (() => performance.now());
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
    this.#tracer = options.tracer ?? coreTracer();
    this.#causes = new CauseLog<K>(this.#tracer);
    this.#history = options.history;
    this.#subjectOf = options.subjectOf ?? ((key) => key);
    const labels = { controller: options.name };
    this.#queue = new WorkQueue<K>((key) => this.#work(key), {
      ...options.queue,
      concurrency: options.workers ?? 2,
      autoStart: false,
      onDepth: (depth) => this.#metrics?.queueDepth.set(labels, depth),
      onWait: (waitMs) => this.#metrics?.queueWait.observe(labels, waitMs / 1000),
    });
    this.#metrics?.queueDepth.set(labels, 0); // the series exists before the first key
  }

  /**
   * Called by event handlers and resyncs: reconcile `key` soon. Deduplicated; ignored after `shutDown()`.
   * A handler passes the event as `cause`: with tracing on, the reconcile's span descends from it.
   */
  enqueue(key: K, cause?: EnqueueCause): void {
    if (cause) this.#causes.event(key, cause);
    this.#queue.add(key);
  }

  /** Whether a reconcile of `key` waits to start (a periodic resync's enqueue is then folded into it). */
  isWaiting(key: K): boolean {
    return this.#queue.isWaiting(key);
  }

  /** Called to reconcile `key` after `delayMs` (an earlier pending delay for the key wins). */
  enqueueAfter(key: K, delayMs: number): void {
    this.#queue.addAfter(key, delayMs);
  }

  /**
   * Called after every finished reconcile (any result, a throw counts as `failed`), after the queue action was taken.
   * Returns a function that unsubscribes. Used by `initialSync` to know when every listed key was reconciled once.
   */
  onReconciled(listener: ReconciledListener<K>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called at startup or when leadership is gained: workers start taking keys. A no-op if already running. */
  start(): void {
    if (this.#running || this.#queue.isShutDown) return;
    this.#running = true;
    this.#abort = new AbortController();
    this.#queue.resume();
    this.#logger.info("controller started");
  }

  /**
   * Called at shutdown or when leadership is lost: workers stop taking keys, in-flight reconciles get an aborted
   * signal, and the returned promise resolves once they finished — `true` — or after `stopTimeoutMs` — `false`.
   * Queued keys stay queued for the next `start()`. With `graceMs` (a shard handing keys over, nothing lost),
   * in-flight reconciles first get that long to finish on their own, so their writes complete rather than
   * being cut off; only then are they aborted.
   */
  async stop(options: { graceMs?: number } = {}): Promise<boolean> {
    if (this.#running) {
      this.#running = false;
      this.#queue.pause();
      const abort = this.#abort;
      this.#logger.info({ inFlight: this.#queue.inFlight }, "controller stopping");
      if ((options.graceMs ?? 0) > 0 && !(await this.#drainWithin(options.graceMs ?? 0))) {
        this.#logger.warn(
          { inFlight: this.#queue.inFlight },
          "reconciles still running after the grace period: aborting them",
        );
      }
      abort.abort(new Error("controller stopping"));
    }
    const drained = await this.#drainWithin(this.#stopTimeoutMs);
    if (!drained) {
      this.#logger.warn({ inFlight: this.#queue.inFlight }, "reconciles still running after stop deadline");
    }
    return drained;
  }

  /** Called once at process exit: `stop()`, then refuse every later key. Resolves like `stop()`. */
  async shutDown(): Promise<boolean> {
    const drained = this.stop();
    this.#queue.shutDown();
    return drained;
  }

  /** True between `start()` and `stop()`. */
  get isRunning(): boolean {
    return this.#running;
  }

  /** Keys waiting for a worker. */
  get depth(): number {
    return this.#queue.depth;
  }

  /**
   * One reconcile, inside its scope (observability/reconcile-scope.ts): its span, its id on every log line, and what it
   * saw, decided and did, kept in the history once it is over.
   */
  async #work(key: K): Promise<void> {
    const signal = this.#abort.signal;
    const started = this.#now();
    const scope = new ReconcileScope({
      tracer: this.#tracer,
      controller: this.name,
      key,
      subject: this.#subjectOf(key),
      causes: this.#causes.take(key),
    });
    const result = await scope.run(async () => {
      let outcome: ReconcileResult;
      try {
        outcome = await this.#reconciler.reconcile(key, signal);
      } catch (error) {
        outcome = failed(error instanceof Error ? error : new Error(String(error)));
      }
      this.#apply(key, outcome, signal, scope.span.spanContext());
      return outcome;
    });
    const labels = { controller: this.name };
    this.#metrics?.reconcileDuration.observe(labels, (this.#now() - started) / 1000);
    this.#metrics?.reconciles.inc({ ...labels, result: result.kind });
    const record = scope.finish(result); // always: it ends the span
    this.#history?.add(record);
    for (const listener of this.#listeners) {
      try {
        listener(key, result);
      } catch (error) {
        this.#logger.error({ err: error, key }, "onReconciled listener threw");
      }
    }
  }

  /** The one place where a reconcile result becomes a queue action. */
  #apply(key: K, result: ReconcileResult, signal: AbortSignal, span: SpanContext): void {
    const log = this.#logger.child({ key });
    // Run again for the same reason: the next reconcile's span links back to this one.
    if (result.kind === "requeueAfter" || result.kind === "failed") this.#causes.requeued(key, span);
    switch (result.kind) {
      case "done":
        // Converged: reset the backoff so a later failure starts small. The next event or resync brings it back.
        this.#queue.forget(key);
        log.debug("reconciled");
        break;
      case "requeueAfter":
        // Converged for now but waiting on something (the external API): look again. Not a failure: reset backoff.
        this.#queue.forget(key);
        this.#queue.addAfter(key, result.afterMs);
        log.debug({ afterMs: result.afterMs }, "reconciled, requeued");
        break;
      case "failed": {
        if (signal.aborted) {
          // We aborted it (stop/leadership lost): not the object's fault. Queue it without a backoff penalty so
          // the next start() picks it up.
          this.#queue.add(key);
          log.info({ err: result.error }, "reconcile aborted, requeued");
          break;
        }
        // Transient failure: retry after a growing backoff, or after the server's Retry-After when it is longer.
        const delayMs = this.#queue.addRateLimited(key, result.retryAfterMs);
        log.warn(
          { err: result.error, delayMs, failures: this.#queue.failures(key) },
          "reconcile failed, retrying",
        );
        break;
      }
      case "terminal":
        // Retrying cannot help until the object changes: drop its backoff and do not requeue. A new event brings it back.
        this.#queue.forget(key);
        log.error({ err: result.error }, "reconcile failed, not retrying");
        break;
      default:
        result satisfies never;
    }
  }

  async #drainWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([this.#queue.drain().then(() => true as const), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
