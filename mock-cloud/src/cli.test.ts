import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startOtlpReceiver } from "@shapes/envtest";
import { CLI_DEFAULT_PORT, helpText, parseCommandLine, UsageError } from "./cli-options.ts";

const CLI = fileURLToPath(new URL("./cli.ts", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mock-cloud-cli-"));
  dirs.push(dir);
  return dir;
}

describe("parseCommandLine", () => {
  it("has defaults for everything but the token", () => {
    expect(parseCommandLine(["--token", "t"], {})).toEqual({
      kind: "run",
      port: CLI_DEFAULT_PORT,
      host: "127.0.0.1",
      allowedHosts: [],
      db: ":memory:",
      token: "t",
      adminToken: undefined,
      historyLimit: 10_000,
      heartbeatMs: 15_000,
      requestLogLimit: 1000,
      bodyLimitBytes: 65_536,
      logLevel: "info",
    });
  });

  it("reads every flag, and every flag from the environment; a flag wins", () => {
    const flags = parseCommandLine(
      [
        "--port",
        "0",
        "--host",
        "0.0.0.0",
        "--db",
        "x.db",
        "--token",
        "t",
        "--admin-token",
        "a",
        "--history",
        "5",
        "--allowed-hosts",
        "cloud, cloud.shapes.svc",
      ],
      { CLOUD_PORT: "9", CLOUD_TOKEN: "env" },
    );
    expect(flags).toMatchObject({
      port: 0,
      host: "0.0.0.0",
      db: "x.db",
      token: "t",
      adminToken: "a",
      historyLimit: 5,
      allowedHosts: ["cloud", "cloud.shapes.svc"],
    });
    const env = parseCommandLine([], {
      CLOUD_PORT: "9090",
      CLOUD_HOST: "::1",
      CLOUD_ALLOWED_HOSTS: "cloud",
      CLOUD_DB: "e.db",
      CLOUD_TOKEN: "env",
      CLOUD_ADMIN_TOKEN: "adm",
      CLOUD_HISTORY: "7",
      CLOUD_HEARTBEAT_MS: "500",
      CLOUD_REQUEST_LOG: "3",
      CLOUD_BODY_LIMIT: "2048",
      CLOUD_LOG_LEVEL: "debug",
    });
    expect(env).toEqual({
      kind: "run",
      port: 9090,
      host: "::1",
      allowedHosts: ["cloud"],
      db: "e.db",
      token: "env",
      adminToken: "adm",
      historyLimit: 7,
      heartbeatMs: 500,
      requestLogLimit: 3,
      bodyLimitBytes: 2048,
      logLevel: "debug",
    });
  });

  it("reads the token from a file (flag or env), trimmed", () => {
    const file = join(tempDir(), "token");
    writeFileSync(file, "  s3cret\n");
    expect(parseCommandLine(["--token-file", file], {})).toMatchObject({ token: "s3cret" });
    expect(parseCommandLine([], { CLOUD_TOKEN_FILE: file })).toMatchObject({ token: "s3cret" });
  });

  const adminTokens: {
    reason: string;
    argv: string[];
    env: Record<string, string>;
    expected: string | undefined;
  }[] = [
    {
      reason: "none given: /admin is closed, never the API token",
      argv: ["--token", "t"],
      env: {},
      expected: undefined,
    },
    { reason: "the flag", argv: ["--token", "t", "--admin-token", "a"], env: {}, expected: "a" },
    { reason: "the variable", argv: ["--token", "t"], env: { CLOUD_ADMIN_TOKEN: "a" }, expected: "a" },
    {
      reason: "a file named by the flag",
      argv: ["--token", "t", "--admin-token-file", "FILE"],
      env: {},
      expected: "from-file",
    },
    {
      reason: "a file named by the variable",
      argv: ["--token", "t"],
      env: { CLOUD_ADMIN_TOKEN_FILE: "FILE" },
      expected: "from-file",
    },
    {
      reason: "the flag wins over the file's variable",
      argv: ["--token", "t", "--admin-token", "a"],
      env: { CLOUD_ADMIN_TOKEN_FILE: "FILE" },
      expected: "a",
    },
    {
      reason: "an empty variable is not a token",
      argv: ["--token", "t"],
      env: { CLOUD_ADMIN_TOKEN: "" },
      expected: undefined,
    },
  ];
  it.each(adminTokens)("reads the admin token: $reason", ({ argv, env, expected }) => {
    const file = join(tempDir(), "admin-token");
    writeFileSync(file, " from-file\n");
    const at = (v: string) => (v === "FILE" ? file : v);
    const cmd = parseCommandLine(
      argv.map(at),
      Object.fromEntries(Object.entries(env).map(([k, v]) => [k, at(v)])),
    );
    expect(cmd).toMatchObject({ kind: "run", token: "t" });
    expect(cmd.kind === "run" ? cmd.adminToken : "help").toBe(expected);
  });

  it("asks for help", () => {
    expect(parseCommandLine(["--help", "--port", "nope"], {})).toEqual({ kind: "help" });
    expect(parseCommandLine(["-h"], {})).toEqual({ kind: "help" });
    const text = helpText();
    for (const flag of [
      "--port",
      "--host",
      "--db",
      "--token",
      "--token-file",
      "--admin-token",
      "--admin-token-file",
      "--history",
      "--log-level",
    ]) {
      expect(text).toContain(flag);
    }
    for (const env of [
      "CLOUD_PORT",
      "CLOUD_HOST",
      "CLOUD_DB",
      "CLOUD_TOKEN",
      "CLOUD_TOKEN_FILE",
      "CLOUD_ADMIN_TOKEN",
      "CLOUD_ADMIN_TOKEN_FILE",
    ])
      expect(text).toContain(env);
    expect(text).toContain("[default: none: /admin/* answers 401]");
    expect(text).toContain("[default: 8080]");
  });

  const bad: { reason: string; argv: string[]; env?: Record<string, string>; message: RegExp }[] = [
    { reason: "no token at all", argv: [], message: /without a token/ },
    { reason: "an empty token", argv: ["--token", ""], message: /without a token/ },
    { reason: "a token with spaces", argv: ["--token", "a b"], message: /contains whitespace/ },
    {
      reason: "a missing token file",
      argv: ["--token-file", "/nonexistent/token"],
      message: /cannot read the token file.*ENOENT/,
    },
    {
      reason: "a port that is not a number",
      argv: ["--token", "t", "--port", "http"],
      message: /--port="http".*0 to 65535/,
    },
    { reason: "a port out of range", argv: ["--token", "t", "--port", "70000"], message: /0 to 65535/ },
    {
      reason: "a bad port in the environment",
      argv: ["--token", "t"],
      env: { CLOUD_PORT: "-1" },
      message: /CLOUD_PORT="-1"/,
    },
    {
      reason: "an admin token with spaces",
      argv: ["--token", "t", "--admin-token", "a b"],
      message: /cannot use the token from --admin-token: it is empty or contains whitespace/,
    },
    {
      reason: "a missing admin token file",
      argv: ["--token", "t"],
      env: { CLOUD_ADMIN_TOKEN_FILE: "/nonexistent/admin-token" },
      message: /cannot read the token file \/nonexistent\/admin-token \(CLOUD_ADMIN_TOKEN_FILE\).*ENOENT/,
    },
    { reason: "a zero history", argv: ["--token", "t", "--history", "0"], message: /--history/ },
    {
      reason: "an unknown log level",
      argv: ["--token", "t", "--log-level", "loud"],
      message: /log level "loud"/,
    },
    {
      reason: "an allowed host with a port (every port is answered)",
      argv: ["--token", "t", "--allowed-hosts", "cloud:8080"],
      message: /--allowed-hosts: "cloud:8080" is not a host name/,
    },
    {
      reason: "an allowed host in the environment that is a URL",
      argv: ["--token", "t"],
      env: { CLOUD_ALLOWED_HOSTS: "http://cloud" },
      message: /CLOUD_ALLOWED_HOSTS: "http:\/\/cloud" is not a host name/,
    },
    { reason: "an unknown flag", argv: ["--token", "t", "--verbose"], message: /Unknown option '--verbose'/ },
    { reason: "a flag without its value", argv: ["--token"], message: /cannot parse the command line/ },
    {
      reason: "a positional argument",
      argv: ["--token", "t", "serve"],
      message: /cannot parse the command line/,
    },
  ];
  it.each(bad)("refuses $reason with a one-line UsageError", ({ argv, env, message }) => {
    let error: unknown;
    try {
      parseCommandLine(argv, env ?? {});
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toMatch(/^cannot /);
    expect((error as Error).message).not.toContain("\n");
  });
});

/** Runs the CLI; resolves with its exit code and output once it exits. */
function run(
  args: string[],
  env: Record<string, string> = {},
  onStdout?: (text: string, child: ReturnType<typeof spawn>) => void,
) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      onStdout?.(stdout, child);
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the mock-cloud command", () => {
  it("prints --help and exits 0", async () => {
    const res = await run(["--help"]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain("Usage: npm run cloud");
    expect(res.stdout).toContain("--token-file");
  });

  it("exits 2 with one clear line when the token is missing", async () => {
    const res = await run(["--port", "0"]);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(/^mock-cloud: cannot start the mock cloud without a token/);
    expect(res.stdout).toBe("");
  });

  it("exits 2 for a bad flag value", async () => {
    const res = await run(["--token", "t", "--port", "eighty"]);
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe(
      'mock-cloud: cannot use --port="eighty": expected an integer from 0 to 65535',
    );
  });

  it("exits 2 with one clear line for a bad OTEL_* variable", async () => {
    const res = await run(["--token", "t", "--port", "0"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1",
      OTEL_TRACES_SAMPLER: "sometimes",
    });
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(
      /^mock-cloud: cannot start tracing: OTEL_TRACES_SAMPLER "sometimes" is not one of /,
    );
    expect(res.stdout).toBe("");
  });

  it("with an OTLP endpoint: says where spans go, and flushes them on shutdown", async () => {
    const receiver = await startOtlpReceiver();
    const endpoint = receiver.url;
    const traceId = randomBytes(16).toString("hex");
    try {
      let requested: Promise<void> | undefined;
      const res = await run(
        ["--port", "0", "--token", "cli-token"],
        // A long batching delay: nothing is exported before the shutdown's flush.
        { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "600000" },
        (stdout, child) => {
          const m = /"url":"(http:\/\/[^"]+)"/.exec(stdout);
          if (m && !requested) {
            requested = fetch(`${m[1]}/v1/shapes`, {
              method: "POST",
              headers: {
                authorization: "Bearer cli-token",
                "content-type": "application/json",
                traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
              },
              body: JSON.stringify({ name: "traced-from-cli", type: "circle", color: "blue" }),
            })
              .then((r) => {
                expect(r.status).toBe(201);
                expect(r.headers.get("traceresponse")).toMatch(new RegExp(`^00-${traceId}-`));
              })
              .finally(() => child.kill("SIGTERM"));
          }
        },
      );
      await requested;
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`tracing: spans go to ${endpoint}/v1/traces`);
      const exported = receiver.trace(traceId);
      expect(exported.map((span) => span.name)).toEqual(
        expect.arrayContaining(["POST /v1/shapes", "sqlite INSERT shapes"]),
      );
      expect(new Set(exported.map((span) => span.service))).toEqual(new Set(["shapes-cloud"]));
    } finally {
      await receiver.close();
    }
  });

  it("serves, logs its URL, and shuts down cleanly on SIGTERM keeping the data", async () => {
    const db = join(tempDir(), "data", "cloud.db");
    let url: string | undefined;
    let checked: Promise<void> | undefined;
    const res = await run(["--port", "0", "--db", db], { CLOUD_TOKEN: "cli-token" }, (stdout, child) => {
      const m = /"url":"(http:\/\/[^"]+)"/.exec(stdout);
      if (m && !url) {
        url = m[1];
        checked = (async () => {
          const health = await fetch(`${url}/healthz`);
          expect(health.status).toBe(200);
          const created = await fetch(`${url}/v1/shapes`, {
            method: "POST",
            headers: { authorization: "Bearer cli-token", "content-type": "application/json" },
            body: JSON.stringify({ name: "from-cli", type: "circle", color: "blue" }),
          });
          expect(created.status).toBe(201);
          // No admin token given: the API token cannot switch faults.
          const faults = await fetch(`${url}/admin/faults`, {
            method: "PUT",
            headers: { authorization: "Bearer cli-token", "content-type": "application/json" },
            body: JSON.stringify({ outage: true }),
          });
          expect(faults.status).toBe(401);
        })().finally(() => child.kill("SIGTERM"));
      }
    });
    await checked;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain("stopped (database closed)");
    expect(res.stdout).toContain('"admin":"closed: no admin token"');

    // The same file, served again, still has the shape.
    let listed: unknown;
    const again = await run(["--port", "0", "--db", db, "--token", "cli-token"], {}, (stdout, child) => {
      const m = /"url":"(http:\/\/[^"]+)"/.exec(stdout);
      if (m && listed === undefined) {
        listed = null;
        void fetch(`${m[1]}/v1/shapes`, { headers: { authorization: "Bearer cli-token" } })
          .then((r) => r.json())
          .then((body) => (listed = body))
          .finally(() => child.kill("SIGINT"));
      }
    });
    expect(again.code).toBe(0);
    expect((listed as { items: { name: string }[] }).items.map((s) => s.name)).toEqual(["from-cli"]);
  });
});
