/**
 * Turns zod failures into 400 problems whose `detail` names every bad field, in words a person reads.
 */
import type { z } from "zod";
import { badRequest, type HttpProblem } from "../errors.ts";

/** Where the value came from, for the wording of the problem. */
export type Source = "body" | "query";

/** Parses `value` with `schema`, or throws a 400 `HttpProblem` naming each bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, source: Source): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw problemFromZod(result.error, source);
}

/** The 400 problem for a zod error. */
export function problemFromZod(error: z.ZodError, source: Source): HttpProblem {
  const errors = error.issues.flatMap((issue) => describeIssue(issue, source));
  const what = source === "body" ? "request body" : "query";
  return badRequest(
    `cannot accept the ${what}: ${errors.map((e) => `${e.field}: ${e.message}`).join("; ")}`,
    errors,
  );
}

function describeIssue(issue: z.core.$ZodIssue, source: Source): { field: string; message: string }[] {
  const base = issue.path.map(String).join(".");
  const root = source === "body" ? "(body)" : "(query)";
  if (issue.code === "unrecognized_keys") {
    const noun = source === "body" ? "unknown field" : "unknown query parameter";
    return issue.keys.map((key) => ({ field: base ? `${base}.${key}` : key, message: noun }));
  }
  if (issue.code === "invalid_key") {
    const inner = issue.issues[0]?.message ?? "invalid key";
    return [{ field: base || root, message: inner }];
  }
  if (issue.code === "invalid_union") {
    // Report the alternative that came closest (fewest problems).
    const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0];
    if (closest && closest.length > 0) {
      return closest.flatMap((inner) =>
        describeIssue({ ...inner, path: [...issue.path, ...inner.path] }, source),
      );
    }
  }
  return [{ field: base || root, message: issue.message }];
}
