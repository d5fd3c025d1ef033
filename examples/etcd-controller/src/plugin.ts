/**
 * etcd keys, as the external-resource library sees them (reconcile-kit's contract): the `ConfigEntry`
 * custom resource and its `ConfigEntryRef` intent record, the etcd key it asks for, and the five etcd calls.
 * Everything here is about etcd keys; the pattern (finalizer, intent record, ownership, drift, deletion,
 * leaks, pause) is the library's.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ExternalClient, ExternalResourcePlugin, IntentRecord, JsonObject } from "reconcile-kit";
import {
  CONFIG_ENTRIES,
  CONFIG_ENTRY_REFS,
  type ConfigEntry,
  type ConfigEntryRef,
  entryNameOf,
  entryOfName,
  FINALIZER,
  GROUP,
  keyOfName,
  PAUSED_ANNOTATION,
  VERSION,
} from "./api.ts";
import { EtcdError, type EtcdClient, type EtcdEntry, MARK_OWNER, MARK_RESOURCE, MARK_UID } from "./client.ts";

/**
 * The ConfigEntry plugin, over an etcd client (for the list-watch of our keys). `watchIdleMs`: the watch's
 * idle bound (the library's default when undefined), a few times etcd's progress-notify interval.
 */
export function etcdPlugin(
  etcd: Pick<EtcdClient, "listWatch">,
  options: { watchIdleMs?: number | undefined } = {},
): ExternalResourcePlugin<ConfigEntry, EtcdEntry> {
  return {
    resource: {
      group: GROUP,
      version: VERSION,
      kind: "ConfigEntry",
      plural: CONFIG_ENTRIES,
      intentKind: "ConfigEntryRef",
      intentPlural: CONFIG_ENTRY_REFS,
      finalizer: FINALIZER,
      pausedAnnotation: PAUSED_ANNOTATION,
      externalNameOf: entryNameOf,
      resourceOf: entryOfName,
      // The stored value a ConfigEntry asks for: its value, and our three marks beside it (etcd has no labels).
      desired: (entry, marks) => ({
        name: entryNameOf(entry.metadata.namespace, entry.metadata.name),
        fields: {
          value: entry.spec.value ?? null,
          [MARK_OWNER]: marks.owner,
          [MARK_UID]: marks.uid,
          [MARK_RESOURCE]: marks.resourceKey,
        },
      }),
      statusOf: (observed) => ({
        createRevision: observed.id,
        key: keyOfName(observed.name) ?? observed.name,
      }),
      readIntent: (obj: KubernetesObject): IntentRecord => {
        const ref = obj as ConfigEntryRef;
        return {
          name: ref.metadata.name,
          uid: ref.metadata.uid ?? "",
          resource: ref.spec.entry,
          externalName: ref.metadata.name,
          deletionPolicy: ref.spec.deletionPolicy ?? "Delete",
          ...(ref.spec.owner === undefined ? {} : { owner: ref.spec.owner }),
          phase: ref.status?.phase ?? "Pending",
          ...(ref.status?.createRevision === undefined ? {} : { externalId: ref.status.createRevision }),
        };
      },
      intentSpec: (record) => ({
        entry: record.resource,
        key: keyOfName(record.externalName) ?? record.externalName,
        deletionPolicy: record.deletionPolicy,
        ...(record.owner === undefined ? {} : { owner: record.owner }),
      }),
    },
    external: {
      noun: { text: "etcd key", reason: "EtcdKey" },
      nameOf: (e) => e.name,
      idOf: (e) => e.id,
      revisionOf: (e) => e.revision,
      marksOf: (e) => ({ owner: stringOf(e.fields[MARK_OWNER]), uid: stringOf(e.fields[MARK_UID]) }),
      // The whole stored object: only the keys of the desired fields are compared.
      fieldsOf: (e) => e.fields,
      // status.atProvider: what a person wants to see of an observed key, and whose it is.
      atProvider: (e) => ({
        id: e.id,
        key: e.key,
        ...(typeof e.fields.value === "string" ? { value: e.fields.value } : {}),
        ...(stringOf(e.fields[MARK_OWNER]) === undefined
          ? {}
          : { owner: stringOf(e.fields[MARK_OWNER]) ?? "" }),
      }),
      listWatch: (ownerId) => etcd.listWatch(ownerId),
      ...(options.watchIdleMs === undefined ? {} : { watchIdleMs: options.watchIdleMs }),
    },
  };
}

/** A mark's value when it is a string. */
function stringOf(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** Our marks removed, the value and anything else kept: the patch that lets a key go (deletionPolicy Orphan). */
const RELEASE: JsonObject = { [MARK_OWNER]: null, [MARK_UID]: null, [MARK_RESOURCE]: null };

/**
 * The etcd calls of the contract, each ONE transaction conditional on the key's revisions. No rename: an etcd
 * key cannot be renamed (a new key is a new create revision, a new object).
 */
export function etcdEntriesClient(
  etcd: Pick<EtcdClient, "getByName" | "create" | "update" | "delete">,
): ExternalClient<EtcdEntry> {
  return {
    getByName: (name, signal) => etcd.getByName(name, signal),
    create: async ({ name, fields }, signal) => {
      const key = keyOfName(name);
      if (key === undefined) throw new EtcdError(`${name} names no etcd key`, "rejected", 0);
      return etcd.create(key, fields, signal);
    },
    update: (e, patch, signal) => etcd.update(e, patch, signal),
    delete: (e, signal) => etcd.delete(e, signal),
    release: async (e, signal) => {
      await etcd.update(e, RELEASE, signal);
    },
    // Only the etcd client's own errors say what happened; anything else (a bug) is a plain failure.
    classify: (err) => ({ failure: err instanceof EtcdError ? err.failure : "failed" }),
  };
}
