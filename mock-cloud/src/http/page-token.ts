/**
 * The opaque `pageToken` of `GET /v1/shapes`. It carries what the next page needs to keep the listing
 * consistent: the revision the first page was read at (every page reports it, and later pages are never
 * read at an older revision), the key of the last item sent (pages follow an immutable key), and a
 * fingerprint of the tag filters (a token only continues the listing it came from).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { badRequest } from "../errors.ts";
import type { TagFilter } from "../change-feed.ts";

/** What a page token holds. */
export interface PageCursor {
  /** The revision of the first page. */
  readonly revision: number;
  /** The key (creation revision) of the last item sent. */
  readonly after: number;
}

const Token = z.strictObject({
  v: z.literal(1),
  r: z.int().nonnegative(),
  a: z.int().nonnegative(),
  f: z.string(),
});

/** Encodes a cursor for a listing with `filter`. */
export function encodePageToken(cursor: PageCursor, filter: TagFilter): string {
  const body = { v: 1, r: cursor.revision, a: cursor.after, f: fingerprint(filter) };
  return Buffer.from(JSON.stringify(body)).toString("base64url");
}

/** Decodes a token, checking it belongs to a listing with `filter`. Throws a 400 problem otherwise. */
export function decodePageToken(token: string, filter: TagFilter): PageCursor {
  const bad = (why: string) =>
    badRequest(`cannot accept the query: pageToken ${why}`, [{ field: "pageToken", message: why }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw bad("is not a token this cloud issued");
  }
  const result = Token.safeParse(parsed);
  if (!result.success) throw bad("is not a token this cloud issued");
  if (result.data.f !== fingerprint(filter)) throw bad("belongs to a listing with other tag filters");
  return { revision: result.data.r, after: result.data.a };
}

function fingerprint(filter: TagFilter): string {
  const canonical = JSON.stringify(filter.map((pair) => JSON.stringify(pair)).sort());
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 16);
}
