/**
 * A Lease as the API server returns it, read into what leader election keeps ({@link ObservedLease}): one
 * reading for the Lease client (lean-lease-client.ts: plain JSON). Internal: the library's index does not
 * export it.
 */
import { toMicroTime, type ObservedLease } from "./leader-election.ts";

/** The fields of a Lease that are read: client-node types the times as Dates, the JSON has strings. */
export interface LeaseObject {
  metadata?: { resourceVersion?: string };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: unknown;
    renewTime?: unknown;
    leaseTransitions?: number;
  };
}

/** What leader election keeps of `lease`: its resourceVersion and record, times as MicroTime strings. */
export function observedLease(lease: LeaseObject): ObservedLease {
  const spec = lease.spec ?? {};
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? "",
    record: {
      holderIdentity: spec.holderIdentity || undefined,
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: microTimeString(spec.acquireTime),
      renewTime: microTimeString(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
  };
}

/** A MicroTime string from what a client returns: the raw string, or a Date should client-node ever make one. */
function microTimeString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value instanceof Date) return toMicroTime(value.getTime());
  return undefined;
}
