/**
 * A write fence: the one place that decides whether this process may write right now.
 *
 * With leader election, "losing the lease stops all writes at once" must hold for writes that are already
 * on their way: a reconcile that read the cache a moment ago is about to call the external API. Aborting the
 * reconcile's signal cuts requests in flight; the fence refuses the ones not yet sent. Every port the
 * reconcilers get (Kubernetes, external API, events) is wrapped in its fenced decorator below, in one place
 * (`composePorts` in ../controllers.ts), so no code path can forget the check.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { EventRecorder } from "../kube/events.ts";
import type { ResourceDefinition, ResourceWriter } from "../reconcile/kube-writer.ts";
import type {
  Desired,
  ExternalClient,
  IntentRecord,
  JsonObject,
  ManagedResource,
  ManagedStatus,
} from "../reconcile/contract.ts";
import type { Json } from "../reconcile/diff.ts";
import { FencedError } from "../support/errors.ts";

export { FencedError };

/** See the module comment. Starts closed. */
export class WriteFence {
  #signal: AbortSignal | undefined;

  /**
   * Called when this process may start writing (it leads, or leader election is off). Writes are allowed
   * until `signal` aborts (leadership lost, shutdown) or `close()` is called.
   */
  open(signal: AbortSignal): void {
    this.#signal = signal;
  }

  /** Called when writing must stop. Idempotent. */
  close(): void {
    this.#signal = undefined;
  }

  /** True while writes are allowed. */
  get isOpen(): boolean {
    return this.#signal !== undefined && !this.#signal.aborted;
  }

  /** Throws {@link FencedError} unless writes are allowed. Cheap; called before every fenced call. */
  check(): void {
    if (this.#signal === undefined) throw new FencedError("this replica is not leading");
    if (this.#signal.aborted) throw new FencedError("leadership was lost or the controller is stopping");
  }
}

/**
 * A {@link ResourceWriter} that asks the fence before every call, its live reads too (a replica that does
 * not lead acts on nothing it reads). A refused call throws {@link FencedError} before anything is sent.
 */
export class FencedResourceWriter<R extends ManagedResource> implements ResourceWriter<R> {
  readonly #fence: WriteFence;
  readonly #inner: ResourceWriter<R>;

  constructor(fence: WriteFence, inner: ResourceWriter<R>) {
    this.#fence = fence;
    this.#inner = inner;
  }

  addFinalizer(resource: R): Promise<string | undefined> {
    this.#fence.check();
    return this.#inner.addFinalizer(resource);
  }

  removeFinalizer(resource: R): Promise<void> {
    this.#fence.check();
    return this.#inner.removeFinalizer(resource);
  }

  updateStatus(resource: R, status: ManagedStatus): Promise<void> {
    this.#fence.check();
    return this.#inner.updateStatus(resource, status);
  }

  createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    this.#fence.check();
    return this.#inner.createIntent(name, spec);
  }

  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    this.#fence.check();
    return this.#inner.updateIntentSpec(name, spec);
  }

  deleteIntent(name: string, uid?: string): Promise<void> {
    this.#fence.check();
    return this.#inner.deleteIntent(name, uid);
  }

  readResource(namespace: string, name: string): Promise<R | undefined> {
    this.#fence.check();
    return this.#inner.readResource(namespace, name);
  }

  readIntent(name: string): Promise<IntentRecord | undefined> {
    this.#fence.check();
    return this.#inner.readIntent(name);
  }

  readDefinition(): Promise<ResourceDefinition | undefined> {
    this.#fence.check();
    return this.#inner.readDefinition();
  }
}

/**
 * An {@link ExternalClient} that asks the fence before every call, `getByName` too; only `classify` (reading
 * an error: no call at all) passes unasked. A refused call throws {@link FencedError} before anything is sent.
 */
export class FencedExternalClient<E> implements ExternalClient<E> {
  readonly #fence: WriteFence;
  readonly #inner: ExternalClient<E>;
  /** Present when the inner client can rename ({@link ExternalClient.rename}), fenced like every call. */
  readonly rename?: (observed: E, name: string, signal: AbortSignal) => Promise<E>;

  constructor(fence: WriteFence, inner: ExternalClient<E>) {
    this.#fence = fence;
    this.#inner = inner;
    const rename = inner.rename?.bind(inner);
    if (rename) {
      this.rename = (observed, name, signal) => {
        this.#fence.check();
        return rename(observed, name, signal);
      };
    }
  }

  getByName(name: string, signal: AbortSignal): Promise<E | undefined> {
    this.#fence.check();
    return this.#inner.getByName(name, signal);
  }

  create(desired: Desired, signal: AbortSignal): Promise<E> {
    this.#fence.check();
    return this.#inner.create(desired, signal);
  }

  update(observed: E, patch: JsonObject, signal: AbortSignal): Promise<E> {
    this.#fence.check();
    return this.#inner.update(observed, patch, signal);
  }

  delete(observed: E, signal: AbortSignal): Promise<void> {
    this.#fence.check();
    return this.#inner.delete(observed, signal);
  }

  release(observed: E, signal: AbortSignal): Promise<void> {
    this.#fence.check();
    return this.#inner.release(observed, signal);
  }

  classify(err: unknown): ReturnType<ExternalClient<E>["classify"]> {
    return this.#inner.classify(err);
  }
}

/**
 * An {@link EventRecorder} that asks the fence before recording: while the fence is closed the Event is
 * dropped (a replica that may not write reports nothing), and, as every recorder, it never throws, so
 * recording an Event can never turn a step that succeeded (a create) into a failure.
 */
export class FencedEventRecorder implements EventRecorder {
  readonly #fence: WriteFence;
  readonly #inner: EventRecorder;

  constructor(fence: WriteFence, inner: EventRecorder) {
    this.#fence = fence;
    this.#inner = inner;
  }

  record(object: KubernetesObject, type: "Normal" | "Warning", reason: string, message: string): void {
    if (!this.#fence.isOpen) return;
    this.#inner.record(object, type, reason, message);
  }
}
