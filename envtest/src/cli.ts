/**
 * `npm run cluster -- up|down|status|build`: a persistent local Kubernetes control plane for the demo
 * and for poking around with kubectl. Progress goes to stderr; stdout carries only what a script wants
 * (`up` prints the `export KUBECONFIG=...` line, so `eval "$(npm run -s cluster -- up)"` works).
 */
import { relative } from "node:path";
import { parseArgs } from "node:util";
import { ensureBinaries, readBinaryVersions, resolveSource } from "./assets.ts";
import { DEFAULT_CLUSTER_DIR, clusterDown, clusterStatus, clusterUp } from "./persistent.ts";
import { isInvokedDirectly } from "./processes.ts";
import { stderrLog } from "./progress.ts";
import { ETCD_VERSION, KUBERNETES_VERSION } from "./versions.ts";

const USAGE = `Usage: npm run cluster -- <command> [options]

A real Kubernetes control plane (etcd + kube-apiserver ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}) on
loopback, without Docker. The binaries are built from Go modules on first use (minutes) and cached.

Commands:
  up        Start the persistent local cluster in the background (data in the cluster folder) and
            print "export KUBECONFIG=<path>". If it already runs, say so and print the same line.
  down      Stop it. The data is kept for the next "up"; --purge deletes it.
  status    Say what runs: pids, URL, version. Exit code 0 when running, 3 when not.
  build     Build the binaries into the cache (or find them) and print their paths and versions.

Options:
  --dir <path>   The cluster folder (default: .demo/cluster in the repo).
  --purge        down: also delete the data, certificates and logs.
  --force        build: rebuild even when the cache has the binaries.
  --timeout <s>  up: how long each process may take to become ready (default 120).
  -h, --help     Show this help.

Environment:
  KUBEBUILDER_ASSETS  A folder with etcd and kube-apiserver to use instead of building.
  XDG_CACHE_HOME      Where the build cache lives (default ~/.cache): <it>/shapes-demo/kubernetes/.

Examples:
  eval "$(npm run -s cluster -- up)" && kubectl get ns
  npm run cluster -- status
  npm run cluster -- down --purge
`;

const COMMANDS = ["up", "down", "status", "build"] as const;
type Command = (typeof COMMANDS)[number];

/** Runs the CLI with `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        dir: { type: "string" },
        purge: { type: "boolean", default: false },
        force: { type: "boolean", default: false },
        timeout: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`cluster: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    (values.help ? process.stdout : process.stderr).write(USAGE);
    return values.help ? 0 : 2;
  }
  const [command, ...extra] = positionals;
  if (!COMMANDS.includes(command as Command) || extra.length > 0) {
    process.stderr.write(`cluster: cannot understand "${positionals.join(" ")}"\n\n${USAGE}`);
    return 2;
  }
  const dir = values.dir ?? DEFAULT_CLUSTER_DIR;
  const log = stderrLog("cluster");
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    const seconds = Number(values.timeout);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      process.stderr.write(`cluster: cannot use --timeout ${values.timeout}: give a number of seconds\n`);
      return 2;
    }
    timeoutMs = seconds * 1000;
  }

  switch (command as Command) {
    case "up": {
      const { state, alreadyRunning } = await clusterUp({
        dir,
        log,
        ...(timeoutMs !== undefined ? { startTimeoutMs: timeoutMs } : {}),
      });
      log(
        alreadyRunning
          ? `already running: ${state.server} (kube-apiserver pid ${state.pids.apiServer}, etcd pid ${state.pids.etcd})`
          : `running: ${state.server} (kube-apiserver pid ${state.pids.apiServer}, etcd pid ${state.pids.etcd}); ` +
              `stop it with: npm run cluster -- down`,
      );
      process.stdout.write(`export KUBECONFIG=${state.kubeconfig}\n`);
      return 0;
    }
    case "down": {
      const { wasRunning } = await clusterDown({ dir, log, purge: values.purge });
      log(
        (wasRunning ? "stopped" : "nothing was running") +
          (values.purge ? `; deleted ${display(dir)}` : `; data kept in ${display(dir)}`),
      );
      return 0;
    }
    case "status": {
      const status = await clusterStatus(dir);
      if (!status.state || (!status.etcd && !status.apiServer)) {
        process.stdout.write(
          `nothing runs (cluster folder: ${display(dir)}); start it with: npm run cluster -- up\n`,
        );
        return 3;
      }
      const { state } = status;
      const line = (name: string, up: boolean, pid: number, detail: string) =>
        `  ${name.padEnd(15)} ${up ? `pid ${pid}`.padEnd(11) : "not running"} ${detail}\n`;
      process.stdout.write(
        (status.etcd && status.apiServer ? "running\n" : "partly running (run `up` to restart it)\n") +
          line(
            "kube-apiserver",
            status.apiServer,
            state.pids.apiServer,
            `${state.server} ${status.serverVersion ?? (status.apiServer ? "(not answering)" : "")}`,
          ) +
          line("etcd", status.etcd, state.pids.etcd, state.etcdUrl) +
          `  since           ${state.startedAt}\n` +
          `  data            ${display(dir)}\n` +
          `  export KUBECONFIG=${state.kubeconfig}\n`,
      );
      return status.etcd && status.apiServer ? 0 : 3;
    }
    case "build": {
      const source = resolveSource({ env: process.env, useExistingCluster: false });
      if (source.kind === "assets") log(`using KUBEBUILDER_ASSETS=${source.binaries.dir} (no build)`);
      const binaries = await ensureBinaries({ log, force: values.force });
      const versions = await readBinaryVersions(binaries);
      process.stdout.write(
        `kube-apiserver ${versions.kubeApiServer}  ${binaries.kubeApiServer}\n` +
          `etcd           ${versions.etcd}  ${binaries.etcd}\n` +
          (binaries.kubectl ? `kubectl        ${versions.kubectl ?? "?"}  ${binaries.kubectl}\n` : ""),
      );
      return 0;
    }
  }
}

/** A path relative to the working directory when it is inside it. */
function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith("..") ? rel : path;
}

if (isInvokedDirectly(import.meta.filename)) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      process.stderr.write(`cluster: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
