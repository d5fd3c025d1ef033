import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GO_MODULES_DIR } from "./build.ts";
import {
  ETCD_VERSION,
  KUBERNETES_VERSION,
  assetsKey,
  compareVersions,
  parseVersion,
  type SemVer,
} from "./versions.ts";

describe("the pinned versions", () => {
  const kubernetesMod = readFileSync(join(GO_MODULES_DIR, "kubernetes", "go.mod"), "utf8");
  const etcdMod = readFileSync(join(GO_MODULES_DIR, "etcd", "go.mod"), "utf8");

  it("match the Kubernetes wrapper module: k8s.io/kubernetes at KUBERNETES_VERSION", () => {
    expect(kubernetesMod).toMatch(
      new RegExp(`\\bk8s\\.io/kubernetes ${KUBERNETES_VERSION.replace(/\./g, "\\.")}\\b`),
    );
  });

  it("pin every k8s.io staging module to the matching v0.X.Y by replace", () => {
    const staging = KUBERNETES_VERSION.replace(/^v1\./, "v0.");
    const replaces = [...kubernetesMod.matchAll(/^\s*(k8s\.io\/[\w-]+) => (k8s\.io\/[\w-]+) (v\S+)$/gm)];
    expect(replaces.length).toBeGreaterThanOrEqual(33);
    for (const [, from, to, version] of replaces) {
      expect({ from, to, version }).toEqual({ from, to: from, version: staging });
    }
  });

  it("match the etcd wrapper module: go.etcd.io/etcd/server/v3 at ETCD_VERSION", () => {
    expect(etcdMod).toMatch(
      new RegExp(`go\\.etcd\\.io/etcd/server/v3 ${ETCD_VERSION.replace(/\./g, "\\.")}\\b`),
    );
  });

  it("key the cache folder by both versions", () => {
    expect(assetsKey("v1.36.3", "v3.6.8")).toBe("v1.36.3-etcd3.6.8");
    expect(assetsKey()).toBe(`${KUBERNETES_VERSION}-etcd${ETCD_VERSION.slice(1)}`);
  });
});

describe("parseVersion", () => {
  const cases: { reason: string; input: string; want: SemVer | undefined }[] = [
    { reason: "a Kubernetes tag", input: "v1.36.3", want: { major: 1, minor: 36, patch: 3 } },
    { reason: "go env GOVERSION", input: "go1.26.8", want: { major: 1, minor: 26, patch: 8 } },
    { reason: "no patch means .0", input: "1.26", want: { major: 1, minor: 26, patch: 0 } },
    { reason: "a prerelease keeps its numbers", input: "go1.27rc1", want: { major: 1, minor: 27, patch: 0 } },
    {
      reason: "trailing newline from a command",
      input: "go1.26.0\n",
      want: { major: 1, minor: 26, patch: 0 },
    },
    { reason: "not a version", input: "devel", want: undefined },
    { reason: "empty output", input: "", want: undefined },
  ];
  it.each(cases)("$reason: $input", ({ input, want }) => {
    expect(parseVersion(input)).toEqual(want);
  });
});

describe("compareVersions", () => {
  const v = (text: string) => parseVersion(text) as SemVer;
  const cases = [
    { reason: "older minor", a: "1.25.9", b: "1.26.0", sign: -1 },
    { reason: "minor beats patch", a: "1.26.0", b: "1.25.99", sign: 1 },
    { reason: "equal", a: "1.26.0", b: "1.26", sign: 0 },
    { reason: "major first", a: "2.0.0", b: "1.99.99", sign: 1 },
  ];
  it.each(cases)("$reason: $a vs $b", ({ a, b, sign }) => {
    expect(Math.sign(compareVersions(v(a), v(b)))).toBe(sign);
  });
});
