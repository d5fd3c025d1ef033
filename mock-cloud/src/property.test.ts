/**
 * Property test: random requests (methods, paths, query strings, bodies, headers), some concurrent, thrown
 * at a real cloud over HTTP. Whatever comes in, without injected faults:
 *
 * - no 5xx, and every error is a problem+json whose status matches the answer;
 * - every shape returned or stored is a valid shape (never half a shape), within the cloud's own rules (no
 *   triangle above its size limit: 422);
 * - names are unique; the shape count matches what a full listing returns;
 * - revisions are strictly increasing: every create gets a revision above all earlier answers, the history
 *   has one change per revision with no gaps, and each shape's revision is its latest change's;
 * - `PRAGMA integrity_check` is ok.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxSizeOf, Problem, Shape } from "./schemas.ts";
import { ADMIN_TOKEN, startTestCloud, TOKEN, type TestCloud } from "./test-support.ts";

let t: TestCloud;
beforeAll(async () => {
  t = await startTestCloud({ bodyLimitBytes: 8 * 1024 });
});
afterAll(async () => {
  await t.close();
});

/** Ids the cloud has handed out, so that requests can aim at real shapes. */
const knownIds: string[] = [];
let highestCreateRevision = 0;

interface RandomRequest {
  method: string;
  /** Builds the path at run time (it may pick a known id). */
  path: (ids: readonly string[]) => string;
  body: string | undefined;
  headers: Record<string, string>;
}

const names = fc.oneof(
  fc.constantFrom("a", "b", "c.d", "x-1", "shared.name", "z9"),
  fc.string({ maxLength: 12 }),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/),
  fc.constant("n".repeat(254)),
);
const tagKeys = fc.oneof(
  fc.constantFrom("owner", "k8s-uid", "team", "a/b", "__proto__", "constructor"),
  fc.string({ maxLength: 8 }),
);
const tagValues = fc.oneof(
  fc.constantFrom("k8s", "", "'; DROP TABLE shapes; --", '<img src=x onerror="1">', "\u0000\u2028"),
  fc.string({ maxLength: 20 }),
  fc.constant(null),
  fc.integer(),
);
const shapeLike = fc.record(
  {
    name: names,
    type: fc.oneof(
      fc.constantFrom("square", "circle", "triangle", "hexagon"),
      fc.string({ maxLength: 6 }),
      fc.constant(null),
    ),
    color: fc.oneof(fc.constantFrom("red", "blue", "green", "octarine"), fc.constant(null)),
    size: fc.oneof(
      fc.double({ noNaN: true }),
      fc.integer({ min: -5, max: 2000 }),
      fc.constant(null),
      fc.string({ maxLength: 3 }),
    ),
    tags: fc.oneof(
      fc.dictionary(tagKeys, tagValues, { maxKeys: 40 }),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 2 }),
    ),
    id: fc.string({ maxLength: 5 }),
    revision: fc.integer(),
  },
  { requiredKeys: [] },
);
const bodies = fc.oneof(
  { weight: 6, arbitrary: shapeLike.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constant('{"name": "huge", "tags": {"a": "' + "x".repeat(9000) + '"}}') },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const segment = fc.oneof(
  fc.string({ maxLength: 10 }).map(encodeURIComponent),
  fc.constantFrom("%zz", "%", "..", "%2F", "shp_"),
);
const paths: fc.Arbitrary<(ids: readonly string[]) => string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .nat()
      .map((i) => (ids: readonly string[]) => `/v1/shapes/${ids.length ? ids[i % ids.length] : "shp_none"}`),
  },
  {
    weight: 3,
    arbitrary: fc
      .record(
        {
          limit: fc.oneof(fc.integer({ min: -2, max: 1200 }).map(String), fc.string({ maxLength: 4 })),
          tag: fc.array(
            fc.oneof(fc.constantFrom("owner=k8s", "team=", "nokey", "a=b=c"), fc.string({ maxLength: 8 })),
            {
              maxLength: 3,
            },
          ),
          pageToken: fc.oneof(fc.string({ maxLength: 10 }), fc.base64String({ maxLength: 40 })),
          extra: fc.string({ maxLength: 5 }),
        },
        { requiredKeys: [] },
      )
      .map((q) => () => {
        const params = new URLSearchParams();
        if (q.limit !== undefined) params.set("limit", q.limit);
        for (const tag of q.tag ?? []) params.append("tag", tag);
        if (q.pageToken !== undefined) params.set("pageToken", q.pageToken);
        if (q.extra !== undefined) params.set(q.extra || "x", "1");
        return `/v1/shapes?${params.toString()}`;
      }),
  },
  { weight: 2, arbitrary: fc.constant(() => "/v1/shapes") },
  { weight: 1, arbitrary: segment.map((s) => () => `/v1/shapes/${s}`) },
  // Watch requests that never stream: invalid, too old or future `since` (GET), or other methods.
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.constantFrom("-1", "abc", "99999999", "1.5", ""), fc.string({ maxLength: 4 }))
      .map((s) => () => `/v1/watch?since=${encodeURIComponent(s)}&since=2`),
  },
  { weight: 1, arbitrary: fc.array(segment, { maxLength: 3 }).map((segs) => () => `/x/${segs.join("/")}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      () => "/healthz",
      () => "/admin/faults",
      () => "/admin/requests",
      () => "/openapi.json",
    ),
  },
);
const randomRequests: fc.Arbitrary<RandomRequest> = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"),
  path: paths,
  body: bodies,
  headers: fc.record(
    {
      authorization: fc.oneof(
        { weight: 8, arbitrary: fc.constant(`Bearer ${TOKEN}`) },
        { weight: 1, arbitrary: fc.constantFrom("Bearer wrong", "Basic eA==", "", `Bearer ${ADMIN_TOKEN}`) },
      ),
      "content-type": fc.constantFrom(
        "application/json",
        "application/merge-patch+json",
        "text/plain",
        "application/json; charset=utf-16",
      ),
      "if-match": fc.oneof(
        fc.constantFrom("*", '"1"', 'W/"2"', "garbage", '"999999"'),
        fc.nat({ max: 300 }).map((n) => `"${n}"`),
      ),
      "x-client-id": fc.string({ maxLength: 8 }).map((s) => s.replace(/[^\x20-\x7e]/g, "")),
    },
    { requiredKeys: [] },
  ),
});

// Well-formed requests, so that shapes really get created, changed, renamed and deleted (and collide).
const validName = fc.oneof(
  fc.constantFrom("a", "b", "c.d", "x-1", "shared.name"),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,10}[a-z0-9])?$/),
);
const validTags = fc.dictionary(
  fc.constantFrom("owner", "team", "k8s-uid", "note"),
  fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("'; DROP TABLE shapes; --", "<b>")),
  { maxKeys: 4 },
);
const validShape = fc.record(
  {
    name: validName,
    type: fc.constantFrom("square", "circle", "triangle"),
    color: fc.constantFrom("red", "blue", "green"),
    size: fc.integer({ min: 1, max: 100 }),
    tags: validTags,
  },
  { requiredKeys: ["name", "type", "color"] },
);
const validPatch = fc.record(
  {
    name: validName,
    color: fc.constantFrom("red", "blue", "purple"),
    size: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constant(null)),
    tags: fc.dictionary(
      fc.constantFrom("owner", "team", "note"),
      fc.oneof(fc.string({ maxLength: 5 }), fc.constant(null)),
      { maxKeys: 3 },
    ),
  },
  { requiredKeys: [] },
);
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
const known = fc
  .nat()
  .map((i) => (ids: readonly string[]) => `/v1/shapes/${ids.length ? ids[i % ids.length] : "shp_none"}`);
const wellFormed: fc.Arbitrary<RandomRequest> = fc.oneof(
  {
    weight: 3,
    arbitrary: validShape.map((b) => ({
      method: "POST",
      path: () => "/v1/shapes",
      body: JSON.stringify(b),
      headers: auth,
    })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(known, validPatch)
      .map(([path, b]) => ({ method: "PATCH", path, body: JSON.stringify(b), headers: auth })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(known, validShape)
      .map(([path, b]) => ({ method: "PUT", path, body: JSON.stringify(b), headers: auth })),
  },
  { weight: 1, arbitrary: known.map((path) => ({ method: "DELETE", path, body: undefined, headers: auth })) },
);
const requests = fc.oneof(randomRequests, wellFormed);

async function send(r: RandomRequest): Promise<{ req: string; status: number; type: string; text: string }> {
  const path = r.path(knownIds);
  const withBody = r.body !== undefined && !["GET", "HEAD"].includes(r.method);
  const res = await fetch(`${t.url}${path}`, {
    method: r.method,
    headers: r.headers,
    ...(withBody ? { body: r.body } : {}),
  });
  const text = await res.text();
  return {
    req: `${r.method} ${path} ${withBody ? r.body?.slice(0, 200) : ""}`,
    status: res.status,
    type: res.headers.get("content-type") ?? "",
    text,
  };
}

function checkAnswer(a: Awaited<ReturnType<typeof send>>, method: string, before: number): void {
  const where = `${a.req} -> ${a.status} ${a.text.slice(0, 300)}`;
  expect(a.status, where).toBeLessThan(500);
  if (a.status >= 400 && method !== "HEAD") {
    expect(a.type, where).toMatch(/^application\/problem\+json/);
    const problem = Problem.parse(JSON.parse(a.text));
    expect(problem.status, where).toBe(a.status);
    expect(problem.detail, where).toMatch(/^cannot /);
  }
  if (a.status === 201 || (a.status === 200 && ["PATCH", "PUT"].includes(method))) {
    const shape = Shape.parse(JSON.parse(a.text));
    if (a.status === 201) {
      expect(shape.revision, `${where}: a create gets a new, higher revision`).toBeGreaterThan(before);
      knownIds.push(shape.id);
    }
  }
}

function checkStore(): void {
  const repo = t.cloud.deps.repository;
  expect(repo.integrityCheck()).toBe("ok");
  const all = repo.list({ tags: [], after: 0, limit: 100_000, notBefore: 0, lagMs: 0 }).items;
  expect(all.length).toBe(repo.count());
  for (const s of all) {
    expect(Shape.safeParse(s).error?.issues ?? [], JSON.stringify(s)).toEqual([]);
    expect(s.size ?? 0, `within the cloud's size limit: ${JSON.stringify(s)}`).toBeLessThanOrEqual(
      maxSizeOf(s.type),
    );
  }
  const names = all.map((s) => s.name);
  expect(new Set(names).size, "names are unique").toBe(names.length);
  const history = repo.changes(repo.oldestReadableRevision, repo.revision, 1_000_000);
  const revisions = history.map((c) => c.revision);
  // One change per revision, no gaps, ending at the cloud's revision.
  expect(revisions).toEqual(
    Array.from({ length: revisions.length }, (_, i) => repo.oldestReadableRevision + 1 + i),
  );
  expect(revisions.at(-1) ?? 0).toBe(repo.revision);
  const latest = new Map<string, number>();
  for (const c of history) latest.set(c.shape.id, c.revision);
  for (const s of all) {
    expect(s.revision).toBeLessThanOrEqual(repo.revision);
    expect(latest.get(s.id), `shape ${s.id} revision is its latest change`).toBe(s.revision);
  }
}

describe("random requests", () => {
  it("never break the cloud's invariants", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(requests, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }),
        async (batches) => {
          for (const batch of batches) {
            const before = Math.max(highestCreateRevision, t.cloud.deps.repository.revision);
            const answers = await Promise.all(batch.map(send)); // a batch runs concurrently
            answers.forEach((a, i) => checkAnswer(a, batch[i]!.method, before));
            const created = answers
              .filter((a) => a.status === 201)
              .map((a) => (JSON.parse(a.text) as Shape).revision);
            expect(new Set(created).size, "concurrent creates get distinct revisions").toBe(created.length);
            highestCreateRevision = Math.max(highestCreateRevision, ...created);
          }
          checkStore();
        },
      ),
      { numRuns: 100 },
    );
    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
    // The run really exercised the API: shapes were created and some requests were refused.
    expect(knownIds.length).toBeGreaterThan(5);
  });
});
