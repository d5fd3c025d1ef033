import { describe, expect, it } from "vitest";
import { ConfigError, managerUsage, parseManagerFlags } from "reconcile-kit";
import { DNS_CONTROLLER } from "./main.ts";

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseManagerFlags(DNS_CONTROLLER, argv, env);
const zone = ["--zone-url", "http://127.0.0.1:8053"];

describe("the DNS controller's command line (the library's manager flags and --zone-url)", () => {
  it.each<{ reason: string; argv: string[]; error: RegExp }>([
    {
      reason: "the zone URL is the one flag without a default",
      argv: [],
      error: /^cannot start: --zone-url URL is required$/,
    },
    {
      reason: "a zone URL that is not a URL is named as such, with an example",
      argv: ["--zone-url", "nope"],
      error: /^cannot start: --zone-url "nope" is not a URL \(e\.g\. http:/,
    },
    {
      reason: "an unknown flag points at --help",
      argv: [...zone, "--bogus"],
      error: /^cannot parse the command line: Unknown option '--bogus'.* \(see --help\)$/,
    },
    {
      reason: "a period that is not a duration",
      argv: [...zone, "--resync-period", "abc"],
      error: /^cannot start: --resync-period "abc" must be a duration like 30s or 5m \(at least 1000 ms\)$/,
    },
    {
      reason: "a resync period of 0 would spin",
      argv: [...zone, "--resync-period", "0"],
      error: /at least 1000 ms\)$/,
    },
    {
      reason: "a metrics auth mode nobody knows",
      argv: [...zone, "--metrics-auth", "tls"],
      error: /^cannot start: --metrics-auth "tls" must be one of auto, kubernetes, none$/,
    },
    {
      reason: "an allowed host with a port (every port is answered)",
      argv: [...zone, "--metrics-allowed-hosts", "dns:8081"],
      error: /^cannot start: --metrics-allowed-hosts: cannot allow host "dns:8081": expected a host name/,
    },
    {
      reason: "leader election and sharding at once: a ring's replicas all write, each its own part",
      argv: [...zone, "--leader-elect", "--sharding"],
      error: /^cannot start: --sharding and --leader-elect exclude each other/,
    },
  ])("refuses: $reason", ({ argv, error }) => {
    expect(() => parse(argv)).toThrow(ConfigError);
    expect(() => parse(argv)).toThrow(error);
  });

  it("--kube-client is no flag any more (one Kubernetes client): a one-line error", () => {
    expect(() => parse([...zone, "--kube-client=lean"])).toThrow(ConfigError);
  });

  it("gives the safe defaults: loopback metrics, a 5 min resync, a 60 s leak grace, the cluster's owner id, an uninstall that deletes nothing, one replica", () => {
    expect(parse(zone)).toMatchObject({
      plugin: { zoneUrl: "http://127.0.0.1:8053" },
      manager: {
        ownerId: undefined,
        adoptOwnerIds: [],
        kubeconfig: undefined,
        metricsAddress: "127.0.0.1:8081",
        metricsAuth: "auto",
        metricsAllowedHosts: [],
        resyncPeriodMs: 300_000,
        leakGraceMs: 60_000,
        deleteOnUninstall: false,
        leaderElect: false,
        sharding: false,
      },
    });
  });

  it.each([
    {
      reason: "--leader-elect: one Lease, dns-system/dns-controller",
      argv: ["--leader-elect"],
      expected: {
        leaderElect: true,
        leaderElectionNamespace: "dns-system",
        leaderElectionName: "dns-controller",
      },
    },
    {
      reason: "--sharding: a ring named dns-controller, its Leases in dns-system",
      argv: ["--sharding", "--identity=replica-a"],
      expected: { sharding: true, leaderElectionName: "dns-controller", identity: "replica-a" },
    },
    {
      reason: "the Lease timings, as the Shapes controller reads them",
      argv: ["--leader-elect", "--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"],
      expected: { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
    },
  ])("several replicas by flag: $reason", ({ argv, expected }) => {
    expect(parse([...zone, ...argv])).toMatchObject({ manager: expected });
  });

  it("reads the environment, and flags win over it", () => {
    const env = { ZONE_URL: "http://zone:1", LEADER_ELECT: "true", POD_NAME: "dns-0" };
    expect(parse([], env)).toMatchObject({
      plugin: { zoneUrl: "http://zone:1" },
      manager: { leaderElect: true, identity: "dns-0" },
    });
    expect(parse(["--no-leader-elect"], env)).toMatchObject({ manager: { leaderElect: false } });
  });

  it("reads --delete-on-uninstall: zone records deleted even while the Record CRD is being deleted", () => {
    expect(parse([...zone, "--delete-on-uninstall"])).toMatchObject({ manager: { deleteOnUninstall: true } });
  });

  it("reads --metrics-auth (the same modes as the Shapes controller's)", () => {
    expect(parse([...zone, "--metrics-auth=kubernetes"])).toMatchObject({
      manager: { metricsAuth: "kubernetes" },
    });
  });

  it("reads --metrics-allowed-hosts (names the open port answers for)", () => {
    expect(parse([...zone, "--metrics-allowed-hosts=dns-controller, dns.example.svc"])).toMatchObject({
      manager: { metricsAllowedHosts: ["dns-controller", "dns.example.svc"] },
    });
  });

  it("answers --help before checking anything else", () => {
    expect(parse(["--help"])).toBe("help");
  });

  it("--help names the zone flag, the library's flags and the ring's label for Records", () => {
    const help = managerUsage(DNS_CONTROLLER);
    expect(help).toContain("--zone-url VALUE");
    expect(help).toContain("env: ZONE_URL");
    expect(help).toContain("--[no-]leader-elect");
    expect(help).toContain("labelled dns.example.com/ring=<--leader-election-name>");
    expect(help).toContain("[default: dns-system]");
  });
});
