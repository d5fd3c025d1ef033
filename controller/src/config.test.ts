import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseDuration, usage } from "./config.ts";

const base = ["--cloud-url", "http://127.0.0.1:8080", "--cloud-token", "t"];

describe("loadConfig", () => {
  it("has sensible defaults", () => {
    expect(loadConfig(base, {})).toMatchObject({
      ownerId: "k8s",
      workers: 4,
      resyncPeriodMs: 300_000,
      leakGraceMs: 60_000,
      leaderElect: false,
      cloudWatch: true,
      observe: "cache",
      kubeConnectionPool: true,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      metricsAddress: "127.0.0.1:8081",
    });
  });

  it("reads environment variables, and flags win over them", () => {
    const env = { CLOUD_URL: "http://cloud:1", CLOUD_TOKEN: "e", WORKERS: "8", OWNER_ID: "team-a" };
    expect(loadConfig([], env)).toMatchObject({
      cloudUrl: "http://cloud:1",
      cloudToken: "e",
      workers: 8,
      ownerId: "team-a",
    });
    expect(loadConfig(["--workers", "2"], env)).toMatchObject({ workers: 2 });
  });

  it("takes a boolean flag alone as true", () => {
    expect(loadConfig([...base, "--leader-elect"], {})).toMatchObject({ leaderElect: true });
    expect(loadConfig([...base, "--cloud-watch=false"], {})).toMatchObject({ cloudWatch: false });
    expect(loadConfig([...base, "--kube-connection-pool=false"], {})).toMatchObject({
      kubeConnectionPool: false,
    });
  });

  it("answers --help with the usage", () => {
    expect(loadConfig(["--help"], {})).toBe("help");
    expect(usage()).toContain("--cloud-url");
    expect(usage()).toContain("env: CLOUD_TOKEN");
  });

  const bad: { reason: string; argv: string[]; message: RegExp }[] = [
    { reason: "no cloud URL", argv: ["--cloud-token", "t"], message: /cloud URL is missing/ },
    {
      reason: "a cloud URL that is not http",
      argv: ["--cloud-url", "ftp://x", "--cloud-token", "t"],
      message: /not an http\(s\) URL/,
    },
    { reason: "no token", argv: ["--cloud-url", "http://x"], message: /cloud token is missing/ },
    {
      reason: "an unreadable token file",
      argv: ["--cloud-url", "http://x", "--cloud-token-file", "/nonexistent/token"],
      message: /cannot read the cloud token file/,
    },
    { reason: "zero workers", argv: [...base, "--workers", "0"], message: /whole number from 1 to 64/ },
    {
      reason: "a resync period without unit sense",
      argv: [...base, "--resync-period", "soon"],
      message: /duration like 30s/,
    },
    { reason: "an owner id with spaces", argv: [...base, "--owner-id", "a b"], message: /--owner-id/ },
    {
      reason: "an unknown flag",
      argv: [...base, "--colour", "red"],
      message: /cannot parse the command line/,
    },
    {
      reason: "a metrics address without a port",
      argv: [...base, "--metrics-address", "localhost"],
      message: /host:port/,
    },
    {
      reason: "a boolean that is not one",
      argv: [...base, "--leader-elect=maybe"],
      message: /true or false/,
    },
    { reason: "an unknown observe mode", argv: [...base, "--observe", "poll"], message: /cache, get/ },
    {
      reason: "a renew deadline longer than the lease (two leaders could write at once)",
      argv: [...base, "--lease-duration", "5s", "--renew-deadline", "6s"],
      message: /--lease-duration > --renew-deadline/,
    },
    {
      reason: "a lease duration the Lease cannot store (it holds whole seconds)",
      argv: [...base, "--lease-duration", "1500ms"],
      message: /whole seconds/,
    },
  ];
  it.each(bad)("rejects $reason with a clear one-line error", ({ argv, message }) => {
    expect(() => loadConfig(argv, {})).toThrow(ConfigError);
    expect(() => loadConfig(argv, {})).toThrow(message);
  });
});

describe("parseDuration", () => {
  it.each([
    { reason: "seconds", text: "30s", ms: 30_000 },
    { reason: "minutes", text: "5m", ms: 300_000 },
    { reason: "plain milliseconds", text: "250", ms: 250 },
    { reason: "fractions", text: "1.5s", ms: 1_500 },
    { reason: "garbage", text: "5 minutes", ms: undefined },
  ])("$reason", ({ text, ms }) => expect(parseDuration(text)).toBe(ms));
});
