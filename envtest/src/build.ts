/**
 * Builds the control-plane binaries from Go modules: kube-apiserver and kubectl from `k8s.io/kubernetes`,
 * etcd from `go.etcd.io/etcd/server/v3`, each through its wrapper module in `envtest/go/` (which pins
 * every `k8s.io/*` staging module with a replace directive). Release-style flags: CGO off, the release
 * build tags, stripped, and the version stamped in with `-X` so `/version` and `kubectl version` are true.
 *
 * This module only runs the builds into a folder; caching, locking and the atomic move into the cache
 * live in assets.ts.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { PACKAGE_DIR } from "./package-dir.ts";
import { KUBERNETES_VERSION, MINIMUM_GO_VERSION, compareVersions, parseVersion } from "./versions.ts";
import { lowerPriority } from "./processes.ts";
import { elapsed, type ProgressLog } from "./progress.ts";

/** The Go wrapper modules (go/kubernetes, go/etcd in the package folder; the package ships them). */
export const GO_MODULES_DIR = join(PACKAGE_DIR, "go");

/** What to tell someone whose machine cannot build: the ways around it. */
export const ALTERNATIVES =
  "or set KUBEBUILDER_ASSETS to a folder holding etcd and kube-apiserver binaries, " +
  "or set KUBECONFIG to a running cluster (kind, k3d, minikube, `npm run cluster -- up`)";

/** Options of {@link buildBinaries}. */
export interface BuildOptions {
  /** Folder the binaries are written to (created by the caller). */
  outDir: string;
  log: ProgressLog;
  /** The go command. Default `go` from PATH. */
  goCommand?: string;
  /** Environment of the go commands. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** How often a still-running step reports progress. Default 20 s. */
  heartbeatMs?: number;
  /** The build date to stamp. Default now. */
  buildDate?: Date;
}

/** What a build did. */
export interface BuildReport {
  goVersion: string;
  seconds: number;
}

/**
 * The `-ldflags` of the Kubernetes binaries: stripped, with the version variables of
 * k8s.io/component-base/version (and client-go's copy) set the way Kubernetes' own hack/lib/version.sh
 * sets them. The git commit is not stamped: the Go module proxy does not record it (the default
 * "$Format:%H$" placeholder is replaced by an empty string rather than left to confuse).
 */
export function kubernetesLdflags(version: string, buildDate: Date): string {
  const parsed = parseVersion(version);
  if (!parsed) throw new Error(`cannot stamp version "${version}": it is not vMAJOR.MINOR.PATCH`);
  const values: Record<string, string> = {
    gitVersion: version,
    gitMajor: String(parsed.major),
    gitMinor: String(parsed.minor),
    gitCommit: "",
    gitTreeState: "clean",
    buildDate: buildDate.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  const packages = ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"];
  const sets = packages.flatMap((pkg) => Object.entries(values).map(([k, v]) => `-X '${pkg}.${k}=${v}'`));
  return ["-s", "-w", ...sets].join(" ");
}

/**
 * Checks the Go toolchain: present, and at least {@link MINIMUM_GO_VERSION} as seen from the Kubernetes
 * wrapper module (with GOTOOLCHAIN=auto an older go fetches the newer toolchain itself, and reports it).
 * Returns the version (e.g. `go1.26.8`); throws a message saying what to install otherwise.
 */
export async function checkGo(goCommand = "go", env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const result = await run(goCommand, ["env", "GOVERSION"], join(GO_MODULES_DIR, "kubernetes"), env);
  if (result.notFound) {
    throw new Error(
      `cannot build the Kubernetes binaries: the Go toolchain is not installed (no \`${goCommand}\` on PATH). ` +
        `Install Go >= ${MINIMUM_GO_VERSION} from https://go.dev/dl/, ${ALTERNATIVES}.`,
    );
  }
  const version = result.stdout.trim();
  const parsed = parseVersion(version);
  const minimum = parseVersion(MINIMUM_GO_VERSION);
  if (result.code !== 0 || !parsed || !minimum || compareVersions(parsed, minimum) < 0) {
    throw new Error(
      `cannot build the Kubernetes binaries with ${version || "this Go toolchain"}: ` +
        `Go >= ${MINIMUM_GO_VERSION} is needed. Install it from https://go.dev/dl/ ` +
        `(or unset GOTOOLCHAIN=local so go can fetch it), ${ALTERNATIVES}.` +
        (result.stderr.trim() ? `\ngo said: ${result.stderr.trim()}` : ""),
    );
  }
  return version;
}

/** The build steps, in order: which module builds which packages. */
export function buildSteps(
  kubernetesVersion: string,
  buildDate: Date,
): { title: string; module: string; args: string[]; env: Record<string, string> }[] {
  const common = ["build", "-trimpath", "-buildvcs=false", "-v"];
  return [
    {
      title: `kube-apiserver and kubectl (k8s.io/kubernetes ${kubernetesVersion})`,
      module: "kubernetes",
      args: [
        ...common,
        "-tags",
        "selinux,notest,grpcnotrace",
        "-ldflags",
        kubernetesLdflags(kubernetesVersion, buildDate),
        "-o",
        "<out>/",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kubectl",
      ],
      env: { CGO_ENABLED: "0" },
    },
    {
      title: "etcd (go.etcd.io/etcd/server/v3)",
      module: "etcd",
      args: [...common, "-ldflags", "-s -w", "-o", "<out>/etcd", "go.etcd.io/etcd/server/v3"],
      env: { CGO_ENABLED: "0" },
    },
  ];
}

/**
 * Builds etcd, kube-apiserver and kubectl into `outDir`. Streams progress: one line per step when it
 * starts and ends (with elapsed time), modules downloaded, and a heartbeat while a step runs (the
 * first build compiles ~2000 packages and takes minutes). Runs go at low CPU priority.
 * Throws "cannot build ..." with go's last lines when a step fails.
 */
export async function buildBinaries(options: BuildOptions): Promise<BuildReport> {
  const env = options.env ?? process.env;
  const goCommand = options.goCommand ?? "go";
  const started = Date.now();
  const goVersion = await checkGo(goCommand, env);
  const steps = buildSteps(KUBERNETES_VERSION, options.buildDate ?? new Date());
  options.log(`building with ${goVersion} into ${options.outDir} (${steps.length} steps)`);
  for (const [index, step] of steps.entries()) {
    const stepStarted = Date.now();
    const prefix = `[${index + 1}/${steps.length}] ${step.title}`;
    options.log(`${prefix}: building...`);
    let compiled = 0;
    let downloaded = 0;
    const lastLines: string[] = [];
    const heartbeat = setInterval(() => {
      options.log(
        `${prefix}: still building, ${elapsed(stepStarted)} so far ` +
          `(${compiled} packages compiled, ${downloaded} modules downloaded)`,
      );
    }, options.heartbeatMs ?? 20_000);
    heartbeat.unref();
    try {
      const args = step.args.map((a) => a.replace("<out>", options.outDir));
      const result = await run(
        goCommand,
        args,
        join(GO_MODULES_DIR, step.module),
        { ...env, ...step.env },
        (line) => {
          lastLines.push(line);
          if (lastLines.length > 30) lastLines.shift();
          if (line.startsWith("go: downloading ")) {
            downloaded++;
            if (downloaded === 1)
              options.log(`${prefix}: downloading modules from ${env.GOPROXY ?? "the Go module proxy"}`);
          } else if (/^[\w.-]+(\/[\w.~+-]+)*$/.test(line)) {
            compiled++; // `go build -v` names each package as it compiles it
          }
        },
      );
      if (result.notFound) throw new Error(`cannot run ${goCommand}: not found`);
      if (result.code !== 0) {
        throw new Error(
          `cannot build ${step.title}: go build exited with ${result.code ?? result.signal}. Its last lines:\n` +
            lastLines.join("\n"),
        );
      }
    } finally {
      clearInterval(heartbeat);
    }
    options.log(`${prefix}: done in ${elapsed(stepStarted)} (${compiled} packages compiled)`);
  }
  const seconds = (Date.now() - started) / 1000;
  options.log(`built in ${elapsed(started)}`);
  return { goVersion, seconds };
}

/** How a command ended, and what it printed. */
export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  notFound: boolean;
}

/**
 * Runs a command to completion at lower CPU priority (never throws: `notFound` when it is not installed);
 * `onLine` sees every stderr line (go writes its progress there).
 */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  onLine?: (line: string) => void,
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    if (child.pid !== undefined) lowerPriority(child.pid);
    let stdout = "";
    let stderr = "";
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      if (stderr.length < 1_000_000) stderr += chunk;
      partial += chunk;
      const lines = partial.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) onLine?.(line);
    });
    child.once("error", (error: NodeJS.ErrnoException) =>
      resolve({ code: null, signal: null, stdout, stderr: error.message, notFound: error.code === "ENOENT" }),
    );
    child.once("close", (code, signal) => {
      if (partial) onLine?.(partial);
      resolve({ code, signal, stdout, stderr, notFound: false });
    });
  });
}
