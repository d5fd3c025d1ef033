import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { MAX_TAGS, type ShapePage } from "../schemas.ts";
import {
  idsOf,
  problemFields,
  shapeBody,
  shapeFields,
  startTestCloud,
  TOKEN,
  type TestCloud,
} from "../test-support.ts";

let t: TestCloud;
beforeAll(async () => {
  t = await startTestCloud({ bodyLimitBytes: 4096 });
});
afterAll(async () => {
  await t.close();
});

let n = 0;
/** A fresh name for each test. */
const fresh = (prefix = "s") => `${prefix}-${++n}`;

describe("POST /v1/shapes", () => {
  it("creates a shape with a revision, an ETag and a Location", async () => {
    const res = await t
      .api("post", "/v1/shapes")
      .send({ name: "create.me", type: "circle", color: "blue", size: 2.5, tags: { owner: "k8s" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: "create.me",
      type: "circle",
      color: "blue",
      size: 2.5,
      tags: { owner: "k8s" },
    });
    expect(res.body.id).toMatch(/^shp_/);
    expect(res.body.revision).toBeGreaterThan(0);
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    expect(res.headers.location).toBe(`/v1/shapes/${res.body.id}`);
    expect(res.body.createdAt).toBe(res.body.updatedAt);
    const got = await t.api("get", `/v1/shapes/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it("defaults tags to {} and leaves size out when absent", async () => {
    const res = await t.api("post", "/v1/shapes").send({ name: fresh(), type: "square", color: "red" });
    expect(res.status).toBe(201);
    expect(res.body.tags).toEqual({});
    expect(res.body).not.toHaveProperty("size");
  });

  it("answers 409 naming the id that holds a duplicate name, and stores nothing", async () => {
    const first = await t.create(shapeBody("dup.name"));
    const before = (await t.api("get", "/healthz")).body;
    const res = await t.api("post", "/v1/shapes").send(shapeBody("dup.name", { color: "green" }));
    expect(res.status).toBe(409);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 409, existingId: first.id, title: "Name already in use" });
    expect(res.body.detail).toContain(first.id);
    const after = (await t.api("get", "/healthz")).body;
    expect(after).toEqual(before);
  });

  it("stores strings with quotes, SQL and HTML verbatim and returns them as plain JSON", async () => {
    const nasty = `'; DROP TABLE shapes; -- "quoted" <script>alert('x')</script> \\ \u00e9\u4e2d\n\t`;
    const created = await t.create(shapeBody(fresh(), { tags: { note: nasty, "html/tag": "<b>&amp;</b>" } }));
    const res = await t.api("get", `/v1/shapes/${created.id}`);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.body.tags).toEqual({ note: nasty, "html/tag": "<b>&amp;</b>" });
    expect(JSON.parse(res.text).tags.note).toBe(nasty);
  });

  const invalid: { reason: string; body: unknown; field: string }[] = [
    { reason: "upper-case name", body: shapeBody("Foo"), field: "name" },
    { reason: "name with a space", body: shapeBody("a b"), field: "name" },
    { reason: "name ending in a dash", body: shapeBody("a-"), field: "name" },
    { reason: "empty name", body: shapeBody(""), field: "name" },
    { reason: "name longer than 253", body: shapeBody("a".repeat(254)), field: "name" },
    { reason: "missing name", body: { type: "square", color: "red" }, field: "name" },
    { reason: "unknown type", body: shapeBody("x", { type: "blob" }), field: "type" },
    { reason: "color off the palette", body: shapeBody("x", { color: "octarine" }), field: "color" },
    { reason: "zero size", body: shapeBody("x", { size: 0 }), field: "size" },
    { reason: "negative size", body: shapeBody("x", { size: -1 }), field: "size" },
    { reason: "huge size", body: shapeBody("x", { size: 1e9 }), field: "size" },
    { reason: "size as a string", body: shapeBody("x", { size: "3" }), field: "size" },
    { reason: "tag value not a string", body: shapeBody("x", { tags: { a: 1 } }), field: "tags.a" },
    { reason: "tag key with a space", body: shapeBody("x", { tags: { "a b": "c" } }), field: "tags.a b" },
    { reason: "tag value too long", body: shapeBody("x", { tags: { a: "v".repeat(513) } }), field: "tags.a" },
    {
      reason: "too many tags",
      body: shapeBody("x", {
        tags: Object.fromEntries(Array.from({ length: MAX_TAGS + 1 }, (_, i) => [`k${i}`, "v"])),
      }),
      field: "tags",
    },
    { reason: "unknown field", body: shapeBody("x", { colour: "red" }), field: "colour" },
    { reason: "read-only field", body: shapeBody("x", { id: "shp_mine" }), field: "id" },
    { reason: "an array body", body: [shapeBody("x")], field: "(body)" },
  ];
  it.each(invalid)("answers 400 naming the field for $reason", async ({ body, field }) => {
    const res = await t.api("post", "/v1/shapes").send(body as object);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(problemFields(res.body)).toContain(field);
    expect(res.body.detail).toContain(field);
    expect(res.text).not.toMatch(/at .*\.ts:\d+/); // never a stack trace
  });

  const unreadable: { reason: string; contentType: string; body: string; status: number; slug: string }[] = [
    {
      reason: "malformed JSON",
      contentType: "application/json",
      body: '{"name":',
      status: 400,
      slug: "malformed-json",
    },
    {
      reason: "a bare JSON string",
      contentType: "application/json",
      body: '"x"',
      status: 400,
      slug: "malformed-json",
    },
    {
      reason: "a __proto__ key",
      contentType: "application/json",
      body: '{"__proto__":{"a":1}}',
      status: 400,
      slug: "malformed-json",
    },
    {
      reason: "a __proto__ tag",
      contentType: "application/json",
      body: '{"name":"p","type":"square","color":"red","tags":{"__proto__":"x"}}',
      status: 400,
      slug: "malformed-json",
    },
    {
      reason: "form data",
      contentType: "application/x-www-form-urlencoded",
      body: "name=x",
      status: 415,
      slug: "unsupported-media-type",
    },
    { reason: "text", contentType: "text/plain", body: "hello", status: 415, slug: "unsupported-media-type" },
    {
      reason: "a latin1 charset",
      contentType: "application/json; charset=latin1",
      body: "{}",
      status: 415,
      slug: "unsupported-media-type",
    },
  ];
  it.each(unreadable)("answers $status for $reason", async ({ contentType, body, status, slug }) => {
    const res = await t.api("post", "/v1/shapes").set("content-type", contentType).send(body);
    expect(res.status).toBe(status);
    expect(res.body.type).toBe(`https://shapes.example.com/problems/${slug}`);
    expect(res.body.detail).toMatch(/^cannot /);
  });

  it("answers 400 when there is no body at all", async () => {
    const res = await t.api("post", "/v1/shapes");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe("(body)");
  });

  it.each([
    { reason: "Content-Length: 0", contentType: "application/json" },
    { reason: "an upper-case media type", contentType: "APPLICATION/JSON" },
  ])(
    "answers 400 for an empty JSON body, $reason, and changes nothing (not a no-op PATCH)",
    async ({ contentType }) => {
      const created = await t.api("post", "/v1/shapes").send(shapeBody(fresh()));
      const before = (await t.api("get", "/healthz")).body.revision;
      for (const [method, path] of [
        ["post", "/v1/shapes"],
        ["patch", `/v1/shapes/${created.body.id}`],
      ] as const) {
        const res = await t.api(method, path).set("content-type", contentType).send("");
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(res.body.errors[0].field).toBe("(body)");
      }
      expect((await t.api("get", "/healthz")).body.revision).toBe(before);
    },
  );

  it("answers 413 for an oversized body and stores nothing", async () => {
    const before = (await t.api("get", "/healthz")).body.revision;
    const res = await t.api("post", "/v1/shapes").send(
      shapeBody(fresh(), {
        tags: {
          big: "x".repeat(500),
          ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, "y".repeat(500)])),
        },
      }),
    );
    expect(res.status).toBe(413);
    expect(res.body.type).toBe("https://shapes.example.com/problems/payload-too-large");
    expect((await t.api("get", "/healthz")).body.revision).toBe(before);
  });
});

describe("GET /v1/shapes/{id}", () => {
  it("answers 404 as a problem for an unknown id (any characters)", async () => {
    for (const id of ["shp_nope", "%27%20OR%201%3D1", "..%2F..%2Fetc"]) {
      const res = await t.api("get", `/v1/shapes/${id}`);
      expect(res.status, id).toBe(404);
      expect(res.body.type).toBe("https://shapes.example.com/problems/not-found");
    }
  });
});

describe("GET /v1/shapes/by-name/{name}", () => {
  it("answers the shape with the same body and ETag as GET by id, for names with dots", async () => {
    for (const name of [fresh("plain"), `ns.${fresh("dotted")}.x`, `a.${fresh("b")}.c.d`]) {
      const s = await t.create(shapeBody(name, { tags: { owner: "k8s" } }));
      const byId = await t.api("get", `/v1/shapes/${s.id}`);
      const byName = await t.api("get", `/v1/shapes/by-name/${name}`);
      expect(byName.status, name).toBe(200);
      expect(byName.body).toEqual(byId.body);
      expect(byName.headers.etag).toBe(byId.headers.etag);
      expect(byName.headers.etag).toBe(`"${s.revision}"`);
    }
  });

  it("answers 404 as a problem when no shape holds the name (any characters)", async () => {
    for (const name of [fresh("never"), "by-name", "%27%20OR%201%3D1", "..%2F..%2Fetc", "shp_nope"]) {
      const res = await t.api("get", `/v1/shapes/by-name/${name}`);
      expect(res.status, name).toBe(404);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.body.type).toBe("https://shapes.example.com/problems/not-found");
      expect(res.body.detail).toMatch(/^cannot find a shape named /);
    }
  });

  it("follows renames and deletes at once: the old name is 404, the new one the shape", async () => {
    const s = await t.create(shapeBody(fresh("old")));
    const renamed = (await t.api("patch", `/v1/shapes/${s.id}`).send({ name: `${s.name}.new` })).body;
    expect((await t.api("get", `/v1/shapes/by-name/${s.name}`)).status).toBe(404);
    expect((await t.api("get", `/v1/shapes/by-name/${s.name}.new`)).body).toEqual(renamed);
    await t.api("delete", `/v1/shapes/${s.id}`).expect(204);
    expect((await t.api("get", `/v1/shapes/by-name/${s.name}.new`)).status).toBe(404);
  });

  it("reads the latest state under a listLagMs fault, while lists still trail", async () => {
    const team = fresh("lag");
    const s = await t.create(shapeBody(fresh("lagging"), { tags: { team } }));
    const patched = (await t.api("patch", `/v1/shapes/${s.id}`).send({ color: "green" })).body;
    await t.admin("put", "/admin/faults").send({ listLagMs: 600_000 }).expect(200);
    try {
      const listed = await t.api("get", `/v1/shapes?tag=team=${team}`);
      expect(listed.body.items).toEqual([]); // the fault is in force: the listing does not know the shape yet
      const res = await t.api("get", `/v1/shapes/by-name/${s.name}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(patched);
      expect(res.headers.etag).toBe(`"${patched.revision}"`);
    } finally {
      await t.admin("delete", "/admin/faults").expect(204);
    }
  });

  it("answers the injected faults like every other route", async () => {
    const s = await t.create(shapeBody(fresh()));
    await t
      .admin("put", "/admin/faults")
      .send({ path: "/v1/shapes/by-name/:name", errorRate: 1 })
      .expect(200);
    try {
      expect((await t.api("get", `/v1/shapes/by-name/${s.name}`)).status).toBe(500);
      expect((await t.api("get", `/v1/shapes/${s.id}`)).status).toBe(200);
    } finally {
      await t.admin("delete", "/admin/faults").expect(204);
    }
  });
});

describe("PATCH /v1/shapes/{id} (JSON Merge Patch)", () => {
  it("changes only the members given; null removes a tag or the size; tags: null clears", async () => {
    const s = await t.create(shapeBody(fresh(), { size: 3, tags: { a: "1", b: "2", c: "3" } }));
    const res = await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("content-type", "application/merge-patch+json")
      .send(JSON.stringify({ color: "green", size: null, tags: { a: null, b: "two", d: "4" } }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: s.name,
      type: "square",
      color: "green",
      tags: { b: "two", c: "3", d: "4" },
    });
    expect(res.body).not.toHaveProperty("size");
    expect(res.body.revision).toBeGreaterThan(s.revision);
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    expect(res.body.updatedAt >= s.updatedAt).toBe(true);
    expect(res.body.createdAt).toBe(s.createdAt);

    const cleared = await t.api("patch", `/v1/shapes/${s.id}`).send({ tags: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.tags).toEqual({});
  });

  it("does not count a patch that changes nothing as a write", async () => {
    const s = await t.create(shapeBody(fresh(), { tags: { a: "1" } }));
    const res = await t.api("patch", `/v1/shapes/${s.id}`).send({ color: "red", tags: { a: "1" } });
    expect(res.status).toBe(200);
    expect(res.body.revision).toBe(s.revision);
    expect(res.body.updatedAt).toBe(s.updatedAt);
  });

  const badPatches: { reason: string; patch: unknown; field: string }[] = [
    { reason: "removing the name", patch: { name: null }, field: "name" },
    { reason: "removing the type", patch: { type: null }, field: "type" },
    { reason: "removing the color", patch: { color: null }, field: "color" },
    { reason: "an unknown member", patch: { shade: "dark" }, field: "shade" },
    { reason: "a read-only member", patch: { revision: 1 }, field: "revision" },
    { reason: "a bad tag value", patch: { tags: { a: 5 } }, field: "tags.a" },
    {
      reason: "tags beyond the limit after the merge",
      patch: { tags: Object.fromEntries(Array.from({ length: MAX_TAGS }, (_, i) => [`n${i}`, "v"])) },
      field: "tags",
    },
  ];
  it.each(badPatches)("answers 400 and changes nothing for $reason", async ({ patch, field }) => {
    const s = await t.create(shapeBody(fresh(), { tags: { keep: "me" } }));
    const res = await t.api("patch", `/v1/shapes/${s.id}`).send(patch as object);
    expect(res.status).toBe(400);
    expect(problemFields(res.body)).toContain(field);
    expect((await t.api("get", `/v1/shapes/${s.id}`)).body).toEqual(s);
  });

  it("renames, and answers 409 with existingId when the new name is taken", async () => {
    const a = await t.create(shapeBody(fresh("rename")));
    const b = await t.create(shapeBody(fresh("rename")));
    const taken = await t.api("patch", `/v1/shapes/${b.id}`).send({ name: a.name });
    expect(taken.status).toBe(409);
    expect(taken.body.existingId).toBe(a.id);
    const renamed = await t.api("patch", `/v1/shapes/${b.id}`).send({ name: `${b.name}.new` });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe(`${b.name}.new`);
  });

  it("never loses a tag when many clients patch different tags at once", async () => {
    const s = await t.create(shapeBody(fresh()));
    const count = 25;
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        t.api("patch", `/v1/shapes/${s.id}`).send({ tags: { [`t${i}`]: String(i) } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(count).fill(200));
    const revisions = results.map((r) => r.body.revision as number);
    expect(new Set(revisions).size).toBe(count);
    const final = await t.api("get", `/v1/shapes/${s.id}`);
    expect(final.body.tags).toEqual(
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`t${i}`, String(i)])),
    );
    expect(final.body.revision).toBe(Math.max(...revisions));
  });

  it("with If-Match: applies at the right revision, 412 otherwise; of concurrent writers with the same ETag exactly one wins", async () => {
    const s = await t.create(shapeBody(fresh()));
    const stale = await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("if-match", `"${s.revision - 1}"`)
      .send({ color: "blue" });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 412, currentRevision: s.revision });

    const racers = await Promise.all(
      ["blue", "green", "yellow", "pink"].map((color) =>
        t.api("patch", `/v1/shapes/${s.id}`).set("if-match", `"${s.revision}"`).send({ color }),
      ),
    );
    const statuses = racers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 412, 412, 412]);
    const winner = racers.find((r) => r.status === 200)!;
    expect((await t.api("get", `/v1/shapes/${s.id}`)).body.color).toBe(winner.body.color);

    const star = await t.api("patch", `/v1/shapes/${s.id}`).set("if-match", "*").send({ color: "black" });
    expect(star.status).toBe(200);
    const list = await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("if-match", `"1", "${star.body.revision}"`)
      .send({ color: "white" });
    expect(list.status).toBe(200);
    const weak = await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("if-match", `W/"${list.body.revision}"`)
      .send({ color: "gray" });
    expect(weak.status).toBe(412);
  });

  // Entity tags are opaque (RFC 9110 §8.8.3): a well-formed tag the cloud never issued does not match (412);
  // only a header that is not If-Match grammar is a 400. `rev` is the shape's current revision.
  const ifMatches: { reason: string; ifMatch: (rev: number) => string; status: 200 | 400 | 412 }[] = [
    { reason: "the current ETag", ifMatch: (rev) => `"${rev}"`, status: 200 },
    { reason: "*", ifMatch: () => "*", status: 200 },
    { reason: "a list holding the current ETag", ifMatch: (rev) => `"x", W/"y", "${rev}"`, status: 200 },
    { reason: "a list with empty elements", ifMatch: (rev) => `, "1" ,, "${rev}" ,`, status: 200 },
    { reason: "a stale revision", ifMatch: (rev) => `"${rev - 1}"`, status: 412 },
    { reason: "a tag the cloud never issued", ifMatch: () => '"definitely-stale"', status: 412 },
    {
      reason: "a weak tag of the current revision (never matches)",
      ifMatch: (rev) => `W/"${rev}"`,
      status: 412,
    },
    { reason: "the revision with a leading zero (opaque)", ifMatch: (rev) => `"0${rev}"`, status: 412 },
    { reason: "an empty tag", ifMatch: () => '""', status: 412 },
    { reason: "a tag holding a comma", ifMatch: (rev) => `"${rev},${rev}"`, status: 412 },
    { reason: "a tag holding obs-text", ifMatch: () => '"caf\xe9"', status: 412 },
    { reason: "a revision too large to be a number", ifMatch: () => '"99999999999999999999"', status: 412 },
    { reason: "an unquoted revision", ifMatch: (rev) => String(rev), status: 400 },
    { reason: "an unquoted weak revision", ifMatch: (rev) => `W/${rev}`, status: 400 },
    { reason: "a lower-case weak prefix", ifMatch: (rev) => `w/"${rev}"`, status: 400 },
    { reason: "an unterminated tag", ifMatch: (rev) => `"${rev}`, status: 400 },
    { reason: "two tags without a comma", ifMatch: (rev) => `"${rev}" "${rev}"`, status: 400 },
    { reason: "a space inside a tag", ifMatch: () => '"a b"', status: 400 },
    { reason: "* inside a list", ifMatch: (rev) => `*, "${rev}"`, status: 400 },
    { reason: "only commas", ifMatch: () => ",,", status: 400 },
  ];
  it.each(ifMatches)("answers $status to If-Match with $reason", async ({ ifMatch, status }) => {
    const s = await t.create(shapeBody(fresh()));
    const res = await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("if-match", ifMatch(s.revision))
      .send({ color: "blue" });
    expect(res.status).toBe(status);
    if (status === 400) {
      expect(res.body.errors[0].field).toBe("If-Match");
      expect(res.body.detail).toMatch(/^cannot read If-Match/);
    }
    if (status === 412) expect(res.body.currentRevision).toBe(s.revision);
    const after = (await t.api("get", `/v1/shapes/${s.id}`)).body as { color: string };
    expect(after.color).toBe(status === 200 ? "blue" : s.color);
  });

  it("answers 404 for an unknown id, even with If-Match", async () => {
    const res = await t.api("patch", "/v1/shapes/shp_gone").set("if-match", '"1"').send({ color: "blue" });
    expect(res.status).toBe(404);
  });
});

describe("PUT /v1/shapes/{id}", () => {
  it("replaces every writable field: absent size and tags are removed", async () => {
    const s = await t.create(shapeBody(fresh(), { size: 7, tags: { a: "1" } }));
    const res = await t
      .api("put", `/v1/shapes/${s.id}`)
      .send({ name: s.name, type: "triangle", color: "purple" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: s.id, name: s.name, type: "triangle", color: "purple", tags: {} });
    expect(res.body).not.toHaveProperty("size");
    expect(res.body.revision).toBeGreaterThan(s.revision);
  });

  it("honours If-Match and rejects partial bodies", async () => {
    const s = await t.create(shapeBody(fresh()));
    const stale = await t
      .api("put", `/v1/shapes/${s.id}`)
      .set("if-match", '"1"')
      .send(shapeBody(s.name, { color: "blue" }));
    expect(stale.status).toBe(412);
    const partial = await t.api("put", `/v1/shapes/${s.id}`).send({ color: "blue" });
    expect(partial.status).toBe(400);
    expect(problemFields(partial.body)).toEqual(expect.arrayContaining(["name", "type"]));
    const ok = await t
      .api("put", `/v1/shapes/${s.id}`)
      .set("if-match", `"${s.revision}"`)
      .send(shapeBody(s.name, { color: "blue" }));
    expect(ok.status).toBe(200);
    expect(ok.body.color).toBe("blue");
  });

  it("answers 409 when renaming onto a taken name", async () => {
    const a = await t.create(shapeBody(fresh()));
    const b = await t.create(shapeBody(fresh()));
    const res = await t.api("put", `/v1/shapes/${b.id}`).send(shapeBody(a.name));
    expect(res.status).toBe(409);
    expect(res.body.existingId).toBe(a.id);
  });
});

describe("the cloud's own rule: a triangle's size is at most 500 (422, for good)", () => {
  /** A write the rule is about, at a shape made by `setup` (none: a create). */
  interface RuleRow {
    reason: string;
    /** The shape written to (through the repository: a shape stored before the rule existed is possible). */
    setup?: { type: "square" | "triangle"; size: number };
    method: "post" | "patch" | "put";
    body: Record<string, unknown>;
    status: 200 | 201 | 422;
    /** The words of the 422's detail. */
    detail?: string;
  }
  const rows: RuleRow[] = [
    {
      reason: "a create of a triangle of size 501: refused, nothing stored",
      method: "post",
      body: { type: "triangle", size: 501 },
      status: 422,
      detail: "size 501 is too large: a triangle is at most size 500",
    },
    {
      reason: "a create of a triangle of size 500, the limit",
      method: "post",
      body: { type: "triangle", size: 500 },
      status: 201,
    },
    {
      reason: "a create of a square of size 1000: other types keep the schema's 1000",
      method: "post",
      body: { type: "square", size: 1000 },
      status: 201,
    },
    {
      reason: "a patch of a triangle's size above the limit: refused, unchanged",
      setup: { type: "triangle", size: 10 },
      method: "patch",
      body: { size: 800 },
      status: 422,
      detail: "size 800 is too large: a triangle is at most size 500",
    },
    {
      reason: "a patch that makes a square of size 800 a triangle: refused, unchanged",
      setup: { type: "square", size: 800 },
      method: "patch",
      body: { type: "triangle" },
      status: 422,
      detail: "size 800 is too large",
    },
    {
      reason: "a patch that leaves type and size alone (a recolor) of a triangle stored before the rule",
      setup: { type: "triangle", size: 800 },
      method: "patch",
      body: { color: "blue" },
      status: 200,
    },
    {
      reason: "a patch that removes the size of a triangle stored before the rule",
      setup: { type: "triangle", size: 800 },
      method: "patch",
      body: { size: null },
      status: 200,
    },
    {
      reason: "a replace with a triangle above the limit: refused, unchanged",
      setup: { type: "square", size: 3 },
      method: "put",
      body: { type: "triangle", size: 900 },
      status: 422,
      detail: "cannot replace shape",
    },
  ];
  it.each(rows)("$reason", async ({ setup, method, body, status, detail }) => {
    const name = fresh("rule");
    const before = setup && t.cloud.deps.repository.create(shapeFields(name, setup));
    const send = () =>
      method === "post"
        ? t.api("post", "/v1/shapes").send(shapeBody(name, body))
        : method === "patch"
          ? t.api("patch", `/v1/shapes/${before?.id}`).send(body)
          : t.api("put", `/v1/shapes/${before?.id}`).send(shapeBody(name, body));
    const revision = t.cloud.deps.repository.revision;
    const res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    if (status !== 422) return;
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      type: "https://shapes.example.com/problems/size-limit",
      status: 422,
      errors: [{ field: "size", message: expect.stringMatching(/^must be at most 500 for a triangle$/) }],
    });
    expect(res.body.detail).toMatch(/^cannot /);
    expect(res.body.detail).toContain(detail);
    // Nothing stored, nothing changed, no revision; and the same request is refused again.
    expect(t.cloud.deps.repository.revision).toBe(revision);
    expect(t.cloud.deps.repository.getByName(name) ?? undefined).toEqual(before);
    expect((await send()).status).toBe(422);
  });
});

describe("DELETE /v1/shapes/{id}", () => {
  it("deletes (204), then 404; honours If-Match", async () => {
    const s = await t.create(shapeBody(fresh()));
    const stale = await t.api("delete", `/v1/shapes/${s.id}`).set("if-match", `"${s.revision + 1000}"`);
    expect(stale.status).toBe(412);
    const ok = await t.api("delete", `/v1/shapes/${s.id}`).set("if-match", `"${s.revision}"`);
    expect(ok.status).toBe(204);
    expect(ok.text).toBe("");
    expect((await t.api("get", `/v1/shapes/${s.id}`)).status).toBe(404);
    expect((await t.api("delete", `/v1/shapes/${s.id}`)).status).toBe(404);
  });

  it("frees the name for a new shape with a new id", async () => {
    const s = await t.create(shapeBody(fresh()));
    await t.api("delete", `/v1/shapes/${s.id}`).expect(204);
    const again = await t.create(shapeBody(s.name));
    expect(again.id).not.toBe(s.id);
  });
});

describe("GET /v1/shapes (list)", () => {
  it("filters by tags (AND) and paginates with a stable revision", async () => {
    const team = fresh("team");
    const made = [];
    for (let i = 0; i < 7; i++) {
      made.push(await t.create(shapeBody(fresh("list"), { tags: { team, parity: i % 2 ? "odd" : "even" } })));
    }
    const even = await t.api("get", `/v1/shapes?tag=team=${team}&tag=parity=even`);
    expect(even.status).toBe(200);
    expect(idsOf(even.body)).toEqual(made.filter((_, i) => i % 2 === 0).map((s) => s.id));
    expect(even.body).not.toHaveProperty("nextPageToken");

    const pages: ShapePage[] = [];
    let token: string | undefined;
    do {
      const res = await t.api(
        "get",
        `/v1/shapes?tag=team=${team}&limit=3${token ? `&pageToken=${token}` : ""}`,
      );
      expect(res.status).toBe(200);
      pages.push(res.body as ShapePage);
      token = (res.body as ShapePage).nextPageToken;
    } while (token);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(new Set(pages.map((p) => p.revision)).size).toBe(1);
    expect(pages.flatMap((p) => p.items.map((s) => s.id))).toEqual(made.map((s) => s.id));
  });

  it("matches tag values exactly, including empty values and '=' inside values", async () => {
    const s = await t.create(shapeBody(fresh(), { tags: { eq: "a=b", empty: "" } }));
    const res = await t.api("get", `/v1/shapes?tag=${encodeURIComponent("eq=a=b")}&tag=empty=`);
    expect(idsOf(res.body)).toEqual([s.id]);
  });

  const badQueries: { reason: string; query: string; field: string }[] = [
    { reason: "limit 0", query: "limit=0", field: "limit" },
    { reason: "limit too large", query: "limit=1001", field: "limit" },
    { reason: "limit not a number", query: "limit=ten", field: "limit" },
    { reason: "limit twice", query: "limit=1&limit=2", field: "limit" },
    { reason: "a tag without '='", query: "tag=owner", field: "tag" },
    { reason: "a tag with a bad key", query: "tag=%20x=1", field: "tag" },
    { reason: "a forged page token", query: "pageToken=abc", field: "pageToken" },
    { reason: "an unknown parameter", query: "tags=a=b", field: "tags" },
  ];
  it.each(badQueries)("answers 400 naming the parameter for $reason", async ({ query, field }) => {
    const res = await t.api("get", `/v1/shapes?${query}`);
    expect(res.status).toBe(400);
    expect(problemFields(res.body)).toContain(field);
  });

  it("refuses a page token with other tag filters than the listing it came from", async () => {
    const team = fresh("team");
    await t.create(shapeBody(fresh(), { tags: { team } }));
    await t.create(shapeBody(fresh(), { tags: { team } }));
    const first = await t.api("get", `/v1/shapes?tag=team=${team}&limit=1`);
    const res = await t.api("get", `/v1/shapes?limit=1&pageToken=${first.body.nextPageToken}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("other tag filters");
  });

  it("neither skips nor repeats a shape while other clients insert and delete concurrently", async () => {
    const team = fresh("page");
    const existing = [];
    for (let i = 0; i < 40; i++) existing.push(await t.create(shapeBody(fresh("pg"), { tags: { team } })));
    const seen: string[] = [];
    let token: string | undefined;
    let writer = 0;
    let revision: number | undefined;
    do {
      // Between every two pages, other clients create shapes (some matching) and delete some of theirs.
      const created = await Promise.all([
        t.create(shapeBody(fresh("noise"), { tags: { team } })),
        t.create(shapeBody(fresh("noise"))),
      ]);
      if (writer++ % 2 === 0) await t.api("delete", `/v1/shapes/${created[0].id}`).expect(204);
      const res = await t.api(
        "get",
        `/v1/shapes?tag=team=${team}&limit=6${token ? `&pageToken=${token}` : ""}`,
      );
      expect(res.status).toBe(200);
      revision ??= res.body.revision;
      expect(res.body.revision).toBe(revision);
      seen.push(...idsOf(res.body));
      token = res.body.nextPageToken;
    } while (token);
    expect(new Set(seen).size).toBe(seen.length); // nothing repeated
    for (const s of existing) expect(seen).toContain(s.id); // nothing skipped
  });

  it("neither skips nor repeats while writers run at the same time, patching, renaming and inserting", async () => {
    const team = fresh("race");
    const existing = [];
    for (let i = 0; i < 30; i++) existing.push(await t.create(shapeBody(fresh("rc"), { tags: { team } })));
    let done = false;
    let writes = 0;
    const writer = (async () => {
      for (let i = 0; !done; i++) {
        const target = existing[i % existing.length]!;
        await Promise.all([
          t.create(shapeBody(fresh("racer"), { tags: { team } })),
          t.api("patch", `/v1/shapes/${target.id}`).send({ tags: { step: String(i) } }),
          t.api("patch", `/v1/shapes/${target.id}`).send({ name: `${target.name}.r${i}` }),
        ]);
        writes++;
      }
    })();
    const seen: string[] = [];
    let token: string | undefined;
    try {
      do {
        const res = await t.api(
          "get",
          `/v1/shapes?tag=team=${team}&limit=4${token ? `&pageToken=${token}` : ""}`,
        );
        expect(res.status).toBe(200);
        seen.push(...idsOf(res.body));
        token = (res.body as ShapePage).nextPageToken;
      } while (token);
    } finally {
      done = true;
      await writer;
    }
    expect(writes).toBeGreaterThan(0);
    expect(new Set(seen).size).toBe(seen.length);
    for (const s of existing) expect(seen).toContain(s.id);
  });
});

describe("routing and auth", () => {
  it("answers 405 with Allow for a method a path does not have", async () => {
    const res = await t.api("put", "/v1/shapes").send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, POST, HEAD");
    const one = await t.api("post", "/v1/shapes/shp_x").send({});
    expect(one.status).toBe(405);
    expect(one.headers.allow).toBe("GET, PATCH, PUT, DELETE, HEAD");
    const byName = await t.api("delete", "/v1/shapes/by-name/x");
    expect(byName.status).toBe(405);
    expect(byName.headers.allow).toBe("GET, HEAD");
  });

  it("answers 404 problems for unknown paths", async () => {
    const res = await t.api("get", "/v2/shapes");
    expect(res.status).toBe(404);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.body.detail).toContain("/v2/shapes");
  });

  const unauthorized: { reason: string; header: string | undefined; error: boolean }[] = [
    { reason: "no Authorization header", header: undefined, error: false },
    { reason: "a Basic credential", header: `Basic ${Buffer.from("u:p").toString("base64")}`, error: false },
    { reason: "an empty bearer", header: "Bearer ", error: false },
    { reason: "a wrong token", header: "Bearer nope", error: true },
    { reason: "the token with a suffix", header: `Bearer ${TOKEN}x`, error: true },
    { reason: "a prefix of the token", header: `Bearer ${TOKEN.slice(0, -1)}`, error: true },
    { reason: "the admin token on the API", header: "Bearer test-admin-token", error: true },
  ];
  it.each(unauthorized)("answers 401 with WWW-Authenticate for $reason", async ({ header, error }) => {
    for (const [method, path] of [
      ["get", "/v1/shapes"],
      ["post", "/v1/shapes"],
      ["get", "/v1/shapes/x"],
      ["get", "/v1/shapes/by-name/x"],
      ["delete", "/v1/shapes/x"],
      ["get", "/v1/watch"],
    ] as const) {
      const req = request(t.url)[method](path);
      if (header !== undefined) req.set("authorization", header);
      const res = await req;
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer realm="shapes"/);
      expect(String(res.headers["www-authenticate"]).includes('error="invalid_token"')).toBe(error);
      expect(res.body.type).toBe("https://shapes.example.com/problems/unauthorized");
    }
  });

  it("accepts the scheme name in any case", async () => {
    const res = await request(t.url).get("/v1/shapes?limit=1").set("authorization", `bearer ${TOKEN}`);
    expect(res.status).toBe(200);
  });
});
