/**
 * The Kubernetes writes and live reads of the library: a managed resource (finalizer, status) and its intent
 * record. Every call is ONE request that succeeds or throws (an error with the HTTP status in `code`); none
 * retries by itself. Patches are JSON merge patches; finalizer changes carry the resourceVersion we read, so
 * a concurrent change fails with 409 instead of being lost.
 *
 * {@link KubeResourceWriter} sends them through the lean client: through client-node's generated
 * `CustomObjectsApi` the same writes cost more CPU and memory (kube-http.ts says why; the `generated-client`
 * figures in docs/benchmarks.md).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Json } from "./diff.ts";
import { orUndefined, statusCodeOf } from "../support/errors.ts";
import { MERGE_PATCH, type KubeHttp } from "../kube/kube-http.ts";
import type { IntentRecord, ManagedResource, ManagedStatus, ResourceKind } from "./contract.ts";

/** The writes and live reads the library makes in Kubernetes. */
export interface ResourceWriter<R extends ManagedResource> {
  /**
   * Adds our finalizer; 409 when the resource changed since `resource` was read. Resolves with the
   * resourceVersion the write produced (its echo's), when the API server said it.
   */
  addFinalizer(resource: R): Promise<string | undefined>;
  /** Removes our finalizer, guarded by resourceVersion (409 when it changed). */
  removeFinalizer(resource: R): Promise<void>;
  /** Replaces `status` through the status subresource. */
  updateStatus(resource: R, status: ManagedStatus): Promise<void>;
  /** Creates an intent record named `name` in phase Pending; 409 when one with the name exists. */
  createIntent(name: string, spec: Record<string, Json>): Promise<void>;
  /** Merge-patches an intent record's spec with exactly the fields given. */
  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void>;
  /**
   * Deletes an intent record; an absent one counts as done. With `uid` only that object is deleted (a delete
   * precondition): a newer record that took the name since is left alone, which also counts as done.
   */
  deleteIntent(name: string, uid?: string): Promise<void>;
  /** A live read of a resource (not the cache), for the last check before a destructive action. */
  readResource(namespace: string, name: string): Promise<R | undefined>;
  /**
   * A live read of an intent record, as the library reads it, with the time the API server created it
   * (`createdAt`).
   */
  readIntent(name: string): Promise<IntentRecord | undefined>;
  /**
   * A live, consistent read of the resource's own CustomResourceDefinition (`<plural>.<group>`): undefined
   * when it does not exist (404). Read before a deletion on a resource's behalf: a CRD being deleted (an
   * uninstall) deletes every resource of it at once (reconcile/uninstall.ts).
   */
  readDefinition(): Promise<ResourceDefinition | undefined>;
}

/** What the library reads of a resource's CustomResourceDefinition (reconcile/uninstall.ts). */
export interface ResourceDefinition {
  /** `<plural>.<group>`. */
  name: string;
  /** Its `metadata.uid`: a CRD deleted and created again has another. */
  uid: string;
  /** Its `metadata.creationTimestamp` (RFC 3339), when the API server said it. */
  createdAt?: string;
  /** Its `metadata.deletionTimestamp`: set once the CRD is being deleted. */
  deletingSince?: string;
}

/** The name of the CustomResourceDefinition of a resource kind: `<plural>.<group>`, as Kubernetes requires. */
export function definitionNameOf(kind: Pick<ResourceKind<ManagedResource>, "plural" | "group">): string {
  return `${kind.plural}.${kind.group}`;
}

/** Counts every Kubernetes write by verb and resource (metrics). */
export type WriteHook = (verb: "create" | "patch" | "delete", resource: string) => void;

/** {@link ResourceWriter} over a real API server through the lean client, for a plugin's resource kind. */
export class KubeResourceWriter<R extends ManagedResource> implements ResourceWriter<R> {
  readonly #http: KubeHttp;
  readonly #kind: ResourceKind<R>;
  readonly #onWrite: WriteHook;
  /** `/apis/<group>/<version>`: every path starts here. */
  readonly #base: string;

  constructor(http: KubeHttp, kind: ResourceKind<R>, onWrite: WriteHook = () => {}) {
    this.#http = http;
    this.#kind = kind;
    this.#onWrite = onWrite;
    this.#base = `/apis/${kind.group}/${kind.version}`;
  }

  /** {@link ResourceWriter.addFinalizer}, through the API server. */
  async addFinalizer(resource: R): Promise<string | undefined> {
    const finalizers = [...(resource.metadata.finalizers ?? []), this.#kind.finalizer];
    return this.#patchFinalizers(resource, finalizers);
  }

  /** {@link ResourceWriter.removeFinalizer}, through the API server. */
  async removeFinalizer(resource: R): Promise<void> {
    const finalizers = (resource.metadata.finalizers ?? []).filter((f) => f !== this.#kind.finalizer);
    await this.#patchFinalizers(resource, finalizers);
  }

  /** {@link ResourceWriter.updateStatus}, through the API server. */
  async updateStatus(resource: R, status: ManagedStatus): Promise<void> {
    this.#onWrite("patch", `${this.#kind.plural}/status`);
    const { namespace, name } = resource.metadata;
    await this.#http.request(
      "PATCH",
      `${this.#resourcePath(namespace, name)}/status`,
      { status },
      MERGE_PATCH,
    );
  }

  /** {@link ResourceWriter.createIntent}, through the API server. */
  async createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    const { group, version, intentPlural, intentKind: kind } = this.#kind;
    this.#onWrite("create", intentPlural);
    const body = { apiVersion: `${group}/${version}`, kind, metadata: { name }, spec };
    await this.#http.request("POST", `${this.#base}/${intentPlural}`, body);
  }

  /** {@link ResourceWriter.updateIntentSpec}, through the API server. */
  async updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    this.#onWrite("patch", this.#kind.intentPlural);
    await this.#http.request("PATCH", this.#intentPath(name), { spec }, MERGE_PATCH);
  }

  /** {@link ResourceWriter.deleteIntent}, through the API server. */
  async deleteIntent(name: string, uid?: string): Promise<void> {
    this.#onWrite("delete", this.#kind.intentPlural);
    try {
      await this.#http.request(
        "DELETE",
        this.#intentPath(name),
        uid === undefined ? undefined : { preconditions: { uid } },
      );
    } catch (err) {
      // 404: already gone, what we wanted. 409 with a uid: the name now holds a newer record, not ours to delete.
      const code = statusCodeOf(err);
      if (code !== 404 && !(uid !== undefined && code === 409)) throw err;
    }
  }

  /** {@link ResourceWriter.readResource}, through the API server. */
  async readResource(namespace: string, name: string): Promise<R | undefined> {
    return orUndefined(this.#http.request<R>("GET", this.#resourcePath(namespace, name)));
  }

  /** {@link ResourceWriter.readIntent}, through the API server. */
  async readIntent(name: string): Promise<IntentRecord | undefined> {
    const obj = await orUndefined(this.#http.request<KubernetesObject>("GET", this.#intentPath(name)));
    if (!obj) return undefined;
    // Read as JSON: the timestamp is the API server's string, not the Date client-node's type says.
    const createdAt = (obj.metadata as { creationTimestamp?: string } | undefined)?.creationTimestamp;
    return { ...this.#kind.readIntent(obj), ...(createdAt === undefined ? {} : { createdAt }) };
  }

  /** {@link ResourceWriter.readDefinition}, through the API server. */
  async readDefinition(): Promise<ResourceDefinition | undefined> {
    const name = definitionNameOf(this.#kind);
    // A plain GET is a quorum read (no resourceVersion: no watch cache), so it never trails the deletion.
    const crd = await orUndefined(
      this.#http.request<{
        metadata?: { uid?: string; creationTimestamp?: string; deletionTimestamp?: string };
      }>("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(name)}`),
    );
    if (!crd) return undefined;
    const { uid = "", creationTimestamp, deletionTimestamp } = crd.metadata ?? {};
    return {
      name,
      uid,
      ...(creationTimestamp === undefined ? {} : { createdAt: creationTimestamp }),
      ...(deletionTimestamp === undefined ? {} : { deletingSince: deletionTimestamp }),
    };
  }

  async #patchFinalizers(resource: R, finalizers: string[]): Promise<string | undefined> {
    this.#onWrite("patch", this.#kind.plural);
    const { namespace, name, resourceVersion } = resource.metadata;
    const body = { metadata: { finalizers, resourceVersion } };
    const path = this.#resourcePath(namespace, name);
    const written = await this.#http.request<KubernetesObject | undefined>("PATCH", path, body, MERGE_PATCH);
    return written?.metadata?.resourceVersion;
  }

  #resourcePath(namespace: string, name: string): string {
    const ns = encodeURIComponent(namespace);
    return `${this.#base}/namespaces/${ns}/${this.#kind.plural}/${encodeURIComponent(name)}`;
  }

  #intentPath(name: string): string {
    return `${this.#base}/${this.#kind.intentPlural}/${encodeURIComponent(name)}`;
  }
}
