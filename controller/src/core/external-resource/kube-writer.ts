/**
 * The Kubernetes writes and live reads of the library: a managed resource (finalizer, status) and its intent
 * record. Every call is ONE request that succeeds or throws (client-node's ApiException, with `code`); none
 * retries by itself. Patches are JSON merge patches (client-node defaults to JSON Patch for custom objects,
 * so the content type is set explicitly); finalizer changes carry the resourceVersion we read, so a
 * concurrent change fails with 409 instead of being lost.
 */
import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import type { Json } from "../diff.ts";
import { orUndefined, statusCodeOf } from "../errors.ts";
import type { IntentRecord, ManagedResource, ManagedStatus, ResourceKind } from "./contract.ts";

/** The writes and live reads the library makes in Kubernetes. */
export interface ResourceWriter<R extends ManagedResource> {
  /** Adds our finalizer; 409 when the resource changed since `resource` was read. */
  addFinalizer(resource: R): Promise<void>;
  /** Removes our finalizer, guarded by resourceVersion (409 when it changed). */
  removeFinalizer(resource: R): Promise<void>;
  /** Replaces `status` through the status subresource. */
  updateStatus(resource: R, status: ManagedStatus): Promise<void>;
  /** Creates an intent record named `name` in phase Pending; 409 when one with the name exists. */
  createIntent(name: string, spec: Record<string, Json>): Promise<void>;
  /** Merge-patches an intent record's spec with exactly the fields given. */
  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void>;
  /** Sets an intent record's status (phase, external id). */
  setIntentStatus(name: string, status: Record<string, Json>): Promise<void>;
  /**
   * Deletes an intent record; an absent one counts as done. With `uid` only that object is deleted (a delete
   * precondition): a newer record that took the name since is left alone, which also counts as done.
   */
  deleteIntent(name: string, uid?: string): Promise<void>;
  /** A live read of a resource (not the cache), for the last check before a destructive action. */
  readResource(namespace: string, name: string): Promise<R | undefined>;
  /** A live read of an intent record, as the library reads it. */
  readIntent(name: string): Promise<IntentRecord | undefined>;
}

/** Counts every Kubernetes write by verb and resource (metrics). */
export type WriteHook = (verb: "create" | "patch" | "delete", resource: string) => void;

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** {@link ResourceWriter} over a real API server, for the resource kind a plugin describes. */
export class KubeResourceWriter<R extends ManagedResource> implements ResourceWriter<R> {
  readonly #api: CustomObjectsApi;
  readonly #kind: ResourceKind<R>;
  readonly #onWrite: WriteHook;

  constructor(kubeConfig: KubeConfig, kind: ResourceKind<R>, onWrite: WriteHook = () => {}) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#kind = kind;
    this.#onWrite = onWrite;
  }

  async addFinalizer(resource: R): Promise<void> {
    const finalizers = [...(resource.metadata.finalizers ?? []), this.#kind.finalizer];
    await this.#patchResource(resource, finalizers);
  }

  async removeFinalizer(resource: R): Promise<void> {
    const finalizers = (resource.metadata.finalizers ?? []).filter((f) => f !== this.#kind.finalizer);
    await this.#patchResource(resource, finalizers);
  }

  async updateStatus(resource: R, status: ManagedStatus): Promise<void> {
    const { group, version, plural } = this.#kind;
    this.#onWrite("patch", `${plural}/status`);
    const { namespace, name } = resource.metadata;
    await this.#api.patchNamespacedCustomObjectStatus(
      { group, version, plural, namespace, name, body: { status } },
      mergePatch,
    );
  }

  async createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    const { group, version, intentPlural: plural, intentKind: kind } = this.#kind;
    this.#onWrite("create", plural);
    await this.#api.createClusterCustomObject({
      group,
      version,
      plural,
      body: { apiVersion: `${group}/${version}`, kind, metadata: { name }, spec },
    });
  }

  async updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    const { group, version, intentPlural: plural } = this.#kind;
    this.#onWrite("patch", plural);
    await this.#api.patchClusterCustomObject({ group, version, plural, name, body: { spec } }, mergePatch);
  }

  async setIntentStatus(name: string, status: Record<string, Json>): Promise<void> {
    const { group, version, intentPlural: plural } = this.#kind;
    this.#onWrite("patch", `${plural}/status`);
    await this.#api.patchClusterCustomObjectStatus(
      { group, version, plural, name, body: { status } },
      mergePatch,
    );
  }

  async deleteIntent(name: string, uid?: string): Promise<void> {
    const { group, version, intentPlural: plural } = this.#kind;
    this.#onWrite("delete", plural);
    try {
      await this.#api.deleteClusterCustomObject({
        group,
        version,
        plural,
        name,
        ...(uid === undefined ? {} : { body: { preconditions: { uid } } }),
      });
    } catch (err) {
      // 404: already gone, what we wanted. 409 with a uid: the name now holds a newer record, not ours to delete.
      const code = statusCodeOf(err);
      if (code !== 404 && !(uid !== undefined && code === 409)) throw err;
    }
  }

  async readResource(namespace: string, name: string): Promise<R | undefined> {
    const { group, version, plural } = this.#kind;
    return orUndefined(
      this.#api.getNamespacedCustomObject({ group, version, plural, namespace, name }) as Promise<R>,
    );
  }

  async readIntent(name: string): Promise<IntentRecord | undefined> {
    const { group, version, intentPlural: plural } = this.#kind;
    const obj = await orUndefined(
      this.#api.getClusterCustomObject({ group, version, plural, name }) as Promise<KubernetesObject>,
    );
    return obj && this.#kind.readIntent(obj);
  }

  async #patchResource(resource: R, finalizers: string[]): Promise<void> {
    const { group, version, plural } = this.#kind;
    this.#onWrite("patch", plural);
    const { namespace, name, resourceVersion } = resource.metadata;
    const body = { metadata: { finalizers, resourceVersion } };
    await this.#api.patchNamespacedCustomObject(
      { group, version, plural, namespace, name, body },
      mergePatch,
    );
  }
}
