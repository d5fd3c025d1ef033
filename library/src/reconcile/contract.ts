/**
 * The contract between the library and a plugin: {@link ExternalResourcePlugin}, {@link ExternalClient} and
 * the types they speak in. What each side guarantees and assumes is on those symbols.
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
  /** What the condition is about: the library writes `Ready` and `Synced`. */
  type: string;
  /** Whether it holds; `Unknown` while the controller cannot tell. */
  status: "True" | "False" | "Unknown";
  /** The generation of the spec the condition was computed from. */
  observedGeneration?: number;
  /** Why, in one CamelCase word (the library's reasons are typed constants). */
  reason: string;
  /** Why, for a person: one sentence. */
  message: string;
  /** When `status` last changed (RFC 3339); a new message or reason alone does not move it. */
  lastTransitionTime: string;
}

/** The status fields the library owns on every managed resource; a plugin adds its own (`statusOf`). */
export interface ManagedStatus {
  /** `Ready` (does the external object exist as asked) and `Synced` (did the last reconcile succeed). */
  conditions?: Condition[];
  /**
   * The generation of the spec the last reconcile that did not fail acted on: a success, or a stop it
   * reports (a name conflict, a wait for an earlier namesake's cleanup, a rename left, observe only). A
   * failed step leaves it as it was, so a spec change that did not land is still told from drift.
   */
  observedGeneration?: number;
  /** When the controller last wrote this status (only on a change: it moves when something happened). */
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
  /** The object's metadata; a resource read from the API server always has a name, namespace and uid. */
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  /** The fields of the spec the library reads; a plugin's resource adds its own. */
  spec: { deletionPolicy?: DeletionPolicy; managementPolicies?: ManagementPolicy[] };
  /** The status the library writes (a plugin's {@link ResourceKind.statusOf} adds fields to it). */
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
  /** The record's own name: the external name. */
  name: string;
  /** The record's own uid. */
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
   *
   * A plugin need never return it: an API that refuses no input for good (a key-value store that keeps any
   * bytes) has nothing to classify so, and every failure is then retried. Its conformance subject says why
   * (`Subject.refusesNothing`), and the rejected-input scenario is skipped.
   */
  | "rejected"
  /** Anything else: retried with backoff. */
  | "failed";

/**
 * The external API's calls, as a plugin implements them for the library's reconcilers.
 *
 * # Assumptions (what the library relies on; a plugin must provide it)
 * - Each call is ONE request, never retried inside: the work queue retries, with backoff, from the
 *   failure {@link ExternalClient.classify} reads.
 * - Each honours `signal`: when it aborts (the controller stopped, or lost leadership and its write fence
 *   closed) the call aborts its request and rejects soon. A call that resolves after the abort is ignored.
 * - The API offers unique names (a create of a taken name fails with `"conflict"`), a consistent read by
 *   name, conditional writes (by revision: `"stale"` when the object moved on), and a list filtered by
 *   owner with a revision plus a watch that resumes from it ({@link ExternalKind.listWatch}).
 *
 * # Guarantees (what the library does with it)
 * - On a resource's behalf it writes only objects that carry its owner mark and the resource's uid mark,
 *   one with an earlier owner id of its own and that uid mark (an upgrade's), or one with no owner mark
 *   that the resource asks to adopt; the sweep deletes only objects with its owner mark that nothing
 *   claims. Every update, delete and release is at the revision it observed.
 * - No write is made for a paused resource, and none once the write fence closes (leadership lost, a
 *   shutdown): the fenced client the controllers wrap it in refuses the call before it reaches the plugin.
 *
 * # Errors
 * A failed call rejects with any error; {@link ExternalClient.classify} reads it into an
 * {@link ExternalFailure}, and the library acts on that alone.
 */
export interface ExternalClient<E> {
  /**
   * Called when the cache may trail or cannot hold the object: after a create "conflict", before a
   * destructive action on an object only the intent record knows of, while a foreign object holds our
   * name, for an adoption on request, and for an observe-only resource (whose object need not be ours). A
   * consistent read that never trails. Resolves undefined when no object holds `name`, whatever its owner.
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
   * Called for deletionPolicy Orphan (and for every object of ours at an uninstall): removes our marks (the
   * owner and uid marks, and any other of ours, such as a name for people) and nothing else, only if still
   * at `observed`'s revision. What it must keep, as the conformance suite checks it: the same object (its
   * id) under the same name, with every field but the marks as it was; the owner and uid marks are gone. A
   * release that recreates the object, renames it or rewrites any other field fails there. From then on
   * the object is foreign to us and never written again; the change feed reports it as a deletion (see
   * {@link ExternalKind.listWatch}).
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

/**
 * What the library needs to see in an external object.
 *
 * # Assumptions
 * Every function is pure and cheap (called on every event and every reconcile) and never throws; an
 * object's name is unique in the API and its revision grows with every change.
 */
export interface ExternalKind<E> {
  /** Names the external objects in messages and event reasons (the Shapes plugin: "cloud shape", "CloudShape"). */
  readonly noun: { text: string; reason: string };
  /** The external object's name (unique in the API). */
  nameOf(obj: E): string;
  /** The external object's id: in the resource's status ({@link ResourceKind.statusOf}) and in messages. */
  idOf(obj: E): string;
  /** Its revision (a number that grows with every change), for the cache to drop stale events. */
  revisionOf(obj: E): number;
  /** The owner marks it carries. */
  marksOf(obj: E): OwnerMarks;
  /** Its managed fields, in the shape of {@link Desired.fields}, for the diff. */
  fieldsOf(obj: E): JsonObject;
  /**
   * What a person wants to see of the observed object in the resource's `status.atProvider` (e.g. the Shapes
   * plugin's cloud shape: its id, type, color and size): written when the resource's management policies are
   * not `["*"]` (policies.ts). Optional: without it, no `atProvider`.
   */
  atProvider?(obj: E): Record<string, Json>;
  /**
   * The list-watch over the objects that carry `ownerId` as their owner mark: the library's cache holds
   * what it lists and watches, and keeps no filter of its own. See source/external-informer.ts.
   *
   * - Where the filter lives: in the API when it can filter on the server (tags, label selectors: foreign
   *   objects then cost nothing), else in this adapter, which drops from each page, and from the feed, every
   *   object without the mark. Either way the listing and the feed must agree.
   * - An object that loses the mark (a release, a person's edit) must leave the cache: the feed reports a
   *   `DELETED` event for it, its `object` the object as it is now or as it was (only its name and id are
   *   read), and its `revision` the revision of the change that removed the mark — newer than any version
   *   the cache holds. An event at the object's older revision is dropped as stale, and the object would
   *   stay cached, ours to the library, until the next relist. An adapter that filters itself and cannot
   *   tell whether an unmarked object had the mark before may report every such change as `DELETED`: a
   *   deletion of what the cache does not hold is ignored.
   * - An object that gains the mark arrives as `ADDED` or `MODIFIED` (either is stored).
   * - A real deletion is a `DELETED` event with the revision of the delete.
   */
  listWatch(ownerId: string): ListWatchClient<E>;
  /**
   * The longest the watch may bring neither an event nor a heartbeat or bookmark (the watch's `onProgress`)
   * before the library takes the connection for dead, drops it and resumes from the last revision seen
   * (relisting if that revision is gone). A connection that dies without closing thus stalls the cache at
   * most this long, not until the next relist; the restart is logged and counted in
   * `informer_restarts_total`. Keep it a few times the API's heartbeat interval. Optional: default 90 s.
   */
  readonly watchIdleMs?: number;
}

/**
 * The custom resource, its intent-record kind, and the desired state.
 *
 * # Assumptions
 * Both CRDs are installed (the resource namespaced, the intent record cluster-scoped) and the controller's
 * service account may read and write them; `externalNameOf` and `resourceOf` are inverses, and the
 * functions are pure.
 */
export interface ResourceKind<R extends ManagedResource> {
  /** API group of both custom resources. */
  readonly group: string;
  /** API version of both custom resources. */
  readonly version: string;
  /** The resource's kind (namespaced). */
  readonly kind: string;
  /** The resource's plural (its URL path segment). */
  readonly plural: string;
  /** The intent record's plural (cluster-scoped). */
  readonly intentPlural: string;
  /** The intent record's kind. */
  readonly intentKind: string;
  /** The finalizer that holds a deletion until the external object is deleted or released. */
  readonly finalizer: string;
  /**
   * The annotation that, when "true", stops every write for the resource but its conditions (and its
   * intent record's deletion policy, kept current), its deletion included, and every read of its object.
   */
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

/**
 * A plugin: one kind of external object (a cloud shape, a DNS record, a bucket) and the custom resource
 * that asks for it. With an {@link ExternalClient}, it is all `createExternalResourceControllers` needs; the
 * library does the pattern and never imports a plugin.
 *
 * # Guarantees (what the library does for every plugin)
 * - One external object per resource, under the deterministic name {@link ResourceKind.externalNameOf}
 *   gives; an intent record is written BEFORE the create, so an object of ours is never unknown to us.
 * - Only objects of ours are written: our owner mark and the resource's uid mark (or an earlier owner id
 *   of ours with that uid mark, an upgrade's), or an adoption the resource asks for; the sweep deletes only
 *   objects with our owner mark. A foreign object that holds the name is reported (`NameConflict`), never
 *   touched.
 * - Drift in the managed fields ({@link Desired.fields}) is repaired with a merge patch of the difference.
 * - Deletion: the finalizer holds the resource until its object is deleted (`Delete`) or released
 *   (`Orphan`: owner marks removed); a deletion that bypassed the finalizer is carried out from the intent
 *   record; an object of ours that nothing claims is deleted by the sweep after a grace period.
 * - `spec.managementPolicies` limits what is done (policies.ts); the paused annotation stops every write
 *   but the resource's conditions and its intent record's deletion policy.
 * - `Ready` and `Synced` conditions, and an Event per change, say what happened and why.
 *
 * # Assumptions
 * Those of {@link ExternalClient}, {@link ExternalKind} and {@link ResourceKind}.
 */
export interface ExternalResourcePlugin<R extends ManagedResource, E> {
  /** The custom resource and its intent-record kind. */
  readonly resource: ResourceKind<R>;
  /** What the external objects look like to the library. */
  readonly external: ExternalKind<E>;
}
