/**
 * The {@link LeaseClient} of leader election over the library's lean client (kube-http.ts): one Lease, read,
 * created, and replaced with a resourceVersion precondition, without loading client-node. `openKubeAccess`
 * gives it to the controllers.
 *
 * Simpler than one over client-node's generated CoordinationV1Api: the body is plain JSON, so the MicroTime strings (`acquireTime`,
 * `renewTime`, six decimals) go out and come back exactly as they are, and every request takes the
 * AbortSignal directly (leader election cuts a renewal that would outlive its deadline).
 */
import { KubeApiError, type KubeHttp } from "../kube/kube-http.ts";
import {
  LeaseConflictError,
  type LeaseClient,
  type LeaseRecord,
  type ObservedLease,
} from "./leader-election.ts";
import { type LeaseObject, observedLease } from "./lease-object.ts";

/** See the module comment. Needs get, create and update on `leases` in `namespace` (RBAC). */
export class LeanLeaseClient implements LeaseClient {
  readonly #http: KubeHttp;
  readonly #namespace: string;
  readonly #name: string;
  readonly #collection: string;

  /** The Lease `namespace/name`, through `http` (share the process's one client). */
  constructor(http: KubeHttp, namespace: string, name: string) {
    this.#http = http;
    this.#namespace = namespace;
    this.#name = name;
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    try {
      return observedLease(
        await this.#http.request<LeaseObject>("GET", this.#path(), undefined, undefined, signal),
      );
    } catch (error) {
      if (error instanceof KubeApiError && error.code === 404) return undefined;
      throw error;
    }
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    try {
      return observedLease(
        await this.#http.request<LeaseObject>(
          "POST",
          this.#collection,
          this.#lease(record),
          undefined,
          signal,
        ),
      );
    } catch (error) {
      throw asConflict(error, "cannot create the lease: it exists already");
    }
  }

  async update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease> {
    try {
      return observedLease(
        await this.#http.request<LeaseObject>(
          "PUT",
          this.#path(),
          this.#lease(record, resourceVersion),
          undefined,
          signal,
        ),
      );
    } catch (error) {
      throw asConflict(error, "cannot update the lease: it changed since it was read");
    }
  }

  #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.#name)}`;
  }

  #lease(record: LeaseRecord, resourceVersion?: string): unknown {
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: this.#name,
        namespace: this.#namespace,
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      spec: {
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        acquireTime: record.acquireTime,
        renewTime: record.renewTime,
        leaseTransitions: record.leaseTransitions,
      },
    };
  }
}

function asConflict(error: unknown, message: string): unknown {
  return error instanceof KubeApiError && error.code === 409 ? new LeaseConflictError(message) : error;
}
