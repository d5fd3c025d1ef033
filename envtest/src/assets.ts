/**
 * Where the control plane comes from — the resolution order, the ecosystem's conventions first:
 * 1. an existing cluster: when `useExistingCluster` (default: true when KUBECONFIG is set, overridable
 *    with USE_EXISTING_CLUSTER=true|false) — use the kubeconfig, start nothing;
 * 2. KUBEBUILDER_ASSETS: a folder holding `etcd` and `kube-apiserver` (and `kubectl` if present);
 * 3. the build cache: `${XDG_CACHE_HOME:-~/.cache}/shapes-demo/kubernetes/<k8s>-etcd<etcd>/`;
 * 4. build into that cache (go build, minutes on a cold machine), under a lock.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { buildBinaries } from "./build.ts";
import { elapsed, type ProgressLog } from "./progress.ts";
import { withLock } from "./lock.ts";
import { ETCD_VERSION, KUBERNETES_VERSION, assetsKey } from "./versions.ts";

/** Paths of the control-plane binaries. */
export interface BinaryPaths {
  /** The folder holding them. */
  dir: string;
  etcd: string;
  kubeApiServer: string;
  /** kubectl, when the folder has one (the build always does). */
  kubectl?: string;
}

/** Where a control plane comes from; see the module comment for the order. */
export type ControlPlaneSource =
  | { kind: "existing"; kubeconfig: string; why: string }
  | { kind: "assets"; binaries: BinaryPaths; why: string }
  | { kind: "cache"; binaries: BinaryPaths; why: string }
  | { kind: "build"; binaries: BinaryPaths; why: string };

/** Inputs of {@link resolveSource}: the environment, and how to look at the file system (tests fake it). */
export interface ResolveInput {
  env: NodeJS.ProcessEnv;
  /** Use an existing cluster? Default {@link useExistingClusterFromEnv}(env). */
  useExistingCluster?: boolean;
  /** Does this file exist? Default fs.existsSync. */
  exists?: (path: string) => boolean;
  /** The home directory. Default os.homedir(). */
  home?: string;
}

/**
 * Whether to use an existing cluster when the caller does not say: USE_EXISTING_CLUSTER=true|false
 * (controller-runtime's variable) wins; otherwise yes exactly when KUBECONFIG is set. Throws on any
 * other value of USE_EXISTING_CLUSTER.
 */
export function useExistingClusterFromEnv(env: NodeJS.ProcessEnv): boolean {
  const flag = env.USE_EXISTING_CLUSTER?.trim().toLowerCase();
  if (flag === undefined || flag === "") return Boolean(env.KUBECONFIG?.trim());
  if (flag === "true" || flag === "1") return true;
  if (flag === "false" || flag === "0") return false;
  throw new Error(`cannot read USE_EXISTING_CLUSTER="${env.USE_EXISTING_CLUSTER}": use true or false`);
}

/** The project's cache folder, `${XDG_CACHE_HOME:-~/.cache}/shapes-demo`: every slow build lives under it. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  const root = env.XDG_CACHE_HOME?.trim() ? env.XDG_CACHE_HOME : join(home, ".cache");
  return join(root, "shapes-demo");
}

/** The cache folder of the pinned versions: `${XDG_CACHE_HOME:-~/.cache}/shapes-demo/kubernetes/<key>`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  return join(cacheRoot(env, home), "kubernetes", assetsKey());
}

/** The binary paths inside a folder. */
export function binariesIn(dir: string, exists: (path: string) => boolean = existsSync): BinaryPaths {
  const kubectl = join(dir, "kubectl");
  return {
    dir,
    etcd: join(dir, "etcd"),
    kubeApiServer: join(dir, "kube-apiserver"),
    ...(exists(kubectl) ? { kubectl } : {}),
  };
}

/**
 * Decides where the control plane comes from, without starting or building anything. Throws when the
 * environment asks for something that is not there (an existing cluster without a kubeconfig, a
 * KUBEBUILDER_ASSETS folder without the binaries): silently falling back would surprise.
 */
export function resolveSource(input: ResolveInput): ControlPlaneSource {
  const { env } = input;
  const exists = input.exists ?? existsSync;
  const useExisting = input.useExistingCluster ?? useExistingClusterFromEnv(env);
  if (useExisting) {
    const fromEnv = env.KUBECONFIG?.trim();
    if (fromEnv) {
      const files = fromEnv.split(delimiter).filter(Boolean);
      if (!files.some(exists)) {
        throw new Error(`cannot use the existing cluster: KUBECONFIG=${fromEnv} names no file that exists`);
      }
      return { kind: "existing", kubeconfig: fromEnv, why: "KUBECONFIG is set" };
    }
    const fallback = join(input.home ?? homedir(), ".kube", "config");
    if (!exists(fallback)) {
      throw new Error(
        `cannot use an existing cluster: KUBECONFIG is not set and ${fallback} does not exist ` +
          "(unset USE_EXISTING_CLUSTER to start a local control plane)",
      );
    }
    return { kind: "existing", kubeconfig: fallback, why: "USE_EXISTING_CLUSTER=true" };
  }
  const assets = env.KUBEBUILDER_ASSETS?.trim();
  if (assets) {
    const binaries = binariesIn(assets, exists);
    const missing = [binaries.etcd, binaries.kubeApiServer].filter((p) => !exists(p));
    if (missing.length > 0) {
      throw new Error(`cannot use KUBEBUILDER_ASSETS=${assets}: ${missing.join(" and ")} not found`);
    }
    return { kind: "assets", binaries, why: "KUBEBUILDER_ASSETS is set" };
  }
  const dir = cacheDir(env, input.home ?? homedir());
  const binaries = binariesIn(dir, exists);
  if (exists(join(dir, MANIFEST)) && exists(binaries.etcd) && exists(binaries.kubeApiServer)) {
    return { kind: "cache", binaries, why: `built earlier into ${dir}` };
  }
  return { kind: "build", binaries: { ...binaries, kubectl: join(dir, "kubectl") }, why: `${dir} is empty` };
}

/** The file written last into a cache folder: its presence means the build completed. */
export const MANIFEST = "manifest.json";

/** Options of {@link ensureBinaries}. */
export interface EnsureOptions {
  log?: ProgressLog;
  env?: NodeJS.ProcessEnv;
  /** Rebuild even when the cache has the binaries. Default false. */
  force?: boolean;
}

/**
 * Makes sure the local control-plane binaries exist and returns their paths: KUBEBUILDER_ASSETS when
 * set, else the cache, building into it when empty (see the module comment). Never looks at KUBECONFIG:
 * callers that may use an existing cluster decide that first (resolveSource).
 *
 * Concurrency: the build runs under a lock next to the cache folder; a second caller waits for the first
 * and then finds the binaries. The build writes into a temp folder that is renamed into place when
 * complete (with its manifest), so a reader never sees half a cache, and a crash leaves only a temp folder
 * that the next build deletes.
 */
export async function ensureBinaries(options: EnsureOptions = {}): Promise<BinaryPaths> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const source = resolveSource({ env, useExistingCluster: false });
  if (source.kind === "existing") throw new Error("cannot happen: useExistingCluster is false");
  if (source.kind === "assets") return source.binaries;
  if (source.kind === "cache" && !options.force) return source.binaries;

  const dir = source.binaries.dir;
  const parent = join(dir, "..");
  const key = assetsKey();
  await mkdir(parent, { recursive: true });
  return withLock(
    join(parent, `${key}.lock`),
    async () => {
      // Someone else may have built it while we waited.
      if (!options.force && existsSync(join(dir, MANIFEST))) return binariesIn(dir);
      for (const entry of await readdir(parent)) {
        if (entry.startsWith(`${key}.tmp-`)) await rm(join(parent, entry), { recursive: true, force: true });
      }
      const tmp = join(parent, `${key}.tmp-${process.pid}`);
      await mkdir(tmp);
      try {
        const report = await buildBinaries({ outDir: tmp, log, env });
        const versions = await readBinaryVersions(binariesIn(tmp));
        if (versions.kubeApiServer !== KUBERNETES_VERSION || versions.etcd !== ETCD_VERSION) {
          throw new Error(
            `cannot use the binaries just built: they report kube-apiserver ${versions.kubeApiServer} and ` +
              `etcd ${versions.etcd}, expected ${KUBERNETES_VERSION} and ${ETCD_VERSION}`,
          );
        }
        const manifest = {
          kubernetesVersion: KUBERNETES_VERSION,
          etcdVersion: ETCD_VERSION,
          goVersion: report.goVersion,
          builtAt: new Date().toISOString(),
          buildSeconds: Math.round(report.seconds),
        };
        await writeFile(join(tmp, MANIFEST), JSON.stringify(manifest, null, 2) + "\n");
        await rm(dir, { recursive: true, force: true });
        await rename(tmp, dir);
        log(`binaries ready in ${dir}`);
        return binariesIn(dir);
      } catch (error) {
        await rm(tmp, { recursive: true, force: true });
        throw error;
      }
    },
    {
      onWait: (owner, waitedMs) =>
        log(
          `waiting for another build of the Kubernetes binaries` +
            (owner ? ` (pid ${owner.pid}, since ${owner.since})` : "") +
            `: ${elapsed(Date.now() - waitedMs)}`,
        ),
    },
  );
}

/** The versions the binaries report (`v1.36.3`, `v3.6.8`). */
export interface BinaryVersions {
  kubeApiServer: string;
  etcd: string;
  kubectl?: string;
}

/** Runs each binary's `--version` and reads the version it reports; throws when one cannot run. */
export async function readBinaryVersions(binaries: BinaryPaths): Promise<BinaryVersions> {
  const apiserver = await output(binaries.kubeApiServer, ["--version"]);
  const etcd = await output(binaries.etcd, ["--version"]);
  const kubectl = binaries.kubectl ? await output(binaries.kubectl, ["version", "--client"]) : undefined;
  const pick = (text: string, pattern: RegExp, what: string) => {
    const match = pattern.exec(text);
    if (!match?.[1]) throw new Error(`cannot read the version of ${what} from: ${text.trim().slice(0, 200)}`);
    return match[1];
  };
  return {
    kubeApiServer: pick(apiserver, /Kubernetes (v\S+)/, binaries.kubeApiServer),
    etcd: "v" + pick(etcd, /etcd Version: (\S+)/, binaries.etcd),
    ...(kubectl === undefined ? {} : { kubectl: pick(kubectl, /Client Version: (v\S+)/, "kubectl") }),
  };
}

function output(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    child.once("error", (error) => reject(new Error(`cannot run ${command}: ${error.message}`)));
    child.once("close", (code) =>
      code === 0
        ? resolve(text)
        : reject(new Error(`cannot run ${command} ${args.join(" ")}: exit ${code}\n${text}`)),
    );
  });
}
