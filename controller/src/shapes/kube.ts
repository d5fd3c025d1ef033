/**
 * The Kubernetes adapter of the shapes reconcilers: every `ShapeWriter` call as ONE request through
 * client-node's CustomObjectsApi. Patches are JSON merge patches (client-node defaults to JSON Patch for
 * custom objects, so the content type is set explicitly); finalizer changes carry the resourceVersion we
 * read, so a concurrent change fails with 409 instead of being lost.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import {
  FINALIZER,
  GROUP,
  SHAPEREFS,
  SHAPES,
  VERSION,
  type Shape,
  type ShapeRef,
  type ShapeRefPhase,
  type ShapeRefSpec,
  type ShapeStatus,
} from "./api.ts";
import { statusCodeOf } from "./errors.ts";
import type { ShapeWriter } from "./ports.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Counts every Kubernetes write by verb and resource (metrics). */
export type WriteHook = (verb: "create" | "patch" | "delete", resource: string) => void;

/** ShapeWriter over a real API server. */
export class KubeShapeWriter implements ShapeWriter {
  readonly #api: CustomObjectsApi;
  readonly #onWrite: WriteHook;

  constructor(kubeConfig: KubeConfig, onWrite: WriteHook = () => {}) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#onWrite = onWrite;
  }

  async addFinalizer(shape: Shape): Promise<void> {
    await this.#patchShape(shape, {
      metadata: {
        finalizers: [...(shape.metadata.finalizers ?? []), FINALIZER],
        resourceVersion: shape.metadata.resourceVersion,
      },
    });
  }

  async removeFinalizer(shape: Shape): Promise<void> {
    await this.#patchShape(shape, {
      metadata: {
        finalizers: (shape.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
        resourceVersion: shape.metadata.resourceVersion,
      },
    });
  }

  async updateStatus(shape: Shape, status: ShapeStatus): Promise<void> {
    this.#onWrite("patch", "shapes/status");
    await this.#api.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: SHAPES,
        namespace: shape.metadata.namespace,
        name: shape.metadata.name,
        body: { status },
      },
      mergePatch,
    );
  }

  async createShapeRef(ref: Pick<ShapeRef, "metadata" | "spec">): Promise<void> {
    this.#onWrite("create", "shaperefs");
    await this.#api.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPEREFS,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: "ShapeRef", ...ref },
    });
  }

  async updateShapeRefSpec(
    name: string,
    fields: Pick<ShapeRefSpec, "deletionPolicy" | "owner">,
  ): Promise<void> {
    this.#onWrite("patch", "shaperefs");
    await this.#api.patchClusterCustomObject(
      { group: GROUP, version: VERSION, plural: SHAPEREFS, name, body: { spec: fields } },
      mergePatch,
    );
  }

  async setShapeRefPhase(name: string, phase: ShapeRefPhase, cloudId?: string): Promise<void> {
    this.#onWrite("patch", "shaperefs/status");
    await this.#api.patchClusterCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: SHAPEREFS,
        name,
        body: { status: { phase, ...(cloudId ? { cloudId } : {}) } },
      },
      mergePatch,
    );
  }

  async deleteShapeRef(name: string, uid?: string): Promise<void> {
    this.#onWrite("delete", "shaperefs");
    try {
      await this.#api.deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPEREFS,
        name,
        ...(uid === undefined ? {} : { body: { preconditions: { uid } } }),
      });
    } catch (err) {
      // 404: already gone, what we wanted. 409 with a uid: the name now holds a newer ShapeRef, not ours to delete.
      const code = statusCodeOf(err);
      if (code !== 404 && !(uid !== undefined && code === 409)) throw err;
    }
  }

  async readShape(namespace: string, name: string): Promise<Shape | undefined> {
    return orUndefined(
      this.#api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPES,
        namespace,
        name,
      }) as Promise<Shape>,
    );
  }

  async readShapeRef(name: string): Promise<ShapeRef | undefined> {
    return orUndefined(
      this.#api.getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPEREFS,
        name,
      }) as Promise<ShapeRef>,
    );
  }

  async #patchShape(shape: Shape, body: object): Promise<void> {
    this.#onWrite("patch", "shapes");
    await this.#api.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: SHAPES,
        namespace: shape.metadata.namespace,
        name: shape.metadata.name,
        body,
      },
      mergePatch,
    );
  }
}

/** A read that treats 404 as "absent". */
async function orUndefined<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (statusCodeOf(err) === 404) return undefined;
    throw err;
  }
}
