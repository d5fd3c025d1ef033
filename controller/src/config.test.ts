import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseDuration, usage } from "./config.ts";

const base = ["--cloud-url", "http://127.0.0.1:8080", "--cloud-token", "t"];

describe("loadConfig", () => {
  it("has sensible defaults", () => {
    expect(loadConfig(base, {})).toMatchObject({
      // No owner id: main.ts derives one from the cluster's identity (library/src/kube/cluster-identity.ts).
      ownerId: undefined,
      adoptOwnerIds: ["k8s"],
      workers: 16,
      resyncPeriodMs: 300_000,
      leakGraceMs: 60_000,
      // An uninstall (the Shape CRD deleted) releases the cloud shapes: it deletes nothing outside.
      deleteOnUninstall: false,
      leaderElect: false,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      metricsAddress: "127.0.0.1:8081",
      // In a cluster, tokens; on a laptop or in the demo, open (main.ts, metricsAuthEnabled).
      metricsAuth: "auto",
      // Without a token the port answers only localhost, IP addresses and its own address's host.
      metricsAllowedHosts: [],
      cloudQps: 100,
      cloudBurst: 200,
    });
  });

  it.each([
    { reason: "nothing said: off", argv: base, env: {}, expected: false },
    { reason: "alone: true", argv: [...base, "--leader-elect"], env: {}, expected: true },
    {
      reason: "=false, as every boolean flag",
      argv: [...base, "--leader-elect=false"],
      env: {},
      expected: false,
    },
    {
      reason: "--no- before the flag: false",
      argv: [...base, "--no-leader-elect"],
      env: { LEADER_ELECT: "true" },
      expected: false,
    },
    { reason: "the variable", argv: base, env: { LEADER_ELECT: "true" }, expected: true },
    {
      reason: "the flag wins over the variable",
      argv: [...base, "--leader-elect"],
      env: { LEADER_ELECT: "false" },
      expected: true,
    },
  ])("a boolean flag, --leader-elect: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env)).toMatchObject({ leaderElect: expected });
  });

  it.each([
    {
      reason: "--no- before another boolean flag turns it off too",
      argv: [...base, "--no-delete-on-uninstall"],
      env: { DELETE_ON_UNINSTALL: "true" },
      expected: { deleteOnUninstall: false },
    },
  ])("--no-<flag>: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env)).toMatchObject(expected);
  });

  it.each([
    { reason: "--no- before a flag that takes a value", argv: [...base, "--no-workers"] },
    { reason: "--no-leader-elect given a value", argv: [...base, "--no-leader-elect=true"] },
    { reason: "a value that is not a boolean", argv: [...base, "--leader-elect=maybe"] },
  ])("a boolean flag: $reason is a one-line error", ({ argv }) => {
    expect(() => loadConfig(argv, {})).toThrow(ConfigError);
  });

  const limits: {
    reason: string;
    argv: string[];
    env?: Record<string, string>;
    expected: { cloudQps: number; cloudBurst: number };
  }[] = [
    { reason: "the defaults", argv: base, expected: { cloudQps: 100, cloudBurst: 200 } },
    {
      reason: "flags",
      argv: [...base, "--cloud-qps", "10", "--cloud-burst=100"],
      expected: { cloudQps: 10, cloudBurst: 100 },
    },
    {
      reason: "a fractional rate (one call every 2 s)",
      argv: [...base, "--cloud-qps=0.5"],
      expected: { cloudQps: 0.5, cloudBurst: 200 },
    },
    {
      reason: "0: the limiter off",
      argv: [...base, "--cloud-qps=0"],
      expected: { cloudQps: 0, cloudBurst: 200 },
    },
    {
      reason: "the environment",
      argv: base,
      env: { CLOUD_QPS: "5", CLOUD_BURST: "10" },
      expected: { cloudQps: 5, cloudBurst: 10 },
    },
  ];
  it.each(limits)("reads --cloud-qps and --cloud-burst: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env ?? {})).toMatchObject(expected);
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

  const adoption: { reason: string; argv: string[]; env?: Record<string, string>; expected: string[] }[] = [
    { reason: "the default: the old constant owner id", argv: base, expected: ["k8s"] },
    { reason: "an empty flag: adopt nothing", argv: [...base, "--adopt-owner-ids="], expected: [] },
    {
      reason: "a list, with spaces and empty items",
      argv: [...base, "--adopt-owner-ids", " k8s, ,team-a "],
      expected: ["k8s", "team-a"],
    },
    {
      reason: "our own owner id is never 'adopted' from",
      argv: [...base, "--owner-id", "k8s", "--adopt-owner-ids", "k8s,old"],
      expected: ["old"],
    },
    { reason: "from the environment", argv: base, env: { ADOPT_OWNER_IDS: "a,b" }, expected: ["a", "b"] },
  ];
  it.each([
    { reason: "the flag", argv: [...base, "--metrics-auth=kubernetes"], env: {}, expected: "kubernetes" },
    { reason: "the environment", argv: base, env: { METRICS_AUTH: "none" }, expected: "none" },
    {
      reason: "the flag wins over the environment",
      argv: [...base, "--metrics-auth", "auto"],
      env: { METRICS_AUTH: "none" },
      expected: "auto",
    },
  ])("reads --metrics-auth: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env)).toMatchObject({ metricsAuth: expected });
  });

  it.each([
    {
      reason: "the flag, comma-separated, blanks dropped",
      argv: [...base, "--metrics-allowed-hosts=controller, shapes-controller.shapes-system.svc,"],
      env: {},
      expected: ["controller", "shapes-controller.shapes-system.svc"],
    },
    {
      reason: "the environment",
      argv: base,
      env: { METRICS_ALLOWED_HOSTS: "controller" },
      expected: ["controller"],
    },
  ])("reads --metrics-allowed-hosts: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env)).toMatchObject({ metricsAllowedHosts: expected });
  });

  it.each(adoption)("reads --adopt-owner-ids: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env ?? {})).toMatchObject({ adoptOwnerIds: expected });
  });

  const uninstall: { reason: string; argv: string[]; env?: Record<string, string>; expected: boolean }[] = [
    { reason: "the default: an uninstall releases, deletes nothing", argv: base, expected: false },
    { reason: "the flag alone", argv: [...base, "--delete-on-uninstall"], expected: true },
    { reason: "the flag, false", argv: [...base, "--delete-on-uninstall=false"], expected: false },
    { reason: "the environment", argv: base, env: { DELETE_ON_UNINSTALL: "true" }, expected: true },
  ];
  it.each(uninstall)("reads --delete-on-uninstall: $reason", ({ argv, env, expected }) => {
    expect(loadConfig(argv, env ?? {})).toMatchObject({ deleteOnUninstall: expected });
  });

  it("takes a boolean flag alone as true", () => {
    expect(loadConfig([...base, "--leader-elect"], {})).toMatchObject({ leaderElect: true });
    expect(loadConfig([...base, "--sharding"], {})).toMatchObject({ sharding: true, shardFilter: "auto" });
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
      reason: "sharding and leader election at once: a ring's replicas all write, each its own part",
      argv: [...base, "--sharding", "--leader-elect"],
      message: /--sharding and --leader-elect exclude each other/,
    },
    {
      reason: "a shard filter nobody knows",
      argv: [...base, "--sharding", "--shard-filter", "server"],
      message: /--shard-filter "server" must be one of auto, client/,
    },
    {
      reason: "a resync period without unit sense",
      argv: [...base, "--resync-period", "soon"],
      message: /duration like 30s/,
    },
    { reason: "an owner id with spaces", argv: [...base, "--owner-id", "a b"], message: /--owner-id/ },
    {
      reason: "a negative cloud rate",
      argv: [...base, "--cloud-qps=-1"],
      message: /--cloud-qps "-1" must be a number of calls per second from 0 \(off\)/,
    },
    {
      reason: "a cloud rate that is no number",
      argv: [...base, "--cloud-qps", "fast"],
      message: /--cloud-qps/,
    },
    {
      reason: "a zero burst",
      argv: [...base, "--cloud-burst", "0"],
      message: /--cloud-burst "0" must be a whole number/,
    },
    {
      reason: "an id to adopt from that is no tag value",
      argv: [...base, "--adopt-owner-ids", "k8s,<b>"],
      message: /--adopt-owner-ids "<b>"/,
    },
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
    {
      reason: "a metrics auth mode nobody knows",
      argv: [...base, "--metrics-auth=token"],
      message: /--metrics-auth "token" must be one of auto, kubernetes, none/,
    },
    {
      reason: "an allowed host with a port (any port is answered; a name is what it checks)",
      argv: [...base, "--metrics-allowed-hosts=controller:8081"],
      message:
        /--metrics-allowed-hosts: cannot allow host "controller:8081": expected a host name .*without a port/,
    },
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
