/**
 * The pinned versions of the control plane: the ONE place that names them. The Go wrapper modules in
 * `envtest/go/` must agree (a unit test reads their go.mod files and checks).
 */

/** The Kubernetes release kube-apiserver and kubectl are built from (module `k8s.io/kubernetes`). */
export const KUBERNETES_VERSION = "v1.36.3";

/** The etcd release built from `go.etcd.io/etcd/server/v3`: the one kubeadm pairs with {@link KUBERNETES_VERSION}. */
export const ETCD_VERSION = "v3.6.8";

/** The oldest Go toolchain that builds {@link KUBERNETES_VERSION} (its go.mod says `go 1.26`). */
export const MINIMUM_GO_VERSION = "1.26";

/** The parts of a `vMAJOR.MINOR.PATCH` version string. */
export interface SemVer {
  major: number;
  minor: number;
  patch: number;
}

/** Parses `v1.36.3` / `1.36.3` / `go1.26` (patch defaults to 0); undefined when it is not a version. */
export function parseVersion(text: string): SemVer | undefined {
  const match = /^(?:v|go)?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text.trim());
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3] ?? 0) };
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareVersions(a: SemVer, b: SemVer): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/**
 * The cache key of one set of binaries, e.g. `v1.36.3-etcd3.6.8`: a new pin means a new folder, so an
 * upgrade never runs stale binaries and a downgrade finds the old ones again.
 */
export function assetsKey(kubernetes = KUBERNETES_VERSION, etcd = ETCD_VERSION): string {
  return `${kubernetes}-etcd${etcd.replace(/^v/, "")}`;
}
