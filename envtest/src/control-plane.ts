/**
 * The control plane API: `start()` gives a test (or the demo) a Kubernetes API to talk to.
 *
 * - An existing cluster when asked (`useExistingCluster`, default: KUBECONFIG is set): nothing starts and
 *   `stop()` leaves the cluster alone.
 * - Otherwise a local one: etcd + kube-apiserver as child processes on free loopback ports, TLS from a
 *   throwaway CA, RBAC, an admin kubeconfig. Each control plane lives in its own folder (a temp folder
 *   that `stop()` deletes), so several run side by side.
 */
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { apiServerUrl, startApiServer } from "./apiserver.ts";
import { ensureBinaries, resolveSource, useExistingClusterFromEnv, type BinaryPaths } from "./assets.ts";
import { etcdClientUrl, startEtcd } from "./etcd.ts";
import {
  loadKubeConfig,
  renderImpersonatingKubeconfig,
  renderKubeconfig,
  writePrivateFile,
} from "./kubeconfig.ts";
import { ADMIN, ensurePki, type ControlPlanePki } from "./pki-dir.ts";
import { issueClientCertificate, type UserInfo } from "./pki.ts";
import { freePorts, isPortFree } from "./ports.ts";
import { isAlive, onParentExit, sleep, type Child } from "./processes.ts";
import { elapsed, stderrLog, type ProgressLog } from "./progress.ts";
import { ChildExitedError } from "./readiness.ts";

/** Options of {@link start} and {@link startLocal}. Every field has a default. */
export interface StartOptions {
  /**
   * Use the cluster of an existing kubeconfig instead of starting one. Default: USE_EXISTING_CLUSTER
   * (true|false) when set, else true exactly when KUBECONFIG is set. Tests that need a local control
   * plane (restart it, mint identities with groups, count its processes) call {@link startLocal}.
   */
  useExistingCluster?: boolean;
  /** The binaries to run. Default: KUBEBUILDER_ASSETS, else the build cache (building when empty). */
  binaries?: BinaryPaths;
  /** Extra kube-apiserver flags (`--name=value`); one with a default's name replaces it. */
  apiServerFlags?: readonly string[];
  /** Extra etcd flags, same rule. */
  etcdFlags?: readonly string[];
  /** Progress lines. Default: stderr, prefixed `envtest:`. */
  log?: ProgressLog;
  /** How long etcd and then kube-apiserver may take to become ready. Default 120 s. */
  startTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before SIGKILL. Default 10 s. */
  stopTimeoutMs?: number;
}

/** A user of the cluster, for least-privilege tests: has exactly what RBAC grants it. */
export interface Identity {
  user: string;
  groups: readonly string[];
  /** A kubeconfig file (0600) that authenticates as this identity. */
  kubeconfigPath: string;
  /** A client-node KubeConfig loaded from {@link Identity.kubeconfigPath}. */
  kubeConfig(): KubeConfig;
}

/** What both kinds of control plane offer. */
export interface ControlPlaneBase {
  /** A kubeconfig file for a cluster admin. */
  readonly kubeconfigPath: string;
  /** The API server URL. */
  readonly server: string;
  /** A client-node KubeConfig loaded from {@link ControlPlaneBase.kubeconfigPath}. */
  kubeConfig(): KubeConfig;
  /**
   * A kubeconfig for `who`. Locally: a client certificate signed by the control plane's CA (CN = user,
   * O = groups). On an existing cluster: the admin kubeconfig impersonating `who.user`; groups cannot be
   * impersonated there (client-node sends only Impersonate-User) and are refused.
   */
  identity(who: UserInfo): Promise<Identity>;
  /**
   * A kubeconfig for the service account `namespace/name`: user `system:serviceaccount:<ns>:<name>`,
   * groups `system:serviceaccounts` and `system:serviceaccounts:<ns>` (what RBAC sees for a real token).
   */
  serviceAccountIdentity(namespace: string, name: string): Promise<Identity>;
  /**
   * Releases the control plane: a local one is stopped (SIGTERM, SIGKILL after the deadline) and its
   * folder deleted; an existing cluster is left running (only our identity files are deleted).
   * Idempotent: a second call waits for the first.
   */
  stop(): Promise<void>;
}

/** A cluster we did not start (KUBECONFIG). */
export interface ExistingCluster extends ControlPlaneBase {
  readonly kind: "existing";
}

/** The ports of a local control plane. */
export interface ControlPlanePorts {
  etcdClient: number;
  etcdPeer: number;
  apiServer: number;
}

/** A control plane we started: etcd + kube-apiserver child processes. */
export interface LocalControlPlane extends ControlPlaneBase {
  readonly kind: "local";
  /** The folder holding pki/, etcd/ (data), logs/ and the kubeconfig files. */
  readonly dir: string;
  readonly binaries: BinaryPaths;
  readonly ports: ControlPlanePorts;
  /** etcd's client URL (plain HTTP on loopback). */
  readonly etcdUrl: string;
  /** The log files of the two children. */
  readonly logs: { etcd: string; apiServer: string };
  /** The pids of the running children (the API server's changes on restart). */
  pids(): { etcd: number; apiServer: number };
  /**
   * Stops kube-apiserver and starts it again on the same port with the same certificates, keeping etcd
   * and its data; resolves when it is ready again. Clients see their connections and watches drop, then
   * the same URL and credentials work again (their watch caches restart: old resourceVersions expire).
   */
  restartApiServer(): Promise<void>;
}

/** Either kind; check `kind` before using local-only parts. */
export type ControlPlane = ExistingCluster | LocalControlPlane;

/** Prefix of the temp folders of local control planes (in os.tmpdir()). */
export const TEMP_PREFIX = "shapes-envtest-";

const DEFAULT_START_TIMEOUT_MS = 120_000;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
const BIND_ATTEMPTS = 5;

/**
 * Gives the caller a control plane: an existing cluster when `useExistingCluster` (see StartOptions),
 * else a local one ({@link startLocal}).
 */
export async function start(options: StartOptions = {}): Promise<ControlPlane> {
  const useExisting = options.useExistingCluster ?? useExistingClusterFromEnv(process.env);
  if (!useExisting) return startLocal(options);
  const source = resolveSource({ env: process.env, useExistingCluster: true });
  if (source.kind !== "existing") throw new Error("cannot happen: an existing cluster was asked for");
  const log = options.log ?? stderrLog();
  log(`using the existing cluster of ${source.kubeconfig} (${source.why}); nothing to start`);
  return connectExisting(source.kubeconfig);
}

/**
 * Starts a local control plane in a fresh temp folder, whatever KUBECONFIG says. The binaries come from
 * `options.binaries`, else KUBEBUILDER_ASSETS, else the build cache (built when empty).
 */
export async function startLocal(options: StartOptions = {}): Promise<LocalControlPlane> {
  const log = options.log ?? stderrLog();
  const binaries = options.binaries ?? (await ensureBinaries({ log }));
  await sweepStaleTempDirs();
  const dir = await mkdtemp(join(tmpdir(), TEMP_PREFIX));
  await writeFile(join(dir, "owner.json"), JSON.stringify({ pid: process.pid, host: hostname() }));
  try {
    return await launchControlPlane({
      dir,
      binaries,
      log,
      detached: false,
      removeDirOnStop: true,
      ...pick(options),
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function pick(options: StartOptions): Partial<LaunchConfig> {
  return {
    ...(options.apiServerFlags ? { apiServerFlags: options.apiServerFlags } : {}),
    ...(options.etcdFlags ? { etcdFlags: options.etcdFlags } : {}),
    ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
    ...(options.stopTimeoutMs !== undefined ? { stopTimeoutMs: options.stopTimeoutMs } : {}),
  };
}

/** Everything {@link launchControlPlane} needs. Used by startLocal() and the CLI's persistent cluster. */
export interface LaunchConfig {
  /** The control plane's folder (created if missing; pki/ and etcd/ inside are reused when present). */
  dir: string;
  binaries: BinaryPaths;
  log: ProgressLog;
  /** Children outlive this process (no parent-death signal, no exit hooks): the CLI's `up`. */
  detached: boolean;
  /** Delete `dir` on stop() and when this process exits. */
  removeDirOnStop: boolean;
  /** Ports to try first (the persistent cluster's previous ones), when all are free. */
  preferredPorts?: ControlPlanePorts;
  apiServerFlags?: readonly string[];
  etcdFlags?: readonly string[];
  startTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** The kubeconfig's cluster and context name. Default `envtest`. */
  contextName?: string;
}

/** Starts etcd, then kube-apiserver, writes the admin kubeconfig; stops whatever started if a step fails. */
export async function launchControlPlane(config: LaunchConfig): Promise<LocalControlPlane> {
  const started = Date.now();
  const timeoutMs = config.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const stopTimeoutMs = config.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  await mkdir(join(config.dir, "logs"), { recursive: true });
  await mkdir(join(config.dir, "identities"), { recursive: true, mode: 0o700 });
  const pki = await ensurePki(join(config.dir, "pki"));
  const logs = {
    etcd: join(config.dir, "logs", "etcd.log"),
    apiServer: join(config.dir, "logs", "kube-apiserver.log"),
  };
  const preferred = config.preferredPorts;
  const ports: ControlPlanePorts = { etcdClient: 0, etcdPeer: 0, apiServer: 0 };

  // If this process exits while we are starting (or running, for a non-detached control plane), kill
  // the children and delete the folder. Children register their own SIGKILL too; this covers the folder.
  let etcd: Child | undefined;
  let apiServer: Child | undefined;
  const unregister = config.detached
    ? () => {}
    : onParentExit(() => {
        for (const child of [apiServer, etcd]) if (child) killQuietly(child.pid);
        if (config.removeDirOnStop) rmSync(config.dir, { recursive: true, force: true });
      });

  try {
    for (let attempt = 1; ; attempt++) {
      const usePreferred =
        attempt === 1 &&
        preferred !== undefined &&
        (await isPortFree(preferred.etcdClient)) &&
        (await isPortFree(preferred.etcdPeer));
      [ports.etcdClient, ports.etcdPeer] = usePreferred
        ? [preferred.etcdClient, preferred.etcdPeer]
        : ((await freePorts(2)) as [number, number]);
      config.log(`etcd: starting on ${etcdClientUrl(ports.etcdClient)}`);
      try {
        etcd = await startEtcd(
          {
            binary: config.binaries.etcd,
            dataDir: join(config.dir, "etcd"),
            clientPort: ports.etcdClient,
            peerPort: ports.etcdPeer,
            logFile: logs.etcd,
            detached: config.detached,
            ...(config.etcdFlags ? { extraFlags: config.etcdFlags } : {}),
          },
          config.log,
          timeoutMs,
        );
        break;
      } catch (error) {
        if (!(error instanceof ChildExitedError && error.addressInUse && attempt < BIND_ATTEMPTS))
          throw error;
        config.log(`etcd: a port was taken meanwhile; trying others (attempt ${attempt + 1})`);
      }
    }
    config.log(`etcd: ready (${elapsed(started)})`);

    const etcdUrl = etcdClientUrl(ports.etcdClient);
    const apiServerConfig = (port: number) => ({
      binary: config.binaries.kubeApiServer,
      port,
      etcdUrl,
      pkiDir: pki.dir,
      logFile: logs.apiServer,
      detached: config.detached,
      ...(config.apiServerFlags ? { extraFlags: config.apiServerFlags } : {}),
    });
    for (let attempt = 1; ; attempt++) {
      const usePreferred =
        attempt === 1 && preferred !== undefined && (await isPortFree(preferred.apiServer));
      ports.apiServer = usePreferred && preferred ? preferred.apiServer : ((await freePorts(1))[0] ?? 0);
      config.log(`kube-apiserver: starting on ${apiServerUrl(ports.apiServer)}`);
      try {
        apiServer = await startApiServer(
          apiServerConfig(ports.apiServer),
          adminTls(pki),
          config.log,
          timeoutMs,
        );
        break;
      } catch (error) {
        if (!(error instanceof ChildExitedError && error.addressInUse && attempt < BIND_ATTEMPTS))
          throw error;
        config.log(`kube-apiserver: its port was taken meanwhile; trying another (attempt ${attempt + 1})`);
      }
    }
    config.log(`kube-apiserver: ready (${elapsed(started)} since etcd started)`);

    const server = apiServerUrl(ports.apiServer);
    const kubeconfigPath = join(config.dir, "kubeconfig");
    await writePrivateFile(
      kubeconfigPath,
      renderKubeconfig({
        server,
        caPem: pki.ca.certPem,
        certPem: pki.admin.certPem,
        keyPem: pki.admin.keyPem,
        userName: ADMIN.user,
        contextName: config.contextName ?? "envtest",
      }),
    );
    return new LocalControlPlaneImpl({
      config,
      pki,
      etcd,
      apiServer,
      apiServerConfig: () => apiServerConfig(ports.apiServer),
      ports: { ...ports },
      logs,
      server,
      etcdUrl,
      kubeconfigPath,
      stopTimeoutMs,
      unregister,
    });
  } catch (error) {
    await apiServer?.stop(stopTimeoutMs);
    await etcd?.stop(stopTimeoutMs);
    unregister();
    throw error;
  }
}

interface LocalParts {
  config: LaunchConfig;
  pki: ControlPlanePki;
  etcd: Child;
  apiServer: Child;
  apiServerConfig: () => Parameters<typeof startApiServer>[0];
  ports: ControlPlanePorts;
  logs: { etcd: string; apiServer: string };
  server: string;
  etcdUrl: string;
  kubeconfigPath: string;
  stopTimeoutMs: number;
  unregister: () => void;
}

class LocalControlPlaneImpl implements LocalControlPlane {
  readonly kind = "local";
  readonly dir: string;
  readonly binaries: BinaryPaths;
  readonly ports: ControlPlanePorts;
  readonly etcdUrl: string;
  readonly logs: { etcd: string; apiServer: string };
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly #parts: LocalParts;
  #apiServer: Child;
  #identities = 0;
  #stopping: Promise<void> | undefined;
  #restarting: Promise<void> | undefined;

  constructor(parts: LocalParts) {
    this.#parts = parts;
    this.#apiServer = parts.apiServer;
    this.dir = parts.config.dir;
    this.binaries = parts.config.binaries;
    this.ports = parts.ports;
    this.etcdUrl = parts.etcdUrl;
    this.logs = parts.logs;
    this.server = parts.server;
    this.kubeconfigPath = parts.kubeconfigPath;
  }

  kubeConfig(): KubeConfig {
    return loadKubeConfig(this.kubeconfigPath);
  }

  pids(): { etcd: number; apiServer: number } {
    return { etcd: this.#parts.etcd.pid, apiServer: this.#apiServer.pid };
  }

  async identity(who: UserInfo): Promise<Identity> {
    if (this.#stopping) throw new Error("cannot mint an identity: the control plane is stopped");
    const cert = await issueClientCertificate(this.#parts.pki.ca, who);
    const slug = who.user.replace(/[^A-Za-z0-9.-]+/g, "_").slice(0, 100);
    const path = join(this.dir, "identities", `${++this.#identities}-${slug}.kubeconfig`);
    await writePrivateFile(
      path,
      renderKubeconfig({
        server: this.server,
        caPem: this.#parts.pki.ca.certPem,
        certPem: cert.certPem,
        keyPem: cert.keyPem,
        userName: who.user,
        contextName: this.#parts.config.contextName ?? "envtest",
      }),
    );
    return identityAt(who.user, who.groups ?? [], path);
  }

  serviceAccountIdentity(namespace: string, name: string): Promise<Identity> {
    return this.identity(serviceAccountUser(namespace, name));
  }

  restartApiServer(): Promise<void> {
    this.#restarting ??= this.#restart().finally(() => (this.#restarting = undefined));
    return this.#restarting;
  }

  async #restart(): Promise<void> {
    if (this.#stopping) throw new Error("cannot restart kube-apiserver: the control plane is stopped");
    const { config, pki, stopTimeoutMs } = this.#parts;
    const started = Date.now();
    config.log(`kube-apiserver: restarting (pid ${this.#apiServer.pid})`);
    await this.#apiServer.stop(stopTimeoutMs);
    // Same port, so every kubeconfig stays valid. The port is free the moment the old process is gone,
    // unless someone else grabbed it in between: then retry for a few seconds, and give up clearly.
    for (let attempt = 1; ; attempt++) {
      try {
        this.#apiServer = await startApiServer(
          this.#parts.apiServerConfig(),
          adminTls(pki),
          config.log,
          config.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
        );
        break;
      } catch (error) {
        if (!(error instanceof ChildExitedError && error.addressInUse && attempt < 25)) throw error;
        await sleep(200);
      }
    }
    config.log(`kube-apiserver: ready again (${elapsed(started)}, pid ${this.#apiServer.pid})`);
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const { config, stopTimeoutMs } = this.#parts;
    await this.#restarting?.catch(() => {});
    await this.#apiServer.stop(stopTimeoutMs);
    await this.#parts.etcd.stop(stopTimeoutMs);
    this.#parts.unregister();
    if (config.removeDirOnStop) await rm(this.dir, { recursive: true, force: true });
  }
}

/** The user and groups RBAC sees for a service account's token. */
export function serviceAccountUser(namespace: string, name: string): Required<UserInfo> {
  if (!namespace || !name) throw new Error("cannot name a service account without a namespace and a name");
  return {
    user: `system:serviceaccount:${namespace}:${name}`,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`],
  };
}

/**
 * Connects to an existing cluster described by `kubeconfig` (a file, or a KUBECONFIG-style list).
 * Nothing is started; identities impersonate (see ControlPlaneBase.identity).
 */
export async function connectExisting(kubeconfig: string): Promise<ExistingCluster> {
  const files = kubeconfig.split(delimiter).filter(Boolean);
  const kc = new KubeConfig();
  if (files.length === 1 && files[0]) kc.loadFromFile(files[0]);
  else kc.loadFromDefault(); // merges the KUBECONFIG list the way kubectl does
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`cannot use the kubeconfig ${kubeconfig}: it has no current cluster`);
  const dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}existing-`));
  await writeFile(join(dir, "owner.json"), JSON.stringify({ pid: process.pid, host: hostname() }));
  let kubeconfigPath = files[0] ?? "";
  if (files.length > 1) {
    kubeconfigPath = join(dir, "kubeconfig");
    await writePrivateFile(kubeconfigPath, kc.exportConfig());
  }
  let count = 0;
  const identity = async (who: UserInfo): Promise<Identity> => {
    if ((who.groups ?? []).length > 0 && !who.user.startsWith("system:serviceaccount:")) {
      throw new Error(
        `cannot give ${who.user} the groups ${who.groups?.join(", ")} on an existing cluster: identities there ` +
          "impersonate, and client-node sends only Impersonate-User (start a local control plane instead)",
      );
    }
    const path = join(dir, `${++count}.kubeconfig`);
    await writePrivateFile(path, renderImpersonatingKubeconfig(kc, who.user));
    return identityAt(who.user, who.groups ?? [], path);
  };
  let stopped: Promise<void> | undefined;
  return {
    kind: "existing",
    kubeconfigPath,
    server: cluster.server,
    kubeConfig: () => {
      const copy = new KubeConfig();
      copy.loadFromString(kc.exportConfig());
      return copy;
    },
    identity,
    // The API server adds the service-account groups itself when it sees an impersonated SA user name.
    serviceAccountIdentity: (namespace, name) => identity(serviceAccountUser(namespace, name)),
    stop: () => (stopped ??= rm(dir, { recursive: true, force: true })),
  };
}

function identityAt(user: string, groups: readonly string[], path: string): Identity {
  return { user, groups: [...groups], kubeconfigPath: path, kubeConfig: () => loadKubeConfig(path) };
}

function adminTls(pki: ControlPlanePki) {
  return { caPem: pki.ca.certPem, certPem: pki.admin.certPem, keyPem: pki.admin.keyPem };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

/**
 * Deletes temp folders of local control planes whose process died without cleaning up (SIGKILL, crash):
 * the folder's owner.json names a pid on this host that is gone. Their children died with them.
 */
export async function sweepStaleTempDirs(root = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch {
    return removed;
  }
  for (const entry of entries) {
    if (!entry.startsWith(TEMP_PREFIX)) continue;
    const dir = join(root, entry);
    try {
      const owner = JSON.parse(await readFile(join(dir, "owner.json"), "utf8")) as {
        pid?: number;
        host?: string;
      };
      if (owner.host === hostname() && typeof owner.pid === "number" && !isAlive(owner.pid)) {
        await rm(dir, { recursive: true, force: true });
        removed.push(dir);
      }
    } catch {
      // no owner file (yet, or an existing-cluster folder): leave it
    }
  }
  return removed;
}
