/**
 * `--observe get`, an ablation for the benchmarks: observe a Shape's cloud shape with one request per
 * reconcile, the way most external-resource controllers poll — GET by the id the Shape's status remembers,
 * else a tag-filtered list for this Shape's uid — instead of the library's default, the list-watch cache
 * (filled by ONE paginated list, kept current by the change feed: no request at all). It exists so a reader
 * can measure what the cache buys.
 */
import { TAG_OWNER, TAG_UID, type Shape } from "../api.ts";
import { CloudError, type CloudClient, type CloudShape } from "./client.ts";

/** Observes with one request per reconcile (see the module comment). */
export function perObjectObserver(
  cloud: Pick<CloudClient, "get" | "list">,
  ownerId: string,
): (shape: Shape, name: string, signal: AbortSignal) => Promise<CloudShape | undefined> {
  return async (shape, name, signal) => {
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
    const page = await cloud.list({ tags: { [TAG_OWNER]: ownerId, [TAG_UID]: shape.metadata.uid } }, signal);
    return page.items.find((s) => s.name === name);
  };
}
