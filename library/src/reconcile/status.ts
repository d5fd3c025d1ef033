/**
 * The two conditions every managed resource reports, built by small functions so every reason string lives
 * in one place (Crossplane's convention). Both speak of ONE generation: every status write of a reconcile
 * sets both, each with `observedGeneration` = the `metadata.generation` of the spec that reconcile worked
 * from. Both describe that reconcile (the last one that wrote status), never an older one.
 *
 * - `Synced`: did that reconcile succeed? True (`ReconcileSuccess`): it made the external object match the
 *   spec of that generation. False: it did not, and the reason says why — the step that failed
 *   (`CannotCreate<Noun>`, `CannotRecordIntent`, `ReconcileError`, ...) or why it stopped
 *   (`ReconcilePaused`, `NameConflict`, `Renamed`, `WaitingForCleanup`, `SpecRejected`: the external API refused the
 *   spec for good, so a person must change it; not retried until the spec changes or a refresh; and the
 *   adoption policy's `OwnedByAnother`, `NothingToAdopt`, `InvalidAdoptionPolicy`: adoption.ts).
 * - `Ready`: does an external object of this resource exist that matches the spec of that generation, as far
 *   as that reconcile saw when it ended — whether it succeeded or not:
 *   - True (`Available`) only when it saw one: in the cache or a live read, or in the answer of its own
 *     create or update — ours (our owner mark, this resource's uid) and its managed fields equal to the
 *     spec. Nothing else writes True, and a failure never keeps an earlier True. Two exceptions, both asked
 *     for by `spec.managementPolicies` (policies.ts): observe only, True when an object of that name exists,
 *     whoever's it is; without Update, True when ours exists, its difference from the spec left alone.
 *   - False when it knows there is none: no object of ours holds the name (`Absent`: never created, deleted
 *     in the external API, the create failed, or nothing to adopt), a foreign object holds it (`NameConflict`,
 *     or `OwnedByAnother` when the adoption policy asked for it), ours was renamed away from it and left
 *     there (`Renamed`), an earlier
 *     namesake's record or object does (`WaitingForCleanup`), ours differs from the spec and the update did
 *     not land (`SpecMismatch`: a spec change or a drift repair that failed), or the resource is being
 *     deleted (`Deleting`: its spec now asks for no object).
 *   - Unknown when it did not get to see: paused (`ReconcilePaused`: nothing is observed), a step before the
 *     observe failed or the observe itself did, or something unforeseen stopped it (`Unobserved`).
 *   A failure AFTER the object was seen matching (the status write of a success fails) leaves Ready=True:
 *   what failed changed nothing outside, and the object still exists and matches.
 */
import type { Condition } from "./contract.ts";

/**
 * Condition and Event reasons that do not name the external kind, as typed constants (their strings are
 * what people, alerts, the docs and the tests match: a renamed one is listed in the changelog of the
 * package's README). The ones that do name it are
 * built from the plugin's noun ({@link reasonsFor}; the Shapes plugin's `CreatedCloudShape`).
 */
export const Reason = {
  /** Ready=True: the external object exists and matches the spec. */
  Available: "Available",
  /** Ready=False: no external object of ours holds the name (not created yet, deleted, the create failed). */
  Absent: "Absent",
  /** Ready=False: the external object is ours but differs from the spec, and the update did not land. */
  SpecMismatch: "SpecMismatch",
  /** Ready=False: the resource is being deleted; its spec asks for no external object any more. */
  Deleting: "Deleting",
  /** Ready=Unknown: the reconcile stopped before it could see the external object (or could not read it). */
  Unobserved: "Unobserved",
  /** Synced=True: the last reconcile made the external object match the spec. */
  ReconcileSuccess: "ReconcileSuccess",
  /** Synced=False and Ready=Unknown: the paused annotation is set; nothing is observed or written. */
  ReconcilePaused: "ReconcilePaused",
  /** Ready/Synced=False and a Warning event: a foreign object holds our name. */
  NameConflict: "NameConflict",
  /**
   * Synced=False: the adoption-policy annotation says `adopt`, and no external object holds the name: there is
   * nothing to adopt, and `adopt` never creates one (adoption.ts). Looked at again every few seconds.
   */
  NothingToAdopt: "NothingToAdopt",
  /**
   * Ready/Synced=False and a Warning event: the adoption-policy annotation asks to adopt, and the object that
   * holds the name carries another controller's owner id (the message names it): never adopted (adoption.ts).
   */
  OwnedByAnother: "OwnedByAnother",
  /** Synced=False: the adoption-policy annotation holds a value that is no policy; nothing is written outside. */
  InvalidAdoptionPolicy: "InvalidAdoptionPolicy",
  /**
   * Ready/Synced=False and a Warning event: the resource's external object (our owner mark, its uid) was
   * renamed behind our back and is left under the new name, which the message names: the management policies
   * leave out Update, the client cannot rename, or another object took the name. Never deleted, never
   * created again beside it.
   */
  Renamed: "Renamed",
  /** Ready/Synced=False: an earlier namesake's record or object is being cleaned up first. */
  WaitingForCleanup: "WaitingForCleanup",
  /**
   * Synced=False and one Warning event: the external API refused the spec for good (its own rule, e.g. a 422;
   * the message carries its words), so a person must change the spec. Not retried (the result is terminal)
   * until the generation changes or the refresh annotation asks; Ready says what exists meanwhile (`Absent`
   * when nothing was created, `SpecMismatch` when ours holds an earlier spec).
   */
  SpecRejected: "SpecRejected",
  /** A Kubernetes-side step failed: the finalizer, the intent record. */
  CannotAddFinalizer: "CannotAddFinalizer",
  CannotRemoveFinalizer: "CannotRemoveFinalizer",
  CannotRecordIntent: "CannotRecordIntent",
  /**
   * Synced=False: a deletion could not read the resource's CRD, so it cannot tell an uninstall from a
   * deletion, and deletes nothing until it can (reconcile/uninstall.ts).
   */
  CannotCheckUninstall: "CannotCheckUninstall",
  /** A failure no step foresaw (a bug, or an API answering nonsense): still reported, never thrown. */
  ReconcileError: "ReconcileError",
  /**
   * Synced=True: the resource's management policies leave out Create (`["Observe"]`): its external object is
   * read and reported (Ready: `Available` when it exists, `Absent` when not), never written (policies.ts).
   */
  ObserveOnly: "ObserveOnly",
  /**
   * Synced=True: the external object is ours but differs from the spec, and the management policies leave out
   * Update: the difference is left alone (not written), named in the message; Ready stays True (it exists).
   */
  DriftLeftAlone: "DriftLeftAlone",
  /**
   * An event: the resource's CRD is being deleted (an uninstall), so its external object was released (our
   * owner marks removed) instead of deleted, whatever its deletionPolicy (reconcile/uninstall.ts).
   */
  ReleasedOnUninstall: "ReleasedOnUninstall",
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
    /** A Warning event: the external object was renamed behind our back (renamed back, or left: the message says). */
    Renamed: `Renamed${noun}`,
    /** An event: someone else changed the external object and we changed it back. */
    RepairedDrift: `Repaired${noun}Drift`,
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
