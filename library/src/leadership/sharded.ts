/**
 * The controllers of one plugin, run for a part of a ring (leadership/lease-ring.ts): what a main calls
 * instead of leader election when several replicas each take a part. Kept here, not in a main, so that any
 * controller built on the library shards the same way.
 *
 * Each handover: stop (in-flight reconciles get `graceMs` to finish on their own), reshard the three caches
 * to the new part, start again — whose startup resync reconciles every key of the new part once. The ring's
 * membership signal opens the write fence, as leadership does under leader election.
 *
 * Also {@link ShardPlacement}: which objects the three caches keep for this replica's part, the one piece of
 * sharding that ../controllers.ts wires into its informers. The ring runs {@link ShardedControllers}, what it
 * needs of the controllers: the assembly (../controllers.ts) sits above this folder and builds them.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "../observability/logger.ts";
import type { CoreMetrics } from "../observability/metrics.ts";
import type { ExternalResourcePlugin, ManagedResource } from "../reconcile/contract.ts";
import type { InformerShard } from "../source/informer.ts";
import { shardHash } from "./hash.ts";
import { LeaseRing, type LeaseRingOptions } from "./lease-ring.ts";
import { inRanges, shardSelector, shareOf, type HashRange } from "./ring.ts";

/**
 * Which objects the three caches of sharded controllers keep: those of this replica's part of the ring
 * (`ranges`, none until the first `reshard`). Each object is placed by its RESOURCE's uid, so a resource,
 * its intent record and its external object always land on the same replica.
 */
export class ShardPlacement<R extends ManagedResource, E> {
  /** The parts of the hash space this replica owns; set by `reshard`, read by the filters below. */
  ranges: readonly HashRange[] = [];
  readonly #plugin: ExternalResourcePlugin<R, E>;
  readonly #serverSide: boolean;

  /** `serverSide`: also ask the API server to filter the resources' list and watch (KEP-5866). */
  constructor(plugin: ExternalResourcePlugin<R, E>, { serverSide }: { serverSide: boolean }) {
    this.#plugin = plugin;
    this.#serverSide = serverSide;
  }

  /** The resources: by their uid, here and (`serverSide`) at the API server. */
  readonly resources: InformerShard<R> = {
    admits: (obj) => this.#owns(obj.metadata.uid),
    selector: () => (this.#serverSide ? shardSelector("object.metadata.uid", this.ranges) : undefined),
  };

  /** An intent record's own uid is not its resource's: it is placed by the uid it records, on our side. */
  readonly intents: InformerShard<KubernetesObject> = {
    admits: (obj) => this.#owns(this.#plugin.resource.readIntent(obj).resource.uid),
    selector: () => undefined,
  };

  /** The external API cannot filter by our hash: by the uid mark, or by name for an object without one. */
  readonly external: { admits(obj: E): boolean } = {
    admits: (obj) => this.#owns(this.#plugin.external.marksOf(obj).uid ?? this.#plugin.external.nameOf(obj)),
  };

  #owns(uid: string): boolean {
    return inRanges(this.ranges, shardHash(uid));
  }
}

/**
 * What the ring needs of the controllers of one plugin built with `sharding` (`ExternalResourceControllers`,
 * which `createExternalResourceControllers` returns, is one): stop, reshard the caches, start, count.
 */
export interface ShardedControllers {
  /** Starts reconciling until `signal` aborts (the ring's membership of this part). */
  startControllers(signal: AbortSignal): Promise<void>;
  /** Stops reconciling; with `graceMs`, in-flight reconciles first get that long to finish on their own. */
  stopControllers(options?: { graceMs?: number }): Promise<void>;
  /** Applies new ranges to the caches; true once all of them hold the ranges (false if `signal` aborted first). */
  reshard(ranges: readonly HashRange[], signal: AbortSignal): Promise<boolean>;
  /** How many objects each cache holds. */
  cached(): { resources: number; intents: number; external: number };
}

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
export function shardedRing(controllers: ShardedControllers, options: ShardedRunOptions): LeaseRing {
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
