/**
 * The cloud side of list-watch: adapts the cloud client to the core's `ListWatchClient`, restricted to
 * the shapes that carry OUR owner tag. The cloud filters both the listing and the change feed by tag, so a
 * shape that loses our tag (orphaned, or a human stripped it) leaves the cache as a DELETED event, and
 * foreign shapes never cost us a byte.
 */
import { GoneError, type ListWatchClient, type ExternalWatchEvent } from "../../core/external-informer.ts";
import { TAG_OWNER } from "../api.ts";
import { CloudError, type CloudClient, type CloudShape } from "./client.ts";

/** Page size of the listing: one request per this many owned shapes per relist. */
export const PAGE_SIZE = 500;

/** A ListWatchClient over the owned cloud shapes. */
export function ownedShapesListWatch(
  client: Pick<CloudClient, "list" | "watch">,
  ownerId: string,
  pageSize = PAGE_SIZE,
): ListWatchClient<CloudShape> {
  const tags = { [TAG_OWNER]: ownerId };
  return {
    list: (pageToken, signal) =>
      client.list({ tags, limit: pageSize, ...(pageToken === undefined ? {} : { pageToken }) }, signal),
    watch: async (since, onEvent: (event: ExternalWatchEvent<CloudShape>) => void, signal) => {
      try {
        await client.watch(
          Number(since),
          (e) => onEvent({ type: e.type, object: e.shape, revision: e.revision }),
          signal,
          tags,
        );
      } catch (err) {
        // 410: `since` fell out of the cloud's retained history. The informer relists.
        if (err instanceof CloudError && err.isGone) throw new GoneError(err.message);
        throw err;
      }
    },
  };
}
