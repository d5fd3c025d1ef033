/**
 * kube-apiserver for one control plane, configured the way controller-runtime's envtest does it: TLS from
 * the throwaway CA, client-certificate users, RBAC, service-account keys, loopback only.
 */
import { join } from "node:path";
import { mergeFlags } from "./flags.ts";
import { LOOPBACK } from "./ports.ts";
import type { ProgressLog } from "./progress.ts";
import { spawnChild, type Child } from "./processes.ts";
import { httpsGet, waitUntilReady, type ClientTls } from "./readiness.ts";

/** How to run kube-apiserver. */
export interface ApiServerConfig {
  binary: string;
  port: number;
  etcdUrl: string;
  /** Folder holding ca.crt, apiserver.crt/.key, sa.pub, sa.key (see control-plane.ts). */
  pkiDir: string;
  logFile: string;
  extraFlags?: readonly string[];
  detached?: boolean;
}

/** The URL of an API server listening on `port`. */
export function apiServerUrl(port: number): string {
  return `https://${LOOPBACK}:${port}`;
}

/** The service-account token issuer: port-independent, so a restarted cluster keeps its tokens valid. */
export const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

/** The command-line flags for `config`. */
export function apiServerFlags(config: ApiServerConfig): string[] {
  const pki = (file: string) => join(config.pkiDir, file);
  return mergeFlags(
    [
      `--secure-port=${config.port}`,
      `--bind-address=${LOOPBACK}`,
      // With a loopback bind and no default route, the API server cannot pick an address by itself.
      `--advertise-address=${LOOPBACK}`,
      `--tls-cert-file=${pki("apiserver.crt")}`,
      `--tls-private-key-file=${pki("apiserver.key")}`,
      `--client-ca-file=${pki("ca.crt")}`,
      "--authorization-mode=RBAC",
      `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
      `--service-account-key-file=${pki("sa.pub")}`,
      `--service-account-signing-key-file=${pki("sa.key")}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      // No controller manager mints ServiceAccount tokens here; the admission plugin would wait for them.
      "--disable-admission-plugins=ServiceAccount",
      `--etcd-servers=${config.etcdUrl}`,
      "--profiling=false",
      // Alpha in 1.36 (KEP-5866): lists and watches filtered by a hash range of uid or namespace. The
      // controller's --sharding asks for it, and falls back to filtering on its side where it is off.
      "--feature-gates=ShardedListAndWatch=true",
    ],
    config.extraFlags,
  );
}

/**
 * Starts kube-apiserver and waits until /readyz answers ok and the `default` namespace exists (created
 * by the API server's own bootstrap controller: the last step before clients can really work).
 * Throws ChildExitedError (`addressInUse` → retry on another port) or a timeout error; the child is
 * stopped before throwing.
 */
export async function startApiServer(
  config: ApiServerConfig,
  admin: ClientTls,
  log: ProgressLog,
  timeoutMs: number,
): Promise<Child> {
  const child = await spawnChild({
    name: "kube-apiserver",
    command: config.binary,
    args: apiServerFlags(config),
    logFile: config.logFile,
    ...(config.detached ? { detached: true } : {}),
  });
  const url = apiServerUrl(config.port);
  const deadline = Date.now() + timeoutMs;
  try {
    await waitUntilReady({
      what: `${url}/readyz`,
      child,
      timeoutMs,
      log,
      check: async () => {
        const res = await httpsGet(`${url}/readyz?verbose`, admin);
        return { ready: res.status === 200, detail: `${res.status} ${res.body.trim()}` };
      },
    });
    await waitUntilReady({
      what: "the default namespace",
      child,
      timeoutMs: Math.max(deadline - Date.now(), 10_000),
      log,
      check: async () => {
        const res = await httpsGet(`${url}/api/v1/namespaces/default`, admin);
        return { ready: res.status === 200, detail: `${res.status} ${res.body.trim()}` };
      },
    });
  } catch (error) {
    await child.stop(5_000);
    throw error;
  }
  return child;
}
