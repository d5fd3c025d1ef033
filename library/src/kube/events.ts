/**
 * Kubernetes Events for people running `kubectl describe`: what the controller did and why.
 *
 * Recording is fire-and-forget: an Events API failure is logged, never returned to the reconcile (an event
 * is a note to a person, not part of the state machine). Identical events within `dedupWindowMs` are
 * dropped, so a reconcile loop retrying every few seconds does not flood the API server.
 */
import type { CoreV1Event, KubernetesObject } from "@kubernetes/client-node";
import type { KubeHttp } from "./kube-http.ts";
import type { Logger } from "../observability/logger.ts";

/** Records events about Kubernetes objects. Never throws, never blocks the caller. */
export interface EventRecorder {
  /** A `Normal` or `Warning` event with a CamelCase reason (the Shapes plugin's `CreatedCloudShape`) about `object`. */
  record(object: KubernetesObject, type: "Normal" | "Warning", reason: string, message: string): void;
}

/** Options of `KubeEventRecorder`. */
export interface KubeEventRecorderOptions {
  /** `source.component` of every event, e.g. `shapes-controller`. */
  component: string;
  /** Drop an identical event (same object, reason, message) repeated within this window. Default 60 s. */
  dedupWindowMs?: number;
  /** Called once per event actually sent (metrics: Kubernetes writes). */
  onWrite?: () => void;
  /**
   * Annotations for the event being recorded, read at `record` time (e.g. the reconcile id of the reconcile
   * recording it, so `kubectl get events -o yaml` leads to its story and its trace).
   */
  annotations?: () => Record<string, string>;
  /** Where an event that could not be sent is logged (recording never fails the caller). */
  log: Logger;
}

/** Creates one Event in `namespace`: one request, rejecting on failure. */
export type EventSink = (namespace: string, event: CoreV1Event) => Promise<unknown>;

/** Events through the lean client (kube-http.ts): one POST, the body as JSON. */
export function leanEventSink(http: KubeHttp): EventSink {
  return (namespace, event) =>
    http.request("POST", `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, event);
}

/** An EventRecorder writing core/v1 Events through the API server. */
export class KubeEventRecorder implements EventRecorder {
  readonly #send: EventSink;
  readonly #opts: KubeEventRecorderOptions;
  readonly #recent = new Map<string, number>();

  constructor(send: EventSink, options: KubeEventRecorderOptions) {
    this.#send = send;
    this.#opts = options;
  }

  /** {@link EventRecorder.record}: sent to the API server in the background; a failure is logged, never thrown. */
  record(object: KubernetesObject, type: "Normal" | "Warning", reason: string, message: string): void {
    const meta = object.metadata ?? {};
    const namespace = meta.namespace ?? "default";
    const dedupKey = `${meta.uid ?? meta.name}|${reason}|${message}`;
    const now = Date.now();
    const last = this.#recent.get(dedupKey);
    if (last !== undefined && now - last < (this.#opts.dedupWindowMs ?? 60_000)) return;
    this.#recent.set(dedupKey, now);
    if (this.#recent.size > 10_000) this.#recent.clear(); // bounded memory: forgetting only costs a duplicate

    const time = new Date(now);
    const annotations = this.#opts.annotations?.() ?? {};
    this.#opts.onWrite?.();
    this.#send(namespace, {
      metadata: {
        generateName: `${meta.name ?? "object"}.`,
        namespace,
        ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
      },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      source: { component: this.#opts.component },
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      reportingComponent: this.#opts.component,
    }).catch((err: unknown) => {
      this.#opts.log.warn(
        { err: err instanceof Error ? err.message : String(err), reason },
        "cannot record event",
      );
    });
  }
}
