/**
 * The bench's own view of the Shapes of one namespace: a list, then a watch (resumed from the last
 * resourceVersion when the connection ends, relisted on 410 Gone), recording WHEN each Shape was first seen
 * Ready. That is the "Ready" end of every latency the bench reports, taken from watch events as they arrive,
 * not from polling (and not from the controller's own code: the bench observes as `kubectl get -w` would).
 *
 * The requests it makes are counted, so the cost scenario can take them out of the API server's totals.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, type Shape, SHAPES, VERSION } from "@shapes/controller";
import type { RequestCounts } from "./requests.ts";

/** True when a Shape says Ready=True about its current generation. */
export function isReady(shape: Shape): boolean {
  const generation = shape.metadata.generation;
  const ready = shape.status?.conditions?.find((c) => c.type === "Ready");
  return (
    ready?.status === "True" &&
    ready.observedGeneration === generation &&
    shape.status?.observedGeneration === generation
  );
}

/** A watch event as the API server sends it. */
interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: Shape & { code?: number; message?: string };
}

/** The Shapes of one namespace, kept current, with their first-Ready times. */
export class ShapeWatch {
  readonly namespace: string;
  readonly #kubeConfig: KubeConfig;
  readonly #api: CustomObjectsApi;
  readonly #shapes = new Map<string, Shape>();
  /** name → performance.now() when it was first seen Ready (per uid: a re-created Shape starts again). */
  readonly #readyAt = new Map<string, { uid: string; at: number }>();
  readonly #waiters = new Set<() => void>();
  /** The bench's own requests so far: `LIST shapes` when answered, `WATCH shapes` when each watch ends. */
  readonly ownRequests: RequestCounts = {};
  /** Shapes present that have been seen Ready. */
  #readyCount = 0;
  #resourceVersion = "";
  #abort: AbortController | undefined;
  #stopped = false;
  #failure: Error | undefined;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#kubeConfig = kubeConfig;
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  /** Lists, then watches until `stop()`. Resolves after the list (the cache is then current). */
  async start(): Promise<void> {
    await this.#list();
    void this.#watchLoop();
  }

  /** Stops the watch. */
  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
    this.#wake();
  }

  /** The Shape named `name`, as last seen. */
  get(name: string): Shape | undefined {
    return this.#shapes.get(name);
  }

  /** Every Shape, as last seen. */
  list(): Shape[] {
    return [...this.#shapes.values()];
  }

  /** How many Shapes exist, and how many of them have been seen Ready (kept as counters: O(1)). */
  counts(): { present: number; ready: number } {
    return { present: this.#shapes.size, ready: this.#readyCount };
  }

  /** performance.now() when the Shape `name` (its current incarnation) was first seen Ready. */
  readyAt(name: string): number | undefined {
    const shape = this.#shapes.get(name);
    const seen = this.#readyAt.get(name);
    return shape && seen && seen.uid === shape.metadata.uid ? seen.at : undefined;
  }

  /**
   * Waits until `check` returns a value (not undefined), checking after every watch event and at least every
   * `intervalMs` (when `onTick` also reports progress). Throws after `timeoutMs` with `what` and `describe()`.
   */
  async until<T>(
    what: string,
    check: () => T | undefined,
    {
      timeoutMs,
      intervalMs = 250,
      onTick,
      describe,
    }: { timeoutMs: number; intervalMs?: number; onTick?: () => void; describe?: () => string },
  ): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.#failure) throw this.#failure;
      const value = check();
      if (value !== undefined) return value;
      if (performance.now() > deadline) {
        throw new Error(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${describe ? `; last observed: ${describe()}` : ""}`,
        );
      }
      onTick?.();
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#waiters.add(resolve);
      await Promise.race([promise, sleep(intervalMs)]);
      this.#waiters.delete(resolve);
    }
  }

  #wake(): void {
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }

  async #list(): Promise<void> {
    const list = (await this.#api.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPES,
      namespace: this.namespace,
    })) as { items: Shape[]; metadata?: { resourceVersion?: string } };
    this.#count("LIST shapes");
    const now = performance.now();
    this.#shapes.clear();
    this.#readyCount = 0;
    for (const shape of list.items) this.#apply(shape, now);
    this.#resourceVersion = list.metadata?.resourceVersion ?? "";
    this.#wake();
  }

  #apply(shape: Shape, now: number): void {
    const name = shape.metadata.name;
    if (this.readyAt(name) !== undefined) this.#readyCount -= 1;
    this.#shapes.set(name, shape);
    const seen = this.#readyAt.get(name);
    if (isReady(shape) && seen?.uid !== shape.metadata.uid)
      this.#readyAt.set(name, { uid: shape.metadata.uid, at: now });
    if (this.readyAt(name) !== undefined) this.#readyCount += 1;
  }

  #remove(name: string): void {
    if (this.readyAt(name) !== undefined) this.#readyCount -= 1;
    this.#shapes.delete(name);
  }

  #count(key: string): void {
    this.ownRequests[key] = (this.ownRequests[key] ?? 0) + 1;
  }

  async #watchLoop(): Promise<void> {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${SHAPES}`;
    const watch = new Watch(this.#kubeConfig);
    let failures = 0;
    while (!this.#stopped) {
      let expired = false;
      const ended = Promise.withResolvers<unknown>();
      this.#abort = await watch.watch(
        path,
        { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true },
        (type: string, object: WatchEvent["object"]) => {
          if (type === "ERROR") {
            if (object.code === 410) expired = true;
            return;
          }
          this.#resourceVersion = object.metadata?.resourceVersion ?? this.#resourceVersion;
          if (type === "BOOKMARK") return;
          if (type === "DELETED") this.#remove(object.metadata.name);
          else this.#apply(object, performance.now());
          failures = 0;
          this.#wake();
        },
        (err: unknown) => ended.resolve(err),
      );
      const err = await ended.promise;
      this.#count("WATCH shapes");
      if (this.#stopped) return;
      const status = (err as { statusCode?: number } | null)?.statusCode;
      try {
        if (expired || status === 410) await this.#list();
        else if (err && !isTimeout(err)) {
          failures += 1;
          if (failures > 20)
            throw new Error(
              `cannot watch Shapes in ${this.namespace}: ${err instanceof Error ? err.message : JSON.stringify(err)}`,
            );
          await sleep(Math.min(100 * 2 ** failures, 5_000));
        }
      } catch (error) {
        this.#failure = error instanceof Error ? error : new Error(String(error));
        this.#wake();
        return;
      }
    }
  }
}

/** client-node ends a watch silent for 30 s with a TimeoutError: a reconnect, not a failure. */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === "TimeoutError";
}
