/**
 * The two conditions every managed resource reports, built by small functions so every reason string lives
 * in one place (Crossplane's convention):
 * - `Synced`: did the last reconcile succeed in making the external object match the spec?
 * - `Ready`: does an external object exist that matches the spec?
 */
import type { Condition } from "./contract.ts";

/**
 * Condition and Event reasons that do not name the external kind, as typed constants (their strings are
 * what people, the docs, the e2e tests and the demo match: never change one). The ones that do name it are
 * built from the plugin's noun ({@link reasonsFor}): `CreatedCloudShape`, `CannotObserveCloudShape`.
 */
export const Reason = {
  /** Ready=True: the external object exists and matches the spec. */
  Available: "Available",
  /** Synced=True: the last reconcile made the external object match the spec. */
  ReconcileSuccess: "ReconcileSuccess",
  /** Synced=False: the paused annotation is set; nothing is observed or written. */
  ReconcilePaused: "ReconcilePaused",
  /** Ready/Synced=False and a Warning event: a foreign object holds our name. */
  NameConflict: "NameConflict",
  /** Ready/Synced=False: an earlier namesake's record or object is being cleaned up first. */
  WaitingForCleanup: "WaitingForCleanup",
  /** A Kubernetes-side step failed: the finalizer, the intent record. */
  CannotAddFinalizer: "CannotAddFinalizer",
  CannotRemoveFinalizer: "CannotRemoveFinalizer",
  CannotRecordIntent: "CannotRecordIntent",
  /** A failure no step foresaw (a bug, or an API answering nonsense): still reported, never thrown. */
  ReconcileError: "ReconcileError",
  /** An event: someone else changed the external object and we changed it back. */
  RepairedCloudDrift: "RepairedCloudDrift",
} as const;

/** A reason of {@link Reason}. */
export type LibraryReason = (typeof Reason)[keyof typeof Reason];

/** The reasons that name the external kind, e.g. for the noun `CloudShape`: `CreatedCloudShape`. */
export function reasonsFor<N extends string>(noun: N) {
  return {
    /** Events: what was done to the external object. */
    Created: `Created${noun}`,
    Updated: `Updated${noun}`,
    Adopted: `Adopted${noun}`,
    Deleted: `Deleted${noun}`,
    Orphaned: `Orphaned${noun}`,
    /** Synced=False: which external call failed. */
    CannotObserve: `CannotObserve${noun}`,
    CannotCreate: `CannotCreate${noun}`,
    CannotUpdate: `CannotUpdate${noun}`,
    CannotDelete: `CannotDelete${noun}`,
  } as const;
}

/** The reasons that name the external kind, for a noun known only at run time. */
export type KindReasons = ReturnType<typeof reasonsFor<string>>;

/** Every reason the library writes into a condition or an event. */
export type ConditionReason = LibraryReason | KindReasons[keyof KindReasons];

/** A condition as the library sets it: its reason one of {@link ConditionReason}. */
export type ConditionInput = Pick<Condition, "status" | "message" | "observedGeneration"> & {
  reason: ConditionReason;
};

/** A condition to set: any but its `lastTransitionTime`, which {@link setCondition} keeps or moves. */
export type ConditionUpdate = Omit<Condition, "lastTransitionTime" | "reason"> & { reason: ConditionReason };

/** `Ready` with the given status. */
export function ready(input: ConditionInput): ConditionUpdate {
  return { type: "Ready", ...input };
}

/** `Synced` with the given status. */
export function synced(input: ConditionInput): ConditionUpdate {
  return { type: "Synced", ...input };
}

/**
 * Returns `conditions` with `next` set. `lastTransitionTime` moves only when the status flips, so writing
 * the same condition twice changes nothing (and costs no status write).
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionUpdate,
  now: Date,
): Condition[] {
  const current = conditions ?? [];
  const previous = current.find((c) => c.type === next.type);
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : rfc3339(now);
  return [...current.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }].sort((a, b) =>
    a.type.localeCompare(b.type),
  );
}

/** A Kubernetes `Time`: RFC 3339 with second precision. */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
