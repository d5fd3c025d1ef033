/**
 * The two conditions every managed resource reports, built by small functions so every reason string lives
 * in one place (Crossplane's convention):
 * - `Synced`: did the last reconcile succeed in making the external object match the spec?
 * - `Ready`: does an external object exist that matches the spec?
 */
import type { Condition } from "./contract.ts";

/**
 * Condition reasons that do not name the external kind. The ones that do are built from the plugin's noun
 * ({@link reasonsFor}): `CreatedCloudShape`, `CannotObserveCloudShape`.
 */
export const Reason = {
  Available: "Available",
  ReconcileSuccess: "ReconcileSuccess",
  ReconcilePaused: "ReconcilePaused",
  NameConflict: "NameConflict",
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

/** The reasons that name the external kind, e.g. for the noun `CloudShape`: `CreatedCloudShape`. */
export function reasonsFor(noun: string) {
  return {
    Created: `Created${noun}`,
    Updated: `Updated${noun}`,
    Adopted: `Adopted${noun}`,
    Deleted: `Deleted${noun}`,
    Orphaned: `Orphaned${noun}`,
    CannotObserve: `CannotObserve${noun}`,
    CannotCreate: `CannotCreate${noun}`,
    CannotUpdate: `CannotUpdate${noun}`,
    CannotDelete: `CannotDelete${noun}`,
  } as const;
}

type ConditionInput = Pick<Condition, "status" | "reason" | "message" | "observedGeneration">;

/** `Ready` with the given status. */
export function ready(input: ConditionInput): Omit<Condition, "lastTransitionTime"> {
  return { type: "Ready", ...input };
}

/** `Synced` with the given status. */
export function synced(input: ConditionInput): Omit<Condition, "lastTransitionTime"> {
  return { type: "Synced", ...input };
}

/**
 * Returns `conditions` with `next` set. `lastTransitionTime` moves only when the status flips, so writing
 * the same condition twice changes nothing (and costs no status write).
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, "lastTransitionTime">,
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
