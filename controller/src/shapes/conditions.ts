/**
 * The two conditions a Shape reports, built by small functions so every reason string lives in one place.
 * - `Synced`: did the last reconcile succeed in making the cloud match the spec?
 * - `Ready`: does a cloud shape exist that matches the spec?
 */
import type { Condition } from "./api.ts";

/** Reasons, by kind: success, waiting, or failure. */
export const Reason = {
  Available: "Available",
  ReconcileSuccess: "ReconcileSuccess",
  ReconcilePaused: "ReconcilePaused",
  NameConflict: "NameConflict",
  CannotObserve: "CannotObserveCloudShape",
  CannotCreate: "CannotCreateCloudShape",
  CannotUpdate: "CannotUpdateCloudShape",
  Creating: "Creating",
  WaitingForCleanup: "WaitingForCleanup",
} as const;

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
