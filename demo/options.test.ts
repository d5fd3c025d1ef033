import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_CLOUD_PORT,
  DEFAULT_METRICS_PORT,
  DEFAULT_TOUR_TIMEOUT_S,
  DEFAULT_VIEW_PORT,
  parseStartArgs,
  parseTourArgs,
  START_USAGE,
  tourUsage,
  UsageError,
} from "./options.ts";
import { DEFAULT_STATE_DIR } from "./paths.ts";

describe("npm start's flags", () => {
  it("has the documented defaults", () => {
    expect(parseStartArgs([], {})).toEqual({
      help: false,
      options: {
        stateDir: DEFAULT_STATE_DIR,
        port: DEFAULT_CLOUD_PORT,
        metricsPort: DEFAULT_METRICS_PORT,
        viewPort: DEFAULT_VIEW_PORT,
        logLevel: "info",
      },
    });
    expect(DEFAULT_CLOUD_PORT).toBe(8080);
  });

  it.each([
    { argv: ["--port", "0"], want: { port: 0 }, reason: "0 asks for any free port" },
    { argv: ["--port=9090"], want: { port: 9090 }, reason: "the --flag=value form" },
    { argv: ["--metrics-port", "0"], want: { metricsPort: 0 }, reason: "the metrics port is separate" },
    { argv: ["--view-port", "0"], want: { viewPort: 0 }, reason: "the two-worlds page's port is separate" },
    {
      argv: ["--state-dir", "some/where"],
      want: { stateDir: resolve("some/where") },
      reason: "a relative state folder is taken from the working directory",
    },
    { argv: ["--log-level", "debug"], want: { logLevel: "debug" }, reason: "passed on to the controller" },
  ])("$reason", ({ argv, want }) => {
    const parsed = parseStartArgs(argv, {});
    expect(parsed.help).toBe(false);
    if (!parsed.help) expect(parsed.options).toMatchObject(want);
  });

  it("takes the state folder from SHAPES_DEMO_DIR, and the flag wins over it", () => {
    const env = { SHAPES_DEMO_DIR: "/tmp/from-env" };
    expect(parseStartArgs([], env)).toMatchObject({ options: { stateDir: "/tmp/from-env" } });
    expect(parseStartArgs(["--state-dir", "/tmp/flag"], env)).toMatchObject({
      options: { stateDir: "/tmp/flag" },
    });
  });

  it.each([
    { argv: ["--port", "80a"], message: /cannot use --port 80a: give a port number/, reason: "not a number" },
    { argv: ["--port", "70000"], message: /cannot use --port 70000/, reason: "above 65535" },
    { argv: ["--port", "-1"], message: /cannot/, reason: "negative (parseArgs sees a flag, or we see -1)" },
    { argv: ["--port", ""], message: /cannot use --port/, reason: "empty" },
    { argv: ["--metrics-port", "1.5"], message: /cannot use --metrics-port 1.5/, reason: "not whole" },
    {
      argv: ["--view-port", "x"],
      message: /cannot use --view-port x/,
      reason: "the page's port, not a number",
    },
    {
      argv: ["--log-level", "loud"],
      message: /cannot use --log-level loud: use one of/,
      reason: "unknown level",
    },
    {
      argv: ["--prot", "1"],
      message: /cannot parse the command line: .*--prot.*see --help/,
      reason: "a typo",
    },
    {
      argv: ["start"],
      message: /cannot understand "start": this command takes only flags/,
      reason: "a positional",
    },
    { argv: ["--state-dir", " "], message: /cannot use an empty --state-dir/, reason: "a blank folder" },
  ])("refuses a bad command line: $reason", ({ argv, message }) => {
    expect(() => parseStartArgs(argv, {})).toThrow(UsageError);
    expect(() => parseStartArgs(argv, {})).toThrow(message);
  });

  it("answers --help and -h, and the help names every flag", () => {
    expect(parseStartArgs(["--help"], {})).toEqual({ help: true });
    expect(parseStartArgs(["-h"], {})).toEqual({ help: true });
    for (const flag of ["--port", "--metrics-port", "--state-dir", "--log-level", "--help", "KUBECONFIG"]) {
      expect(START_USAGE).toContain(flag);
    }
  });
});

describe("npm run tour's flags", () => {
  it("has the documented defaults", () => {
    expect(parseTourArgs([], {}, 6)).toEqual({
      help: false,
      options: {
        stateDir: DEFAULT_STATE_DIR,
        step: undefined,
        list: false,
        yes: false,
        timeoutMs: DEFAULT_TOUR_TIMEOUT_S * 1000,
        keep: false,
      },
    });
  });

  it.each([
    { argv: ["--step", "3"], want: { step: 3 }, reason: "one step" },
    { argv: ["--list"], want: { list: true }, reason: "list the steps" },
    { argv: ["-y"], want: { yes: true }, reason: "the short form of --yes" },
    { argv: ["--timeout", "2.5"], want: { timeoutMs: 2500 }, reason: "seconds, fractions allowed" },
    { argv: ["--keep"], want: { keep: true }, reason: "leave things for a look" },
  ])("$reason", ({ argv, want }) => {
    expect(parseTourArgs(argv, {}, 6)).toMatchObject({ options: want });
  });

  it.each([
    { argv: ["--step", "0"], message: /cannot run --step 0: the tour has steps 1 to 6/, reason: "below 1" },
    { argv: ["--step", "7"], message: /cannot run --step 7/, reason: "beyond the last step" },
    { argv: ["--step", "two"], message: /cannot run --step two/, reason: "not a number" },
    { argv: ["--timeout", "0"], message: /cannot use --timeout 0/, reason: "no time at all" },
    { argv: ["--yes", "please"], message: /cannot understand "please"/, reason: "a positional" },
  ])("refuses a bad command line: $reason", ({ argv, message }) => {
    expect(() => parseTourArgs(argv, {}, 6)).toThrow(message);
  });

  it("lists the steps in its help", () => {
    const help = tourUsage([{ title: "First" }, { title: "Second" }]);
    expect(help).toContain("  1. First\n  2. Second");
    expect(help).toContain("--step <n>");
  });
});
