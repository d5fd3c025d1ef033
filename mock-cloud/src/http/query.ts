/**
 * Query strings, read exactly: every parameter once, except `tag` which may repeat. Express's own parser
 * would turn `?limit=1&limit=2` into an array and `?a[b]=c` into objects; this keeps the rules simple.
 */
import type { Request } from "express";
import { badRequest } from "../errors.ts";
import { TagKey, TagValue } from "../schemas.ts";
import type { TagFilter } from "../change-feed.ts";

/** Most tag filters in one request. */
export const MAX_TAG_FILTERS = 32;

/** The query of `req` as `{ name: value }`, with every `tag` collected in `tag: string[]`. */
export function readQuery(req: Request): Record<string, string | string[]> {
  const params = new URL(req.originalUrl, "http://cloud.invalid").searchParams;
  const out: Record<string, string | string[]> = {};
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (name === "tag") {
      const list = (out.tag as string[] | undefined) ?? [];
      list.push(value);
      out.tag = list;
      continue;
    }
    if (seen.has(name)) {
      throw badRequest(`cannot accept the query: ${name} is given more than once`, [
        { field: name, message: "given more than once" },
      ]);
    }
    seen.add(name);
    out[name] = value;
  }
  return out;
}

/** Parses `tag=key=value` filters (split at the first '='). Throws a 400 problem naming the bad one. */
export function parseTagFilters(raw: readonly string[] | undefined): TagFilter {
  const filters: [string, string][] = [];
  for (const item of raw ?? []) {
    const eq = item.indexOf("=");
    const bad = (message: string) =>
      badRequest(`cannot accept the query: tag ${JSON.stringify(item)}: ${message}`, [
        { field: "tag", message },
      ]);
    if (eq < 0) throw bad("expected key=value");
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    const k = TagKey.safeParse(key);
    if (!k.success) throw bad(k.error.issues[0]?.message ?? "invalid tag key");
    const v = TagValue.safeParse(value);
    if (!v.success) throw bad(v.error.issues[0]?.message ?? "invalid tag value");
    filters.push([key, value]);
  }
  if (filters.length > MAX_TAG_FILTERS) {
    throw badRequest(`cannot accept the query: at most ${MAX_TAG_FILTERS} tag filters`, [
      { field: "tag", message: `at most ${MAX_TAG_FILTERS} tag filters` },
    ]);
  }
  return filters;
}
