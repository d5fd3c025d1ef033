/**
 * The Kubernetes side of the DNS controller: the `Record` and `RecordRef` custom resources (../crds/) as
 * TypeScript types, and the names this controller stamps on things (finalizer, annotations, labels).
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
export const GROUP = "dns.example.com";
export const VERSION = "v1alpha1";
/** Plural names, as in API paths: `records` (namespaced) and `recordrefs` (cluster-scoped). */
export const RECORDS = "records";
export const RECORDREFS = "recordrefs";

/** The finalizer that holds a Record's deletion until its zone record is deleted (or released). */
export const FINALIZER = "dns.example.com/record";
/** Annotation: "true" stops every write for this Record (Synced=False ReconcilePaused says so). */
export const PAUSED_ANNOTATION = "dns.example.com/paused";
/** Annotation: any new value makes the controller look again at once. */
export const REFRESH_ANNOTATION = "dns.example.com/refresh";
/**
 * Annotation `dns.example.com/adoption-policy`: `adopt` takes over the zone record of the Record's name when
 * it carries no owner label (never creates one), `adopt-or-create` too but creates it when absent; a record
 * with another owner's label is never adopted (the library's adoption.ts).
 */
export const ADOPTION_POLICY_ANNOTATION = adoptionAnnotation({ group: GROUP });

/** The labels on every zone record we create: whose it is (owner id) and which Record (uid, name). */
export const LABEL_OWNER = "owner";
export const LABEL_UID = "k8s-uid";
export const LABEL_NAME = "k8s-name";

/** The zone every record lives in. */
export const ZONE = "example.test";

/** The record types the zone serves. */
export type RecordType = "A" | "CNAME" | "TXT";

/**
 * `Record.spec`: the desired zone record. `type` and `value` are required by the CRD unless
 * `managementPolicies` leaves out Create (observe only: the Record asks for nothing, it only looks).
 */
export interface RecordSpec {
  type?: RecordType;
  value?: string;
  /** Seconds; the zone's default when unset. */
  ttl?: number;
  deletionPolicy?: DeletionPolicy;
  /** Crossplane's management policies (reconcile-kit's policies.ts): `["*"]` when unset. */
  managementPolicies?: ManagementPolicy[];
}

/** `Record.status`: the library's fields, and where the zone record is. */
export interface RecordStatus extends ManagedStatus {
  recordId?: string;
  fqdn?: string;
}

/** A `Record` custom resource (kind Record; named DnsRecord here, as `Record` is TypeScript's own type). */
export interface DnsRecord extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  spec: RecordSpec;
  status?: RecordStatus;
}

/** A `RecordRef`: the intent record, written before the zone create, named like the zone record. */
export interface RecordRef extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string };
  spec: {
    record: { namespace: string; name: string; uid: string };
    fqdn: string;
    deletionPolicy?: DeletionPolicy;
    owner?: string;
  };
  status?: { phase?: IntentPhase; recordId?: string };
}

/** The zone record name of a Record: `<name>.<namespace>.example.test`. */
export function fqdnOf(namespace: string, name: string): string {
  return `${name}.${namespace}.${ZONE}`;
}

/**
 * The inverse of {@link fqdnOf}, or undefined when `fqdn` cannot be a Record's. A namespace holds no dot
 * while a Record's name may, so the LAST dot before the zone splits them.
 */
export function recordOfFqdn(fqdn: string): { namespace: string; name: string } | undefined {
  if (!fqdn.endsWith(`.${ZONE}`)) return undefined;
  const rest = fqdn.slice(0, -ZONE.length - 1);
  const dot = rest.lastIndexOf(".");
  if (dot <= 0 || dot === rest.length - 1) return undefined;
  return { namespace: rest.slice(dot + 1), name: rest.slice(0, dot) };
}
