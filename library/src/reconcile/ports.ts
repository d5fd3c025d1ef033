/** The ports of the reconcilers: what they read (caches), count (metrics), and are built with. */
import type { Logger } from "../observability/logger.ts";
import type { ExternalClient, ExternalResourcePlugin, IntentRecord, ManagedResource } from "./contract.ts";
import type { ResourceWriter } from "./kube-writer.ts";

export type { EventRecorder } from "../kube/events.ts";

/**
 * Read-only view of a cache.
 *
 * # Guarantees
 * Both calls are synchronous, never call the API and never throw. The objects are frozen: never mutate
 * them. What they return may trail the API server (an informer's cache): a reconciler that must not act on
 * a stale view reads live first.
 */
export interface Lister<T> {
  /** The cached object with this key (`namespace/name`, or `name` when cluster-scoped), if any. */
  get(key: string): T | undefined;
  /** Every cached object. */
  list(): readonly T[];
}

/**
 * Read-only view of the cache of our external objects (those carrying our owner mark), keyed by external name,
 * and findable by the uid mark they carry: a person may rename an object, and its uid mark still says whose
 * it is.
 *
 * # Guarantees
 * Those of {@link Lister}: never calls the API, never throws, frozen objects, may trail the external API (the
 * reconcilers read by name, {@link ExternalClient.getByName}, where a trailing cache could mislead them).
 */
export interface ExternalCache<E> extends Lister<E> {
  /** The cached objects whose uid mark is `uid`, whatever their names. Never calls the API. */
  withUid(uid: string): readonly E[];
}

/** What the reconcilers count; every method is cheap and never throws. */
export interface Counters {
  /** Drift (a managed field someone else changed) was repaired. */
  driftRepaired(): void;
  /**
   * A leak, an external object of ours, was removed (deleted, or let go for deletionPolicy Orphan or during
   * an uninstall): by the intent-record reconciler (a missed deletion) or by the sweep. A record whose object
   * was never created, or is not ours, counts nothing.
   */
  leakRemoved(kind: "intent" | "sweep"): void;
  /** A foreign external object holds a resource's name; it was left untouched. Once per resource and holder, not per recheck. */
  foreignSeen(): void;
  /** An external object of ours under an earlier owner id (`from`) was retagged to our current one. */
  adopted(from: string): void;
}

/**
 * What all three reconcilers of a plugin read and write; `createExternalResourceControllers` builds it once for
 * the three, with the client and the writer fenced (no write once the controllers stop or leadership is lost).
 */
export interface SharedDeps<R extends ManagedResource, E> {
  /** The plugin: its kinds. */
  plugin: ExternalResourcePlugin<R, E>;
  /** The resource cache, keyed `namespace/name`. */
  resources: Lister<R>;
  /** The intent-record cache, keyed by name (= the external name). */
  intents: Lister<IntentRecord>;
  /** The cache of external objects that carry our owner mark, keyed by external name. */
  cache: ExternalCache<E>;
  /** The external API (fenced and traced by the controllers that build it). */
  client: ExternalClient<E>;
  /** The writes to Kubernetes: resources, their status, intent records. */
  kube: ResourceWriter<R>;
  /** What the reconcilers count (metrics). */
  counters: Counters;
  /**
   * Our owner id, stamped as the owner mark (by default one per cluster: see kube/cluster-identity.ts). An
   * object only a live read finds (the cache trails) is ours only with this mark and the uid in question;
   * the sweep deletes only objects whose owner mark is exactly this.
   */
  ownerId: string;
  /**
   * Delete external objects even while the resource's CRD is being deleted (an uninstall). Default false:
   * then they are released, not deleted, and each delete first reads the CRD (uninstall.ts).
   */
  deleteOnUninstall?: boolean;
  /** The logger of the controller. */
  log: Logger;
}
