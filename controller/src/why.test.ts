import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_METRICS_URL,
  historyUrl,
  main,
  parseHistory,
  parseWhyArgs,
  renderStory,
  USAGE,
  type HistoryEntry,
  type SubjectHistory,
} from "./why.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

/** A reconcile of default/red-square by the Shape reconciler that changed nothing. */
function entry(overrides: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    at: "2025-06-01T12:01:02.123Z",
    lastAt: "2025-06-01T12:01:02.123Z",
    repeats: 1,
    reconcileId: "9f3a1c2e-1k",
    controller: "shape",
    key: "default/red-square",
    subject: "default/red-square",
    observed: [
      "Shape generation 1",
      "ShapeRef Created (12)",
      "cloud shape default.red-square: ours, in sync",
    ],
    decided: [{ branch: "in sync", why: "the cloud shape matches the Shape" }],
    calls: [],
    events: [],
    result: "done",

    ms: 3,
    ...overrides,
  };
}

const create = entry({
  observed: ["Shape generation 1", "ShapeRef absent", "cloud shape default.red-square: absent"],
  decided: [
    { branch: "add finalizer", why: "the Shape has none" },
    { branch: "create", why: "no cloud shape holds the name default.red-square" },
  ],
  calls: [
    { call: "add finalizer", outcome: "ok", ms: 8 },
    { call: "create ShapeRef", target: "default.red-square", outcome: "ok", ms: 6 },
    { call: "create cloud shape", target: "default.red-square", outcome: "ok", ms: 12.4 },
  ],
  events: ["Normal CreatedCloudShape: Created cloud shape default.red-square (12)"],
  result: "done",
  ms: 41,
});

const history = (entries: HistoryEntry[], goneAt?: string): SubjectHistory => ({
  subject: "default/red-square",
  entries,
  ...(goneAt === undefined ? {} : { goneAt }),
});

/** A token file as `kubectl create token ... > token` writes it. */
const TOKEN_FILE = join(mkdtempSync(join(tmpdir(), "why-token-")), "token");
writeFileSync(TOKEN_FILE, "ey.from.file\n");
const EMPTY_FILE = `${TOKEN_FILE}.empty`;
writeFileSync(EMPTY_FILE, "\n");
const DEFAULTS_A = {
  metricsUrl: DEFAULT_METRICS_URL,
  json: false,
  subject: { namespace: "default", name: "a" },
};

describe("parseWhyArgs", () => {
  const accepted: {
    reason: string;
    argv: string[];
    env?: Record<string, string>;
    expected: {
      metricsUrl: string;
      json: boolean;
      subject: { namespace: string; name: string };
      token?: string;
    };
  }[] = [
    {
      reason: "the defaults: the demo's controller, the story",
      argv: ["default/red-square"],
      expected: {
        metricsUrl: DEFAULT_METRICS_URL,
        json: false,
        subject: { namespace: "default", name: "red-square" },
      },
    },
    {
      reason: "--json and --metrics-url, after the object",
      argv: ["tour-x1/big.blue-circle", "--json", "--metrics-url", "http://10.0.0.5:9091/"],
      expected: {
        metricsUrl: "http://10.0.0.5:9091",
        json: true,
        subject: { namespace: "tour-x1", name: "big.blue-circle" },
      },
    },
    {
      reason: "a bare host:port is http",
      argv: ["default/a", "--metrics-url=localhost:9091"],
      expected: {
        metricsUrl: "http://localhost:9091",
        json: false,
        subject: { namespace: "default", name: "a" },
      },
    },
    {
      reason: "the environment, when the flag is not given",
      argv: ["default/a"],
      env: { SHAPES_METRICS_URL: "https://ctl.example:8443/metrics-proxy" },
      expected: {
        metricsUrl: "https://ctl.example:8443/metrics-proxy",
        json: false,
        subject: { namespace: "default", name: "a" },
      },
    },
    {
      reason: "the flag wins over the environment",
      argv: ["default/a", "--metrics-url", "127.0.0.1:1"],
      env: { SHAPES_METRICS_URL: "http://elsewhere:2" },
      expected: {
        metricsUrl: "http://127.0.0.1:1",
        json: false,
        subject: { namespace: "default", name: "a" },
      },
    },
    {
      reason: "--token: sent as given",
      argv: ["default/a", "--token", "ey.abc.def"],
      expected: { ...DEFAULTS_A, token: "ey.abc.def" },
    },
    {
      reason: "--token-file: its content, without the line break kubectl create token leaves",
      argv: ["default/a", "--token-file", TOKEN_FILE],
      expected: { ...DEFAULTS_A, token: "ey.from.file" },
    },
    {
      reason: "the token from the environment, when no flag gives one",
      argv: ["default/a"],
      env: { SHAPES_METRICS_TOKEN: "ey.from.env" },
      expected: { ...DEFAULTS_A, token: "ey.from.env" },
    },
    {
      reason: "a token flag wins over the environment",
      argv: ["default/a", "--token-file", TOKEN_FILE],
      env: { SHAPES_METRICS_TOKEN: "ey.from.env" },
      expected: { ...DEFAULTS_A, token: "ey.from.file" },
    },
    {
      reason: "an empty variable is no token",
      argv: ["default/a"],
      env: { SHAPES_METRICS_TOKEN: "" },
      expected: DEFAULTS_A,
    },
  ];
  it.each(accepted)("accepts $reason", ({ argv, env, expected }) => {
    expect(parseWhyArgs(argv, env ?? {})).toEqual({ help: false, options: expected });
  });

  it.each([
    { reason: "--help", argv: ["--help"] },
    { reason: "-h, even with an object", argv: ["default/a", "-h"] },
    { reason: "--help wins over a bad object", argv: ["nope", "--help"] },
  ])("asks for help: $reason", ({ argv }) => {
    expect(parseWhyArgs(argv)).toEqual({ help: true });
  });

  const refused: { reason: string; argv: string[]; env?: Record<string, string>; message: string }[] = [
    {
      reason: "no object",
      argv: [],
      message:
        "cannot tell which object: give one <namespace>/<name>, e.g. npm run why -- default/red-square",
    },
    {
      reason: "two objects",
      argv: ["default/a", "default/b"],
      message:
        'cannot explain 2 objects at once ("default/a", "default/b"): give exactly one <namespace>/<name>',
    },
    {
      reason: "a name without its namespace",
      argv: ["red-square"],
      message: 'cannot read "red-square": give <namespace>/<name>, e.g. npm run why -- default/red-square',
    },
    {
      reason: "the cloud's name for it: a guess at what was meant",
      argv: ["default.red-square"],
      message:
        'cannot read "default.red-square": give <namespace>/<name>; did you mean default/red-square? (the cloud names a Shape\'s shape <namespace>.<name>)',
    },
    {
      reason: "one slash too many",
      argv: ["shapes/default/red-square"],
      message:
        'cannot read "shapes/default/red-square": give <namespace>/<name>, e.g. npm run why -- default/red-square',
    },
    {
      reason: "an empty name",
      argv: ["default/"],
      message: 'cannot read "default/": give <namespace>/<name>, e.g. npm run why -- default/red-square',
    },
    {
      reason: "a namespace Kubernetes would not accept",
      argv: ["Default/red-square"],
      message:
        'cannot read "Default/red-square": "Default" is not a namespace (lowercase letters, digits and "-", at most 63)',
    },
    {
      reason: "a name Kubernetes would not accept",
      argv: ["default/red_square"],
      message:
        'cannot read "default/red_square": "red_square" is not an object name (lowercase letters, digits, "-" and ".", at most 253)',
    },
    {
      reason: "an unknown flag",
      argv: ["default/a", "--verbose"],
      message: "cannot read the command line: Unknown option '--verbose' (see --help)",
    },
    {
      reason: "--metrics-url without a value",
      argv: ["default/a", "--metrics-url"],
      message: "cannot read the command line: Option '--metrics-url <value>' argument missing (see --help)",
    },
    {
      reason: "a metrics URL that is not http",
      argv: ["default/a", "--metrics-url", "ftp://127.0.0.1:8081"],
      message:
        'cannot use --metrics-url "ftp://127.0.0.1:8081": give the controller\'s metrics address as an http(s) URL, e.g. http://127.0.0.1:8081',
    },
    {
      reason: "a metrics URL that is not a URL, from the environment",
      argv: ["default/a"],
      env: { SHAPES_METRICS_URL: "http://[nope" },
      message:
        'cannot use SHAPES_METRICS_URL "http://[nope": give the controller\'s metrics address as an http(s) URL, e.g. http://127.0.0.1:8081',
    },
    {
      reason: "two tokens at once",
      argv: ["default/a", "--token", "x", "--token-file", TOKEN_FILE],
      message: "cannot use --token and --token-file at once: give one of them",
    },
    {
      reason: "a token file that is not there",
      argv: ["default/a", "--token-file", "/nonexistent/token"],
      message: 'cannot read the token file "/nonexistent/token": ENOENT',
    },
    {
      reason: "an empty token file",
      argv: ["default/a", "--token-file", EMPTY_FILE],
      message: `cannot use the token file ${EMPTY_FILE}: it is empty`,
    },
    {
      reason: "a token with a space (two words pasted)",
      argv: ["default/a", "--token", "Bearer ey.abc"],
      message: "cannot use --token: a token has no spaces or line breaks",
    },
  ];
  it.each(refused)("refuses $reason", ({ argv, env, message }) => {
    expect(() => parseWhyArgs(argv, env ?? {})).toThrow(message);
  });

  it("has a usage text with an example", () => {
    expect(USAGE).toMatch(/^Usage: npm run why -- <namespace>\/<name> \[options\]/);
    for (const flag of ["--metrics-url", "--json", "--help", "SHAPES_METRICS_URL"])
      expect(USAGE).toContain(flag);
    expect(USAGE).toContain("npm run why -- default/red-square\n");
  });
});

describe("historyUrl", () => {
  it.each([
    {
      reason: "under the root",
      base: "http://127.0.0.1:8081",
      expected: "http://127.0.0.1:8081/why/default/red-square",
    },
    {
      reason: "under a base path (a proxy), kept",
      base: "https://ctl.example/metrics-proxy",
      expected: "https://ctl.example/metrics-proxy/why/default/red-square",
    },
  ])("builds the URL $reason", ({ base, expected }) => {
    expect(historyUrl(base, { namespace: "default", name: "red-square" })).toBe(expected);
  });
});

describe("parseHistory", () => {
  it.each([
    { reason: "a history", json: history([create]), expected: undefined },
    { reason: "not an object", json: [1], expected: "cannot read the controller's answer: the body:" },
    {
      reason: "an entry without its time",
      json: { subject: "default/a", entries: [{ ...create, at: undefined }] },
      expected: "cannot read the controller's answer: entries[0].at:",
    },
    {
      reason: "a time that is not one",
      json: { subject: "default/a", entries: [create], goneAt: "yesterday" },
      expected: "cannot read the controller's answer: goneAt: expected an RFC 3339 time",
    },
    {
      reason: "a call without its outcome",
      json: { subject: "default/a", entries: [{ ...create, calls: [{ call: "x", ms: 1 }] }] },
      expected: "cannot read the controller's answer: entries[0].calls[0].outcome:",
    },
  ])("$reason", ({ json, expected }) => {
    if (expected === undefined) expect(parseHistory(json)).toEqual(json);
    else expect(() => parseHistory(json)).toThrow(expected);
  });
});

describe("renderStory", () => {
  const cases: {
    reason: string;
    history: SubjectHistory;
    now?: Date;
    timeZone?: string;
    contains: (string | RegExp)[];
    lacks?: (string | RegExp)[];
    /** In the last paragraph, its lines joined. */
    more?: string[];
  }[] = [
    {
      reason: "several replicas (sharding, leader election): the headline says which one decided",
      history: { ...history([create]), replica: "replica-b" },
      contains: [/^default\/red-square: 1 reconcile by replica replica-b kept, oldest first/],
    },
    {
      reason: "a create: what it saw, decided, did and told, and the result",
      history: history([create]),
      contains: [
        /^default\/red-square: 1 reconcile kept, oldest first \(times UTC, 2025-06-01\)\n/,
        /\n12:01:02\.123 {2}shape {2}reconcile 9f3a1c2e-1k\n/,
        "  saw      Shape generation 1; ShapeRef absent; cloud shape default.red-square: absent\n",
        "  decided  add finalizer: the Shape has none\n           create: no cloud shape holds the name default.red-square\n",
        "  did      add finalizer (ok, 8 ms) · create ShapeRef default.red-square (ok, 6 ms) ·\n           create cloud shape default.red-square (ok, 12 ms)\n",
        "  told     Normal CreatedCloudShape: Created cloud shape default.red-square (12)\n",
        "  result   done (41 ms)\n",
      ],
      more: [
        "More: a reconcile id is on the controller's log lines (reconcile_id) and on its Events (annotation shapes.example.com/reconcile-id), e.g. grep 9f3a1c2e-1k .demo/logs/controller.log for npm start's log;",
        "; with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT), each reconcile also has a trace id to open in your tracing backend.\n",
      ],
      lacks: ["trace 4bf", "×", "Gone", "ago"],
    },
    {
      reason: "a trace id: shown, and the last line says what it opens",
      history: history([entry({ traceId: TRACE })]),
      contains: [`12:01:02.123  shape  reconcile 9f3a1c2e-1k  trace ${TRACE}\n`],
      more: ["; a trace id opens its reconcile in your tracing backend.\n"],
      lacks: ["OTEL_EXPORTER_OTLP_ENDPOINT"],
    },
    {
      reason: "a folded repeat: ×N until the last, nothing done",
      history: history([
        create,
        entry({
          at: "2025-06-01T12:01:02.400Z",
          lastAt: "2025-06-01T12:06:02.410Z",
          repeats: 5,
          reconcileId: "a1-2",
        }),
      ]),
      contains: [
        "6 reconciles kept in 2 entries, oldest first",
        "12:01:02.400  shape  ×5 until 12:06:02.410  reconcile a1-2\n",
        "  decided  in sync: the cloud shape matches the Shape\n  did      nothing\n  result   done (3 ms)\n",
      ],
    },
    {
      reason: "a failed call: the outcome stands out, the result says what failed",
      history: history([
        entry({
          observed: ["Shape generation 2", "cloud shape default.red-square: absent"],
          decided: [{ branch: "create", why: "no cloud shape holds the name default.red-square" }],
          calls: [
            {
              call: "create cloud shape",
              target: "default.red-square",
              outcome: "503: cannot create: the cloud is down",
              ms: 30,
            },
          ],
          result: "failed: cannot create cloud shape default.red-square: 503",
          ms: 35,
        }),
      ]),
      contains: [
        "  did      create cloud shape default.red-square (FAILED 503: cannot create: the cloud is down, 30 ms)\n",
        "  result   failed: cannot create cloud shape default.red-square: 503 (35 ms)\n",
      ],
    },
    {
      reason: "a gone object: the other controllers' keys, the gone reconcile, when, and how long ago",
      history: history(
        [
          entry({
            controller: "shaperef",
            key: "default.red-square",
            observed: ["Shape absent", "ShapeRef default.red-square", "cloud shape default.red-square: ours"],
            decided: [{ branch: "missed deletion", why: "the ShapeRef outlived its Shape" }],
            calls: [{ call: "delete cloud shape", target: "default.red-square", outcome: "ok", ms: 9 }],
            result: "done",
            subjectState: "gone",
            ms: 20,
          }),
          entry({
            at: "2025-06-01T12:01:03.000Z",
            lastAt: "2025-06-01T12:01:03.000Z",
            controller: "shapes-sweep",
            key: "default.red-square",
            observed: ["cloud shape default.red-square: absent"],
            decided: [{ branch: "nothing to sweep", why: "" }],
            result: "done",
            ms: 1,
          }),
        ],
        "2025-06-01T12:01:03.500Z",
      ),
      now: new Date("2025-06-01T12:04:03.500Z"),
      contains: [
        ", the last 3 min ago)\n",
        /\n12:01:02\.123 {2}shaperef {6}reconcile 9f3a1c2e-1k {2}key default\.red-square\n/,
        /\n12:01:03\.000 {2}shapes-sweep {2}reconcile/,
        "  result   done (20 ms); found the object gone\n",
        "  decided  nothing to sweep\n",
        "Gone: found gone at 2025-06-01 12:01:03.500, 3 min ago; this history is dropped a while later.\n",
      ],
    },
    {
      reason: "another time zone, across midnight: the date where it changes",
      history: history([
        entry({ at: "2025-06-01T21:59:59.000Z", lastAt: "2025-06-01T21:59:59.000Z" }),
        entry({ at: "2025-06-01T22:00:01.000Z", lastAt: "2025-06-01T22:00:01.000Z" }),
      ]),
      timeZone: "Europe/Berlin",
      contains: [
        "(times Europe/Berlin, 2025-06-01)",
        /\n23:59:59\.000 {2}shape/,
        /\n2025-06-02 00:00:01\.000 {2}shape/,
      ],
    },
    {
      reason: "nothing kept (an answer with no entries)",
      history: history([]),
      contains: [/^default\/red-square: no reconciles kept\n/],
      lacks: ["decided"],
    },
    {
      reason: "control characters from the cloud are shown, never sent to the terminal",
      history: history([entry({ result: "failed: cannot \u001b[31mred\u001b[0m\nsecond line" })]),
      contains: ["failed: cannot \\x1b[31mred\\x1b[0m second line (3 ms)"],
      lacks: ["\u001b"],
    },
  ];
  it.each(cases)("$reason", ({ history: h, now, timeZone, contains, lacks, more }) => {
    const story = renderStory(h, { now, timeZone });
    for (const want of contains) {
      if (typeof want === "string") expect(story).toContain(want);
      else expect(story).toMatch(want);
    }
    for (const unwanted of lacks ?? []) {
      if (typeof unwanted === "string") expect(story).not.toContain(unwanted);
      else expect(story).not.toMatch(unwanted);
    }
    const last = story.slice(story.lastIndexOf("\n\n") + 2);
    expect(last).toMatch(/^More: a reconcile id is on the controller's log lines/);
    if (h.entries.length > 0) expect(last).toMatch(/(^| )grep \S+ \.demo\/logs\/controller\.log /m); // one line
    expect(last.split("\n").every((line) => line.length <= 100)).toBe(true);
    for (const want of more ?? []) expect(last.replace(/\n +/g, " ")).toContain(want);
  });

  it("refuses a time zone that does not exist", () => {
    expect(() => renderStory(history([create]), { timeZone: "Mars/Olympus" })).toThrow(
      /^cannot show times in time zone "Mars\/Olympus"/,
    );
  });
});

describe("main, against a real HTTP server", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /** A server answering every request with `status` and `body`; resolves with its URL and the paths asked. */
  async function serve(status: number, body: string): Promise<{ url: string; paths: string[] }> {
    const paths: string[] = [];
    server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      res.writeHead(status, { "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
  }

  /** Runs main with `argv`; resolves with its exit code and what it wrote. */
  async function run(argv: string[], timeoutMs = 10_000) {
    let out = "";
    let err = "";
    const code = await main(argv, {
      env: {},
      out: (t) => (out += t),
      err: (t) => (err += t),
      now: () => new Date("2025-06-01T12:11:02.123Z"),
      timeZone: "UTC",
      timeoutMs,
    });
    return { code, out, err };
  }

  const cases: {
    reason: string;
    status: number;
    body: string;
    argv?: string[];
    code: number;
    out: (string | RegExp)[];
    err: (string | RegExp)[];
  }[] = [
    {
      reason: "200: the story",
      status: 200,
      body: JSON.stringify(history([create])),
      code: 0,
      out: [
        "default/red-square: 1 reconcile kept, oldest first (times UTC, 2025-06-01, the last 10 min ago)",
        "  decided  add finalizer: the Shape has none",
      ],
      err: [/^$/],
    },
    {
      reason: "200 with --json: the JSON as sent",
      status: 200,
      body: JSON.stringify(history([create])),
      argv: ["--json"],
      code: 0,
      out: [`${JSON.stringify(history([create]), null, 2)}\n`],
      err: [/^$/],
    },
    {
      reason: "404: the controller's message, and a hint",
      status: 404,
      body: JSON.stringify({ error: "no decisions recorded for default/red-square" }),
      code: 1,
      out: [/^$/],
      err: [
        /^npm run why: no decisions recorded for default\/red-square\n/,
        "drops them a while\n  after the object is gone",
        "npm run kubectl -- get shapes -n default",
      ],
    },
    {
      reason: "404 that is not the controller's (no /why there)",
      status: 404,
      body: "Not Found",
      code: 1,
      out: [/^$/],
      err: [
        /^npm run why: cannot read decisions from http:\/\/127\.0\.0\.1:\d+\/why\/default\/red-square: it answered 404 without saying why/,
      ],
    },
    {
      reason: "500: what it said",
      status: 500,
      body: JSON.stringify({ error: "boom" }),
      code: 1,
      out: [/^$/],
      err: [/cannot read decisions from .*: it answered 500: boom\n$/],
    },
    {
      reason: "200 that is not JSON",
      status: 200,
      body: "<html>",
      code: 1,
      out: [/^$/],
      err: [
        /^npm run why: cannot read the controller's answer from .*: it is not JSON \(.*\) — is that the controller's metrics address\?\n$/,
      ],
    },
    {
      reason: "200 JSON that is not a history",
      status: 200,
      body: JSON.stringify({ subjects: 1, entries: 2, bytes: 3 }),
      code: 1,
      out: [/^$/],
      err: [/^npm run why: cannot read the controller's answer: subject: /],
    },
  ];
  it.each(cases)("$reason", async ({ status, body, argv, code, out, err }) => {
    const { url, paths } = await serve(status, body);
    const result = await run(["default/red-square", "--metrics-url", url, ...(argv ?? [])]);
    expect(paths).toEqual(["GET /why/default/red-square"]);
    expect(result.code).toBe(code);
    for (const want of out) expect(result.out).toMatch(typeof want === "string" ? literal(want) : want);
    for (const want of err) expect(result.err).toMatch(typeof want === "string" ? literal(want) : want);
    expect(result.err).not.toMatch(/\n\s+at /); // never a stack trace
  });

  it.each([
    {
      reason: "401 without a token: what to give, and where a token comes from",
      argv: [],
      status: 401,
      said: "unauthorized: no bearer token (send Authorization: Bearer <token>, a token the Kubernetes API server accepts)",
      auth: undefined,
      err: /^npm run why: the controller at http:\/\/127\.0\.0\.1:\d+ asks for a token \(unauthorized: no bearer token .*\) — give --token-file <file> or SHAPES_METRICS_TOKEN: a token of a user with get on shapes in the namespace default, e\.g\. from kubectl create token <service account> -n <namespace>\n$/,
    },
    {
      reason: "401 with a token: it was not accepted, and why that may be",
      argv: ["--token", "ey.old"],
      status: 401,
      said: "unauthorized: the Kubernetes API server did not accept the token: token has expired",
      auth: "Bearer ey.old",
      err: /^npm run why: the controller at \S+ did not accept the token \(unauthorized: .*: token has expired\) — is it a token of that cluster, and not expired\? \(kubectl create token makes a fresh one\)\n$/,
    },
    {
      reason: "403: who it is and what is missing, as the controller said, and what grant would do",
      argv: ["--token-file", TOKEN_FILE],
      status: 403,
      said: 'forbidden: user "system:serviceaccount:team-a:viewer" may not get shapes.shapes.example.com "red-square" in the namespace "default"',
      auth: "Bearer ey.from.file",
      err: /^npm run why: the controller at \S+ refused: forbidden: user "system:serviceaccount:team-a:viewer" may not get shapes\.shapes\.example\.com "red-square" in the namespace "default" — it tells a Shape's story to whoever may get that Shape: use a token of a user with get on shapes in the namespace default \(a Role and RoleBinding\)\n$/,
    },
  ])("$reason", async ({ argv, status, said, auth, err }) => {
    const seen: (string | undefined)[] = [];
    server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: said }));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const result = await run(["default/red-square", "--metrics-url", url, ...argv]);
    expect(seen).toEqual([auth]);
    expect(result).toEqual({ code: 1, out: "", err: expect.stringMatching(err) });
    expect(result.err.split("\n")).toHaveLength(2); // one line
  });

  it("says the controller is not running when nothing listens (a port just closed)", async () => {
    const { url } = await serve(200, "{}");
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const result = await run(["default/red-square", "--metrics-url", url]);
    expect(result).toEqual({
      code: 1,
      out: "",
      err: expect.stringMatching(
        new RegExp(
          `^npm run why: cannot reach the controller at ${literal(url).source}: connect ECONNREFUSED .* — is it running\\? \\(npm start runs one on 127\\.0\\.0\\.1:8081\\)\\n$`,
        ),
      ),
    });
  });

  it("gives up on a controller that never answers", async () => {
    server = createServer(() => {}); // accepts, never answers
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const result = await run(["default/red-square", "--metrics-url", url], 200);
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      `cannot reach the controller at ${url}: no answer within 200 ms — is it running?`,
    );
  });

  it.each([
    { reason: "--help: the usage, exit 0", argv: ["--help"], code: 0, out: USAGE, err: "" },
    {
      reason: "a bad command line: one line, exit 2",
      argv: ["red-square"],
      code: 2,
      out: "",
      err: 'npm run why: cannot read "red-square": give <namespace>/<name>, e.g. npm run why -- default/red-square\n',
    },
  ])("$reason", async ({ argv, code, out, err }) => {
    expect(await run(argv)).toEqual({ code, out, err });
  });
});

/** A RegExp matching `text` literally. */
function literal(text: string): RegExp {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
}
