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
 *
 * client-node is imported at the first request, not when this file loads (the library's index re-exports
 * it, and a process on the lean client, lean-lease-client.ts, must not load client-node).
 */
import type {
  ConfigurationOptions,
  CoordinationV1Api,
  KubeConfig,
  V1Lease,
  V1MicroTime,
} from "@kubernetes/client-node";
import {
  LeaseConflictError,
  type LeaseClient,
  type LeaseRecord,
  type ObservedLease,
} from "./leader-election.ts";
import { observedLease } from "./lease-object.ts";

/** See the module comment. Needs get, create and update on `leases` in `namespace` (RBAC). */
export class KubeLeaseClient implements LeaseClient {
  readonly #kubeConfig: KubeConfig;
  readonly #namespace: string;
  readonly #name: string;
  #generated: Promise<Generated> | undefined;

  /** The Lease `namespace/name`, through the cluster of `kubeConfig` (share the process's one KubeConfig). */
  constructor(kubeConfig: KubeConfig, namespace: string, name: string) {
    this.#kubeConfig = kubeConfig;
    this.#namespace = namespace;
    this.#name = name;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    const { api, isStatus } = await this.#api();
    try {
      const lease = await api.readNamespacedLease(
        { name: this.#name, namespace: this.#namespace },
        await withSignal(signal),
      );
      return observedLease(lease);
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    const generated = await this.#api();
    try {
      const lease = await generated.api.createNamespacedLease(
        { namespace: this.#namespace, body: this.#lease(generated, record) },
        await withSignal(signal),
      );
      return observedLease(lease);
    } catch (error) {
      throw asConflict(generated, error, "cannot create the lease: it exists already");
    }
  }

  async update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease> {
    const generated = await this.#api();
    try {
      const lease = await generated.api.replaceNamespacedLease(
        {
          name: this.#name,
          namespace: this.#namespace,
          body: this.#lease(generated, record, resourceVersion),
        },
        await withSignal(signal),
      );
      return observedLease(lease);
    } catch (error) {
      throw asConflict(generated, error, "cannot update the lease: it changed since it was read");
    }
  }

  /** client-node's CoordinationV1Api on the KubeConfig, made at the first request (imports client-node). */
  #api(): Promise<Generated> {
    this.#generated ??= loadGenerated(this.#kubeConfig);
    return this.#generated;
  }

  #lease({ exactMicroTime }: Generated, record: LeaseRecord, resourceVersion?: string): V1Lease {
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

/** What the client-node Lease client needs of client-node, once imported. */
interface Generated {
  api: CoordinationV1Api;
  /** True when `error` is client-node's ApiException with HTTP status `code`. */
  isStatus: (error: unknown, code: number) => boolean;
  /** A V1MicroTime that serialises to exactly `text`; undefined for undefined. */
  exactMicroTime: (text: string | undefined) => V1MicroTime | undefined;
}

async function loadGenerated(kubeConfig: KubeConfig): Promise<Generated> {
  const { ApiException, CoordinationV1Api, V1MicroTime } = await import("@kubernetes/client-node");

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

  return {
    api: kubeConfig.makeApiClient(CoordinationV1Api),
    isStatus: (error, code) => error instanceof ApiException && error.code === code,
    exactMicroTime: (text) => (text === undefined ? undefined : new ExactMicroTime(text)),
  };
}

function asConflict({ isStatus }: Generated, error: unknown, message: string): unknown {
  return isStatus(error, 409) ? new LeaseConflictError(message) : error;
}

/** Request options that make client-node abort the request when `signal` aborts. */
async function withSignal(signal: AbortSignal): Promise<ConfigurationOptions> {
  const { beforeRequest } = await import("../kube/pooled-kube-config.ts");
  return beforeRequest((request) => request.setSignal(signal));
}
