import { describe, expect, it } from "vitest";
import { flagName, flagValue, mergeFlags } from "./flags.ts";

describe("mergeFlags", () => {
  const defaults = ["--secure-port=6443", "--authorization-mode=RBAC", "--profiling=false"];
  const cases = [
    { reason: "no extra flags: the defaults as they are", extra: [], want: defaults },
    {
      reason: "an extra flag with a default's name replaces it in place",
      extra: ["--authorization-mode=AlwaysAllow"],
      want: ["--secure-port=6443", "--authorization-mode=AlwaysAllow", "--profiling=false"],
    },
    {
      reason: "new flags are appended in the given order",
      extra: ["--v=4", "--watch-cache=false"],
      want: [...defaults, "--v=4", "--watch-cache=false"],
    },
    {
      reason: "a boolean flag without a value replaces a default with one",
      extra: ["--profiling"],
      want: ["--secure-port=6443", "--authorization-mode=RBAC", "--profiling"],
    },
  ];
  it.each(cases)("$reason", ({ extra, want }) => {
    expect(mergeFlags(defaults, extra)).toEqual(want);
  });

  it("refuses something that is not a flag, saying what a flag looks like", () => {
    expect(() => mergeFlags(defaults, ["authorization-mode=RBAC"])).toThrow(
      /cannot read flag .*--name=value/,
    );
  });
});

describe("flagName and flagValue", () => {
  it("read names and the last value", () => {
    expect(flagName("--etcd-servers=http://x")).toBe("etcd-servers");
    expect(flagName("-v=2")).toBe("v");
    expect(flagValue(["--v=2", "--x", "--v=4"], "v")).toBe("4");
    expect(flagValue(["--x"], "x")).toBe("true");
    expect(flagValue(["--x"], "y")).toBeUndefined();
  });
});
