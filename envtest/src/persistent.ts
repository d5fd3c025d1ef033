/**
 * The persistent local cluster behind `npm run cluster -- up|down|status`: the same etcd +
 * kube-apiserver as start(), but detached from the terminal (they keep running after the command
 * returns) with data under a git-ignored folder, `.demo/cluster/` in the repo (of the working directory
 * when envtest is installed from its package):
 *
 *   state.json   what runs: pids, ports, URLs, binaries (written by `up`, deleted by `down`)
 *   ports.json   the last ports, tried first by the next `up` (the server URL stays the same)
 *   kubeconfig   the admin kubeconfig (same path every time, so `export KUBECONFIG=...` stays valid)
 *   pki/         CA and keys, kept across down/up (kubeconfigs stay valid too)
 *   etcd/        the data, kept across down/up; `down --purge` deletes everything
 *   logs/        etcd.log, kube-apiserver.log (appended)
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { ensureBinaries, type BinaryPaths } from "./assets.ts";
import { launchControlPlane, type ControlPlanePorts } from "./control-plane.ts";
import { projectPath } from "./package-dir.ts";
import { writePrivateFile } from "./kubeconfig.ts";
import { withLock } from "./lock.ts";
import { commandLineOf, isAlive, terminatePid } from "./processes.ts";
import type { ProgressLog } from "./progress.ts";
import { httpsGet } from "./readiness.ts";

/**
 * The default cluster folder: `.demo/cluster/` at the repo root (git-ignored); installed from the package,
 * `.demo/cluster` relative to the working directory.
 */
export const DEFAULT_CLUSTER_DIR = projectPath(".demo", "cluster");

/** The content of state.json. */
export interface ClusterState {
  version: 1;
  kubeconfig: string;
  server: string;
  etcdUrl: string;
  ports: ControlPlanePorts;
  pids: { etcd: number; apiServer: number };
  binaries: BinaryPaths;
  startedAt: string;
}

/** What runs, according to state.json and the process table. */
export interface ClusterStatus {
  /** state.json, when there is one. */
  state?: ClusterState;
  etcd: boolean;
  apiServer: boolean;
  /** The server's gitVersion from /version, when it answers. */
  serverVersion?: string;
}

const STATE = "state.json";
const PORTS = "ports.json";

async function lastPorts(dir: string): Promise<ControlPlanePorts | undefined> {
  try {
    const ports = JSON.parse(await readFile(join(dir, PORTS), "utf8")) as Partial<ControlPlanePorts>;
    const valid = (p: unknown) => typeof p === "number" && Number.isInteger(p) && p > 0 && p < 65536;
    if (valid(ports.etcdClient) && valid(ports.etcdPeer) && valid(ports.apiServer))
      return ports as ControlPlanePorts;
  } catch {
    // none yet
  }
  return undefined;
}

/** Reads state.json; undefined when absent. Throws on a file that is not a cluster state. */
export async function readState(dir: string): Promise<ClusterState | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, STATE), "utf8");
  } catch {
    return undefined;
  }
  const state = JSON.parse(text) as Partial<ClusterState>;
  if (state.version !== 1 || !state.pids || !state.ports || !state.binaries) {
    throw new Error(
      `cannot read ${join(dir, STATE)}: not a cluster state file (delete it, or run down --purge)`,
    );
  }
  return state as ClusterState;
}

/** True when `pid` is alive and (where /proc tells) runs `binary`: a recycled pid is not ours. */
export function runs(pid: number, binary: string): boolean {
  if (!isAlive(pid)) return false;
  const commandLine = commandLineOf(pid);
  return commandLine === undefined || commandLine[0] === binary;
}

/** What runs in `dir`: processes alive and, when the API server is up, its version. */
export async function clusterStatus(dir: string): Promise<ClusterStatus> {
  const state = await readState(dir);
  if (!state) return { etcd: false, apiServer: false };
  const status: ClusterStatus = {
    state,
    etcd: runs(state.pids.etcd, state.binaries.etcd),
    apiServer: runs(state.pids.apiServer, state.binaries.kubeApiServer),
  };
  if (status.apiServer) {
    try {
      const read = (file: string) => readFile(join(dir, "pki", file), "utf8");
      const res = await httpsGet(`${state.server}/version`, {
        caPem: await read("ca.crt"),
        certPem: await read("admin.crt"),
        keyPem: await read("admin.key"),
      });
      if (res.status === 200)
        status.serverVersion = (JSON.parse(res.body) as { gitVersion?: string }).gitVersion;
    } catch {
      // running but not answering (starting, or stuck): the caller says so
    }
  }
  return status;
}

/** Options of {@link clusterUp}. */
export interface UpOptions {
  dir: string;
  log: ProgressLog;
  binaries?: BinaryPaths;
  startTimeoutMs?: number;
}

/**
 * Starts the persistent cluster unless it already runs. Half a cluster (one process gone) is stopped
 * and started again; the data is kept either way. Returns the state and whether it was already running.
 */
export async function clusterUp(
  options: UpOptions,
): Promise<{ state: ClusterState; alreadyRunning: boolean }> {
  await mkdir(options.dir, { recursive: true, mode: 0o700 });
  return withLock(join(options.dir, ".lock"), async () => {
    const previous = await clusterStatus(options.dir);
    if (previous.state && previous.etcd && previous.apiServer) {
      return { state: previous.state, alreadyRunning: true };
    }
    if (previous.state) {
      options.log("found a cluster that is not fully running: stopping what is left, then starting again");
      await stopProcesses(previous.state, options.log);
    }
    const binaries = options.binaries ?? (await ensureBinaries({ log: options.log }));
    const preferredPorts = previous.state?.ports ?? (await lastPorts(options.dir));
    const plane = await launchControlPlane({
      dir: options.dir,
      binaries,
      log: options.log,
      detached: true,
      removeDirOnStop: false,
      contextName: "shapes-demo",
      ...(preferredPorts ? { preferredPorts } : {}),
      ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
    });
    const state: ClusterState = {
      version: 1,
      kubeconfig: plane.kubeconfigPath,
      server: plane.server,
      etcdUrl: plane.etcdUrl,
      ports: plane.ports,
      pids: plane.pids(),
      binaries,
      startedAt: new Date().toISOString(),
    };
    await writePrivateFile(join(options.dir, STATE), JSON.stringify(state, null, 2) + "\n");
    await writePrivateFile(join(options.dir, PORTS), JSON.stringify(state.ports) + "\n");
    return { state, alreadyRunning: false };
  });
}

/** Options of {@link clusterDown}. */
export interface DownOptions {
  dir: string;
  log: ProgressLog;
  /** Also delete the folder (data, PKI, logs). */
  purge?: boolean;
}

/** Stops the persistent cluster (API server first, then etcd). Returns whether anything ran. */
export async function clusterDown(options: DownOptions): Promise<{ wasRunning: boolean }> {
  if (!existsSync(options.dir)) return { wasRunning: false };
  const wasRunning = await withLock(join(options.dir, ".lock"), async () => {
    const status = await clusterStatus(options.dir);
    if (!status.state) return false;
    await stopProcesses(status.state, options.log);
    await rm(join(options.dir, STATE), { force: true });
    return status.etcd || status.apiServer;
  });
  if (options.purge) await rm(options.dir, { recursive: true, force: true });
  return { wasRunning };
}

async function stopProcesses(state: ClusterState, log: ProgressLog): Promise<void> {
  const children = [
    { name: "kube-apiserver", pid: state.pids.apiServer, binary: state.binaries.kubeApiServer },
    { name: "etcd", pid: state.pids.etcd, binary: state.binaries.etcd },
  ];
  for (const child of children) {
    if (!runs(child.pid, child.binary)) continue;
    const how = await terminatePid(child.pid, 15_000);
    log(`${child.name} (pid ${child.pid}) ${how === "killed" ? "killed after 15 s" : "stopped"}`);
  }
}
