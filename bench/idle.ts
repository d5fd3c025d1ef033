/**
 * `npm run bench:idle`: the idle controller's memory as production runs it (issue 31). One local stack
 * (envtest's kube-apiserver + etcd, the CRDs and RBAC, the mock cloud), then `--runs` fresh controllers one
 * after the other, each the BUILD (`node <node flags> controller/dist/main.js`, as the image, compose and the
 * Deployment start it; NODE_OPTIONS emptied, so no source condition slips in) under the least-privilege
 * service account's client-certificate kubeconfig, tracing off, no Shape. Once ready and settled (quiet, RSS
 * still over three readings: bench/scenarios/memory.ts) it reads VmRSS, RssAnon and RssFile from /proc and V8's
 * heap and external memory from /metrics, prints one line per run and the range, and stops the controller.
 * With `--modules`, one more run under the module-recording hook (stack/record-modules.js) counts the modules
 * loaded once ready: its RSS is not comparable (the hook is TypeScript: type stripping loads with it), so only
 * the count is printed.
 *
 * `npm run bench` measures idle RSS too, in its memory scenario, but of the sources under the module-recording
 * hook (node strips the types of every .ts it loads): 113–125 MB in its `lean` column on 2026-11-27, against
 * 89–90 MB for the build here. This is the build's figure. Nothing is asserted: it
 * prints.
 *
 *   npm run build -w reconcile-kit -w @shapes/controller && npm run bench:idle -- --runs 5
 *   npm run bench:idle -- --node-flag=--max-semi-space-size=1 --modules
 */
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parse } from "yaml";
import { ensureBinaries, stderrLog } from "@shapes/envtest";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import {
  CLIENT_NODE_MODULES,
  CLOUD_TOKEN,
  CONTROLLER_BUILD_MAIN,
  RECORD_MODULES_FILE,
  RECORD_MODULES_HOOK,
  readRecordedModules,
  REPO_ROOT,
  startStack,
} from "@shapes/stack";
import { BenchController, METRIC_PREFIX } from "./controller.ts";
import { settledMemory } from "./scenarios/memory.ts";

const MB = 1024 * 1024;

const USAGE = `npm run bench:idle -- [options]   the idle controller's RSS, from its build (controller/dist/main.js)

  --runs N              controllers started one after the other on one stack (default 3)
  --node-flag F         a node flag instead of the controller's own (${CONTROLLER_NODE_FLAGS.join(" ")}); repeat for several
  --script PATH         another build of the controller to run (default controller/dist/main.js)
  --json-kubeconfig     the same kubeconfig written as JSON (the lean loader then never loads yaml)
  --modules             one more run under the module-recording hook: the modules loaded once ready
  --help

Build first: npm run build -w reconcile-kit -w @shapes/controller
`;

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        runs: { type: "string", default: "3" },
        "node-flag": { type: "string", multiple: true },
        script: { type: "string", default: CONTROLLER_BUILD_MAIN },
        "json-kubeconfig": { type: "boolean", default: false },
        modules: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    process.stderr.write(`bench:idle: ${(error as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    process.stderr.write(`bench:idle: --runs must be a whole number ≥ 1, not ${values.runs}\n`);
    return 2;
  }
  const script = resolve(values.script);
  if (!existsSync(script)) {
    process.stderr.write(
      `bench:idle: no build at ${script}: run npm run build -w reconcile-kit -w @shapes/controller\n`,
    );
    return 2;
  }
  const nodeFlags = values["node-flag"] ?? CONTROLLER_NODE_FLAGS;

  const binaries = await ensureBinaries({ log: stderrLog("bench:idle: envtest") });
  const artifactsDir = join(
    REPO_ROOT,
    "bench",
    "results",
    `idle-${new Date().toISOString().replace(/[:.]/g, "-")}`,
  );
  const stack = await startStack("bench-idle", { binaries, artifactsDir });
  let kubeconfigPath = stack.controllerIdentity.kubeconfigPath;
  if (values["json-kubeconfig"]) {
    // Beside the stack's own (a temp folder, not the artifacts: it holds a private key).
    kubeconfigPath = `${kubeconfigPath}.json`;
    const yaml = await readFile(stack.controllerIdentity.kubeconfigPath, "utf8");
    await writeFile(kubeconfigPath, JSON.stringify(parse(yaml)), { mode: 0o600 });
  }
  const controller = (
    name: string,
    extra: { nodeFlags?: readonly string[]; env?: Record<string, string> } = {},
  ) =>
    new BenchController({
      name,
      identity: name,
      artifactsDir,
      kubeconfigPath,
      cloudUrl: stack.cloud.url,
      cloudToken: CLOUD_TOKEN,
      script,
      nodeFlags: extra.nodeFlags ?? nodeFlags,
      logLevel: "info",
      env: {
        NODE_OPTIONS: "",
        OTEL_EXPORTER_OTLP_ENDPOINT: "",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
        ...extra.env,
      },
    });
  process.stdout.write(
    `idle controller: node ${nodeFlags.join(" ")} ${relative(REPO_ROOT, script)} (ready, no Shapes, client-certificate kubeconfig${values["json-kubeconfig"] ? " in JSON" : ""})\n`,
  );
  const rss: number[] = [];
  try {
    for (let i = 1; i <= runs; i++) {
      const c = controller(`idle-${i}`);
      await c.start();
      const memory = await settledMemory(c, 15);
      const m = await c.metrics();
      const heapUsed = m.sum(`${METRIC_PREFIX}nodejs_heap_size_used_bytes`);
      const external = m.sum(`${METRIC_PREFIX}nodejs_external_memory_bytes`);
      const code = m.sum(`${METRIC_PREFIX}nodejs_heap_space_size_used_bytes`, { space: "code" });
      await c.stop();
      rss.push(memory.rssBytes);
      process.stdout.write(
        `  run ${i}: RSS ${mb(memory.rssBytes)} (anon ${mb(memory.rssAnonBytes)}, file ${mb(memory.rssFileBytes)}); ` +
          `V8 heap used ${mb(heapUsed)} of ${mb(memory.heapTotalBytes)} (code ${mb(code)}), external ${mb(external)}\n`,
      );
    }
    process.stdout.write(`idle RSS: ${mb(Math.min(...rss))} – ${mb(Math.max(...rss))} over ${runs} run(s)\n`);
    if (values.modules) {
      const file = join(artifactsDir, "idle-modules.modules");
      const c = controller("idle-modules", {
        nodeFlags: [...nodeFlags, "--import", RECORD_MODULES_HOOK],
        env: { [RECORD_MODULES_FILE]: file },
      });
      await c.start();
      await settledMemory(c, 5);
      const urls = new Set(await readRecordedModules(file));
      await c.stop();
      const clientNode = [...urls].filter((u) => u.includes(CLIENT_NODE_MODULES)).length;
      const ours = [...urls].filter((u) => u.startsWith("file:") && !u.endsWith("/record-modules.js")).length;
      process.stdout.write(
        `modules loaded once ready: ${urls.size} distinct (files ${ours}, node: builtins ${urls.size - ours}), client-node ${clientNode}\n`,
      );
    }
  } finally {
    await stack.stop();
  }
  return 0;
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MB`;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench:idle: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
