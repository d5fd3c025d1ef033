/**
 * The library's ports, traced: every Kubernetes call and every external call a reconcile makes is a child
 * span of its reconcile and a line of its story, named in the reader's words (`add finalizer`; the Shapes
 * plugin's `create cloud shape`); every Event a reconcile records is told in its story and names the
 * reconcile (an annotation). Calls outside a reconcile pass through untouched. See
 * ../observability/reconcile-scope.ts (`traceCall`); the decorators are composed in one place, `composePorts`
 * in ../controllers.ts.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { EventRecorder } from "../kube/events.ts";
import { definitionNameOf, type ResourceDefinition, type ResourceWriter } from "./kube-writer.ts";
import type {
  Desired,
  ExternalClient,
  ExternalKind,
  IntentRecord,
  JsonObject,
  ManagedResource,
  ManagedStatus,
  ResourceKind,
} from "./contract.ts";
import type { Json } from "./diff.ts";
import { currentReconcile, traceCall } from "../observability/reconcile-scope.ts";

const keyOf = (r: ManagedResource) => `${r.metadata.namespace}/${r.metadata.name}`;

/** A {@link ResourceWriter} whose every call is traced as `kubernetes`, named in the resource's own kinds. */
export class TracedResourceWriter<R extends ManagedResource> implements ResourceWriter<R> {
  readonly #inner: ResourceWriter<R>;
  /** The resource's kind (`Shape`) and its intent record's (`ShapeRef`), as the span names say them. */
  readonly #resource: string;
  readonly #intent: string;
  /** The resource's CRD (`shapes.shapes.example.com`). */
  readonly #definition: string;

  constructor(
    inner: ResourceWriter<R>,
    kind: Pick<ResourceKind<R>, "kind" | "intentKind" | "plural" | "group">,
  ) {
    this.#inner = inner;
    this.#resource = kind.kind;
    this.#intent = kind.intentKind;
    this.#definition = definitionNameOf(kind);
  }

  /** {@link ResourceWriter.addFinalizer}, in a span of the current trace. */
  addFinalizer(resource: R): Promise<string | undefined> {
    return traceCall(
      "kubernetes",
      { call: `add finalizer to ${this.#resource}`, target: keyOf(resource) },
      () => this.#inner.addFinalizer(resource),
    );
  }

  /** {@link ResourceWriter.removeFinalizer}, in a span of the current trace. */
  removeFinalizer(resource: R): Promise<void> {
    return traceCall(
      "kubernetes",
      { call: `remove finalizer from ${this.#resource}`, target: keyOf(resource) },
      () => this.#inner.removeFinalizer(resource),
    );
  }

  /** {@link ResourceWriter.updateStatus}, in a span of the current trace. */
  updateStatus(resource: R, status: ManagedStatus): Promise<void> {
    return traceCall("kubernetes", { call: `write ${this.#resource} status`, target: keyOf(resource) }, () =>
      this.#inner.updateStatus(resource, status),
    );
  }

  /** {@link ResourceWriter.createIntent}, in a span of the current trace. */
  createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    return traceCall("kubernetes", { call: `create ${this.#intent}`, target: name }, () =>
      this.#inner.createIntent(name, spec),
    );
  }

  /** {@link ResourceWriter.updateIntentSpec}, in a span of the current trace. */
  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    return traceCall("kubernetes", { call: `update ${this.#intent} spec`, target: name }, () =>
      this.#inner.updateIntentSpec(name, spec),
    );
  }

  /** {@link ResourceWriter.deleteIntent}, in a span of the current trace. */
  deleteIntent(name: string, uid?: string): Promise<void> {
    return traceCall("kubernetes", { call: `delete ${this.#intent}`, target: name }, () =>
      this.#inner.deleteIntent(name, uid),
    );
  }

  /** {@link ResourceWriter.readResource}, in a span of the current trace. */
  readResource(namespace: string, name: string): Promise<R | undefined> {
    return traceCall("kubernetes", { call: `read ${this.#resource}`, target: `${namespace}/${name}` }, () =>
      this.#inner.readResource(namespace, name),
    );
  }

  /** {@link ResourceWriter.readIntent}, in a span of the current trace. */
  readIntent(name: string): Promise<IntentRecord | undefined> {
    return traceCall("kubernetes", { call: `read ${this.#intent}`, target: name }, () =>
      this.#inner.readIntent(name),
    );
  }

  /** {@link ResourceWriter.readDefinition}, in a span of the current trace. */
  readDefinition(): Promise<ResourceDefinition | undefined> {
    return traceCall("kubernetes", { call: `read the ${this.#resource} CRD`, target: this.#definition }, () =>
      this.#inner.readDefinition(),
    );
  }
}

/**
 * An {@link ExternalClient} whose every call is traced as the external API (`peer.service` = the noun,
 * the Shapes plugin's `cloud shape`); `classify` is no call, and is not traced.
 */
export class TracedExternalClient<E> implements ExternalClient<E> {
  readonly #inner: ExternalClient<E>;
  readonly #external: ExternalKind<E>;
  readonly #noun: string;
  /** Present when the inner client can rename ({@link ExternalClient.rename}), traced like every call. */
  readonly rename?: (observed: E, name: string, signal: AbortSignal) => Promise<E>;

  constructor(inner: ExternalClient<E>, external: ExternalKind<E>) {
    this.#inner = inner;
    this.#external = external;
    this.#noun = external.noun.text;
    const rename = inner.rename?.bind(inner);
    if (rename) {
      this.rename = (observed, name, signal) =>
        traceCall(this.#noun, { call: `rename ${this.#noun}`, target: this.#external.nameOf(observed) }, () =>
          rename(observed, name, signal),
        );
    }
  }

  /** {@link ExternalClient.getByName}, in a span of the current trace. */
  getByName(name: string, signal: AbortSignal): Promise<E | undefined> {
    return traceCall(this.#noun, { call: `read ${this.#noun} by name`, target: name }, () =>
      this.#inner.getByName(name, signal),
    );
  }

  /** {@link ExternalClient.create}, in a span of the current trace. */
  create(desired: Desired, signal: AbortSignal): Promise<E> {
    return traceCall(this.#noun, { call: `create ${this.#noun}`, target: desired.name }, () =>
      this.#inner.create(desired, signal),
    );
  }

  /** {@link ExternalClient.update}, in a span of the current trace. */
  update(observed: E, patch: JsonObject, signal: AbortSignal): Promise<E> {
    return traceCall(
      this.#noun,
      { call: `update ${this.#noun}`, target: this.#external.nameOf(observed) },
      () => this.#inner.update(observed, patch, signal),
    );
  }

  /** {@link ExternalClient.delete}, in a span of the current trace. */
  delete(observed: E, signal: AbortSignal): Promise<void> {
    return traceCall(
      this.#noun,
      { call: `delete ${this.#noun}`, target: this.#external.nameOf(observed) },
      () => this.#inner.delete(observed, signal),
    );
  }

  /** {@link ExternalClient.release}, in a span of the current trace. */
  release(observed: E, signal: AbortSignal): Promise<void> {
    return traceCall(
      this.#noun,
      { call: `release ${this.#noun}`, target: this.#external.nameOf(observed) },
      () => this.#inner.release(observed, signal),
    );
  }

  /** {@link ExternalClient.classify}, in a span of the current trace. */
  classify(err: unknown): ReturnType<ExternalClient<E>["classify"]> {
    return this.#inner.classify(err);
  }
}

/**
 * An {@link EventRecorder} that tells each Event in the story of the reconcile recording it, then records
 * it. (Which reconcile recorded an Event is written on the Event itself by the recorder: see
 * `reconcileAnnotations`.)
 */
export class TracedEventRecorder implements EventRecorder {
  readonly #inner: EventRecorder;

  constructor(inner: EventRecorder) {
    this.#inner = inner;
  }

  record(object: KubernetesObject, type: "Normal" | "Warning", reason: string, message: string): void {
    currentReconcile()?.told(type, reason, message);
    this.#inner.record(object, type, reason, message);
  }
}
