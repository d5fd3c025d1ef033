/**
 * etcd for one control plane: a single member on loopback, data in the control plane's folder, and
 * `--unsafe-no-fsync` (test data is throwaway; fsync on every write is the slowest part of etcd).
 */
import { mergeFlags } from "./flags.ts";
import { LOOPBACK } from "./ports.ts";
import type { ProgressLog } from "./progress.ts";
import { spawnChild, type Child } from "./processes.ts";
import { waitUntilReady, type CheckResult } from "./readiness.ts";

/** How to run etcd. */
export interface EtcdConfig {
  binary: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
  logFile: string;
  /** Extra flags; one with a default's name replaces it (see flags.ts). */
  extraFlags?: readonly string[];
  /** Outlive this process (the persistent cluster). Default false. */
  detached?: boolean;
}

/** The client URL of an etcd listening on `port`. */
export function etcdClientUrl(port: number): string {
  return `http://${LOOPBACK}:${port}`;
}

/** The command-line flags for `config`. */
export function etcdFlags(config: EtcdConfig): string[] {
  const client = etcdClientUrl(config.clientPort);
  const peer = `http://${LOOPBACK}:${config.peerPort}`;
  return mergeFlags(
    [
      "--name=envtest",
      `--data-dir=${config.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=envtest=${peer}`,
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ],
    config.extraFlags,
  );
}

/** One health check: GET /health must say `"health":"true"`. */
export async function etcdHealth(clientUrl: string): Promise<CheckResult> {
  const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(2_000) });
  const body = await res.text();
  return { ready: res.ok && /"health":\s*"true"/.test(body), detail: `${res.status} ${body.trim()}` };
}

/**
 * Starts etcd and waits until it is healthy. Throws ChildExitedError (with `addressInUse` when a port was
 * taken meanwhile: retry on fresh ports) or a timeout error; the child is stopped before throwing.
 */
export async function startEtcd(config: EtcdConfig, log: ProgressLog, timeoutMs: number): Promise<Child> {
  const child = await spawnChild({
    name: "etcd",
    command: config.binary,
    args: etcdFlags(config),
    logFile: config.logFile,
    ...(config.detached ? { detached: true } : {}),
  });
  const url = etcdClientUrl(config.clientPort);
  try {
    await waitUntilReady({ what: `${url}/health`, child, check: () => etcdHealth(url), timeoutMs, log });
  } catch (error) {
    await child.stop(2_000);
    throw error;
  }
  return child;
}
