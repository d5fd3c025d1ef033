/**
 * The {@link RingLeaseClient} over the API server: the ring's Leases in one namespace, found by one label,
 * each replica's view in an annotation. Sent with the lean client (kube-http.ts): a Lease is a small JSON
 * object, and every call must honour its AbortSignal (client-node's generated API takes none).
 *
 * Also {@link apiServerShards}: does this API server filter lists by `shardSelector` (KEP-5866)?
 */
import { LeaseConflictError } from "./leader-election.ts";
import { KubeApiError, type KubeHttp } from "../kube/kube-http.ts";
import { HASH_SPACE, shardHash } from "./hash.ts";
import type { MemberLease, OwnLease, RingLeaseClient } from "./lease-ring.ts";
import { shardSelector } from "./ring.ts";

/** Where the ring's Leases live and how they are marked. */
export interface RingLeasesOptions {
  namespace: string;
  /** The label every Lease of the ring carries (`kubectl get leases -l <key>=<value>` shows the ring). */
  label: { key: string; value: string };
  /** The annotation holding a member's view: a JSON array of identities. */
  viewAnnotation: string;
}

interface LeaseObject {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    renewTime?: string;
  };
}

/** See the module comment. Needs list, create, update and delete on `leases` in the namespace (RBAC). */
export class KubeRingLeases implements RingLeaseClient {
  readonly #http: KubeHttp;
  readonly #options: RingLeasesOptions;
  readonly #collection: string;

  constructor(http: KubeHttp, options: RingLeasesOptions) {
    this.#http = http;
    this.#options = options;
    this.#collection = leasesPath(options.namespace);
  }

  async list(signal: AbortSignal): Promise<MemberLease[]> {
    // No resourceVersion: a consistent read, never an older state from a cache.
    const list = await this.#http.request<{ items?: LeaseObject[] }>(
      "GET",
      `${this.#collection}?${ringSelector(this.#options.label)}`,
      undefined,
      undefined,
      signal,
    );
    return (list.items ?? []).map((lease) => this.#read(lease));
  }

  async create(name: string, lease: OwnLease, signal: AbortSignal): Promise<MemberLease> {
    try {
      return this.#read(
        await this.#http.request<LeaseObject>(
          "POST",
          this.#collection,
          this.#object(name, lease),
          undefined,
          signal,
        ),
      );
    } catch (error) {
      throw asConflict(error, `cannot create lease ${name}: it exists already`);
    }
  }

  async update(
    name: string,
    lease: OwnLease,
    resourceVersion: string,
    signal: AbortSignal,
  ): Promise<MemberLease> {
    try {
      return this.#read(
        await this.#http.request<LeaseObject>(
          "PUT",
          `${this.#collection}/${encodeURIComponent(name)}`,
          this.#object(name, lease, resourceVersion),
          undefined,
          signal,
        ),
      );
    } catch (error) {
      throw asConflict(error, `cannot update lease ${name}: it changed since it was read`);
    }
  }

  async delete(name: string, resourceVersion: string, signal: AbortSignal): Promise<void> {
    try {
      await this.#http.request(
        "DELETE",
        `${this.#collection}/${encodeURIComponent(name)}`,
        { apiVersion: "v1", kind: "DeleteOptions", preconditions: { resourceVersion } },
        undefined,
        signal,
      );
    } catch (error) {
      if (error instanceof KubeApiError && error.code === 404) return;
      throw asConflict(error, `cannot delete lease ${name}: it changed since it was read`);
    }
  }

  #object(name: string, lease: OwnLease, resourceVersion?: string): unknown {
    const { label, namespace, viewAnnotation } = this.#options;
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name,
        namespace,
        labels: { [label.key]: label.value },
        ...(lease.view ? { annotations: { [viewAnnotation]: JSON.stringify(lease.view) } } : {}),
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      spec: {
        holderIdentity: lease.holder,
        leaseDurationSeconds: lease.leaseDurationSeconds,
        acquireTime: lease.acquireTime,
        renewTime: lease.renewTime,
      },
    };
  }

  #read(lease: LeaseObject): MemberLease {
    const view = parseView(lease.metadata?.annotations?.[this.#options.viewAnnotation]);
    const spec = lease.spec ?? {};
    return {
      name: lease.metadata?.name ?? "",
      ...(spec.holderIdentity ? { holder: spec.holderIdentity } : {}),
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      ...(spec.renewTime ? { renewTime: spec.renewTime } : {}),
      ...(view ? { view } : {}),
      resourceVersion: lease.metadata?.resourceVersion ?? "",
    };
  }
}

/** A view annotation's members; undefined when absent or not a JSON array of strings (someone else's edit). */
function parseView(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) && value.every((m) => typeof m === "string") ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The Leases of `namespace`. */
function leasesPath(namespace: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
}

/** The query parameter that selects a ring's Leases. */
function ringSelector(label: RingLeasesOptions["label"]): string {
  return `labelSelector=${encodeURIComponent(`${label.key}=${label.value}`)}`;
}

function asConflict(error: unknown, message: string): unknown {
  return error instanceof KubeApiError && error.code === 409 ? new LeaseConflictError(message) : error;
}

/**
 * True when the API server filters lists by `shardSelector` (KEP-5866, feature gate ShardedListAndWatch):
 * asked by listing the ring's Leases with a selector of the whole space, and reading whether the answer says
 * it was sharded (`metadata.shardInfo`). A server without the feature ignores the parameter and says
 * nothing. (Custom resources cannot be asked: in Kubernetes 1.36 their list answers never carry shardInfo,
 * filtered or not.) Rejects when the list itself fails.
 */
export async function apiServerShards(
  http: KubeHttp,
  options: Pick<RingLeasesOptions, "namespace" | "label">,
  signal?: AbortSignal,
): Promise<boolean> {
  const everything = shardSelector("object.metadata.uid", [{ start: 0n, end: HASH_SPACE }]) ?? "";
  const list = await http.request<{ metadata?: { shardInfo?: unknown } }>(
    "GET",
    `${leasesPath(options.namespace)}?${ringSelector(options.label)}&shardSelector=${encodeURIComponent(everything)}`,
    undefined,
    undefined,
    signal,
  );
  return list.metadata?.shardInfo !== undefined;
}

/** A Lease name for `identity` in ring `ring`: a DNS subdomain, unique per identity. */
export function memberLeaseName(ring: string, identity: string): string {
  const cleaned = identity
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "");
  // Two identities that clean up to the same text must still get two Leases.
  const suffix =
    cleaned === identity ? "" : `-${shardHash(identity).toString(16).padStart(16, "0").slice(0, 8)}`;
  return `${ring}-${cleaned.slice(0, 200)}${suffix}`;
}
