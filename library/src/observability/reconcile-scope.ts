/**
 * What one reconcile saw, decided and did — told to a trace, to the logs and to the decision history, from
 * one place.
 *
 * The controller runs every reconcile inside a {@link ReconcileScope} (AsyncLocalStorage: the scope follows
 * the reconcile through every `await`, as OpenTelemetry's context does). Inside it:
 * - the reconciler says what it observed and which branch it took, and why ({@link noteObserved},
 *   {@link noteDecision}), in its own words;
 * - every call through a port (Kubernetes, the external API) is a child span and a line of the story
 *   ({@link traceCall}, which the traced decorators of reconcile/traced.ts call for each method);
 * - every log line carries `reconcile_id`, and `trace_id`/`span_id` when tracing is on ({@link logFields},
 *   a pino mixin).
 * Outside a reconcile every function here is a no-op, so a reconciler needs nothing from this file to run.
 *
 * With no tracer provider registered (tracing off: library/src/observability/tracing.ts), spans are OpenTelemetry's
 * non-recording ones: no ids, no export, and the story (the history) is still told.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from "@opentelemetry/api";
import { errorMessage, httpStatusOf } from "../support/errors.ts";
import type { ReconcileResult } from "../queue/result.ts";

/** The tracer of the core's spans (a no-op one until a provider is registered). */
export function coreTracer(): Tracer {
  return trace.getTracer("shapes-controller-core");
}

/** An event that put a key in the queue: an informer's or the change feed's, as a span to link to. */
export interface EnqueueCause {
  /** Where it came from: the informer's name (`shapes`, `external-shapes`). */
  source: string;
  /** What happened: `ADDED`, `MODIFIED`, `DELETED`. */
  event: string;
  /** The object it was about (`default/red-square`, `default.red-square`). */
  object: string;
}

/** What a reconcile's span descends from and links to. */
export interface Causes {
  parent?: SpanContext;
  links: SpanContext[];
}

/** At most this many causes are kept per key (the first ones: the parent is among them). */
const MAX_CAUSES = 8;

/**
 * The events that queued each key since its last reconcile, as span contexts — kept only while tracing is
 * on (a non-recording span has nothing to link to), and only until the key's reconcile starts.
 */
export class CauseLog<K> {
  readonly #tracer: Tracer;
  readonly #byKey = new Map<K, { context: SpanContext; parent: boolean }[]>();

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  /** An informer's or the change feed's event queued `key`: it gets a short span of its own, remembered. */
  event(key: K, cause: EnqueueCause): void {
    const span = this.#tracer.startSpan(
      `${cause.source} ${cause.event}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: { "event.source": cause.source, "event.type": cause.event, "event.object": cause.object },
      },
      ROOT_CONTEXT,
    );
    const recording = span.isRecording();
    span.end();
    if (recording) this.#add(key, span.spanContext(), true);
  }

  /** A reconcile of `key` asked to run again (a failure, a requeue): the next one links to it, as a link only. */
  requeued(key: K, span: SpanContext): void {
    if (trace.isSpanContextValid(span) && span.traceFlags & 1) this.#add(key, span, false);
  }

  /** The causes of the reconcile of `key` that starts now; forgets them. */
  take(key: K): Causes {
    const causes = this.#byKey.get(key) ?? [];
    this.#byKey.delete(key);
    const parent = causes.find((c) => c.parent)?.context;
    return { ...(parent ? { parent } : {}), links: causes.map((c) => c.context) };
  }

  #add(key: K, context: SpanContext, parent: boolean): void {
    const causes = this.#byKey.get(key) ?? [];
    if (causes.length < MAX_CAUSES) causes.push({ context, parent });
    this.#byKey.set(key, causes);
  }
}

/** One call a reconcile made through a port, as the history tells it. */
export interface CallNote {
  /** What was called: `add finalizer`, or for the Shapes plugin `create cloud shape`. */
  call: string;
  /** What it was called on, when it says more than the key: `default.red-square`. */
  target?: string;
  /** `ok`, or what went wrong: the status code and message. */
  outcome: string;
  /** How long it took, in milliseconds. */
  ms: number;
}

/** What one finished reconcile did: an entry of the decision history. */
export interface ReconcileRecord {
  /** When it started (RFC 3339, ms). */
  at: string;
  /** Its id, also in its log lines and on the Events it recorded. */
  reconcileId: string;
  /** Its trace, when tracing is on. */
  traceId?: string;
  /** The controller that ran it: `shape`, `shaperef`, `sweep`. */
  controller: string;
  /** The queue key it reconciled. */
  key: string;
  /** The object the story is about (`namespace/name` of the resource), which may differ from the key. */
  subject: string;
  /** What it saw before deciding, one line each. */
  observed: string[];
  /** Each branch taken, with its why, in order. */
  decided: { branch: string; why: string }[];
  /** The calls it made through the ports, in order. */
  calls: CallNote[];
  /** The Events recorded (the Shapes plugin's: `Normal CreatedCloudShape: Created cloud shape …`). */
  events: string[];
  /** `done`, `requeueAfter 5000ms`, `failed: …`, `terminal: …`. */
  result: string;
  /**
   * What this reconcile found of its subject: `present`, `gone` for good (its history goes a while later),
   * or nothing when it did not look (the intent reconciler, the sweep).
   */
  subjectState?: "present" | "gone";
  /** How long it took, in milliseconds. */
  ms: number;
}

const process_ = randomBytes(4).toString("hex");
let counter = 0;
const scopes = new AsyncLocalStorage<ReconcileScope>();

/** One reconcile's scope. Made and finished by the controller (queue/controller.ts), nowhere else. */
export class ReconcileScope {
  readonly id = `${process_}-${(counter++).toString(36)}`;
  readonly span: Span;
  readonly #record: ReconcileRecord;
  readonly #started = performance.now();

  /**
   * Starts the reconcile's span: a child of `parent` (the first event that queued the key, so a drift
   * repair's trace starts at the external object's change), linked to every cause.
   */
  constructor(options: { tracer: Tracer; controller: string; key: string; subject: string; causes: Causes }) {
    const { tracer, controller, key, causes } = options;
    this.span = tracer.startSpan(
      `reconcile ${controller}`,
      {
        kind: SpanKind.INTERNAL,
        links: causes.links.map((c): Link => ({ context: c })),
        attributes: { "reconcile.controller": controller, "reconcile.key": key, "reconcile.id": this.id },
      },
      causes.parent ? trace.setSpanContext(ROOT_CONTEXT, causes.parent) : ROOT_CONTEXT,
    );
    const traceId = this.span.isRecording() ? this.span.spanContext().traceId : undefined;
    this.#record = {
      at: new Date().toISOString(),
      reconcileId: this.id,
      ...(traceId ? { traceId } : {}),
      controller,
      key,
      subject: options.subject,
      observed: [],
      decided: [],
      calls: [],
      events: [],
      result: "",
      ms: 0,
    };
  }

  /** Runs `fn` inside this scope and inside the span's context (child spans and log lines find both). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return scopes.run(this, () => context.with(trace.setSpan(context.active(), this.span), fn));
  }

  /** Ends the span with the result, and returns what the history keeps. Called once. */
  finish(result: ReconcileResult): ReconcileRecord {
    const record = this.#record;
    record.ms = Math.round(performance.now() - this.#started);
    record.result = describeResult(result);
    this.span.setAttribute("reconcile.result", result.kind);
    if (result.kind === "requeueAfter") this.span.setAttribute("reconcile.requeue_after_ms", result.afterMs);
    if (result.kind === "failed" || result.kind === "terminal") {
      this.span.recordException(result.error);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.message });
    }
    this.span.end();
    return record;
  }

  /** See {@link noteObserved}. */
  observed(what: string, attributes: Attributes): void {
    this.#record.observed.push(what);
    this.span.setAttributes(attributes);
  }

  /** See {@link noteDecision}. */
  decided(branch: string, why: string): void {
    this.#record.decided.push({ branch, why });
    // Every branch taken, in order (`add-finalizer`, `record-intent`, `create`, …), and each one's why.
    this.span.setAttributes({
      "reconcile.branch": this.#record.decided.map((d) => d.branch),
      "reconcile.why": this.#record.decided.map((d) => d.why),
    });
    this.span.addEvent("decision", { "reconcile.branch": branch, "reconcile.why": why });
  }

  /** See {@link noteSubject}. */
  subject(state: "present" | "gone"): void {
    this.#record.subjectState = state;
  }

  /** An Event the reconcile recorded: told in the history and as a span event. */
  told(type: string, reason: string, message: string): void {
    this.#record.events.push(`${type} ${reason}: ${message}`);
    this.span.addEvent("kubernetes.event", { "event.type": type, "event.reason": reason });
  }

  /** A finished call (see {@link traceCall}). */
  called(note: CallNote): void {
    this.#record.calls.push(note);
  }
}

/** The scope of the reconcile this code runs in, if any. */
export function currentReconcile(): ReconcileScope | undefined {
  return scopes.getStore();
}

/**
 * Called by a reconciler when it has looked: what it saw, in a few words (the Shapes plugin's
 * `cloud shape default.red-square: absent`), and span attributes worth searching by (the generation).
 */
export function noteObserved(what: string, attributes: Attributes = {}): void {
  scopes.getStore()?.observed(what, attributes);
}

/**
 * Called by a reconciler at each branch it takes: a short name (`create`, `repair-drift`, `wait-for-cleanup`)
 * and why, in the words a person would want to read. Goes to the span, the history, and `npm run why`.
 */
export function noteDecision(branch: string, why: string): void {
  scopes.getStore()?.decided(branch, why);
}

/**
 * Called by a reconciler that looked its object up: `gone` for good (its history is dropped after a while),
 * or `present` (again).
 */
export function noteSubject(state: "present" | "gone"): void {
  scopes.getStore()?.subject(state);
}

/** The fields every log line inside a reconcile carries (a pino mixin): empty outside one. */
export function logFields(): Record<string, string> {
  const scope = scopes.getStore();
  if (!scope) return {};
  const span = trace.getActiveSpan()?.spanContext();
  return span && trace.isSpanContextValid(span)
    ? { reconcile_id: scope.id, trace_id: span.traceId, span_id: span.spanId }
    : { reconcile_id: scope.id };
}

/** How one call is named: the span name (the Shapes plugin's `create cloud shape`) and what it was called on. */
export interface CallName {
  call: string;
  target?: string;
}

/**
 * Runs `call`, one call through a port (a Kubernetes writer, an external client: see
 * reconcile/traced.ts), inside a reconcile as a client span (`peer.service` = `peer`, named `name`),
 * marked as an error with its status code when it fails, and a line of the reconcile's story. Outside a
 * reconcile (an informer's list, say) `call` runs untouched. The call itself runs in the span's context, so
 * an HTTP client that injects `traceparent` from the active context carries the span to the other side.
 */
export function traceCall<T>(peer: string, name: CallName, call: () => Promise<T>): Promise<T> {
  const scope = scopes.getStore();
  if (!scope) return call();
  const { call: callName, target: on } = name;
  // The active span is the reconcile's (or a call's inside it); without a context manager, the scope's.
  const active = context.active();
  const parent = trace.getSpan(active) ? active : trace.setSpan(active, scope.span);
  const span = coreTracer().startSpan(
    callName,
    {
      kind: SpanKind.CLIENT,
      attributes: { "peer.service": peer, ...(on === undefined ? {} : { "reconcile.target": on }) },
    },
    parent,
  );
  const started = performance.now();
  const finish = (outcome: string) => {
    scope.called({
      call: callName,
      ...(on === undefined ? {} : { target: on }),
      outcome,
      ms: Math.round(performance.now() - started),
    });
    span.end();
  };
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      const result = await call();
      finish("ok");
      return result;
    } catch (err) {
      const code = httpStatusOf(err);
      if (code !== undefined) span.setAttribute("http.response.status_code", code);
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      finish(`${code ?? "failed"}: ${errorMessage(err)}`);
      throw err;
    }
  });
}

function describeResult(result: ReconcileResult): string {
  switch (result.kind) {
    case "done":
      return "done";
    case "requeueAfter":
      return `requeueAfter ${result.afterMs}ms`;
    case "failed":
      return `failed: ${result.error.message}${result.retryAfterMs === undefined ? "" : ` (retry after ${result.retryAfterMs}ms)`}`;
    case "terminal":
      return `terminal: ${result.error.message}`;
  }
}

/**
 * The annotations that tie a Kubernetes Event to the reconcile recording it: `<prefix>/reconcile-id`, and
 * `<prefix>/trace-id` when tracing is on. Empty outside a reconcile.
 */
export function reconcileAnnotations(prefix: string): Record<string, string> {
  const scope = scopes.getStore();
  if (!scope) return {};
  const span = scope.span.spanContext();
  return {
    [`${prefix}/reconcile-id`]: scope.id,
    ...(scope.span.isRecording() ? { [`${prefix}/trace-id`]: span.traceId } : {}),
  };
}
