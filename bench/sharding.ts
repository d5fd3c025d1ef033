/**
 * `npm run bench:sharding`: what `--sharding` buys on this machine (issue 17). For each setup — 1, 2 and 4
 * replicas; with 2 and 4, the API server filtering each replica's Shapes (`--shard-filter=auto`, KEP-5866) or
 * each replica filtering them itself (`--shard-filter=client`) — on a fresh stack: the replicas start, the
 * ring settles, N Shapes are created at once, and the clock runs until the last is Ready (and the cloud holds
 * exactly them). Then each replica's RSS once settled, what its caches hold, and where the CPU went during the
 * converge: the API server, etcd, the cloud, the replicas together, the bench. Each replica's RSS is also taken
 * idle, once the ring settled and before the first Shape: the part of a replica's memory that sharding cannot
 * divide (the process and its libraries), apart from the part that holds the Shapes.
 *
 * On 2 cores the API server bounds the converge (docs/benchmarks.md); replicas add processes competing for
 * the same cores. The point of sharding is memory per replica and what happens when there are more cores, so
 * the table shows the API server's share of the CPU next to the converge time, not only the time.
 *
 * Exit codes: 0 when every setup finished, 1 when one failed, 2 for a bad command line.
 */
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { type BinaryPaths, ensureBinaries, stderrLog } from "@shapes/envtest";
import { CONTROLLER_BUILD_MAIN, REPO_ROOT } from "@shapes/stack";
import { applyManifestFile } from "reconcile-kit/harness";
import type { BenchController } from "./controller.ts";
import { integer, UsageError } from "./options.ts";
import { cpuBetween, cpuSnapshot } from "./cpu.ts";
import { cpuSecondsOf } from "./proc.ts";
import { Progress } from "./progress.ts";
import { convergeTimeoutMs, describeMismatch, untilCloudHolds } from "./scenarios/converge.ts";
import { settledMemory } from "./scenarios/memory.ts";
import { ShapeWatch } from "./shape-watch.ts";
import { startBenchStack } from "./stack.ts";
import { Workload, shapeName, shapeSpec } from "./workload.ts";

/** One way to run the ring. */
export interface ShardingSetup {
  name: string;
  replicas: number;
  filter: "auto" | "client";
}

/** The setups, in the order they run. */
export const SHARDING_SETUPS: readonly ShardingSetup[] = [
  { name: "1 replica", replicas: 1, filter: "auto" },
  { name: "2 replicas, server filter", replicas: 2, filter: "auto" },
  { name: "2 replicas, client filter", replicas: 2, filter: "client" },
  { name: "4 replicas, server filter", replicas: 4, filter: "auto" },
  { name: "4 replicas, client filter", replicas: 4, filter: "client" },
];

/** What one setup measured. */
export interface ShardingResult {
  setup: ShardingSetup;
  shapes: number;
  /** From the first create to the last Shape Ready (and the cloud verified). */
  convergeMs?: number;
  /** Per replica, once settled after the converge; `idleRssBytes` before the first Shape. */
  replicas?: {
    name: string;
    idleRssBytes: number;
    rssBytes: number;
    heapUsedBytes: number;
    ownedShapes: number;
    share: number;
  }[];
  /** CPU seconds during the converge, by process (the replicas summed), and the wall time. */
  cpu?: {
    wallSeconds: number;
    apiServer: number;
    etcd: number;
    cloud: number;
    replicas: number;
    bench: number;
  };
  error?: string;
}

/** Command-line options. */
export interface ShardingOptions {
  shapes: number;
  concurrency: number;
  /** Only the setups whose names contain one of these (all when empty). */
  only: string[];
  json?: string;
  markdown?: string;
  /** Run each replica from the controller's build (controller/dist/main.js, built first), as its image does. */
  build: boolean;
}

/** The text of `--help`. */
export function shardingUsage(): string {
  return `Usage: npm run bench:sharding -- [options]

Converges N Shapes with 1, 2 and 4 replicas running --sharding (with 2 and 4: the API server filtering each
replica's Shapes, or each replica filtering them itself), each on a fresh local stack, and reports the
converge time, each replica's memory and what it owns, and where the CPU went.

Options:
  --shapes N        Shapes to converge (default 10000)
  --concurrency N   creates in flight (default 64)
  --only TEXT       run only the setups whose name contains TEXT (repeatable): ${SHARDING_SETUPS.map((s) => JSON.stringify(s.name)).join(", ")}
  --json FILE       also write the results as JSON
  --markdown FILE   also write the table as Markdown
  --build           run the replicas as the image does: the controller's build (controller/dist/main.js,
                    built first); default: its sources
  --help            show this help

The results always go to bench/results/sharding-<time>/results.json.
`;
}

/** Parses the command line; throws a {@link UsageError} with a one-line message for bad input. */
export function parseShardingArgs(argv: readonly string[]): ShardingOptions | "help" {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        shapes: { type: "string" },
        concurrency: { type: "string" },
        only: { type: "string", multiple: true },
        json: { type: "string" },
        markdown: { type: "string" },
        build: { type: "boolean" },
        help: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(`cannot parse the command line: ${(error as Error).message}`, { cause: error });
  }
  if (values.help) return "help";
  const only = (values.only as string[] | undefined) ?? [];
  for (const text of only) {
    if (!SHARDING_SETUPS.some((s) => s.name.includes(text))) {
      throw new UsageError(`cannot use --only ${JSON.stringify(text)}: no setup's name contains it`);
    }
  }
  return {
    shapes: integer("shapes", values.shapes as string | undefined, 10_000, [1, 100_000]),
    concurrency: integer("concurrency", values.concurrency as string | undefined, 64, [1, 1_000]),
    only,
    ...(typeof values.json === "string" ? { json: values.json } : {}),
    ...(typeof values.markdown === "string" ? { markdown: values.markdown } : {}),
    build: values.build === true,
  };
}

const MB = 1024 * 1024;

/** The results as a Markdown table, a row per setup, with a line under it for each that failed. */
export function renderShardingTable(results: readonly ShardingResult[]): string {
  const rows = [
    "| setup | converge | RSS per replica (MB) | idle RSS per replica (MB) | Shapes per replica | API server CPU | replicas CPU | etcd + cloud CPU |",
    "| --- | ---: | --- | --- | --- | ---: | ---: | ---: |",
  ];
  const failed: string[] = [];
  for (const r of results) {
    if (r.error !== undefined) failed.push(`- ${r.setup.name}: failed: ${r.error}`);
    const cpu = r.cpu;
    const share = (s: number) =>
      cpu ? `${s.toFixed(0)} s (${Math.round((100 * s) / Math.max(cpu.wallSeconds * 2, 1))} %)` : "—";
    rows.push(
      `| ${r.setup.name} | ${r.convergeMs === undefined ? "—" : `${(r.convergeMs / 1000).toFixed(1)} s`} | ` +
        `${r.replicas?.map((p) => (p.rssBytes / MB).toFixed(0)).join(", ") ?? "—"} | ` +
        `${r.replicas?.map((p) => (p.idleRssBytes / MB).toFixed(0)).join(", ") ?? "—"} | ` +
        `${r.replicas?.map((p) => p.ownedShapes).join(", ") ?? "—"} | ` +
        `${cpu ? share(cpu.apiServer) : "—"} | ${cpu ? share(cpu.replicas) : "—"} | ` +
        `${cpu ? share(cpu.etcd + cpu.cloud) : "—"} |`,
    );
  }
  const shapes = results[0]?.shapes ?? 0;
  return [
    `${shapes.toLocaleString("en-US")} Shapes. CPU: seconds during the converge, and the share of the machine's 2 cores × the converge's wall time.`,
    "",
    ...rows,
    ...(failed.length > 0 ? ["", ...failed] : []),
    "",
  ].join("\n");
}

/** Runs one setup on a fresh stack. Never throws: a failure is recorded in the result. */
export async function runSharding(
  setup: ShardingSetup,
  options: ShardingOptions,
  binaries: BinaryPaths,
  dir: string,
  progress: Progress,
): Promise<ShardingResult> {
  const result: ShardingResult = { setup, shapes: options.shapes };
  const stack = await startBenchStack(dir, binaries, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" },
  }).catch((error: unknown) => {
    result.error = `cannot start the stack: ${(error as Error).message}`;
    return undefined;
  });
  if (!stack) return result;
  const watch = new ShapeWatch(stack.kubeConfig, await stack.kube.createNamespace("bench"));
  try {
    await applyManifestFile(stack.kubeConfig, join(REPO_ROOT, "deploy", "sharding", "rbac.yaml"));
    const replicas: BenchController[] = Array.from({ length: setup.replicas }, (_, i) =>
      stack.controller({
        name: `replica-${i}`,
        flags: ["--sharding", `--shard-filter=${setup.filter}`, `--identity=replica-${i}`],
        resyncPeriodMs: 300_000,
        nodeFlags: CONTROLLER_NODE_FLAGS,
        // --build: the image's script, NODE_OPTIONS emptied (no source condition from an npm script).
        ...(options.build ? { script: CONTROLLER_BUILD_MAIN, env: { NODE_OPTIONS: "" } } : {}),
      }),
    );
    await Promise.all(replicas.map((r) => r.start({ timeoutMs: 120_000 })));
    await settledRing(replicas);
    // Idle: what a replica costs before it holds a single Shape, which no ring divides.
    const idle: number[] = [];
    for (const r of replicas) idle.push((await settledMemory(r, 10)).rssBytes);
    await watch.start();

    const names = Array.from({ length: options.shapes }, (_, i) => shapeName(i));
    const specs = new Map(names.map((name, i) => [name, shapeSpec(i)]));
    const pids = () => {
      // The replicas are counted apart (several processes); the stack knows only one controller.
      const roles = stack.pids();
      delete roles.controller;
      return roles;
    };
    const replicaSeconds = () => replicas.reduce((sum, r) => sum + (cpuSecondsOf(r.pid) ?? 0), 0);
    const before = { snapshot: cpuSnapshot(pids()), replicas: replicaSeconds() };
    const bar = progress.task(`${setup.name}: converge`, names.length, "Ready");
    const start = performance.now();
    const creating = new Workload(stack.kubeConfig, watch.namespace, options.concurrency).createAll(
      names,
      (name) => specs.get(name) ?? shapeSpec(0),
    );
    creating.catch(() => {});
    await watch.until(
      `all ${names.length} Shapes to be Ready`,
      () => (watch.counts().ready >= names.length ? true : undefined),
      {
        timeoutMs: convergeTimeoutMs(names.length),
        onTick: () => bar.update(watch.counts().ready),
      },
    );
    await creating;
    const verifiedAt = await untilCloudHolds(
      async () => describeMismatch(watch.list(), await stack.cloud.api.list(), stack.ownerId),
      performance.now(),
      start + convergeTimeoutMs(names.length),
    );
    result.convergeMs = verifiedAt - start;
    const cpu = cpuBetween(before.snapshot, cpuSnapshot(pids()), 2);
    result.cpu = {
      wallSeconds: cpu.wallSeconds,
      apiServer: cpu.seconds.apiServer ?? 0,
      etcd: cpu.seconds.etcd ?? 0,
      cloud: cpu.seconds.cloud ?? 0,
      replicas: Math.round((replicaSeconds() - before.replicas) * 100) / 100,
      bench: cpu.seconds.bench ?? 0,
    };
    bar.end(`converged in ${(result.convergeMs / 1000).toFixed(1)} s`);

    result.replicas = [];
    for (const [i, r] of replicas.entries()) {
      const memory = await settledMemory(r, 10);
      const metrics = await r.metrics();
      result.replicas.push({
        name: r.options.name,
        idleRssBytes: idle[i] ?? 0,
        rssBytes: memory.rssBytes,
        heapUsedBytes: memory.heapUsedBytes,
        ownedShapes: metrics.sum("shapes_controller_ring_owned_objects", { cache: "resources" }),
        share: metrics.sum("shapes_controller_ring_owned_share"),
      });
    }
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
    progress.log(`${setup.name}: FAILED: ${result.error}`);
  } finally {
    watch.stop();
    await stack.stop();
  }
  return result;
}

/** Waits until every replica sees all of them and their shares cover the hash space. */
async function settledRing(replicas: readonly BenchController[]): Promise<void> {
  const deadline = performance.now() + 120_000;
  for (;;) {
    let share = 0;
    let members = true;
    for (const r of replicas) {
      const m = await r.metrics();
      members &&= m.sum("shapes_controller_ring_members") === replicas.length;
      share += m.sum("shapes_controller_ring_owned_share");
    }
    if (members && Math.abs(share - 1) < 0.001) return;
    if (performance.now() > deadline)
      throw new Error(`cannot settle a ring of ${replicas.length}: shares add up to ${share}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function main(argv: readonly string[]): Promise<number> {
  let options: ShardingOptions | "help";
  try {
    options = parseShardingArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench:sharding: ${error.message}\n(see npm run bench:sharding -- --help)\n`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(shardingUsage());
    return 0;
  }
  const progress = new Progress();
  const binaries = await ensureBinaries({ log: stderrLog("bench") });
  if (options.build) {
    progress.log("building the controller (npm run build -w reconcile-kit -w @shapes/controller)");
    execFileSync("npm", ["run", "-s", "build", "-w", "reconcile-kit", "-w", "@shapes/controller"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  const runDir = join(
    REPO_ROOT,
    "bench",
    "results",
    `sharding-${new Date().toISOString().replace(/[:.]/g, "-")}`,
  );
  await mkdir(runDir, { recursive: true });
  const setups = SHARDING_SETUPS.filter(
    (s) => options.only.length === 0 || options.only.some((text) => s.name.includes(text)),
  );
  const results: ShardingResult[] = [];
  for (const [i, setup] of setups.entries()) {
    progress.log(`${setup.name} (${i + 1}/${setups.length}): a fresh stack, ${options.shapes} Shapes`);
    results.push(await runSharding(setup, options, binaries, join(runDir, `setup-${i}`), progress));
    await writeFile(join(runDir, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  }
  const table = renderShardingTable(results);
  process.stdout.write(`${table}\nresults: ${join(runDir, "results.json")}\n`);
  if (options.json) await writeFile(options.json, `${JSON.stringify(results, null, 2)}\n`);
  if (options.markdown) await writeFile(options.markdown, table);
  return results.some((r) => r.error !== undefined) ? 1 : 0;
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`bench:sharding: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
