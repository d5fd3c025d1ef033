import { LIFECYCLES, TAP_FAULTS } from "reconcile-kit/crash-points";
import { describe, expect, it } from "vitest";
import { parseCrashArgs, SUBJECTS, usage, UsageError, type CrashOptions } from "./options.ts";

const parse = (...argv: string[]) => parseCrashArgs(argv) as CrashOptions;

/** What the call threw (undefined when it did not). */
function thrown(argv: readonly string[]): unknown {
  try {
    parseCrashArgs(argv);
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("parseCrashArgs", () => {
  it("defaults to the full run of the page: shapes and dns, every lifecycle, every fault", () => {
    expect(parse()).toEqual({
      subjects: ["shapes", "dns"],
      lifecycles: undefined,
      faults: ["crash-before", "crash-after", "fail", "answer-lost"],
      sample: false,
      json: undefined,
      writeDocs: false,
      stepTimeoutMs: 60_000,
    });
  });

  it("takes every flag", () => {
    expect(
      parse(
        "--subject",
        "dns",
        "--lifecycle",
        "create,delete",
        "--fault",
        "crash-after",
        "--sample",
        "--step-timeout",
        "90",
        "--json",
        "/tmp/r.json",
      ),
    ).toEqual({
      subjects: ["dns"],
      lifecycles: ["create", "delete"],
      faults: ["crash-after"],
      sample: true,
      json: "/tmp/r.json",
      writeDocs: false,
      stepTimeoutMs: 90_000,
    });
  });

  it.each([
    {
      argv: ["--subject", " dns , shapes "],
      key: "subjects",
      value: ["dns", "shapes"],
      reason: "spaces around the commas are trimmed, and the order given is kept",
    },
    {
      argv: ["--subject=etcd"],
      key: "subjects",
      value: ["etcd"],
      reason: "the etcd example runs on request: it is not on the page the default run writes",
    },
    {
      argv: ["--lifecycle", "create,,update,"],
      key: "lifecycles",
      value: ["create", "update"],
      reason: "empty items (a doubled or trailing comma) are dropped, not refused",
    },
    {
      argv: ["--fault=fail,answer-lost"],
      key: "faults",
      value: ["fail", "answer-lost"],
      reason: "--flag=value works as well as --flag value",
    },
    {
      argv: ["--lifecycle", LIFECYCLES.map((l) => l.id).join(",")],
      key: "lifecycles",
      value: LIFECYCLES.map((l) => l.id),
      reason: "every lifecycle id is accepted",
    },
    {
      argv: ["--write-docs"],
      key: "writeDocs",
      value: true,
      reason: "the full run may rewrite the docs",
    },
    {
      argv: ["--write-docs", "--json", "x.json", "--step-timeout", "30"],
      key: "writeDocs",
      value: true,
      reason: "--json and --step-timeout do not narrow the run: allowed with --write-docs",
    },
    {
      argv: ["--step-timeout", "1"],
      key: "stepTimeoutMs",
      value: 1000,
      reason: "the lower bound is allowed",
    },
    {
      argv: ["--step-timeout", "3600"],
      key: "stepTimeoutMs",
      value: 3_600_000,
      reason: "the upper bound (an hour) is allowed",
    },
  ])("takes $argv: $reason", ({ argv, key, value }) => {
    expect(parse(...argv)[key as keyof CrashOptions]).toEqual(value);
  });

  it.each([
    { argv: ["--help"], reason: "the long form" },
    { argv: ["-h"], reason: "the short form" },
    {
      argv: ["--step-timeout", "0", "--help"],
      reason: "asking for help wins over a bad value: the person needs the help text",
    },
  ])("answers help to $argv: $reason", ({ argv }) => {
    expect(parseCrashArgs(argv)).toBe("help");
  });

  it.each([
    { argv: ["--subject", "kafka"], flag: "--subject", error: /unknown "kafka"/, reason: "unknown subject" },
    {
      argv: ["--lifecycle", "create,explode"],
      flag: "--lifecycle",
      error: /unknown "explode" \(one of create, update/,
      reason: "one unknown lifecycle among good ones: named, with the ones there are",
    },
    {
      argv: ["--fault", "crash-during"],
      flag: "--fault",
      error: /unknown "crash-during" \(one of crash-before, crash-after, fail, answer-lost\)/,
      reason: "unknown fault",
    },
    {
      argv: ["--fault", ","],
      flag: "--fault",
      error: /give at least one of crash-before/,
      reason: "a list of nothing",
    },
    { argv: ["--subject", ""], flag: "--subject", error: /give at least one/, reason: "an empty value" },
    {
      argv: ["--step-timeout", "0"],
      flag: "--step-timeout",
      error: /"0" is not a whole number of seconds from 1 to 3600/,
      reason: "no time at all",
    },
    {
      argv: ["--step-timeout", "3601"],
      flag: "--step-timeout",
      error: /"3601"/,
      reason: "beyond an hour",
    },
    { argv: ["--step-timeout", "1.5"], flag: "--step-timeout", error: /"1.5"/, reason: "not whole" },
    { argv: ["--step-timeout=-5"], flag: "--step-timeout", error: /"-5"/, reason: "negative" },
    { argv: ["--step-timeout", "60s"], flag: "--step-timeout", error: /"60s"/, reason: "seconds, no unit" },
    {
      argv: ["--step-timeout"],
      flag: "--step-timeout",
      error: /argument missing/,
      reason: "a flag without its value",
    },
    ...(["--sample", "--subject=dns", "--lifecycle=create", "--fault=fail"] as const).map((narrowing) => ({
      argv: ["--write-docs", narrowing],
      flag: "--write-docs",
      error: /takes the full run only/,
      reason: `${narrowing} narrows the run: the docs page must describe the full one`,
    })),
    { argv: ["--nope"], flag: "--nope", error: /Unknown option/, reason: "unknown flag" },
    { argv: ["extra"], flag: "extra", error: /positional/, reason: "a positional argument" },
  ])("refuses $argv with one line naming $flag: $reason", ({ argv, flag, error }) => {
    const e = thrown(argv);
    expect(e).toBeInstanceOf(UsageError);
    const message = (e as UsageError).message;
    expect(message).toMatch(error);
    expect(message).toContain(flag);
    expect(message).not.toContain("\n");
  });
});

describe("parseCrashArgs, a known bug", () => {
  // Known bug (options.ts): parseArgs' own message for a string option whose value starts with a dash
  // ("--step-timeout -5", "--json -out.json") is three lines ("... is ambiguous.\nDid you forget ...\nTo
  // specify ..."), and UsageError passes it on as is, though its message is meant to be one line. Flip
  // `it.fails` to `it` once it is fixed.
  it("keeps parseArgs' multi-line messages to one line", () => {
    const e = thrown(["--step-timeout", "-5"]);
    expect(e).toBeInstanceOf(UsageError);
    expect((e as UsageError).message).toContain("--step-timeout");
    expect((e as UsageError).message).not.toContain("\n");
  });
});

describe("usage", () => {
  it("names every subject, lifecycle and fault, and the flags", () => {
    const text = usage();
    for (const subject of SUBJECTS) expect(text).toContain(subject);
    for (const lifecycle of LIFECYCLES) {
      expect(text).toMatch(new RegExp(`^  ${lifecycle.id} +${escape(lifecycle.title)}$`, "m"));
    }
    for (const fault of TAP_FAULTS) expect(text).toContain(fault);
    for (const flag of [
      "--subject",
      "--lifecycle",
      "--fault",
      "--sample",
      "--step-timeout",
      "--json",
      "--write-docs",
      "--help",
    ])
      expect(text).toContain(flag);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
