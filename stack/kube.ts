/**
 * The Kubernetes side of a stack, as a person with kubectl would use it: apply the project's manifests,
 * get the controller its least-privilege identity, apply / patch / delete Shapes, read Shapes, ShapeRefs
 * and Events. All calls go to the real API server as the cluster admin.
 */
import { join } from "node:path";
import {
  type KubeConfig,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type V1Lease,
} from "@kubernetes/client-node";
import { orUndefined, readDefaultOwnerId } from "reconcile-kit/parts";
import { applyManifestFile, uniqueName, withKubeHttp } from "reconcile-kit/harness";
import { type ControlPlaneBase, type Identity, installCRDs } from "@shapes/envtest";
import {
  type Condition,
  FINALIZER,
  GROUP,
  type Shape,
  type ShapeRef,
  SHAPEREFS,
  SHAPES,
  type ShapeSpec,
  VERSION,
} from "@shapes/controller";

export type { Condition, Shape, ShapeRef, ShapeSpec };

/** The namespace and service account of deploy/rbac.yaml: who the controller runs as. */
export const CONTROLLER_NAMESPACE = "shapes-system";
/** See {@link CONTROLLER_NAMESPACE}. */
export const CONTROLLER_SERVICE_ACCOUNT = "shapes-controller";
/** The manifests applied after the CRDs, in order (paths from the repository root). */
export const DEPLOY_MANIFESTS = ["deploy/namespace.yaml", "deploy/rbac.yaml"] as const;

/**
 * Installs the project on a cluster, as the demo, the stacks, the bench and the chaos trials all do: the
 * CRDs (waiting until they are served), then deploy/namespace.yaml and deploy/rbac.yaml. Returns what it
 * installed, for progress lines.
 */
export async function installProjectManifests(kubeConfig: KubeConfig): Promise<string[]> {
  const installed = await installCRDs(kubeConfig);
  const root = join(import.meta.dirname, "..");
  for (const file of DEPLOY_MANIFESTS) await applyManifestFile(kubeConfig, join(root, file), FIELD_MANAGER);
  return [...installed, ...DEPLOY_MANIFESTS];
}

/** A cluster made ready for the controller, by {@link prepareCluster}. */
export interface PreparedCluster {
  /** The owner id a controller with default settings derives there: k8s-<uid of its kube-system namespace>. */
  readonly ownerId: string;
  /** The least-privilege identity of deploy/rbac.yaml (the `shapes-controller` service account). */
  readonly controllerIdentity: Identity;
}

/** Options of {@link prepareCluster}. */
export interface PrepareOptions {
  /**
   * How to get a service account's identity. Default: `controlPlane.serviceAccountIdentity` (a client
   * certificate from a local control plane's CA; impersonation on an existing cluster). The stack passes
   * reconcile-kit/harness's `serviceAccountTokenIdentity` on an existing cluster.
   */
  serviceAccountIdentity?: (namespace: string, name: string) => Promise<Identity>;
}

/**
 * Makes a cluster ready for the controller, as every stack does (the stack, bench, chaos, the tour's second
 * cluster): the project's manifests installed, then the owner id a default controller will derive there and
 * the controller's identity. `kubeConfig` is an admin's for `controlPlane`.
 */
export async function prepareCluster(
  controlPlane: ControlPlaneBase,
  kubeConfig: KubeConfig,
  options: PrepareOptions = {},
): Promise<PreparedCluster> {
  await installProjectManifests(kubeConfig);
  const identityOf =
    options.serviceAccountIdentity ??
    ((namespace: string, name: string) => controlPlane.serviceAccountIdentity(namespace, name));
  const [ownerId, controllerIdentity] = await Promise.all([
    withKubeHttp(kubeConfig, readDefaultOwnerId),
    identityOf(CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT),
  ]);
  return { ownerId, controllerIdentity };
}

/** The field manager of everything the stack (and its tests) apply. */
export const FIELD_MANAGER = "shapes-e2e";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Shapes, ShapeRefs, Events and namespaces, as the cluster admin. */
export class KubeApi {
  readonly #objects: KubernetesObjectApi;
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;
  readonly #coordination: CoordinationV1Api;

  constructor(kc: KubeConfig) {
    this.#objects = KubernetesObjectApi.makeApiClient(kc);
    this.#custom = kc.makeApiClient(CustomObjectsApi);
    this.#core = kc.makeApiClient(CoreV1Api);
    this.#coordination = kc.makeApiClient(CoordinationV1Api);
  }

  /** The Lease `namespace/name` (leader election), or undefined. */
  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return orUndefined(this.#coordination.readNamespacedLease({ namespace, name }));
  }

  /** The Leases of `namespace` that carry `labelSelector` (a sharding ring's: `shapes.example.com/ring=<name>`). */
  async listLeases(namespace: string, labelSelector: string): Promise<V1Lease[]> {
    return (await this.#coordination.listNamespacedLease({ namespace, labelSelector })).items;
  }

  /** Creates a namespace `<prefix>-<random>` and returns its name. */
  async createNamespace(prefix: string): Promise<string> {
    const name = uniqueName(prefix);
    await this.#core.createNamespace({ body: { metadata: { name } } });
    return name;
  }

  /**
   * Removes a namespace made for a test from a cluster that outlives it (an existing cluster): every Shape
   * in it, with its finalizers stripped first (no controller may run any more, so none would remove ours),
   * the ShapeRefs of those Shapes (cluster-scoped, so the namespace's deletion would not take them), then
   * the namespace itself. Does not wait for the namespace to be gone (a cluster without the namespace
   * controller, such as envtest's, never finishes).
   */
  async deleteNamespace(namespace: string): Promise<void> {
    for (const shape of await this.listShapes(namespace)) {
      const name = shape.metadata.name;
      if ((shape.metadata.finalizers ?? []).length > 0) {
        await orUndefined(this.patchShape(namespace, name, { metadata: { finalizers: null } }));
      }
      await orUndefined(this.deleteShape(namespace, name));
    }
    for (const ref of await this.listShapeRefs()) {
      if (ref.spec?.shape?.namespace !== namespace) continue;
      await orUndefined(
        this.#custom.deleteClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: SHAPEREFS,
          name: ref.metadata.name,
        }),
      );
    }
    await orUndefined(this.#core.deleteNamespace({ name: namespace }));
  }

  /**
   * Server-side applies a Shape (creates it, or updates the fields we set), like `kubectl apply`.
   * `annotations` are applied with it.
   */
  async applyShape(
    namespace: string,
    name: string,
    spec: ShapeSpec,
    annotations: Record<string, string> = {},
  ): Promise<Shape> {
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "Shape",
      metadata: { name, namespace, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
      spec,
    };
    return this.#objects.patch(
      body,
      undefined,
      undefined,
      FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    ) as Promise<Shape>;
  }

  /** The Shape, or undefined when it does not exist (any more). */
  getShape(namespace: string, name: string): Promise<Shape | undefined> {
    return orUndefined(
      this.#custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPES,
        namespace,
        name,
      }) as Promise<Shape>,
    );
  }

  /** The Shape, which must exist. */
  async shape(namespace: string, name: string): Promise<Shape> {
    const shape = await this.getShape(namespace, name);
    if (!shape) throw new Error(`Shape ${namespace}/${name} does not exist`);
    return shape;
  }

  /** A JSON merge patch of a Shape (spec, metadata; not status). */
  patchShape(namespace: string, name: string, patch: object): Promise<Shape> {
    return this.#custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: SHAPES, namespace, name, body: patch },
      mergePatch,
    ) as Promise<Shape>;
  }

  /** Sets (a string) or removes (null) annotations of a Shape. */
  annotateShape(namespace: string, name: string, annotations: Record<string, string | null>): Promise<Shape> {
    return this.patchShape(namespace, name, { metadata: { annotations } });
  }

  /**
   * Removes the controller's finalizer by hand, the way a person "unsticks" a Shape with kubectl edit.
   * Guarded by resourceVersion (JSON merge patch with metadata.resourceVersion): a concurrent change fails.
   */
  async stripFinalizer(namespace: string, name: string): Promise<Shape> {
    const shape = await this.shape(namespace, name);
    return this.patchShape(namespace, name, {
      metadata: {
        resourceVersion: shape.metadata.resourceVersion,
        finalizers: (shape.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
      },
    });
  }

  /** Asks the API server to delete a Shape (it stays while finalizers remain). */
  async deleteShape(namespace: string, name: string): Promise<void> {
    await this.#custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPES,
      namespace,
      name,
    });
  }

  /** Every Shape in `namespace`. */
  async listShapes(namespace: string): Promise<Shape[]> {
    const list = (await this.#custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPES,
      namespace,
    })) as { items: Shape[] };
    return list.items;
  }

  /** The ShapeRef `name` (`<namespace>.<name>` of its Shape), or undefined. */
  getShapeRef(name: string): Promise<ShapeRef | undefined> {
    return orUndefined(
      this.#custom.getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPEREFS,
        name,
      }) as Promise<ShapeRef>,
    );
  }

  /** Every ShapeRef in the cluster. */
  async listShapeRefs(): Promise<ShapeRef[]> {
    const list = (await this.#custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPEREFS,
    })) as {
      items: ShapeRef[];
    };
    return list.items;
  }

  /** The Events about the object `name` in `namespace`, oldest first. */
  async eventsFor(namespace: string, name: string): Promise<CoreV1Event[]> {
    const list = await this.#core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name}`,
    });
    return list.items;
  }
}

/** The condition `type` of a Shape's status, or undefined. */
export function conditionOf(shape: Shape | undefined, type: "Ready" | "Synced"): Condition | undefined {
  return shape?.status?.conditions?.find((c) => c.type === type);
}
