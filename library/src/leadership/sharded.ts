/**
 * The controllers of one plugin, run for a part of a ring (leadership/lease-ring.ts): what a main calls
 * instead of leader election when several replicas each take a part. Kept here, not in a main, so that any
 * controller built on the library shards the same way.
 *
 * Each handover: stop (in-flight reconciles get `graceMs` to finish on their own), reshard the three caches
 * to the new part, start again — whose startup resync reconciles every key of the new part once. The ring's
 * membership signal opens the write fence, as leadership does under leader election.
 */
import type { Logger } from "../observability/logger.ts";
import type { CoreMetrics } from "../observability/metrics.ts";
import { LeaseRing, type LeaseRingOptions } from "./lease-ring.ts";
import { shareOf } from "./ring.ts";
import type { ExternalResourceControllers } from "../controllers.ts";

/** What a sharded run needs besides the controllers: the ring's Leases and timings. */
export type ShardedRunOptions = Omit<LeaseRingOptions, "onAssign" | "onRevoke" | "hooks" | "logger"> & {
  /** How long in-flight reconciles may finish on their own at a handover before they are cut. */
  graceMs: number;
  metrics: CoreMetrics;
  logger: Logger;
};

/**
 * Builds the ring that runs `controllers` (created with `sharding`) for this replica's part; `run` it for the
 * life of the process. Its `run` resolves after a shutdown, once the controllers drained and the Lease is gone.
 */
export function shardedRing(controllers: ExternalResourceControllers, options: ShardedRunOptions): LeaseRing {
  const { graceMs, metrics, logger: log, ...ring } = options;
  metrics.countCached(() => controllers.cached());
  return new LeaseRing({
    ...ring,
    onAssign: async (ranges, signal) => {
      await controllers.stopControllers({ graceMs });
      metrics.ringOwnedShare.set(shareOf(ranges));
      // Nothing to act on, or the membership ended while the caches relisted: stay stopped.
      if (ranges.length === 0 || !(await controllers.reshard(ranges, signal))) return;
      log.info({ owned: controllers.cached() }, "caches hold our part of the ring: reconciling it");
      controllers.startControllers(signal).catch((err: unknown) => {
        if (!signal.aborted) log.error({ err }, "cannot start the controllers for our part of the ring");
      });
    },
    onRevoke: async () => {
      metrics.ringOwnedShare.set(0);
      await controllers.stopControllers();
    },
    hooks: {
      onMembers: (count) => metrics.ringMembers.set(count),
      onHandover: ({ gained, released }) => {
        if (gained) metrics.ringHandovers.inc({ direction: "gained" });
        if (released) metrics.ringHandovers.inc({ direction: "released" });
      },
    },
    logger: log,
  });
}
