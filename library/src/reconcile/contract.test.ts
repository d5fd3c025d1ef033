/**
 * `classifyHttp`: how an HTTP status becomes what the library does next, one row per status it reads.
 */
import { describe, expect, it } from "vitest";
import { classifyHttp, type ExternalFailure } from "./contract.ts";

interface Row {
  reason: string;
  status: number;
  retryAfterMs?: number;
  failure: ExternalFailure;
}

const rows: Row[] = [
  { reason: "404: the object does not exist (for a delete: done)", status: 404, failure: "notFound" },
  { reason: "409: the name is taken (the holder is read next)", status: 409, failure: "conflict" },
  { reason: "412: a newer revision (the change feed brings it)", status: 412, failure: "stale" },
  { reason: "429: slow down", status: 429, retryAfterMs: 2_000, failure: "throttled" },
  { reason: "503: down for now", status: 503, retryAfterMs: 5_000, failure: "throttled" },
  { reason: "no answer at all (status 0): the network, a timeout", status: 0, failure: "throttled" },
  {
    reason: "422: the API refused this input by a rule of its own: the same spec is refused again",
    status: 422,
    failure: "rejected",
  },
  { reason: "400: the input is invalid: refused again, just the same", status: 400, failure: "rejected" },
  { reason: "500: the API failed; a retry may pass", status: 500, failure: "failed" },
  { reason: "502: a proxy in the way failed; a retry may pass", status: 502, failure: "failed" },
  {
    reason: "401: the credentials are wrong: retried (a rotated token may fix it)",
    status: 401,
    failure: "failed",
  },
  { reason: "403: not allowed: retried (a permission granted may fix it)", status: 403, failure: "failed" },
];

describe("classifyHttp", () => {
  it.each(rows)("$reason", ({ status, retryAfterMs, failure }) => {
    const got = classifyHttp(retryAfterMs === undefined ? { status } : { status, retryAfterMs });
    expect(got).toEqual(retryAfterMs === undefined ? { failure } : { failure, retryAfterMs });
  });
});
