/**
 * The two ways the Shape reconciler can observe its cloud shape ({@link CloudObserver}).
 *
 * - `cacheObserver` (the default): read the list-watch cache — filled by ONE paginated list and kept
 *   current by the change feed. Observation costs no request at all.
 * - `perObjectObserver` (`--observe get`, an ablation for the benchmarks): one request per reconcile, the
 *   way most external-resource controllers poll — GET by the id the Shape's status remembers, else a
 *   tag-filtered list for this Shape's uid. It exists so a reader can measure what the cache buys.
 */
import { TAG_OWNER, TAG_UID, type Shape } from "../api.ts";
import type { CloudCache, CloudObserver } from "../ports.ts";
import { CloudError, type CloudClient, type CloudShape } from "./client.ts";

/** Observes through the list-watch cache: no request. */
export function cacheObserver(cache: CloudCache): CloudObserver {
  return { observe: (_shape, name) => Promise.resolve(cache.byName(name)) };
}

/** Observes with one request per reconcile (see the module comment). */
export function perObjectObserver(cloud: Pick<CloudClient, "get" | "list">, ownerId: string): CloudObserver {
  return {
    async observe(shape: Shape, name: string, signal: AbortSignal): Promise<CloudShape | undefined> {
      const id = shape.status?.cloudId;
      if (id) {
        try {
          const found = await cloud.get(id, signal);
          if (found.name === name && found.tags[TAG_OWNER] === ownerId) return found;
        } catch (error) {
          if (!(error instanceof CloudError && error.isNotFound)) throw error;
        }
      }
      // No id yet (or it no longer names our shape): ask by our owner tags.
      const page = await cloud.list(
        { tags: { [TAG_OWNER]: ownerId, [TAG_UID]: shape.metadata.uid } },
        signal,
      );
      return page.items.find((s) => s.name === name);
    },
  };
}
