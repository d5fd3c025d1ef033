/**
 * Optimistic concurrency over HTTP: a shape's ETag is its quoted revision (`"42"`), and `If-Match` makes a
 * write conditional on it (RFC 9110 strong comparison: a weak tag `W/"42"` never matches).
 */
import { badRequest } from "../errors.ts";
import type { RevisionCondition } from "../db/repository.ts";

/** The ETag of a shape at `revision`. */
export function etagOf(revision: number): string {
  return `"${revision}"`;
}

/**
 * The write condition an `If-Match` header asks for, or undefined when there is none. `*` matches any
 * existing shape. Throws a 400 problem when the header cannot be read.
 */
export function ifMatchCondition(header: string | undefined): RevisionCondition | undefined {
  if (header === undefined) return undefined;
  const tags = header.split(",").map((t) => t.trim());
  if (tags.length === 1 && tags[0] === "*") return () => true;
  const wanted = new Set<number>();
  for (const tag of tags) {
    const m = /^(W\/)?"(\d{1,15})"$/.exec(tag);
    if (!m) {
      throw badRequest(
        `cannot read If-Match ${JSON.stringify(header)}: expected "*" or quoted revisions like "12" (the ETag)`,
        [{ field: "If-Match", message: 'expected "*" or quoted revisions like "12"' }],
      );
    }
    if (!m[1]) wanted.add(Number(m[2]));
  }
  return (revision) => wanted.has(revision);
}
