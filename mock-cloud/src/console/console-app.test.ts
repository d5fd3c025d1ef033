/**
 * The console's routes on a real cloud: what is served (and nothing else), with which content types and
 * security headers; that the page carries no secret and the API stays behind its token; and the rules the
 * browser code must keep (modules all served, no markup parsing of data, no inline script or style).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLORS, SHAPE_TYPES } from "../schemas.ts";
import { ADMIN_TOKEN, TOKEN, startTestCloud, type TestCloud } from "../test-support.ts";
import { ASSETS, CONSOLE_CSP, STATIC_DIR } from "./console-app.ts";
import { DRAWN_TYPES } from "./static/draw.js";

let t: TestCloud;
beforeAll(async () => {
  t = await startTestCloud();
});
afterAll(async () => {
  await t.close();
});

const browserFiles = () => readdirSync(STATIC_DIR).filter((f) => !f.endsWith(".d.ts"));
const scripts = () => Object.keys(ASSETS).filter((f) => f.endsWith(".js"));

describe("the console's routes", () => {
  it("serves the page at / without a token, with its security headers", async () => {
    const res = await request(t.url).get("/").expect(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toBe(CONSOLE_CSP);
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
    expect(res.text).toBe(readFileSync(join(STATIC_DIR, "index.html"), "utf8"));
    expect(res.text).toContain('<script type="module" src="/console/console.js"></script>');
  });

  it("allows only this origin's scripts, styles and fetches", () => {
    const directives = Object.fromEntries(
      CONSOLE_CSP.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]),
    );
    expect(directives).toEqual({
      "default-src": "'none'",
      "script-src": "'self'",
      "style-src": "'self'",
      "img-src": "'self'",
      "connect-src": "'self'",
      "base-uri": "'none'",
      "form-action": "'none'",
      "frame-ancestors": "'none'",
    });
  });

  it.each(Object.entries(ASSETS))("serves %s as %s, with the CSP", async (name, type) => {
    const res = await request(t.url)
      .get(`/console/${name}`)
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => done(null, Buffer.concat(chunks)));
      })
      .expect(200);
    expect(res.headers["content-type"]).toBe(type);
    expect(res.headers["content-security-policy"]).toBe(CONSOLE_CSP);
    expect(Buffer.compare(res.body as Buffer, readFileSync(join(STATIC_DIR, name)))).toBe(0);
  });

  it("serves what the cloud accepts, from the cloud's own schemas", async () => {
    const res = await request(t.url).get("/console/config.json").expect(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.body).toEqual({ types: [...SHAPE_TYPES], colors: [...COLORS] });
  });

  const notServed: { reason: string; path: string }[] = [
    { reason: "the server's own code", path: "/console/console-app.ts" },
    { reason: "a test", path: "/console/console-app.test.ts" },
    { reason: "type declarations", path: "/console/sse.d.ts" },
    { reason: "a path out of the folder", path: "/console/..%2Fapp.ts" },
    { reason: "a nested path", path: "/console/static/console.js" },
    { reason: "a file that does not exist", path: "/console/nope.js" },
  ];
  it.each(notServed)("answers 404 for $reason ($path)", async ({ path }) => {
    const res = await request(t.url).get(path).expect(404);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.body.detail).toMatch(/^cannot /);
  });

  it("answers 405 with Allow for a method the console does not take", async () => {
    const res = await request(t.url).post("/").send({}).expect(405);
    expect(res.headers.allow).toBe("GET, HEAD");
    await request(t.url).delete("/console/console.js").expect(405);
  });

  it("leaves the rest of the cloud as it was: the API and admin still want their tokens, 404 is still 404", async () => {
    await request(t.url).get("/v1/shapes").expect(401);
    await request(t.url).get("/v1/watch").expect(401);
    await request(t.url).get("/admin/faults").expect(401);
    await t.api("get", "/v1/shapes").expect(200);
    const missing = await request(t.url).get("/no/such/page").expect(404);
    expect(missing.headers["content-security-policy"]).toBeUndefined(); // not a console answer
    const doc = (await request(t.url).get("/openapi.json").expect(200)).body as { paths: object };
    expect(Object.keys(doc.paths)).not.toContain("/"); // a client of the API, not part of it
  });
});

describe("the token", () => {
  it("appears in nothing the console serves: the page asks for it", async () => {
    const cloud = await startTestCloud({ token: "console-api-secret", adminToken: "console-admin-secret" });
    try {
      const paths = ["/", "/console/config.json", ...Object.keys(ASSETS).map((a) => `/console/${a}`)];
      for (const path of paths) {
        const res = await request(cloud.url).get(path).buffer(true);
        expect(res.status, path).toBe(200);
        const body = res.text ?? String(res.body);
        expect(body, path).not.toContain("console-api-secret");
        expect(body, path).not.toContain("console-admin-secret");
        expect(res.headers["set-cookie"], path).toBeUndefined();
      }
    } finally {
      await cloud.close();
    }
    expect(TOKEN).not.toBe(ADMIN_TOKEN); // the console's tests run with two different tokens
  });
});

describe("the browser code", () => {
  it("serves every file of the static folder, and every module a script imports", () => {
    expect(browserFiles().sort()).toEqual(["index.html", ...Object.keys(ASSETS)].sort());
    for (const script of scripts()) {
      const source = readFileSync(join(STATIC_DIR, script), "utf8");
      for (const [, imported] of source.matchAll(/^import .* from "\.\/([^"]+)";$/gm)) {
        expect(Object.keys(ASSETS), `${script} imports ${imported}`).toContain(imported);
      }
    }
  });

  it("never parses data as markup: no innerHTML, outerHTML, insertAdjacentHTML, document.write, eval", () => {
    for (const script of scripts()) {
      const code = readFileSync(join(STATIC_DIR, script), "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "") // comments may name what the code must not do
        .replace(/(^|\s)\/\/.*$/gm, "");
      expect(code.length, script).toBeGreaterThan(100);
      expect(code, script).not.toMatch(
        /\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval|new Function|setHTMLUnsafe)\b/,
      );
    }
  });

  it("has no inline script, handler or style the CSP would block", () => {
    const html = readFileSync(join(STATIC_DIR, "index.html"), "utf8");
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/console/console.js">']);
    expect(html).not.toMatch(/\son\w+=/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/<style\b/i);
  });

  it("draws every type the cloud accepts", () => {
    expect([...DRAWN_TYPES].sort()).toEqual([...SHAPE_TYPES].sort());
  });
});
