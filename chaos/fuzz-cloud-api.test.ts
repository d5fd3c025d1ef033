/**
 * Fuzzer of the mock cloud's API, over real HTTP, broader than mock-cloud's own property test in two ways:
 *
 * 1. The inputs: besides random bodies, paths and query strings, it sends what real clients get wrong —
 *    methods the API does not have (PROPFIND, PURGE, QUERY), paths with odd segments and encodings, forged
 *    and tampered page tokens, every header that steers parsing (Content-Type and its charset,
 *    Content-Encoding, If-Match lists, Authorization spellings, Last-Event-ID), bodies that are deeply
 *    nested, BOM-prefixed, truncated, not UTF-8, or carry duplicate and `__proto__` keys, and near-valid
 *    shapes broken in exactly one field.
 * 2. The oracle: a MODEL of the store. Every request is followed by a read of the database, and:
 *    - no answer is a 5xx (no fault is injected);
 *    - every refusal is `application/problem+json` with its status and a `detail` saying "cannot ...";
 *    - a refused write changes NOTHING: same shapes, same revision, no change recorded (nothing half-stored);
 *    - an accepted write changes exactly what it says and nothing else: a create adds one shape equal to
 *      the body, a merge patch gives the RFC 7396 result (and no revision when nothing changes), a replace
 *      gives the body, a delete removes one shape; each bumps the revision by one;
 *    - a read answers exactly what is stored.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Problem, Shape, ShapePage } from "@shapes/mock-cloud";
import { ADMIN_TOKEN, startTestCloud, type TestCloud, TOKEN } from "@shapes/mock-cloud/testing";

let t: TestCloud;
beforeAll(async () => {
  t = await startTestCloud({ bodyLimitBytes: 16 * 1024 });
  for (const name of ["seed-a", "seed-b.x", "seed-c"]) {
    await t.create({ name, type: "circle", color: "blue", size: 3, tags: { owner: "k8s", team: "z" } });
  }
});
afterAll(async () => {
  await t?.close();
});

/** The store as the model sees it: every shape by id, the revision, the number of recorded changes. */
interface Store {
  shapes: Map<string, Shape>;
  revision: number;
  changes: number;
}

function store(): Store {
  const repo = t.cloud.deps.repository;
  const items = repo.list({ tags: [], after: 0, limit: 1_000_000, notBefore: 0, lagMs: 0 }).items;
  return {
    shapes: new Map(items.map((s) => [s.id, s])),
    revision: repo.revision,
    changes: repo.changes(repo.oldestReadableRevision, repo.revision, 1_000_000).length,
  };
}

/** A request, built at run time from the ids and page tokens the cloud has handed out. */
interface Fuzzed {
  method: string;
  path: (ctx: Ctx) => string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}
interface Ctx {
  ids: string[];
  tokens: string[];
}

// ---- bodies ---------------------------------------------------------------------------------------

const validShape = fc.record(
  {
    name: fc.oneof(
      fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,12}[a-z0-9])?$/),
      fc.constant(`${"a".repeat(126)}.${"b".repeat(126)}`), // exactly 253
    ),
    type: fc.constantFrom("square", "circle", "triangle", "hexagon"),
    color: fc.constantFrom("red", "blue", "gray", "white"),
    size: fc.integer({ min: 1, max: 1000 }),
    tags: fc.dictionary(
      fc.stringMatching(/^[A-Za-z0-9]([A-Za-z0-9._/-]{0,8}[A-Za-z0-9])?$/),
      fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          "<script>alert(1)</script>",
          "'; DROP TABLE shapes; --",
          "\u2028\u0000",
          "x".repeat(512),
        ),
      ),
      { maxKeys: 5 },
    ),
  },
  { requiredKeys: ["name", "type", "color"] },
);

/** A valid shape broken in exactly one field (or given one field too many). */
const brokenOnce = fc
  .tuple(
    validShape,
    fc.constantFrom<[string, unknown]>(
      ["name", "UPPER"],
      ["name", "-lead"],
      ["name", "a".repeat(254)],
      ["name", "é"],
      ["name", ""],
      ["name", 5],
      ["type", "octagon"],
      ["type", null],
      ["color", "Red"],
      ["size", 0],
      ["size", 1001],
      ["size", 1.5],
      ["size", -1],
      ["size", "3"],
      ["tags", { "bad key!": "v" }],
      ["tags", { k: "x".repeat(513) }],
      ["tags", { k: 1 }],
      ["tags", Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]))],
      ["tags", []],
      ["id", "shp_forged"],
      ["revision", 1],
      ["createdAt", "2020-01-01T00:00:00Z"],
      ["extra", true],
    ),
  )
  .map(([shape, [field, value]]) => ({ ...shape, [field]: value }));

const patchBody = fc.record(
  {
    name: fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?$/),
    type: fc.constantFrom("square", "hexagon"),
    color: fc.constantFrom("red", "purple"),
    size: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constant(null)),
    tags: fc.oneof(
      fc.dictionary(
        fc.constantFrom("owner", "team", "note"),
        fc.oneof(fc.string({ maxLength: 6 }), fc.constant(null)),
        {
          maxKeys: 3,
        },
      ),
      fc.constant(null),
    ),
  },
  { requiredKeys: [] },
);

const oddText = fc.constantFrom(
  "",
  "{",
  '{"name": "x", "type": "square", "color": "red"',
  '{"name":"dup","name":"dup2","type":"square","color":"red"}',
  '{"__proto__": {"polluted": true}, "name": "p", "type": "square", "color": "red"}',
  '{"tags": {"__proto__": "x"}}',
  '{"constructor": {"prototype": {"x": 1}}}',
  "\uFEFF" + '{"name":"bom","type":"square","color":"red"}',
  '{"size": 1e400}',
  '{"size": 1.0, "name": "one", "type": "square", "color": "red"}',
  "null",
  "[]",
  "42",
  '"string"',
  "[".repeat(5_000) + "]".repeat(5_000),
  '{"a":'.repeat(2_000) + "1" + "}".repeat(2_000),
  '{"name": "' + "x".repeat(20_000) + '"}',
);

const bodies: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  { weight: 4, arbitrary: validShape.map((b) => JSON.stringify(b)) },
  { weight: 4, arbitrary: brokenOnce.map((b) => JSON.stringify(b)) },
  { weight: 3, arbitrary: patchBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: oddText },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  // Not UTF-8 at all.
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => Uint8Array.from([0xff, 0xfe, ...b])),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

// ---- paths and query strings ----------------------------------------------------------------------

const segment = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom(
    "%zz",
    "%",
    "%00",
    "..",
    "%2e%2e",
    "%2F",
    "shp_",
    ";x=1",
    "%E0%A4%A",
    "\u00e9".repeat(3),
    "a".repeat(3_000),
  ),
);

const forgedToken = fc.oneof(
  fc
    .record(
      {
        v: fc.constantFrom(1, 2, "1"),
        r: fc.oneof(fc.nat(), fc.constant(2 ** 53 - 1), fc.constant(-1), fc.double()),
        a: fc.oneof(fc.nat(), fc.constant(-5)),
        f: fc.string({ maxLength: 16 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => Buffer.from(JSON.stringify(o)).toString("base64url")),
  fc.base64String({ maxLength: 60 }),
  fc.string({ maxLength: 30 }),
  fc.constant("x".repeat(1_001)),
);

const listQuery = fc
  .record(
    {
      limit: fc.oneof(
        fc.constantFrom("1", "1000", "1001", "0", "-1", "01", "1e2", " 5", "9999", ""),
        fc.string({ maxLength: 4 }),
      ),
      limit2: fc.constantFrom("2", "3"),
      tags: fc.array(
        fc.oneof(
          fc.constantFrom(
            "owner=k8s",
            "team=z",
            "owner=",
            "=v",
            "nokey",
            "a=b=c",
            "bad key=v",
            `k=${"x".repeat(513)}`,
          ),
          fc.string({ maxLength: 10 }),
        ),
        { maxLength: 34 },
      ),
      pageToken: fc.oneof(forgedToken, fc.constant("REAL")),
      junk: fc.constantFrom("tag[]=a", "limit[a]=1", "x=1", "tag", "&&", "pageToken=a&pageToken=b"),
    },
    { requiredKeys: [] },
  )
  .map((q) => (ctx: Ctx) => {
    const params = new URLSearchParams();
    if (q.limit !== undefined) params.append("limit", q.limit);
    if (q.limit2 !== undefined && q.limit !== undefined) params.append("limit", q.limit2);
    for (const tag of q.tags ?? []) params.append("tag", tag);
    if (q.pageToken !== undefined) {
      const real = ctx.tokens.at(-1);
      params.set("pageToken", q.pageToken === "REAL" ? (real ?? "none") : q.pageToken);
    }
    const junk = q.junk === undefined ? "" : `&${q.junk}`;
    return `/v1/shapes?${params.toString()}${junk}`;
  });

const known = fc
  .nat()
  .map((i) => (ctx: Ctx) => `/v1/shapes/${encodeURIComponent(ctx.ids[i % ctx.ids.length] ?? "none")}`);

const paths: fc.Arbitrary<(ctx: Ctx) => string> = fc.oneof(
  { weight: 5, arbitrary: known },
  { weight: 3, arbitrary: listQuery },
  { weight: 2, arbitrary: fc.constant(() => "/v1/shapes") },
  { weight: 2, arbitrary: segment.map((s) => () => `/v1/shapes/${s}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      () => "/v1/shapes/",
      () => "//v1/shapes",
      () => "/V1/SHAPES",
      () => "/v1/shapes;x",
      () => "/v1/shapes/a/b",
      () => "/v1",
      () => "/",
      () => "/v2/shapes",
      () => "/v1/shapes%2F",
      () => "/admin/requests",
      () => "/admin/faults",
      () => "/admin/nope",
      () => "/healthz?x=%",
      () => "/openapi.json",
      () => "/metrics",
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom("-1", "abc", "1.5", "", "99999999999", "0x10", "1e3"),
        fc.string({ maxLength: 5 }),
      )
      .map((since) => () => `/v1/watch?since=${encodeURIComponent(since)}`),
  },
  { weight: 1, arbitrary: fc.array(segment, { maxLength: 3 }).map((segs) => () => `/v1/${segs.join("/")}`) },
);

// ---- headers --------------------------------------------------------------------------------------

const visible = (s: string) => s.replace(/[^\x20-\x7e]/g, "");
const headers = fc.record(
  {
    authorization: fc.oneof(
      { weight: 10, arbitrary: fc.constant(`Bearer ${TOKEN}`) },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          `bearer ${TOKEN}`,
          `Bearer  ${TOKEN}`,
          `Bearer ${TOKEN} `,
          `Bearer ${TOKEN}x`,
          `Bearer ${TOKEN.slice(0, -1)}`,
          `Bearer ${ADMIN_TOKEN}`,
          "Bearer",
          "Basic dGVzdDp0ZXN0",
          "",
        ),
      },
    ),
    "content-type": fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("application/json", "application/merge-patch+json") },
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          "APPLICATION/JSON",
          "application/json; charset=utf-8",
          "application/json; charset=utf-16",
          "application/json; charset=latin1",
          "application/json;;;",
          "application/vnd.shapes+json",
          "application/x-www-form-urlencoded",
          "text/plain",
          "multipart/form-data; boundary=x",
          "",
        ),
      },
    ),
    "content-encoding": fc.constantFrom("gzip", "deflate", "br", "identity", "x-unknown"),
    "if-match": fc.oneof(
      fc.constantFrom(
        "*",
        '"1"',
        'W/"2"',
        '"1", "2"',
        "garbage",
        '"',
        '""',
        '"-1"',
        '"99999999999999999999"',
        '*, "1"',
      ),
      fc.nat({ max: 40 }).map((n) => `"${n}"`),
      fc.constant(Array.from({ length: 500 }, (_, i) => `"${i}"`).join(", ")),
    ),
    "x-client-id": fc.string({ maxLength: 20 }).map(visible),
    "last-event-id": fc.oneof(fc.constantFrom("abc", "-1", "1"), fc.string({ maxLength: 6 }).map(visible)),
    accept: fc.constantFrom("text/html", "application/xml", "*/*", "text/event-stream"),
  },
  { requiredKeys: [] },
);

const requests: fc.Arbitrary<Fuzzed> = fc.record({
  method: fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE") },
    {
      weight: 2,
      arbitrary: fc.constantFrom("HEAD", "OPTIONS", "PROPFIND", "PURGE", "LINK", "QUERY", "get", "delete"),
    },
  ),
  path: paths,
  headers,
  body: bodies,
});

/** Well-formed writes, so that shapes really get created, patched, replaced and deleted. */
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
const wellFormed: fc.Arbitrary<Fuzzed> = fc.oneof(
  validShape.map((b): Fuzzed => ({
    method: "POST",
    path: () => "/v1/shapes",
    headers: auth,
    body: JSON.stringify(b),
  })),
  fc
    .tuple(known, patchBody)
    .map(([path, b]): Fuzzed => ({ method: "PATCH", path, headers: auth, body: JSON.stringify(b) })),
  fc
    .tuple(known, validShape)
    .map(([path, b]): Fuzzed => ({ method: "PUT", path, headers: auth, body: JSON.stringify(b) })),
  known.map((path): Fuzzed => ({ method: "DELETE", path, headers: auth })),
  fc.constant<Fuzzed>({ method: "GET", path: () => "/v1/shapes?limit=2", headers: auth }),
);

// ---- the oracle -----------------------------------------------------------------------------------

const ctx: Ctx = { ids: [], tokens: [] };
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

async function send(r: Fuzzed): Promise<void> {
  const path = r.path(ctx);
  const method = r.method.toUpperCase();
  const withBody = r.body !== undefined && !["GET", "HEAD"].includes(method);
  const before = store();
  const abort = new AbortController();
  const res = await fetch(`${t.url}${path}`, {
    method: r.method,
    headers: r.headers,
    signal: abort.signal,
    ...(withBody ? { body: r.body } : {}),
  });
  const type = res.headers.get("content-type") ?? "";
  // A watch that was accepted streams forever: its headers are the answer.
  const text = type.startsWith("text/event-stream") ? (abort.abort(), "") : await res.text();
  const shown = typeof r.body === "string" ? r.body.slice(0, 200) : r.body ? `<${r.body.length} bytes>` : "";
  const where = `${r.method} ${path.slice(0, 200)} ${JSON.stringify(r.headers)} ${withBody ? shown : ""} → ${res.status} ${text.slice(0, 300)}`;
  const after = store();

  expect(res.status, `no 5xx without injected faults: ${where}`).toBeLessThan(500);
  if (res.status >= 400 && method !== "HEAD") {
    expect(type, `a refusal is a problem: ${where}`).toMatch(/^application\/problem\+json/);
    const problem = Problem.parse(JSON.parse(text));
    expect(problem.status, where).toBe(res.status);
    expect(problem.detail, where).toMatch(/^cannot /);
  }
  if (res.status === 405) expect(res.headers.get("allow"), where).toBeTruthy();
  if (res.status === 401) expect(res.headers.get("www-authenticate"), where).toBeTruthy();

  if (path.startsWith("/admin/faults")) t.cloud.deps.faults.clear(); // an admin write must not inject faults
  const isShapes = /^\/v1\/shapes(\/|\?|$)/i.test(path);
  if (!WRITES.has(method) || !isShapes || res.status >= 300) {
    // Nothing changed: not a write, or a refused one (nothing half-stored).
    expect(after, `nothing changes on ${where}`).toEqual(before);
    if (res.status === 200 && method === "GET" && isShapes) checkRead(text, after, where);
    return;
  }
  checkWrite(method, path, withBody ? r.body : undefined, text, before, after, where);
}

function checkRead(text: string, now: Store, where: string): void {
  const body: unknown = JSON.parse(text);
  if (typeof body === "object" && body !== null && "items" in body) {
    const page = ShapePage.parse(body);
    for (const item of page.items) expect(item, where).toEqual(now.shapes.get(item.id));
    if (page.nextPageToken) ctx.tokens.push(page.nextPageToken);
  } else {
    const shape = Shape.parse(body);
    expect(shape, where).toEqual(now.shapes.get(shape.id));
  }
}

function checkWrite(
  method: string,
  path: string,
  body: string | Uint8Array | undefined,
  text: string,
  before: Store,
  after: Store,
  where: string,
): void {
  // A DELETE ignores any body. A leading byte order mark may be ignored (RFC 8259 §8.1): the cloud does,
  // and so does the model.
  const input =
    method !== "DELETE" && typeof body === "string"
      ? (JSON.parse(body.replace(/^\uFEFF/, "")) as Record<string, unknown>)
      : {};
  const id =
    method === "POST" ? (JSON.parse(text) as Shape).id : decodeURIComponent(path.slice("/v1/shapes/".length));
  const previous = before.shapes.get(id);
  let expected: Shape | undefined;
  switch (method) {
    case "POST":
      expect(previous, where).toBeUndefined();
      expected = { ...(JSON.parse(text) as Shape), ...writable(input) };
      ctx.ids.push(id);
      break;
    case "PATCH":
      expected = previous && { ...previous, ...mergePatch(previous, input) };
      break;
    case "PUT":
      // A replace: every writable field from the body; an absent size or tags are removed.
      expected = previous && { ...previous, ...writable(input) };
      if (expected && typeof input.size !== "number") delete expected.size;
      break;
    case "DELETE":
      expected = undefined;
      break;
  }
  const changed = method === "DELETE" || method === "POST" || !sameFields(previous, expected);
  expect(after.revision, `a write bumps the revision by one, a no-op not at all: ${where}`).toBe(
    before.revision + (changed ? 1 : 0),
  );
  expect(after.changes, where).toBe(before.changes + (changed ? 1 : 0));
  // Every other shape is as it was.
  for (const [otherId, shape] of before.shapes) {
    if (otherId !== id) expect(after.shapes.get(otherId), where).toEqual(shape);
  }
  expect(after.shapes.size, where).toBe(
    before.shapes.size + (method === "POST" ? 1 : method === "DELETE" ? -1 : 0),
  );
  const stored = after.shapes.get(id);
  if (!expected) {
    expect(stored, where).toBeUndefined();
    return;
  }
  expect(stored, where).toBeDefined();
  expect(pick(stored as Shape), `the stored shape is what was asked: ${where}`).toEqual(pick(expected));
  if (changed) expect(stored?.revision, where).toBe(after.revision);
  if (method !== "POST") expect(JSON.parse(text), where).toEqual(stored);
}

/** The writable fields of a request body (defaults as the API documents them). */
function writable(input: Record<string, unknown>): Partial<Shape> {
  const out: Partial<Shape> = {
    name: input.name as string,
    type: input.type as Shape["type"],
    color: input.color as Shape["color"],
    tags: (input.tags as Record<string, string> | undefined) ?? {},
  };
  if (typeof input.size === "number") out.size = input.size;
  return out;
}

/** RFC 7396 on the writable fields. */
function mergePatch(current: Shape, patch: Record<string, unknown>): Partial<Shape> {
  const tags: Record<string, string> = patch.tags === null ? {} : { ...current.tags };
  for (const [k, v] of Object.entries((patch.tags as Record<string, string | null> | undefined) ?? {})) {
    if (v === null) delete tags[k];
    else tags[k] = v;
  }
  const out: Partial<Shape> = {
    name: (patch.name as string | undefined) ?? current.name,
    type: (patch.type as Shape["type"] | undefined) ?? current.type,
    color: (patch.color as Shape["color"] | undefined) ?? current.color,
    tags,
  };
  const size = patch.size === undefined ? current.size : (patch.size as number | null);
  if (typeof size === "number") out.size = size;
  else out.size = undefined;
  return out;
}

function pick(s: Partial<Shape>): Record<string, unknown> {
  return { name: s.name, type: s.type, color: s.color, size: s.size, tags: s.tags };
}

function sameFields(a: Partial<Shape> | undefined, b: Partial<Shape> | undefined): boolean {
  return JSON.stringify(pick(a ?? {})) === JSON.stringify(pick(b ?? {}));
}

describe("the mock cloud's API under fuzzing", () => {
  it("never answers 5xx, always explains a refusal, never half-stores, and writes exactly what it says", async () => {
    ctx.ids.push(...store().shapes.keys());
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(requests, requests, wellFormed), { minLength: 1, maxLength: 10 }),
        async (batch) => {
          for (const r of batch) await send(r);
          expect(t.cloud.deps.repository.integrityCheck()).toBe("ok");
        },
      ),
      // Bounded: 500 runs (about 4,000 requests), or 45 s on a busy machine, whichever comes first.
      { numRuns: 500, interruptAfterTimeLimit: 45_000 },
    );
    // The run exercised the API: shapes were created through it, and listings handed out page tokens.
    expect(ctx.ids.length).toBeGreaterThan(10);
    expect(ctx.tokens.length).toBeGreaterThan(0);
  }, 120_000);
});
