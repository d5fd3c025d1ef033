import { afterEach, describe, expect, it, vi } from "vitest";
import type { DemoCluster } from "./cluster.ts";
import type { DemoReady } from "./demo.ts";
import { demoPaths } from "./paths.ts";
import { banner, main } from "./start.ts";

function ready(overrides: Partial<DemoReady> = {}): DemoReady {
  const paths = demoPaths("/work/shapes/.demo");
  return {
    paths,
    env: {
      KUBECONFIG: "/work/shapes/.demo/cluster/kubeconfig",
      CLOUD_URL: "http://127.0.0.1:8080",
      CLOUD_TOKEN: "t0k3n",
      CLOUD_ADMIN_TOKEN: "4dm1n",
    },
    cluster: { kind: "local" } as DemoCluster,
    cloudUrl: "http://127.0.0.1:8080",
    hasConsole: true,
    metricsUrl: "http://127.0.0.1:8081",
    viewLink: "http://127.0.0.1:8082/#token=v13w",
    tracesEndpoint: undefined,
    firstRun: true,
    ...overrides,
  };
}

describe("npm start's banner", () => {
  it.each([
    {
      reason: "tracing on: says where the spans go",
      over: { tracesEndpoint: "http://collector:4318/v1/traces" },
      want: "exported to http://collector:4318/v1/traces",
    },
    {
      reason: "the controller on another port: the why command names it",
      over: { metricsUrl: "http://127.0.0.1:9091" },
      want: "npm run why -- default/red-square --metrics-url http://127.0.0.1:9091",
    },
  ])("$reason", ({ over, want }) => {
    expect(banner(ready(over))).toContain(want);
  });

  it("leads with the two-worlds page, its token in the link's fragment", () => {
    const lines = banner(ready()).split("\n");
    const first = lines.findIndex((line) => line.startsWith("  "));
    expect(lines[first]).toContain("Both worlds    http://127.0.0.1:8082/#token=v13w");
  });

  it("says what to do next: console, KUBECONFIG, an example to apply, the tour, the env file, logs, how to stop", () => {
    const text = banner(ready());
    for (const expected of [
      "The demo is running.",
      "http://127.0.0.1:8080/#token=t0k3n&admin=4dm1n", // the fragment signs the console in, faults too
      "export KUBECONFIG=/work/shapes/.demo/cluster/kubeconfig",
      "npm run kubectl -- apply -n default -f crds/examples/red-square.yaml",
      "npm run tour",
      "/work/shapes/.demo/env holds KUBECONFIG, CLOUD_URL, CLOUD_TOKEN, CLOUD_ADMIN_TOKEN",
      "controller: /work/shapes/.demo/logs/controller.log",
      "http://127.0.0.1:8081/metrics",
      "npm run why -- default/red-square    (", // the default address: no flag needed
      "Traces         off: OTEL_EXPORTER_OTLP_ENDPOINT=",
      "Ctrl-C",
    ]) {
      expect(text).toContain(expected);
    }
  });

  it("says when it resumed, and points at the API when the cloud has no console", () => {
    const text = banner(ready({ firstRun: false, hasConsole: false }));
    expect(text).toContain("(resumed with the data of the last run)");
    expect(text).toContain("no console in this build yet; the API: http://127.0.0.1:8080/v1/shapes");
    expect(text).not.toContain("8080/#token=");
  });
});

describe("npm start's command line", () => {
  afterEach(() => vi.restoreAllMocks());

  it("prints the help for --help, and a one-line error with exit code 2 for a bad flag", async () => {
    const out: string[] = [];
    const err: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (err.push(String(chunk)), true));
    expect(await main(["--help"], {})).toBe(0);
    expect(out.join("")).toContain("Usage: npm start -- [options]");
    expect(await main(["--port", "eighty"], {})).toBe(2);
    expect(err.join("")).toBe(
      "npm start: cannot use --port eighty: give a port number from 0 to 65535 (0: any free port)\n",
    );
  });
});
