import { describe, expect, it } from "vitest";
import type { ExternalResourceControllers } from "../controllers.ts";
import { ConfigError, type ManagerFlags, managerUsage, parseManagerFlags } from "./flags.ts";
import { combineControllers } from "./manager.ts";

/** A plugin with one flag of its own, as a plugin's main gives the manager. */
const FLAGS: ManagerFlags<{ apiUrl: string; qps: number }> = {
  name: "widgets-controller",
  command: "widgets-controller [options]",
  summary: "Keeps a widget for every Widget.",
  resource: { group: "widgets.example.com", resource: "widgets", title: "Widgets" },
  defaults: { leaderElectionNamespace: "widgets-system", leaderElectionName: "widgets" },
  options: [
    { flag: "api-url", env: "API_URL", help: "the widgets API" },
    { flag: "api-qps", env: "API_QPS", default: "5", help: "calls per second" },
  ],
  parse: (read) => ({ apiUrl: read.get("api-url") ?? "", qps: read.rate("api-qps", 100) }),
};

describe("parseManagerFlags", () => {
  it.each([
    {
      reason: "the plugin's flags and the library's on one command line",
      argv: ["--api-url=http://w", "--api-qps", "2", "--workers=4", "--sharding"],
      env: {},
      expected: {
        plugin: { apiUrl: "http://w", qps: 2 },
        manager: { workers: 4, sharding: true, leaderElectionNamespace: "widgets-system" },
      },
    },
    {
      reason: "the plugin's variables and the library's, flags winning",
      argv: ["--leader-election-name=other"],
      env: { API_URL: "http://env", LEADER_ELECTION_NAME: "from-env", LEADER_ELECT: "1" },
      expected: {
        plugin: { apiUrl: "http://env", qps: 5 },
        manager: { leaderElect: true, leaderElectionName: "other" },
      },
    },
    {
      reason: "the plugin's defaults for the Lease, none to adopt from",
      argv: [],
      env: {},
      expected: { manager: { leaderElectionName: "widgets", adoptOwnerIds: [], ownerId: undefined } },
    },
  ])("reads $reason", ({ argv, env, expected }) => {
    expect(parseManagerFlags(FLAGS, argv, env)).toMatchObject(expected);
  });

  it.each([
    { reason: "a bad value of the plugin's", argv: ["--api-qps=fast"], message: /--api-qps "fast"/ },
    { reason: "a bad value of the library's", argv: ["--workers=0"], message: /--workers "0"/ },
    { reason: "a flag neither has", argv: ["--colour=red"], message: /cannot parse the command line/ },
  ])("refuses $reason with a ConfigError", ({ argv, message }) => {
    expect(() => parseManagerFlags(FLAGS, argv, {})).toThrow(ConfigError);
    expect(() => parseManagerFlags(FLAGS, argv, {})).toThrow(message);
  });

  it("one --help: the plugin's flags, then the library's, the ring named by the plugin's group", () => {
    const help = managerUsage(FLAGS);
    expect(help.indexOf("--api-url VALUE")).toBeLessThan(help.indexOf("--kubeconfig VALUE"));
    expect(help).toContain("labelled widgets.example.com/ring=<--leader-election-name>");
    expect(help).toContain("[default: widgets-system]");
  });
});

/** Controllers that record the calls they get. */
function recording(name: string, calls: string[], ready = true): ExternalResourceControllers {
  const call = <T>(what: string, answer: T) => {
    calls.push(`${name} ${what}`);
    return Promise.resolve(answer);
  };
  return {
    startSources: () => call("sources", true),
    startControllers: () => call("start", undefined),
    stopControllers: () => call("stop", undefined),
    reshard: () => call("reshard", name !== "refuses"),
    cached: () => ({ resources: 1, intents: 2, external: 3 }),
    shutDown: () => call("shut down", undefined),
    isReady: () => ready,
  };
}

describe("combineControllers", () => {
  it("passes every call to every one, and adds up their caches", async () => {
    const calls: string[] = [];
    const both = combineControllers([recording("a", calls), recording("b", calls)]);
    const signal = new AbortController().signal;
    expect(await both.startSources(signal)).toBe(true);
    await both.startControllers(signal);
    await both.stopControllers();
    expect(await both.reshard([], signal)).toBe(true);
    await both.shutDown();
    expect(calls.sort()).toEqual(
      ["a", "b"]
        .flatMap((n) => [`${n} reshard`, `${n} shut down`, `${n} sources`, `${n} start`, `${n} stop`])
        .sort(),
    );
    expect(both.cached()).toEqual({ resources: 2, intents: 4, external: 6 });
  });

  it.each([
    { reason: "ready only when every one is", parts: [true, false], ready: false },
    { reason: "ready when all are", parts: [true, true], ready: true },
  ])("$reason", ({ parts, ready }) => {
    const calls: string[] = [];
    const all = combineControllers(parts.map((r, i) => recording(`c${i}`, calls, r)));
    expect(all.isReady()).toBe(ready);
  });

  it("reshards to true only when every one did", async () => {
    const calls: string[] = [];
    const all = combineControllers([recording("a", calls), recording("refuses", calls)]);
    expect(await all.reshard([], new AbortController().signal)).toBe(false);
  });
});
