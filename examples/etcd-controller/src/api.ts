/**
 * The Kubernetes side of the etcd controller: the `ConfigEntry` and `ConfigEntryRef` custom resources
 * (../crds/) as TypeScript types, the names this controller stamps on things (finalizer, annotations, the
 * marks inside a stored value), and how a ConfigEntry's name maps to its etcd key.
 */
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import {
  adoptionAnnotation,
  type DeletionPolicy,
  type IntentPhase,
  type ManagedStatus,
  type ManagementPolicy,
} from "reconcile-kit";

/** API group and version of both custom resources. */
export const GROUP = "config.example.com";
export const VERSION = "v1alpha1";
/** Plural names, as in API paths: `configentries` (namespaced) and `configentryrefs` (cluster-scoped). */
export const CONFIG_ENTRIES = "configentries";
export const CONFIG_ENTRY_REFS = "configentryrefs";

/** The finalizer that holds a ConfigEntry's deletion until its etcd key is deleted (or released). */
export const FINALIZER = "config.example.com/entry";
/** Annotation: "true" stops every write for this ConfigEntry (Synced=False ReconcilePaused says so). */
export const PAUSED_ANNOTATION = "config.example.com/paused";
/** Annotation: any new value makes the controller look again at once. */
export const REFRESH_ANNOTATION = "config.example.com/refresh";
/**
 * Annotation `config.example.com/adoption-policy`: `adopt` takes over the key of the ConfigEntry's name when
 * its value carries no owner mark (never creates one), `adopt-or-create` too but creates it when absent; a
 * key whose value carries another owner's mark is never adopted (the library's adoption.ts).
 */
export const ADOPTION_POLICY_ANNOTATION = adoptionAnnotation({ group: GROUP });

/** Every key this controller may write lies under this prefix. */
export const KEY_PREFIX = "/config/";

/**
 * `ConfigEntry.spec`: the value the etcd key holds. `value` is required by the CRD unless
 * `managementPolicies` leaves out Create (observe only: the entry asks for nothing, it only looks).
 */
export interface ConfigEntrySpec {
  value?: string;
  deletionPolicy?: DeletionPolicy;
  /** Crossplane's management policies (reconcile-kit's policies.ts): `["*"]` when unset. */
  managementPolicies?: ManagementPolicy[];
}

/** `ConfigEntry.status`: the library's fields, and which key holds the value. */
export interface ConfigEntryStatus extends ManagedStatus {
  /** The key's create revision: it tells this key from one deleted and created again under the same name. */
  createRevision?: string;
  key?: string;
}

/** A `ConfigEntry` custom resource. */
export interface ConfigEntry extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  spec: ConfigEntrySpec;
  status?: ConfigEntryStatus;
}

/** A `ConfigEntryRef`: the intent record, written before the etcd create, named like the external entry. */
export interface ConfigEntryRef extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string };
  spec: {
    entry: { namespace: string; name: string; uid: string };
    key: string;
    deletionPolicy?: DeletionPolicy;
    owner?: string;
  };
  status?: { phase?: IntentPhase; createRevision?: string };
}

/**
 * The external name of a ConfigEntry: `<name>.<namespace>`. It also names the entry's ConfigEntryRef, a
 * Kubernetes object, so it cannot be the key itself (a key holds slashes); {@link keyOfName} maps it to the key.
 */
export function entryNameOf(namespace: string, name: string): string {
  return `${name}.${namespace}`;
}

/**
 * The inverse of {@link entryNameOf}, or undefined when `entryName` cannot be a ConfigEntry's. A namespace
 * holds no dot while a name may, so the LAST dot splits them.
 */
export function entryOfName(entryName: string): { namespace: string; name: string } | undefined {
  const dot = entryName.lastIndexOf(".");
  if (dot <= 0 || dot === entryName.length - 1) return undefined;
  const namespace = entryName.slice(dot + 1);
  const name = entryName.slice(0, dot);
  if (name.includes("/") || namespace.includes("/")) return undefined;
  return { namespace, name };
}

/** The etcd key of an external name: `/config/<namespace>/<name>`; undefined when it is no entry's name. */
export function keyOfName(entryName: string): string | undefined {
  const entry = entryOfName(entryName);
  return entry && `${KEY_PREFIX}${entry.namespace}/${entry.name}`;
}

/**
 * The external name of an etcd key, `<name>.<namespace>` for `/config/<namespace>/<name>`; the key itself
 * for any other key (no ConfigEntry maps to it, so the library leaves it alone).
 */
export function nameOfKey(key: string): string {
  if (!key.startsWith(KEY_PREFIX)) return key;
  const parts = key.slice(KEY_PREFIX.length).split("/");
  if (parts.length !== 2) return key;
  const [namespace, name] = parts as [string, string];
  if (namespace === "" || name === "" || namespace.includes(".")) return key;
  return entryNameOf(namespace, name);
}
