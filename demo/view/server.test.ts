/**
 * The two-worlds page's server (server.ts) with stand-ins for both worlds: what it serves without a token
 * and what it refuses, the security headers, the stream's first messages, and each action reaching the
 * demo's clients (or a clear problem). The page against the real stack: e2e/two-worlds-page.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import type { TourMoment } from "../control.ts";
import { startView, type RunningView, type ViewOptions } from "./server.ts";
import type { Changes } from "./wire.ts";
import type { WorldsState } from "./worlds.ts";

const TOKEN = "s3cret-view-token";

/** Everything the fakes were asked to do, in order. */
const calls: unknown[][] = [];
let changeListener: ((c: Changes) => void) | undefined;
let tourListener: ((m: TourMoment | undefined) => void) | undefined;

/** Records a call; answers `answer`, typed as whatever the caller expects (the server reads only a field or two). */
function record(call: unknown[], answer: object = {}): Promise<never> {
  calls.push(call);
  return Promise.resolve(answer as never);
}

const state: WorldsState = {
  ownerId: "k8s-test",
  synced: true,
  shapes: [],
  shapeRefs: [],
  cloud: [],
  events: [],
};

const options: ViewOptions = {
  worlds: {
    state: () => state,
    onChanges: (listener) => {
      changeListener = listener;
      return () => (changeListener = undefined);
    },
  },
  kube: {
    applyShape: (...args) => record(["applyShape", ...args]),
    patchShape: (...args) => record(["patchShape", ...args]),
    deleteShape: (...args) => record(["deleteShape", ...args]),
    stripFinalizer: (...args) => record(["stripFinalizer", ...args]),
  },
  cloud: {
    faults: () => Promise.resolve({ rules: [] }),
    create: (shape) => record(["create", shape], { ...shape, id: "shp_new" }),
    patch: (id, patch) => record(["patch", id, patch], { id, name: "x", color: "blue" }),
    delete: (id) => record(["delete", id]),
    setFaults: (rules) => record(["setFaults", rules]),
  },
  controller: {
    status: () =>
      Promise.resolve({ state: "running", pid: 42, metricsUrl: "http://127.0.0.1:1", logFile: "x" }),
    stop: () => record(["stopController"]),
    start: () => record(["startController"]),
  },
  tour: {
    current: () => undefined,
    subscribe: (listener) => {
      tourListener = listener;
      return () => (tourListener = undefined);
    },
  },
  token: TOKEN,
  port: 0,
  logger: pino({ level: "silent" }),
};

let view: RunningView;
beforeAll(async () => (view = await startView(options)));
afterAll(() => view.close());

const auth = { authorization: `Bearer ${TOKEN}` };
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = auth) {
  const res = await fetch(`${view.url}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return {
    status: res.status,
    type: res.headers.get("content-type") ?? "",
    headers: res.headers,
    body: await res.text(),
  };
}

describe("what the page server serves", () => {
  it("listens on loopback only", () => {
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it.each([
    { path: "/", type: "text/html", reason: "the page itself, without any secret in it" },
    { path: "/view/view.js", type: "text/javascript", reason: "its script" },
    { path: "/view/model.js", type: "text/javascript", reason: "the rows' model" },
    { path: "/view/draw.js", type: "text/javascript", reason: "the console's drawing code, shared" },
    { path: "/view/view.css", type: "text/css", reason: "its style sheet" },
    { path: "/view/config.json", type: "application/json", reason: "the types and colors the cloud accepts" },
  ])("$reason: GET $path, no token needed, with the CSP", async ({ path, type }) => {
    const res = await call("GET", path, undefined, {});
    expect(res.status).toBe(200);
    expect(res.type).toContain(type);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.body).not.toContain(TOKEN);
  });

  it.each([
    { headers: {}, reason: "no token" },
    { headers: { authorization: "Bearer wrong" }, reason: "a wrong token" },
    { headers: { authorization: `Basic ${TOKEN}` }, reason: "the token, but not as a bearer token" },
  ] as { headers: Record<string, string>; reason: string }[])(
    "refuses the API with $reason: 401 problem+json, nothing done",
    async ({ headers }) => {
      const before = calls.length;
      const res = await call("DELETE", "/api/shapes/default/a", undefined, headers);
      expect(res.status).toBe(401);
      expect(res.type).toContain("application/problem+json");
      expect(JSON.parse(res.body).detail).toMatch(/^cannot let you in/);
      expect(calls.length).toBe(before);
    },
  );

  it("refuses a request for another host name (DNS rebinding), even with the token", async () => {
    const port = new URL(view.url).port;
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port, path: "/api/stream", headers: { ...auth, host: `evil.example:${port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(421);
  });

  it("answers an unknown route with a 404 problem, not a stack trace", async () => {
    const res = await call("GET", "/api/nothing");
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({
      status: 404,
      detail: "cannot GET /api/nothing: no such route",
    });
  });
});

describe("the stream", () => {
  it("starts with a snapshot of both worlds, the controller and the faults; then changes and tour moments", async () => {
    const abort = new AbortController();
    const res = await fetch(`${view.url}/api/stream`, { headers: auth, signal: abort.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    const until = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before ${needle}`);
        text += new TextDecoder().decode(value);
      }
    };
    await until("\n\n");
    expect(text).toMatch(/^event: snapshot\ndata: /);
    const snapshot = JSON.parse(text.split("\n")[1]?.slice("data: ".length) ?? "{}");
    expect(snapshot).toMatchObject({
      ownerId: "k8s-test",
      controller: { state: "running", pid: 42, answersWhy: true },
      faults: { rules: [] },
      tour: null,
    });
    changeListener?.({
      shapes: [],
      shapesGone: ["default/a"],
      shapeRefs: [],
      shapeRefsGone: [],
      cloud: [],
      cloudGone: [],
      events: [],
    });
    await until("event: changes");
    tourListener?.({
      step: 1,
      steps: 9,
      title: "Create",
      caption: "look",
      namespace: "tour-1",
      shapes: ["a"],
      cloudNames: [],
    });
    await until("event: tour");
    abort.abort();
  });
});

describe("actions, with the demo's clients", () => {
  it.each([
    {
      reason: "apply a Shape",
      request: ["POST", "/api/shapes", { namespace: "default", name: "a", type: "circle", color: "blue" }],
      want: ["applyShape", "default", "a", { type: "circle", color: "blue" }],
      status: 201,
    },
    {
      reason: "recolor a Shape",
      request: ["PATCH", "/api/shapes/default/a", { color: "green" }],
      want: ["patchShape", "default", "a", { spec: { color: "green" } }],
      status: 200,
    },
    {
      reason: "pause a Shape: the annotation",
      request: ["PATCH", "/api/shapes/default/a", { paused: true }],
      want: [
        "patchShape",
        "default",
        "a",
        { metadata: { annotations: { "shapes.example.com/paused": "true" } } },
      ],
      status: 200,
    },
    {
      reason: "delete a Shape",
      request: ["DELETE", "/api/shapes/default/a"],
      want: ["deleteShape", "default", "a"],
      status: 200,
    },
    {
      reason: "remove a Shape's finalizer by hand",
      request: ["POST", "/api/shapes/default/a/remove-finalizer"],
      want: ["stripFinalizer", "default", "a"],
      status: 200,
    },
    {
      reason: "create a foreign shape: no tags",
      request: ["POST", "/api/cloud/shapes", { name: "someone.else", type: "square", color: "red" }],
      want: ["create", { name: "someone.else", type: "square", color: "red" }],
      status: 201,
    },
    {
      reason: "recolor in the cloud",
      request: ["PATCH", "/api/cloud/shapes/shp_1", { color: "yellow" }],
      want: ["patch", "shp_1", { color: "yellow" }],
      status: 200,
    },
    {
      reason: "delete in the cloud",
      request: ["DELETE", "/api/cloud/shapes/shp_1"],
      want: ["delete", "shp_1"],
      status: 200,
    },
    {
      reason: "switch an outage on",
      request: ["PUT", "/api/cloud/faults", { rules: [{ outage: true }] }],
      want: ["setFaults", [{ outage: true }]],
      status: 200,
    },
    {
      reason: "stop the controller",
      request: ["POST", "/api/controller/stop"],
      want: ["stopController"],
      status: 200,
    },
    {
      reason: "start the controller",
      request: ["POST", "/api/controller/start"],
      want: ["startController"],
      status: 200,
    },
  ] as const)("$reason", async ({ request, want, status }) => {
    const [method, path, body] = request as unknown as [string, string, unknown];
    const res = await call(method, path, body);
    expect(res.status, res.body).toBe(status);
    expect(JSON.parse(res.body).done).toEqual(expect.any(String));
    expect(calls.at(-1)).toEqual(want);
  });

  it.each([
    {
      reason: "a color the cloud does not have",
      request: ["POST", "/api/shapes", { namespace: "d", name: "a", type: "square", color: "teal" }],
    },
    {
      reason: "a field nobody asked for",
      request: [
        "POST",
        "/api/cloud/shapes",
        { name: "x", type: "square", color: "red", tags: { owner: "k8s-test" } },
      ],
    },
    { reason: "nothing to change", request: ["PATCH", "/api/shapes/default/a", {}] },
    { reason: "malformed JSON", request: ["POST", "/api/shapes", "{not json"] },
  ] as const)("refuses $reason: 400 with a sentence, nothing done", async ({ request }) => {
    const before = calls.length;
    const [method, path, body] = request as unknown as [string, string, unknown];
    const res = await call(method, path, body);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).detail).toMatch(/^cannot /);
    expect(calls.length).toBe(before);
  });
});
