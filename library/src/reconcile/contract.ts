/**
 * The contract between the external-resource library and a plugin: everything the library needs to know
 * about ONE kind of external object (a cloud shape, a DNS record, a bucket) and the custom resource that
 * asks for it. The library (reconciler.ts, intent-reconciler.ts, sweep.ts, controllers.ts) does the
 * pattern — finalizer, intent record, observe by name, create or adopt only what is ours, drift repair,
 * Delete/Orphan, missed deletions, leak sweep, pause, conditions — and never imports a plugin.
 *
 * A plugin gives three things:
 * - {@link ExternalClient}: the five calls on the external API, plus how to read its errors.
 * - {@link ExternalKind}: what the external objects look like to the library (name, id, revision, owner
 *   marks, the fields we manage) and the list-watch that keeps a cache of the ones we own.
 * - {@link ResourceKind}: the custom resource and its intent-record kind in Kubernetes, and the desired
 *   state a resource asks for.
 */
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import type { Json } from "./diff.ts";
import type { ListWatchClient } from "../source/external-informer.ts";
import type { ManagementPolicy } from "./policies.ts";

/** A JSON object: the managed fields of an external object, or a merge patch of them. */
export type JsonObject = { [key: string]: Json | undefined };

/** What happens to the external object when its resource is deleted. */
export type DeletionPolicy = "Delete" | "Orphan";

/** A standard Kubernetes condition (metav1.Condition), as JSON. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** The status fields the library owns on every managed resource; a plugin adds its own (`statusOf`). */
export interface ManagedStatus {
  conditions?: Condition[];
  /** The generation of the spec the last successful reconcile acted on. */
  observedGeneration?: number;
  /** When the controller last changed anything (moves only when something happened). */
  lastSyncTime?: string;
  /** How often drift made by someone else was repaired. */
  driftRepairs?: number;
  /**
   * The external object as last observed ({@link ExternalKind.atProvider}), Crossplane's name: written when
   * `spec.managementPolicies` is not `["*"]` (observe only, no Update: what exists is not what the spec
   * says); `{}` when an observe-only resource finds nothing under its name.
   */
  atProvider?: Record<string, Json>;
}

/**
 * A custom resource that asks for one external object: namespaced, with an optional
 * `spec.deletionPolicy` (Delete when unset), an optional `spec.managementPolicies` (`["*"]` when unset:
 * policies.ts says what each allows) and a status that holds at least {@link ManagedStatus}.
 */
export interface ManagedResource extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  spec: { deletionPolicy?: DeletionPolicy; managementPolicies?: ManagementPolicy[] };
  status?: ManagedStatus;
}

/** Where an intent record is in its life; see {@link IntentRecord}. */
export type IntentPhase = "Pending" | "Created";

/**
 * The intent record, as the library reads it: a cluster-scoped object written BEFORE the external create,
 * named like the external object, that outlives its resource. It is the durable trace that an external
 * object of ours may exist — how a deletion that bypassed the finalizer is still carried out.
 */
export interface IntentRecord {
  /** The record's own name (the external name) and uid. */
  name: string;
  uid: string;
  /** The resource it was written for; `uid` tells it from a later resource of the same name. */
  resource: { namespace: string; name: string; uid: string };
  /** The external object's (deterministic) name. */
  externalName: string;
  /** The resource's deletion policy, kept current: a missed deletion still honours it. */
  deletionPolicy: DeletionPolicy;
  /** The owner id stamped on the external object (for people reading the record). */
  owner?: string;
  /**
   * Pending: an object may or may not exist (what every record says: the library never writes its status).
   * Created: it exists — only in a record an older version wrote, which recorded the create.
   */
  phase: IntentPhase;
  /** The external id, in a record an older version marked Created. */
  externalId?: string;
  /**
   * When the API server created the record (RFC 3339): set by the library's live read (a plugin's
   * `readIntent` need not). A record older than its resource's CRD outlived an uninstall (uninstall.ts).
   */
  createdAt?: string;
}

/** The owner marks an external object carries (its tags or labels), as the library reads them. */
export interface OwnerMarks {
  /** Which controller instance owns it: our owner id, an earlier one of ours, or anyone else's. */
  owner?: string;
  /** The uid of the resource it belongs to: tells this resource's object from an earlier namesake's. */
  uid?: string;
}

/** What a resource asks for: the external name, and the managed fields (owner marks included). */
export interface Desired {
  /** Deterministic: the same resource always maps to the same external name. */
  name: string;
  /**
   * The fields we manage, as the external object shows them: compared with {@link ExternalKind.fieldsOf}
   * of the observed object, and only the differences are written (`null`: must be absent). Include the
   * owner marks: an object whose owner or uid mark was edited is no longer this resource's (it never reaches
   * the diff), but any other mark (a name for people) that a person strips or edits is drift, repaired.
   */
  fields: JsonObject;
}

/** How a failed external call is read: what the library does next depends only on this. */
export type ExternalFailure =
  /** The object does not exist (any more): for a delete, that is success. */
  | "notFound"
  /** A create met an object that already holds the name (whose it is is read next). */
  | "conflict"
  /** A conditional write met a newer revision: the change feed brings it, then we retry. */
  | "stale"
  /** The API asked us to slow down (429) or is down (503, network): retry after `retryAfterMs` or backoff. */
  | "throttled"
  /**
   * The API refused this input for good (e.g. 422, 400): retrying the same spec cannot help. A create or an
   * update (whose input is the spec) that fails so is not retried: `Synced=False`, reason `SpecRejected`,
   * with the API's own message, one Warning Event, and the resource waits until its spec changes (a new
   * generation) or the refresh annotation asks to look again. Any other call so refused (a read, a delete, a
   * release: their input is not the spec) is retried with backoff, like "failed".
   */
  | "rejected"
  /** Anything else: retried with backoff. */
  | "failed";

/**
 * The external API's calls. Each is ONE request, never retried inside (the queue retries), and honours
 * `signal` (the controller stopped or lost leadership: abort and reject soon). On failure each rejects with an
 * error that {@link ExternalClient.classify} reads.
 *
 * The API must offer: unique names (a create of a taken name fails with "conflict"), a consistent read by
 * name, conditional writes (by revision), and a list filtered by owner with a revision plus a watch that
 * resumes from it ({@link ExternalKind.listWatch}).
 */
export interface ExternalClient<E> {
  /**
   * Called when the cache may trail: after a create "conflict", before a destructive action on an object
   * only the intent record knows of, and while a foreign object holds our name. A consistent read that
   * never trails. Resolves undefined when no object holds `name`, whatever its owner.
   */
  getByName(name: string, signal: AbortSignal): Promise<E | undefined>;
  /**
   * Called when no object holds the desired name. Creates it with exactly `desired.fields` (nulls meaning
   * "absent"). Rejects "conflict" when the name is taken (the library then reads the holder and decides).
   */
  create(desired: Desired, signal: AbortSignal): Promise<E>;
  /**
   * Called when an object of ours differs from the desired state. Applies `patch` (a JSON merge patch of
   * managed fields) only if the object is still at `observed`'s revision, else rejects "stale".
   */
  update(observed: E, patch: JsonObject, signal: AbortSignal): Promise<E>;
  /** Called to delete an object of ours, only if still at `observed`'s revision ("stale" otherwise). */
  delete(observed: E, signal: AbortSignal): Promise<void>;
  /**
   * Called for deletionPolicy Orphan: removes our owner marks and nothing else, only if still at
   * `observed`'s revision. From then on the object is foreign to us and never written again.
   */
  release(observed: E, signal: AbortSignal): Promise<void>;
  /**
   * Optional. Called when an object of ours (our owner mark and the resource's uid mark) was renamed behind
   * our back, and the resource's management policies allow Update: gives it back the resource's external
   * `name`, only if still at `observed`'s revision ("stale" otherwise), and rejects "conflict" when another
   * object holds that name. Resolves the renamed object (same id). An API that cannot rename leaves it out:
   * a renamed object is then left under its new name, and the resource says so (`Renamed`).
   */
  rename?(observed: E, name: string, signal: AbortSignal): Promise<E>;
  /** Reads any error the calls above reject with. Pure, never throws. */
  classify(err: unknown): { failure: ExternalFailure; retryAfterMs?: number };
}

/**
 * How most HTTP APIs say it, for a plugin's {@link ExternalClient.classify}: 404 notFound, 409 conflict,
 * 412 stale, 429, 503 and no answer at all (status 0) throttled, 400 and 422 rejected (the request itself is
 * wrong: the same one is refused again), anything else failed; with the Retry-After the API gave. An API
 * whose 400 or 422 can pass on a retry of the same request classifies those itself.
 */
export function classifyHttp(error: {
  status: number;
  retryAfterMs?: number | undefined;
}): ReturnType<ExternalClient<unknown>["classify"]> {
  const failure: ExternalFailure =
    error.status === 404
      ? "notFound"
      : error.status === 409
        ? "conflict"
        : error.status === 412
          ? "stale"
          : error.status === 0 || error.status === 429 || error.status === 503
            ? "throttled"
            : error.status === 400 || error.status === 422
              ? "rejected"
              : "failed";
  return error.retryAfterMs === undefined ? { failure } : { failure, retryAfterMs: error.retryAfterMs };
}

/** What the library needs to see in an external object. All pure functions. */
export interface ExternalKind<E> {
  /** Names the external objects in messages ("cloud shape") and event reasons ("CloudShape"). */
  readonly noun: { text: string; reason: string };
  /** The external object's name (unique in the API). */
  nameOf(obj: E): string;
  /** The external object's id (recorded in the intent record and the status). */
  idOf(obj: E): string;
  /** Its revision (a number that grows with every change), for the cache to drop stale events. */
  revisionOf(obj: E): number;
  /** The owner marks it carries. */
  marksOf(obj: E): OwnerMarks;
  /** Its managed fields, in the shape of {@link Desired.fields}, for the diff. */
  fieldsOf(obj: E): JsonObject;
  /**
   * What a person wants to see of the observed object in the resource's `status.atProvider` (e.g. a cloud
   * shape's id, type, color and size): written when the resource's management policies are not `["*"]`
   * (policies.ts). Optional: without it, no `atProvider`.
   */
  atProvider?(obj: E): Record<string, Json>;
  /**
   * The list-watch over the objects that carry `ownerId` as their owner mark, filtered by the API itself:
   * an object that loses the mark leaves the cache as a deletion. See source/external-informer.ts.
   */
  listWatch(ownerId: string): ListWatchClient<E>;
}

/** The custom resource, its intent-record kind, and the desired state. */
export interface ResourceKind<R extends ManagedResource> {
  /** API group and version of both custom resources. */
  readonly group: string;
  readonly version: string;
  /** The resource's kind and plural (namespaced), and the intent record's plural and kind (cluster-scoped). */
  readonly kind: string;
  readonly plural: string;
  readonly intentPlural: string;
  readonly intentKind: string;
  /** The finalizer that holds a deletion until the external object is deleted or released. */
  readonly finalizer: string;
  /** The annotation that, when "true", stops every write for the resource. */
  readonly pausedAnnotation: string;
  /** The external name of a resource; also its intent record's name. Deterministic. */
  externalNameOf(namespace: string, name: string): string;
  /** The inverse: which resource an external name belongs to, or undefined when none could. */
  resourceOf(externalName: string): { namespace: string; name: string } | undefined;
  /**
   * What `resource` asks for, with `marks` (owner id and uid, and the resource key for a mark people read)
   * written into the fields. Pure: the same resource and marks give the same fields. The fields whose
   * values change with `marks` are the owner marks: an adoption under management policies without Update
   * writes those alone (adoption.ts, `markFieldsOf`), so keep the spec out of them.
   */
  desired(resource: R, marks: Required<OwnerMarks> & { resourceKey: string }): Desired;
  /** The resource's own status fields that describe the observed object (e.g. its id), merged into status. */
  statusOf(observed: { id: string; name: string }): Record<string, Json>;
  /** Reads an intent record from its Kubernetes object (the plugin's CRD names its fields). */
  readIntent(obj: KubernetesObject): IntentRecord;
  /** The `spec` of an intent record, for a create or a merge patch. */
  intentSpec(record: Omit<IntentRecord, "name" | "uid" | "phase" | "externalId">): Record<string, Json>;
}

/** A plugin: one kind of external object, and the custom resource that asks for it. */
export interface ExternalResourcePlugin<R extends ManagedResource, E> {
  readonly resource: ResourceKind<R>;
  readonly external: ExternalKind<E>;
}
