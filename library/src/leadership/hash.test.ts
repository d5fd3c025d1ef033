import { describe, expect, it } from "vitest";
import { HASH_SPACE, hexLiteral, shardHash } from "./hash.ts";

describe("shardHash", () => {
  // Expected values printed by k8s.io/apimachinery v0.36.3 `sharding.HashField` (go run, on this machine).
  it.each([
    { value: "", want: "cbf29ce484222325", reason: "the FNV-1a offset basis: no byte hashed" },
    { value: "a", want: "af63dc4c8601ec8c", reason: "one byte" },
    { value: "default", want: "ebada5168620c5fe", reason: "a namespace" },
    { value: "04cbc810-ca99-4ee6-8f4f-095d4ee3e359", want: "acf7fdb4eb7c9633", reason: "a uid" },
    { value: "ünïcode-名前", want: "038fe7ca1684ff97", reason: "UTF-8 bytes, not UTF-16 code units" },
  ])("$reason", ({ value, want }) => {
    expect(shardHash(value).toString(16).padStart(16, "0")).toBe(want);
  });
});

describe("hexLiteral", () => {
  it.each([
    { value: 0n, want: "0x0000000000000000", reason: "padded to 16 digits" },
    { value: 0xabcn, want: "0x0000000000000abc", reason: "lower case" },
    {
      value: HASH_SPACE,
      want: "0x10000000000000000",
      reason: "2^64, the one 17-digit end the API server takes",
    },
  ])("$reason", ({ value, want }) => {
    expect(hexLiteral(value)).toBe(want);
  });

  it("refuses what is not a hash or the end of the space", () => {
    expect(() => hexLiteral(HASH_SPACE + 1n)).toThrow(RangeError);
    expect(() => hexLiteral(-1n)).toThrow(RangeError);
  });
});
