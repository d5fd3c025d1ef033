/**
 * Shapes, as the external-resource library sees them (library/src/reconcile/contract.ts): the `Shape`
 * custom resource and its `ShapeRef` intent record, the cloud shape it asks for, the five cloud calls, and
 * the list-watch of our cloud shapes.
 * Everything here is about shapes; the pattern itself (finalizer, intent record, ownership, drift, deletion,
 * leaks) is the library's.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  classifyHttp,
  type ExternalClient,
  type ExternalResourcePlugin,
  GoneError,
  type IntentRecord,
  type JsonObject,
  type ListWatchClient,
} from "reconcile-kit";
import {
  FINALIZER,
  GROUP,
  PAUSED_ANNOTATION,
  RELEASE_PATCH,
  SHAPEREFS,
  SHAPES,
  TAG_NAME,
  TAG_OWNER,
  TAG_UID,
  VERSION,
  cloudNameOf,
  shapeOfCloudName,
  type Shape,
  type ShapeRef,
} from "./api.ts";
import { CloudError, type CloudClient, type CloudShape } from "./cloud/client.ts";

/** The Shape plugin, over a cloud client (for the list-watch of our cloud shapes). */
export function shapesPlugin(
  cloud: Pick<CloudClient, "list" | "watch">,
): ExternalResourcePlugin<Shape, CloudShape> {
  return {
    resource: {
      group: GROUP,
      version: VERSION,
      kind: "Shape",
      plural: SHAPES,
      intentKind: "ShapeRef",
      intentPlural: SHAPEREFS,
      finalizer: FINALIZER,
      pausedAnnotation: PAUSED_ANNOTATION,
      externalNameOf: cloudNameOf,
      resourceOf: shapeOfCloudName,
      // The cloud shape a Shape asks for: its spec, and our three tags (owner, uid, and a name for people).
      desired: (shape, marks) => ({
        name: cloudNameOf(shape.metadata.namespace, shape.metadata.name),
        fields: {
          type: shape.spec.type ?? null,
          color: shape.spec.color ?? null,
          size: shape.spec.size ?? null,
          tags: { [TAG_OWNER]: marks.owner, [TAG_UID]: marks.uid, [TAG_NAME]: marks.resourceKey },
        },
      }),
      statusOf: (observed) => ({ cloudId: observed.id, cloudName: observed.name }),
      readIntent: (obj: KubernetesObject): IntentRecord => {
        const ref = obj as ShapeRef;
        return {
          name: ref.metadata.name,
          uid: ref.metadata.uid ?? "",
          resource: ref.spec.shape,
          externalName: ref.spec.cloudName,
          deletionPolicy: ref.spec.deletionPolicy ?? "Delete",
          ...(ref.spec.owner === undefined ? {} : { owner: ref.spec.owner }),
          phase: ref.status?.phase ?? "Pending",
          ...(ref.status?.cloudId === undefined ? {} : { externalId: ref.status.cloudId }),
        };
      },
      intentSpec: (record) => ({
        shape: record.resource,
        cloudName: record.externalName,
        deletionPolicy: record.deletionPolicy,
        ...(record.owner === undefined ? {} : { owner: record.owner }),
      }),
    },
    external: {
      noun: { text: "cloud shape", reason: "CloudShape" },
      nameOf: (s) => s.name,
      idOf: (s) => s.id,
      revisionOf: (s) => s.revision,
      marksOf: (s) => ({ owner: s.tags[TAG_OWNER], uid: s.tags[TAG_UID] }),
      // The whole shape: only the keys of the desired fields are compared (library/src/reconcile/diff.ts).
      fieldsOf: (s) => s as unknown as JsonObject,
      // status.atProvider: what a person wants to see of an observed shape, and whose it is.
      atProvider: (s) => ({
        id: s.id,
        type: s.type,
        color: s.color,
        ...(s.size === undefined ? {} : { size: s.size }),
        ...(s.tags[TAG_OWNER] === undefined ? {} : { owner: s.tags[TAG_OWNER] }),
      }),
      listWatch: (ownerId) => ownedShapesListWatch(cloud, ownerId),
    },
  };
}

/**
 * The cloud calls of the contract (the five, and the rename the cloud allows), each ONE request of the cloud
 * client (conditional on the revision).
 */
export function cloudShapesClient(
  cloud: Pick<CloudClient, "getByName" | "create" | "patch" | "delete">,
): ExternalClient<CloudShape> {
  return {
    getByName: (name, signal) => cloud.getByName(name, signal),
    create: ({ name, fields }, signal) => {
      const { type, color, size, tags } = fields as {
        type: string;
        color: string;
        size: number | null;
        tags: Record<string, string>;
      };
      return cloud.create({ name, type, color, ...(size === null ? {} : { size }), tags }, signal);
    },
    update: (s, patch, signal) => cloud.patch(s.id, patch, s.revision, signal),
    delete: (s, signal) => cloud.delete(s.id, s.revision, signal),
    release: async (s, signal) => {
      await cloud.patch(s.id, RELEASE_PATCH, s.revision, signal);
    },
    rename: (s, name, signal) => cloud.patch(s.id, { name }, s.revision, signal),
    // Only the cloud client's own errors say what happened; anything else (a bug) is a plain failure.
    classify: (err) => (err instanceof CloudError ? classifyHttp(err) : { failure: "failed" }),
  };
}

/** Page size of the listing: one request per this many owned shapes per relist. */
export const PAGE_SIZE = 500;

/**
 * The cloud side of list-watch: the cloud client as the core's `ListWatchClient`, restricted to the shapes
 * that carry OUR owner tag. The cloud filters both the listing and the change feed by tag, so a shape that
 * loses our tag (orphaned, or a human stripped it) leaves the cache as a DELETED event, and foreign shapes
 * never cost us a byte.
 */
export function ownedShapesListWatch(
  cloud: Pick<CloudClient, "list" | "watch">,
  ownerId: string,
  pageSize = PAGE_SIZE,
): ListWatchClient<CloudShape> {
  return shapesListWatch(cloud, { [TAG_OWNER]: ownerId }, pageSize);
}

/**
 * The cloud's shapes that carry every one of `tags` (all of them for `{}`: the demo's two-worlds page shows
 * foreign shapes too), listed and followed through the change feed.
 */
export function shapesListWatch(
  cloud: Pick<CloudClient, "list" | "watch">,
  tags: Readonly<Record<string, string>>,
  pageSize = PAGE_SIZE,
): ListWatchClient<CloudShape> {
  return {
    list: (pageToken, signal) =>
      cloud.list({ tags, limit: pageSize, ...(pageToken === undefined ? {} : { pageToken }) }, signal),
    watch: async (since, onEvent, signal, onProgress) => {
      try {
        await cloud.watch(
          Number(since),
          (e) => onEvent({ type: e.type, object: e.shape, revision: e.revision }),
          signal,
          tags,
          // The feed's heartbeat comments: a quiet feed is not taken for a dead one.
          () => onProgress?.(),
        );
      } catch (err) {
        // 410: `since` fell out of the cloud's retained history. The informer relists.
        if (err instanceof CloudError && err.isGone) throw new GoneError(err.message);
        throw err;
      }
    },
  };
}
