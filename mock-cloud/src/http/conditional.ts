/**
 * Optimistic concurrency over HTTP: a shape's ETag is its quoted revision (`"42"`), and `If-Match` makes a
 * write conditional on it (RFC 9110 strong comparison: a weak tag `W/"42"` never matches).
 *
 * Entity tags are opaque to clients (RFC 9110 §8.8.3): any well-formed tag may be sent, and one the cloud
 * never issued (`"definitely-stale"`, `"05"`) simply does not match: 412, as for a stale revision. Only a
 * header that is not `If-Match` grammar at all is a 400.
 */
import { badRequest } from "../errors.ts";
import type { RevisionCondition } from "../db/repository.ts";

/** The ETag of a shape at `revision`. */
export function etagOf(revision: number): string {
  return `"${revision}"`;
}

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text. `W/` is
// case-sensitive. A tag may hold a comma, so the list cannot be split on commas: it is validated whole.
// Written by hand: the jshttp helpers (fresh, etag) split on commas and do not check the grammar.
const ENTITY_TAG = String.raw`(?:W\/)?"[\x21\x23-\x7E\x80-\xFF]*"`;
/** `#entity-tag` (§5.6.1): tags separated by commas and optional whitespace; empty elements are ignored. */
const ENTITY_TAG_LIST = new RegExp(
  String.raw`^[ \t]*(?:,[ \t]*)*${ENTITY_TAG}(?:[ \t]*,(?:[ \t]*,)*[ \t]*${ENTITY_TAG})*[ \t]*(?:,[ \t]*)*$`,
);
/** One tag of a list that ENTITY_TAG_LIST accepted: no `"` can occur inside a tag, so pairs are tags. */
const ONE_TAG = /(W\/)?"([^"]*)"/g;

/**
 * The write condition an `If-Match` header asks for, or undefined when there is none. `*` matches any
 * existing shape; a list of entity tags matches a shape whose ETag is one of its strong tags (compared as
 * opaque strings: `"05"` is not `"5"`). Throws a 400 problem when the header is neither `*` nor a
 * non-empty list of entity tags.
 */
export function ifMatchCondition(header: string | undefined): RevisionCondition | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return () => true;
  if (!ENTITY_TAG_LIST.test(header)) {
    throw badRequest(
      `cannot read If-Match ${JSON.stringify(header)}: expected "*" or entity tags like "12" (the ETag)`,
      [{ field: "If-Match", message: 'expected "*" or a comma-separated list of entity tags like "12"' }],
    );
  }
  const wanted = new Set<string>();
  for (const [, weak, opaque] of header.matchAll(ONE_TAG)) {
    if (!weak) wanted.add(`"${opaque}"`);
  }
  return (revision) => wanted.has(etagOf(revision));
}
