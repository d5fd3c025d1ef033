/** What the library's reconcilers read (caches) and count (metrics). Writes are in kube-writer.ts and contract.ts. */
export type { EventRecorder } from "../events.ts";

/** Read-only view of a cache. Objects are frozen: never mutate them. */
export interface Lister<T> {
  /** The cached object with this key (`namespace/name`, or `name` when cluster-scoped), if any. */
  get(key: string): T | undefined;
  /** Every cached object. */
  list(): readonly T[];
}

/** What the reconcilers count; every method is cheap and never throws. */
export interface Counters {
  driftRepaired(): void;
  /** A leak was removed: by the intent-record reconciler (a missed deletion) or by the sweep. */
  leakRemoved(kind: "intent" | "sweep"): void;
  /** A foreign external object was met where we needed one (it holds our name); it was left untouched. */
  foreignSeen(): void;
  /** An external object of ours under an earlier owner id (`from`) was retagged to our current one. */
  adopted(from: string): void;
}
