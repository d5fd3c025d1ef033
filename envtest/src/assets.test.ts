import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MANIFEST, cacheDir, ensureBinaries, resolveSource, useExistingClusterFromEnv } from "./assets.ts";
import { assetsKey } from "./versions.ts";

const HOME = "/home/dev";
const CACHE = join(HOME, ".cache", "shapes-demo", "kubernetes", assetsKey());

describe("resolveSource: the resolution order", () => {
  const cases: {
    reason: string;
    env: Record<string, string>;
    useExistingCluster?: boolean;
    files: string[];
    want: { kind: string; path: string } | { error: RegExp };
  }[] = [
    {
      reason: "KUBECONFIG set: use that cluster, start nothing",
      env: { KUBECONFIG: "/k/config", KUBEBUILDER_ASSETS: "/assets" },
      files: ["/k/config", "/assets/etcd", "/assets/kube-apiserver"],
      want: { kind: "existing", path: "/k/config" },
    },
    {
      reason: "a KUBECONFIG list: fine when one of its files exists",
      env: { KUBECONFIG: "/k/missing:/k/config" },
      files: ["/k/config"],
      want: { kind: "existing", path: "/k/missing:/k/config" },
    },
    {
      reason: "KUBECONFIG naming no file that exists is an error, not a silent local start",
      env: { KUBECONFIG: "/k/missing" },
      files: [],
      want: { error: /cannot use the existing cluster: KUBECONFIG=\/k\/missing names no file/ },
    },
    {
      reason: "USE_EXISTING_CLUSTER=false wins over KUBECONFIG",
      env: { KUBECONFIG: "/k/config", USE_EXISTING_CLUSTER: "false", KUBEBUILDER_ASSETS: "/assets" },
      files: ["/k/config", "/assets/etcd", "/assets/kube-apiserver"],
      want: { kind: "assets", path: "/assets" },
    },
    {
      reason: "the useExistingCluster option wins over the environment (a test that needs a local one)",
      env: { KUBECONFIG: "/k/config" },
      useExistingCluster: false,
      files: ["/k/config"],
      want: { kind: "build", path: CACHE },
    },
    {
      reason: "USE_EXISTING_CLUSTER=true without KUBECONFIG: ~/.kube/config, like kubectl",
      env: { USE_EXISTING_CLUSTER: "true" },
      files: [join(HOME, ".kube", "config")],
      want: { kind: "existing", path: join(HOME, ".kube", "config") },
    },
    {
      reason: "USE_EXISTING_CLUSTER=true with no kubeconfig anywhere is an error",
      env: { USE_EXISTING_CLUSTER: "true" },
      files: [],
      want: { error: /cannot use an existing cluster: KUBECONFIG is not set/ },
    },
    {
      reason: "KUBEBUILDER_ASSETS with etcd and kube-apiserver: use them",
      env: { KUBEBUILDER_ASSETS: "/assets" },
      files: ["/assets/etcd", "/assets/kube-apiserver", CACHE + "/" + MANIFEST],
      want: { kind: "assets", path: "/assets" },
    },
    {
      reason: "KUBEBUILDER_ASSETS without kube-apiserver is an error naming it",
      env: { KUBEBUILDER_ASSETS: "/assets" },
      files: ["/assets/etcd"],
      want: { error: /cannot use KUBEBUILDER_ASSETS=\/assets: \/assets\/kube-apiserver not found/ },
    },
    {
      reason: "a complete cache (manifest written last): use it",
      env: {},
      files: [join(CACHE, MANIFEST), join(CACHE, "etcd"), join(CACHE, "kube-apiserver")],
      want: { kind: "cache", path: CACHE },
    },
    {
      reason: "binaries without a manifest are half a cache: build",
      env: {},
      files: [join(CACHE, "etcd"), join(CACHE, "kube-apiserver")],
      want: { kind: "build", path: CACHE },
    },
    {
      reason: "XDG_CACHE_HOME moves the cache",
      env: { XDG_CACHE_HOME: "/xdg" },
      files: [],
      want: { kind: "build", path: join("/xdg", "shapes-demo", "kubernetes", assetsKey()) },
    },
  ];
  it.each(cases)("$reason", ({ env, useExistingCluster, files, want }) => {
    const run = () =>
      resolveSource({
        env,
        home: HOME,
        exists: (p) => files.includes(p),
        ...(useExistingCluster === undefined ? {} : { useExistingCluster }),
      });
    if ("error" in want) {
      expect(run).toThrow(want.error);
      return;
    }
    const source = run();
    expect(source.kind).toBe(want.kind);
    expect(source.kind === "existing" ? source.kubeconfig : source.binaries.dir).toBe(want.path);
  });
});

describe("useExistingClusterFromEnv", () => {
  const cases = [
    { reason: "nothing set: local", env: {}, expected: false },
    { reason: "KUBECONFIG set: existing", env: { KUBECONFIG: "/k" }, expected: true },
    { reason: "a blank KUBECONFIG counts as unset", env: { KUBECONFIG: " " }, expected: false },
    { reason: "USE_EXISTING_CLUSTER=1", env: { USE_EXISTING_CLUSTER: "1" }, expected: true },
    {
      reason: "USE_EXISTING_CLUSTER=FALSE beats KUBECONFIG",
      env: { USE_EXISTING_CLUSTER: "FALSE", KUBECONFIG: "/k" },
      expected: false,
    },
  ];
  it.each(cases)("$reason", ({ env, expected }) => {
    expect(useExistingClusterFromEnv(env)).toBe(expected);
  });
  it("refuses a value that is neither true nor false", () => {
    expect(() => useExistingClusterFromEnv({ USE_EXISTING_CLUSTER: "maybe" })).toThrow(
      /cannot read USE_EXISTING_CLUSTER="maybe"/,
    );
  });
});

describe("ensureBinaries with a fake go toolchain", () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let calls: string;

  /**
   * A `go` that answers `go env GOVERSION` and, for `go build -o OUT`, writes shell-script "binaries"
   * that print the versions the real ones print. Tunable through FAKE_GO_* variables.
   */
  const FAKE_GO = `#!/bin/sh
echo "$*" >> "$FAKE_GO_CALLS"
if [ "$1" = env ]; then echo "\${FAKE_GO_VERSION:-go1.26.8}"; exit 0; fi
if [ -n "$FAKE_GO_FAIL" ]; then echo "k8s.io/kubernetes/pkg/x" >&2; echo "pkg/x/y.go:1: $FAKE_GO_FAIL" >&2; exit 1; fi
sleep "\${FAKE_GO_SLEEP:-0}"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
fake() { printf '#!/bin/sh\\necho "%s"\\n' "$2" > "$1"; chmod +x "$1"; }
case "$out" in
  */) fake "$out/kube-apiserver" "Kubernetes \${FAKE_KUBE_VERSION:-v1.36.3}"; fake "$out/kubectl" "Client Version: v1.36.3" ;;
  *) fake "$out" "etcd Version: 3.6.8" ;;
esac
echo "k8s.io/kubernetes/cmd/kube-apiserver" >&2
`;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "envtest-assets-test-"));
    await mkdir(join(root, "bin"));
    await writeFile(join(root, "bin", "go"), FAKE_GO);
    await chmod(join(root, "bin", "go"), 0o755);
    calls = join(root, "go-calls.log");
    await writeFile(calls, "");
    env = {
      PATH: `${join(root, "bin")}:/usr/bin:/bin`,
      HOME: root,
      XDG_CACHE_HOME: join(root, "cache"),
      FAKE_GO_CALLS: calls,
    };
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const builds = async () =>
    (await readFile(calls, "utf8")).split("\n").filter((l) => l.startsWith("build")).length;

  it("builds into the cache once, with progress lines, and leaves no temp folder or lock behind", async () => {
    const lines: string[] = [];
    const binaries = await ensureBinaries({ env, log: (l) => lines.push(l) });
    const dir = cacheDir(env);
    expect(binaries).toEqual({
      dir,
      etcd: join(dir, "etcd"),
      kubeApiServer: join(dir, "kube-apiserver"),
      kubectl: join(dir, "kubectl"),
    });
    expect(JSON.parse(await readFile(join(dir, MANIFEST), "utf8"))).toMatchObject({
      kubernetesVersion: "v1.36.3",
      etcdVersion: "v3.6.8",
      goVersion: "go1.26.8",
    });
    expect(await readdir(join(dir, ".."))).toEqual([assetsKey()]);
    expect(lines.some((l) => l.startsWith("[1/2] kube-apiserver and kubectl") && l.includes("done in"))).toBe(
      true,
    );
    expect(lines.some((l) => l.startsWith("[2/2] etcd") && l.includes("done in"))).toBe(true);
    expect(await builds()).toBe(2);

    // The second call finds the cache: go is not even asked.
    await writeFile(calls, "");
    await ensureBinaries({ env });
    expect(await readFile(calls, "utf8")).toBe("");
  });

  it("builds once when several callers race for an empty cache (the others wait on the lock)", async () => {
    env.FAKE_GO_SLEEP = "1";
    const results = await Promise.all([
      ensureBinaries({ env }),
      ensureBinaries({ env }),
      ensureBinaries({ env }),
    ]);
    expect(new Set(results.map((r) => r.kubeApiServer)).size).toBe(1);
    expect(await builds()).toBe(2); // one kube build + one etcd build, not three of each
    expect(existsSync(join(cacheDir(env), MANIFEST))).toBe(true);
  });

  it("a failing build says what failed with go's last lines, and leaves the cache empty", async () => {
    env.FAKE_GO_FAIL = "undefined: foo";
    await expect(ensureBinaries({ env })).rejects.toThrow(
      /cannot build kube-apiserver and kubectl .*go build exited with 1[\s\S]*undefined: foo/,
    );
    expect(await readdir(join(cacheDir(env), ".."))).toEqual([]);
  });

  it("without Go, says what to install and the alternatives", async () => {
    env.PATH = join(root, "empty");
    await expect(ensureBinaries({ env })).rejects.toThrow(
      /cannot build the Kubernetes binaries: the Go toolchain is not installed.*Install Go >= 1\.26.*KUBEBUILDER_ASSETS.*KUBECONFIG/,
    );
  });

  it("with an old Go, says which version is needed", async () => {
    env.FAKE_GO_VERSION = "go1.24.2";
    await expect(ensureBinaries({ env })).rejects.toThrow(
      /cannot build the Kubernetes binaries with go1\.24\.2: Go >= 1\.26 is needed/,
    );
  });

  it("refuses binaries that report another version than the pinned one", async () => {
    env.FAKE_KUBE_VERSION = "v1.30.0";
    await expect(ensureBinaries({ env })).rejects.toThrow(
      /cannot use the binaries just built: .*kube-apiserver v1\.30\.0/,
    );
    expect(await readdir(join(cacheDir(env), ".."))).toEqual([]);
  });

  it("uses KUBEBUILDER_ASSETS as they are, without building", async () => {
    const assets = join(root, "assets");
    await mkdir(assets);
    await writeFile(join(assets, "etcd"), "");
    await writeFile(join(assets, "kube-apiserver"), "");
    const binaries = await ensureBinaries({ env: { ...env, KUBEBUILDER_ASSETS: assets } });
    expect(binaries).toEqual({
      dir: assets,
      etcd: join(assets, "etcd"),
      kubeApiServer: join(assets, "kube-apiserver"),
    });
    expect(await builds()).toBe(0);
  });
});
