/**
 * Ownership: what makes an external object ours. ONLY its owner marks say it — never its name, never a
 * uid mark alone (anyone can copy a tag):
 * - ours by owner mark: `owner` is exactly our owner id. The list-watch cache holds only these; the sweep
 *   may delete one that nothing claims.
 * - ours by owner mark AND uid: also carries the uid of THIS resource. Only these are updated, deleted or
 *   released on behalf of a resource; one with another uid was left by an earlier namesake. The exception
 *   is an earlier owner id of ours with this uid (an upgrade): adopted ({@link adoptableFrom}), or deleted
 *   or released like ours when the resource is deleted first ({@link findOwned}).
 * The name says where to look first, not whose an object is: a person may rename an object of ours, and it
 * stays its resource's under any name ({@link renamedAway}), found by the uid mark among our own objects.
 */
import type { ExternalClient, ExternalKind } from "./contract.ts";
import type { ExternalCache } from "./ports.ts";

/** True when `obj` carries our owner id AND `uid`. */
export function isOwnedBy<E>(kind: ExternalKind<E>, obj: E, uid: string, ownerId: string): boolean {
  const marks = kind.marksOf(obj);
  return marks.owner === ownerId && marks.uid === uid;
}

/**
 * The earlier owner id of ours `obj` carries, when it also carries `uid`: ours from before an upgrade, to
 * adopt. Undefined otherwise. A uid is unique per cluster, so another cluster's object under the same old id
 * never matches.
 */
export function adoptableFrom<E>(
  kind: ExternalKind<E>,
  obj: E,
  uid: string,
  adoptOwnerIds: readonly string[] = [],
): string | undefined {
  const { owner, uid: markedUid } = kind.marksOf(obj);
  return owner !== undefined && adoptOwnerIds.includes(owner) && markedUid === uid ? owner : undefined;
}

/** What {@link findOwned} reads. */
export interface FindOwnedDeps<E> {
  kind: ExternalKind<E>;
  cache: Pick<ExternalCache<E>, "get" | "withUid">;
  client: Pick<ExternalClient<E>, "getByName">;
  ownerId: string;
  adoptOwnerIds?: readonly string[];
}

/**
 * The external object of ours for `uid`, for a deletion to delete or release (the finalizer's, or the intent
 * reconciler's after a missed one): from the cache under `name`; else under any name, by its uid mark (a
 * person renamed it: it is still this resource's); else — the cache may trail, and a Pending record has no
 * id — read live BY NAME. Either way taken only if it carries `uid` and our owner id, or an earlier one of
 * ours: the cache is only as owner-filtered as the plugin's external API makes it, and one that filters
 * loosely must not hand us another owner's object with a colliding uid. Undefined: nothing of ours to delete
 * or release.
 */
export async function findOwned<E>(
  d: FindOwnedDeps<E>,
  name: string,
  uid: string,
  signal: AbortSignal,
): Promise<E | undefined> {
  const cached = d.cache.get(name);
  if (cached && isOursFor(d, cached, uid)) return cached;
  const renamed = renamedAway(d, name, uid);
  if (renamed) return renamed;
  if (cached) return undefined; // the name holds an object that is not this uid's of ours
  const live = await d.client.getByName(name, signal);
  if (!live) return undefined; // never created, or already gone
  return isOursFor(d, live, uid) ? live : undefined;
}

/** True when `obj` carries `uid` and our owner id, or an earlier owner id of ours. */
function isOursFor<E>(d: FindOwnedDeps<E>, obj: E, uid: string): boolean {
  return (
    isOwnedBy(d.kind, obj, uid, d.ownerId) || adoptableFrom(d.kind, obj, uid, d.adoptOwnerIds) !== undefined
  );
}

/**
 * An object of ours (our owner id) that carries `uid` and is cached under a name other than `name`: the
 * resource's object, renamed behind our back. Undefined when there is none. Never calls the API.
 */
export function renamedAway<E>(
  d: Pick<FindOwnedDeps<E>, "kind" | "cache" | "ownerId">,
  name: string,
  uid: string,
): E | undefined {
  return d.cache
    .withUid(uid)
    .find((obj) => d.kind.nameOf(obj) !== name && isOwnedBy(d.kind, obj, uid, d.ownerId));
}
