import { describe, expect, it } from "vitest";
import { parseFlags } from "./main.ts";

describe("parseFlags", () => {
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
      argv: ["--zone-url", "http://127.0.0.1:8053", "--bogus"],
      error: /^cannot read the flags: Unknown option '--bogus' \(see --help\)$/,
    },
    {
      reason: "a period that is not a whole number of ms",
      argv: ["--zone-url", "http://127.0.0.1:8053", "--resync-period-ms", "abc"],
      error: /^cannot start: --resync-period-ms must be a whole number of ms, at least 1$/,
    },
    {
      reason: "a resync period of 0 would spin",
      argv: ["--zone-url", "http://127.0.0.1:8053", "--resync-period-ms", "0"],
      error: /at least 1$/,
    },
    {
      reason: "a metrics auth mode nobody knows",
      argv: ["--zone-url", "http://127.0.0.1:8053", "--metrics-auth", "tls"],
      error: /^cannot start: --metrics-auth "tls" must be one of auto, kubernetes, none$/,
    },
    {
      reason: "an allowed host with a port (every port is answered)",
      argv: ["--zone-url", "http://127.0.0.1:8053", "--metrics-allowed-hosts", "dns:8081"],
      error: /^cannot start: --metrics-allowed-hosts: cannot allow host "dns:8081": expected a host name/,
    },
  ])("refuses: $reason", ({ argv, error }) => {
    expect(() => parseFlags(argv)).toThrow(error);
  });

  it("gives the safe defaults: loopback metrics, a 5 min resync, a 60 s leak grace, the cluster's owner id, an uninstall that deletes nothing", () => {
    expect(parseFlags(["--zone-url", "http://127.0.0.1:8053"])).toEqual({
      zoneUrl: "http://127.0.0.1:8053",
      ownerId: undefined,
      kubeconfig: undefined,
      metricsAddress: "127.0.0.1:8081",
      metricsAuth: "auto",
      metricsAllowedHosts: [],
      resyncPeriodMs: 300_000,
      leakGraceMs: 60_000,
      deleteOnUninstall: false,
    });
  });

  it("reads --delete-on-uninstall: zone records deleted even while the Record CRD is being deleted", () => {
    expect(parseFlags(["--zone-url", "http://127.0.0.1:8053", "--delete-on-uninstall"])).toMatchObject({
      deleteOnUninstall: true,
    });
  });

  it("reads --metrics-auth (the same modes as the Shapes controller's)", () => {
    expect(parseFlags(["--zone-url", "http://z", "--metrics-auth=kubernetes"])).toMatchObject({
      metricsAuth: "kubernetes",
    });
  });

  it("reads --metrics-allowed-hosts (names the open port answers for)", () => {
    expect(
      parseFlags(["--zone-url", "http://z", "--metrics-allowed-hosts=dns-controller, dns.example.svc"]),
    ).toMatchObject({ metricsAllowedHosts: ["dns-controller", "dns.example.svc"] });
  });

  it("answers --help before checking anything else", () => {
    expect(parseFlags(["--help"])).toBe("help");
  });
});
