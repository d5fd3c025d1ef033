/**
 * The {@link LeaseClient} of leader election over @kubernetes/client-node's CoordinationV1Api: one Lease,
 * read, created, and replaced with a resourceVersion precondition.
 *
 * Two client-node details handled here:
 * - MicroTime. The generated model types `acquireTime`/`renewTime` as `V1MicroTime` (a Date whose
 *   `toISOString()` pads to six decimals); the API server rejects the three decimals of a plain Date. Reads come
 *   back as the raw string. We keep times as MicroTime strings end to end and wrap them in a `V1MicroTime` that
 *   serialises to exactly that string, so a time written by another client keeps its microseconds.
 * - Cancellation. The generated API takes no AbortSignal; a request middleware sets it on the request context,
 *   so leader election can cut a renewal that would outlive its deadline.
 */
import {
  ApiException,
  CoordinationV1Api,
  V1MicroTime,
  type ConfigurationOptions,
  type KubeConfig,
  type V1Lease,
} from "@kubernetes/client-node";
import { beforeRequest } from "../kube/kube-config.ts";
import {
  LeaseConflictError,
  toMicroTime,
  type LeaseClient,
  type LeaseRecord,
  type ObservedLease,
} from "./leader-election.ts";

/** See the module comment. Needs get, create and update on `leases` in `namespace` (RBAC). */
export class KubeLeaseClient implements LeaseClient {
  readonly #api: CoordinationV1Api;
  readonly #namespace: string;
  readonly #name: string;

  /** The Lease `namespace/name`, through the cluster of `kubeConfig` (share the process's one KubeConfig). */
  constructor(kubeConfig: KubeConfig, namespace: string, name: string) {
    this.#api = kubeConfig.makeApiClient(CoordinationV1Api);
    this.#namespace = namespace;
    this.#name = name;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    try {
      const lease = await this.#api.readNamespacedLease(
        { name: this.#name, namespace: this.#namespace },
        withSignal(signal),
      );
      return observed(lease);
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    try {
      const lease = await this.#api.createNamespacedLease(
        { namespace: this.#namespace, body: this.#lease(record) },
        withSignal(signal),
      );
      return observed(lease);
    } catch (error) {
      throw asConflict(error, "cannot create the lease: it exists already");
    }
  }

  async update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease> {
    try {
      const lease = await this.#api.replaceNamespacedLease(
        { name: this.#name, namespace: this.#namespace, body: this.#lease(record, resourceVersion) },
        withSignal(signal),
      );
      return observed(lease);
    } catch (error) {
      throw asConflict(error, "cannot update the lease: it changed since it was read");
    }
  }

  #lease(record: LeaseRecord, resourceVersion?: string): V1Lease {
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: this.#name, namespace: this.#namespace, resourceVersion },
      spec: {
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        acquireTime: exactMicroTime(record.acquireTime),
        renewTime: exactMicroTime(record.renewTime),
        leaseTransitions: record.leaseTransitions,
      },
    };
  }
}

/** A V1MicroTime that serialises to exactly the MicroTime string it was made from. */
class ExactMicroTime extends V1MicroTime {
  readonly #text: string;

  constructor(text: string) {
    super(Date.parse(text));
    this.#text = text;
  }

  override toISOString(): string {
    return this.#text;
  }
}

function exactMicroTime(text: string | undefined): V1MicroTime | undefined {
  return text === undefined ? undefined : new ExactMicroTime(text);
}

/** A MicroTime string from what client-node returns: the raw string, or a Date should that ever change. */
function microTimeString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value instanceof Date) return toMicroTime(value.getTime());
  return undefined;
}

function observed(lease: V1Lease): ObservedLease {
  const spec = lease.spec ?? {};
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? "",
    record: {
      holderIdentity: spec.holderIdentity || undefined,
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: microTimeString(spec.acquireTime),
      renewTime: microTimeString(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
  };
}

function asConflict(error: unknown, message: string): unknown {
  return error instanceof ApiException && error.code === 409 ? new LeaseConflictError(message) : error;
}

/** Request options that make client-node abort the request when `signal` aborts. */
function withSignal(signal: AbortSignal): ConfigurationOptions {
  return beforeRequest((request) => request.setSignal(signal));
}
