import { describe, expect, it } from "vitest";
import { ConfigError, managerUsage, parseManagerFlags } from "reconcile-kit";
import { ETCD_CONTROLLER } from "./main.ts";

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseManagerFlags(ETCD_CONTROLLER, argv, env);

describe("the etcd controller's command line (the library's manager flags and --etcd-url)", () => {
  it.each<{ reason: string; argv: string[]; error: RegExp }>([
    {
      reason: "etcd's URL is the one flag without a default",
      argv: [],
      error: /^cannot start: --etcd-url URL is required$/,
    },
    {
      reason: "an etcd URL that is not a URL is named as such, with an example",
      argv: ["--etcd-url", "nope"],
      error: /^cannot start: --etcd-url "nope" is not a URL \(e\.g\. http:\/\/127\.0\.0\.1:2379\)$/,
    },
    {
      reason: "a watch idle bound that is not a duration is named as such, with examples",
      argv: ["--etcd-url", "http://127.0.0.1:2379", "--watch-idle", "soon"],
      error: /^cannot start: --watch-idle "soon" is not a duration \(e\.g\. 90s, 25m\)$/,
    },
    {
      reason: "a watch idle bound of zero would take every watch for dead at once",
      argv: ["--etcd-url", "http://127.0.0.1:2379", "--watch-idle", "0s"],
      error: /^cannot start: --watch-idle "0s" is not a duration/,
    },
  ])("refuses: $reason", ({ argv, error }) => {
    expect(() => parse(argv)).toThrow(ConfigError);
    expect(() => parse(argv)).toThrow(error);
  });

  it("reads the URL from the flag or ETCD_URL, and keeps the Lease in etcd-config-system", () => {
    expect(parse(["--etcd-url", "http://127.0.0.1:2379"])).toMatchObject({
      plugin: { etcdUrl: "http://127.0.0.1:2379" },
      manager: { leaderElectionNamespace: "etcd-config-system", leaderElectionName: "etcd-controller" },
    });
    expect(parse([], { ETCD_URL: "http://etcd:2379" })).toMatchObject({
      plugin: { etcdUrl: "http://etcd:2379" },
    });
  });

  it("reads the watch idle bound from --watch-idle or ETCD_WATCH_IDLE, and leaves the library's default without", () => {
    const url = ["--etcd-url", "http://127.0.0.1:2379"];
    expect(parse([...url, "--watch-idle", "25m"])).toMatchObject({ plugin: { watchIdleMs: 25 * 60_000 } });
    expect(parse(url, { ETCD_WATCH_IDLE: "30s" })).toMatchObject({ plugin: { watchIdleMs: 30_000 } });
    expect(parse(url)).toMatchObject({ plugin: { watchIdleMs: undefined } });
  });

  it("--help names the etcd flag and its variable", () => {
    const help = managerUsage(ETCD_CONTROLLER);
    expect(help).toContain("--etcd-url VALUE");
    expect(help).toContain("env: ETCD_URL");
    expect(help).toContain("--watch-idle VALUE");
    expect(help).toContain("env: ETCD_WATCH_IDLE");
  });
});
