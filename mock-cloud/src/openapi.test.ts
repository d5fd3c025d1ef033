/**
 * Keeps /openapi.json honest: every route the express app really has is documented (and nothing else),
 * and real answers — status, content type, headers, body — match what the document says, the bodies
 * being validated with the zod schema each documented component was generated from.
 */
import request from "supertest";
import type { Response } from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMPONENTS, type ComponentName } from "./openapi.ts";
import { openWatch, shapeBody, startTestCloud, type TestCloud } from "./test-support.ts";

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  parameters?: Json[];
  responses: Record<string, Json>;
}

let t: TestCloud;
let doc: Json;
const covered = new Set<string>();

beforeAll(async () => {
  t = await startTestCloud({ bodyLimitBytes: 2048 });
  doc = (await request(t.url).get("/openapi.json")).body as Json;
});
afterAll(async () => {
  await t.close();
});

const paths = () => doc.paths as Record<string, Record<string, Operation | Json[]>>;

function operation(method: string, template: string): Operation {
  const op = paths()[template]?.[method.toLowerCase()] as Operation | undefined;
  if (!op) throw new Error(`${method} ${template} is not documented`);
  return op;
}

function resolve(obj: Json): Json {
  const ref = obj.$ref;
  if (typeof ref !== "string") return obj;
  const parts = ref.replace(/^#\//, "").split("/");
  let cur: unknown = doc;
  for (const p of parts) cur = (cur as Json)[p];
  if (cur === undefined) throw new Error(`cannot resolve ${ref}`);
  return cur as Json;
}

/** Checks one real answer against the document. */
function conforms(res: Response, method: string, template: string): void {
  const op = operation(method, template);
  const documented = op.responses[String(res.status)];
  expect(documented, `${method} ${template} answered ${res.status}, which is not documented`).toBeDefined();
  covered.add(`${op.operationId} ${res.status}`);
  const response = resolve(documented!);
  const content = response.content as Record<string, Json> | undefined;
  if (!content) {
    expect(res.text, `${method} ${template} ${res.status} documents no body`).toBe("");
    return;
  }
  const type = String(res.headers["content-type"] ?? "").split(";")[0] ?? "";
  const media = content[type];
  expect(media, `${method} ${template} ${res.status}: content type ${type} is not documented`).toBeDefined();
  const ref = (media!.schema as Json).$ref;
  if (typeof ref === "string") {
    const name = ref.split("/").pop() as ComponentName;
    const parsed = COMPONENTS[name].schema.safeParse(JSON.parse(res.text));
    expect(parsed.error?.issues ?? [], `${method} ${template} ${res.status} body vs ${name}`).toEqual([]);
  }
  for (const header of Object.keys((response.headers as Json | undefined) ?? {})) {
    if (res.status === 503) continue; // Retry-After only when the outage rule sets one
    expect(
      res.headers[header.toLowerCase()],
      `${method} ${template} ${res.status} header ${header}`,
    ).toBeDefined();
  }
}

/** Every route of the express app, as "METHOD /openapi/{template}". */
function liveRoutes(): string[] {
  const out: string[] = [];
  interface Layer {
    route?: { path: string; methods: Record<string, boolean> };
    handle?: { stack?: Layer[] };
  }
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const m of Object.keys(layer.route.methods)) {
          if (m !== "_all") out.push(`${m.toUpperCase()} ${layer.route.path.replace(/:(\w+)/g, "{$1}")}`);
        }
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((t.cloud.app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out.sort();
}

describe("/openapi.json", () => {
  it("documents exactly the routes the app has", () => {
    const documented = Object.entries(paths()).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => k !== "parameters")
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(liveRoutes()).toEqual(documented.sort());
    expect(liveRoutes().length).toBeGreaterThanOrEqual(14);
  });

  it("is well formed: unique operation ids, declared path parameters, every $ref resolves", () => {
    expect(doc.openapi).toBe("3.1.1");
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(paths())) {
      for (const [method, op] of Object.entries(item)) {
        if (method === "parameters") continue;
        const o = op as Operation;
        expect(ids.has(o.operationId), o.operationId).toBe(false);
        ids.add(o.operationId);
        const params = [...((item.parameters as Json[] | undefined) ?? []), ...(o.parameters ?? [])];
        for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
          expect(
            params.some((p) => p.in === "path" && p.name === name),
            `${path} declares {${name}}`,
          ).toBe(true);
        }
      }
    }
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(20);
    for (const r of refs) expect(() => resolve({ $ref: r.slice(8, -1) })).not.toThrow();
    expect(Object.keys((doc.components as Json).schemas as Json).sort()).toEqual(
      Object.keys(COMPONENTS).sort(),
    );
  });

  it("describes the real answers of every operation", async () => {
    const api = (m: Parameters<TestCloud["api"]>[0], p: string) => t.api(m, p);
    // shapes
    const created = await api("post", "/v1/shapes").send(
      shapeBody("doc-a", { size: 1, tags: { owner: "k8s" } }),
    );
    conforms(created, "POST", "/v1/shapes");
    const id = created.body.id as string;
    await api("post", "/v1/shapes").send(shapeBody("doc-b"));
    conforms(await api("post", "/v1/shapes").send(shapeBody("doc-a")), "POST", "/v1/shapes");
    conforms(await api("post", "/v1/shapes").send({ name: "X" }), "POST", "/v1/shapes");
    const tooBig = { type: "triangle", size: 501 };
    const refused = await api("post", "/v1/shapes").send(shapeBody("doc-triangle", tooBig));
    expect(refused.status).toBe(422);
    conforms(refused, "POST", "/v1/shapes");
    conforms(
      await api("post", "/v1/shapes").send(shapeBody("big", { tags: { a: "x".repeat(3000) } })),
      "POST",
      "/v1/shapes",
    );
    conforms(
      await api("post", "/v1/shapes").set("content-type", "text/plain").send("x"),
      "POST",
      "/v1/shapes",
    );
    conforms(await request(t.url).post("/v1/shapes").send(shapeBody("anon")), "POST", "/v1/shapes");
    const page = await api("get", "/v1/shapes?limit=1");
    conforms(page, "GET", "/v1/shapes");
    conforms(
      await api("get", `/v1/shapes?limit=1&pageToken=${page.body.nextPageToken}`),
      "GET",
      "/v1/shapes",
    );
    conforms(await api("get", "/v1/shapes?limit=x"), "GET", "/v1/shapes");
    conforms(await request(t.url).get("/v1/shapes"), "GET", "/v1/shapes");
    conforms(await api("get", `/v1/shapes/${id}`), "GET", "/v1/shapes/{id}");
    conforms(await api("get", "/v1/shapes/shp_none"), "GET", "/v1/shapes/{id}");
    conforms(await api("get", "/v1/shapes/by-name/doc-a"), "GET", "/v1/shapes/by-name/{name}");
    conforms(await api("get", "/v1/shapes/by-name/doc-none"), "GET", "/v1/shapes/by-name/{name}");
    const patched = await api("patch", `/v1/shapes/${id}`)
      .set("content-type", "application/merge-patch+json")
      .send(JSON.stringify({ tags: { owner: null } }));
    conforms(patched, "PATCH", "/v1/shapes/{id}");
    conforms(
      await api("patch", `/v1/shapes/${id}`).set("if-match", '"1"').send({ color: "blue" }),
      "PATCH",
      "/v1/shapes/{id}",
    );
    conforms(await api("patch", `/v1/shapes/${id}`).send({ name: "doc-b" }), "PATCH", "/v1/shapes/{id}");
    conforms(await api("patch", `/v1/shapes/${id}`).send({ size: "big" }), "PATCH", "/v1/shapes/{id}");
    conforms(await api("patch", `/v1/shapes/${id}`).send(tooBig), "PATCH", "/v1/shapes/{id}");
    conforms(await api("patch", "/v1/shapes/shp_none").send({ color: "blue" }), "PATCH", "/v1/shapes/{id}");
    conforms(
      await api("patch", `/v1/shapes/${id}`).set("content-type", "text/plain").send("x"),
      "PATCH",
      "/v1/shapes/{id}",
    );
    conforms(
      await api("put", `/v1/shapes/${id}`).send(shapeBody("doc-a", { color: "green" })),
      "PUT",
      "/v1/shapes/{id}",
    );
    conforms(
      await api("put", `/v1/shapes/${id}`).set("if-match", '"1"').send(shapeBody("doc-a")),
      "PUT",
      "/v1/shapes/{id}",
    );
    conforms(await api("put", `/v1/shapes/${id}`).send({}), "PUT", "/v1/shapes/{id}");
    conforms(await api("put", `/v1/shapes/${id}`).send(shapeBody("doc-a", tooBig)), "PUT", "/v1/shapes/{id}");
    conforms(await api("put", `/v1/shapes/${id}`).send(shapeBody("doc-b")), "PUT", "/v1/shapes/{id}");
    conforms(await api("put", "/v1/shapes/shp_none").send(shapeBody("doc-z")), "PUT", "/v1/shapes/{id}");
    conforms(await api("delete", `/v1/shapes/${id}`).set("if-match", '"1"'), "DELETE", "/v1/shapes/{id}");
    conforms(
      await api("delete", `/v1/shapes/${id}`).set("if-match", "nonsense"),
      "DELETE",
      "/v1/shapes/{id}",
    );
    conforms(await api("delete", `/v1/shapes/${id}`), "DELETE", "/v1/shapes/{id}");
    conforms(await api("delete", `/v1/shapes/${id}`), "DELETE", "/v1/shapes/{id}");

    // faults: every failure the API documents
    for (const [rule, status] of [
      [{ errorRate: 1 }, 500],
      [{ throttleRate: 1 }, 429],
      [{ outage: true }, 503],
    ] as const) {
      const set = await t.admin("put", "/admin/faults").send(rule);
      conforms(set, "PUT", "/admin/faults");
      for (const [m, p, template] of [
        ["get", "/v1/shapes", "/v1/shapes"],
        ["post", "/v1/shapes", "/v1/shapes"],
        ["get", "/v1/shapes/x", "/v1/shapes/{id}"],
        ["get", "/v1/shapes/by-name/x", "/v1/shapes/by-name/{name}"],
        ["patch", "/v1/shapes/x", "/v1/shapes/{id}"],
        ["put", "/v1/shapes/x", "/v1/shapes/{id}"],
        ["delete", "/v1/shapes/x", "/v1/shapes/{id}"],
        ["get", "/v1/watch", "/v1/watch"],
      ] as const) {
        const res = await api(m, p).send(m === "get" || m === "delete" ? undefined : shapeBody("f"));
        expect(res.status).toBe(status);
        conforms(res, m.toUpperCase(), template);
      }
    }
    conforms(await t.admin("get", "/admin/faults"), "GET", "/admin/faults");
    conforms(await t.admin("put", "/admin/faults").send({ errorRate: 7 }), "PUT", "/admin/faults");
    conforms(
      await t.admin("put", "/admin/faults").set("content-type", "text/plain").send("x"),
      "PUT",
      "/admin/faults",
    );
    conforms(await t.admin("delete", "/admin/faults"), "DELETE", "/admin/faults");
    conforms(await request(t.url).get("/admin/faults"), "GET", "/admin/faults");
    conforms(await request(t.url).put("/admin/faults").send({}), "PUT", "/admin/faults");
    conforms(await request(t.url).delete("/admin/faults"), "DELETE", "/admin/faults");
    conforms(await t.admin("get", "/admin/requests"), "GET", "/admin/requests");
    conforms(await request(t.url).get("/admin/requests"), "GET", "/admin/requests");
    conforms(await t.admin("delete", "/admin/requests"), "DELETE", "/admin/requests");
    conforms(await request(t.url).delete("/admin/requests"), "DELETE", "/admin/requests");

    // watch
    conforms(await api("get", "/v1/watch?since=nope"), "GET", "/v1/watch");
    conforms(await api("get", "/v1/watch?since=999999"), "GET", "/v1/watch");
    conforms(await request(t.url).get("/v1/watch"), "GET", "/v1/watch");
    const w = await openWatch(t.url, "?since=0");
    try {
      expect(w.status).toBe(200);
      const media = (
        resolve(operation("GET", "/v1/watch").responses["200"]!).content as Record<string, Json>
      )[String(w.headers.get("content-type")).split(";")[0]!];
      expect(media).toBeDefined();
      expect(media!["x-event-data"]).toEqual({ $ref: "#/components/schemas/WatchEvent" });
      covered.add("watchShapes 200");
      await w.until(() => w.events.length >= 3, "some events");
      for (const data of w.messages.map((m) => JSON.parse(m.data) as unknown)) {
        expect(COMPONENTS.WatchEvent.schema.safeParse(data).error?.issues ?? []).toEqual([]);
      }
    } finally {
      w.close();
    }

    // system
    conforms(await request(t.url).get("/healthz"), "GET", "/healthz");
    const metrics = await request(t.url).get("/metrics");
    expect(metrics.status).toBe(200);
    expect(
      Object.keys((resolve(operation("GET", "/metrics").responses["200"]!).content as Json) ?? {}),
    ).toContain(String(metrics.headers["content-type"]).split(";")[0]);
    covered.add("metrics 200");
    conforms(await request(t.url).get("/openapi.json"), "GET", "/openapi.json");
    // A Host that names another server (DNS rebinding): 421, as documented, on each of them.
    for (const path of ["/healthz", "/metrics", "/openapi.json"]) {
      conforms(await request(t.url).get(path).set("host", "evil.example"), "GET", path);
    }
  });

  it("had the writes answer the cloud's rule (422) as documented above", () => {
    for (const op of ["createShape", "patchShape", "replaceShape"]) expect(covered).toContain(`${op} 422`);
  });

  it("had each documented operation answer at least its success status above", () => {
    const successes = Object.values(paths()).flatMap((item) =>
      Object.entries(item)
        .filter(([k]) => k !== "parameters")
        .map(([, op]) => {
          const o = op as Operation;
          const ok = Object.keys(o.responses).find((s) => s.startsWith("2"));
          return `${o.operationId} ${ok}`;
        }),
    );
    for (const s of successes) expect(covered, s).toContain(s);
  });
});
