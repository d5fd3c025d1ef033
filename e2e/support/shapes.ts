/** Shape and ShapeRef objects for e2e tests, and the API paths of their resources. */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";

/** The group/version of both CRDs. */
export const GROUP = "shapes.example.com";
export const VERSION = "v1alpha1";

/** A Shape manifest (as JSON) with the given spec. */
export function shape(
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "Shape",
    metadata: { name, namespace, ...extra },
    spec,
  };
}

/** A ShapeRef manifest (as JSON). */
export function shapeRef(name: string, spec: Record<string, unknown>) {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: "ShapeRef", metadata: { name }, spec };
}

/** Typed-enough access to Shapes and ShapeRefs through client-node's CustomObjectsApi. */
export class ShapesClient {
  readonly api: CustomObjectsApi;

  constructor(kc: KubeConfig) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  /** Creates a Shape; `dryRun` validates fully (schema, CEL, admission) without storing it. */
  createShape(namespace: string, body: object, options: { dryRun?: boolean; strict?: boolean } = {}) {
    return this.api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "shapes",
      body,
      ...(options.dryRun ? { dryRun: "All" } : {}),
      ...(options.strict ? { fieldValidation: "Strict" } : {}),
    }) as Promise<KubeObject>;
  }

  getShape(namespace: string, name: string) {
    return this.api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "shapes",
      name,
    }) as Promise<KubeObject>;
  }

  listShapes(namespace: string) {
    return this.api.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "shapes",
    }) as Promise<{
      metadata: { resourceVersion: string };
      items: KubeObject[];
    }>;
  }

  deleteShape(namespace: string, name: string) {
    return this.api.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "shapes",
      name,
    });
  }

  /** A JSON merge patch of the Shape (the main resource: status in it is ignored). */
  patchShape(namespace: string, name: string, patch: object) {
    return this.api.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural: "shapes", name, body: patch },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    ) as Promise<KubeObject>;
  }

  /** A JSON Patch (RFC 6902) of the Shape, e.g. with a `test` op as a precondition. */
  jsonPatchShape(namespace: string, name: string, ops: object[]) {
    return this.api.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural: "shapes", name, body: ops },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    ) as Promise<KubeObject>;
  }

  /** A JSON merge patch through the status subresource (spec in it is ignored). */
  patchShapeStatus(namespace: string, name: string, patch: object) {
    return this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: "shapes", name, body: patch },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    ) as Promise<KubeObject>;
  }

  createShapeRef(body: object, options: { dryRun?: boolean } = {}) {
    return this.api.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: "shaperefs",
      body,
      ...(options.dryRun ? { dryRun: "All" } : {}),
    }) as Promise<KubeObject>;
  }

  patchShapeRef(name: string, patch: object) {
    return this.api.patchClusterCustomObject(
      { group: GROUP, version: VERSION, plural: "shaperefs", name, body: patch },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    ) as Promise<KubeObject>;
  }

  patchShapeRefStatus(name: string, patch: object) {
    return this.api.patchClusterCustomObjectStatus(
      { group: GROUP, version: VERSION, plural: "shaperefs", name, body: patch },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    ) as Promise<KubeObject>;
  }

  /**
   * The ShapeRef `name` as `kubectl get shaperefs` sees it: the API server's Table (the CRD's printer
   * columns), as a column name → cell map. A cell whose jsonPath finds nothing is null (kubectl: `<none>`).
   */
  async shapeRefColumns(name: string): Promise<Record<string, unknown>> {
    const table = (await this.api.getClusterCustomObject(
      { group: GROUP, version: VERSION, plural: "shaperefs", name },
      setHeaderOptions("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),
    )) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    const cells = table.rows[0]?.cells ?? [];
    return Object.fromEntries(table.columnDefinitions.map((c, i) => [c.name, cells[i]]));
  }

  deleteShapeRef(name: string) {
    return this.api.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: "shaperefs", name });
  }
}

/** A custom object as the API returns it (JSON). */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    resourceVersion: string;
    generation: number;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}
