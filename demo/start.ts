/**
 * `npm start`: the whole demo on this machine, until Ctrl-C. See `npm start -- --help`, and demo.ts for
 * what starts in which order.
 *
 * Exit codes: 0 after a requested stop (Ctrl-C, SIGTERM), 1 when something cannot start, 2 for a bad
 * command line.
 */
import { isInvokedDirectly } from "@shapes/envtest";
import { DEFAULT_METRICS_URL } from "@shapes/controller";
import { Demo, StartInterrupted, type DemoOutput, type DemoReady } from "./demo.ts";
import { parseStartArgs, START_USAGE, UsageError } from "./options.ts";
import { display } from "./paths.ts";
import { writeStdout } from "./stdout.ts";

/** The lines printed once the demo runs: where things are and what to try. */
export function banner(ready: DemoReady): string {
  const { paths, env, cluster } = ready;
  const envFile = display(paths.envFile);
  const kubeconfigExport = `export KUBECONFIG=${env.KUBECONFIG}`;
  // The fragment signs the console in (it never reaches a server, so it lands in no log).
  const consoleLine = ready.hasConsole
    ? `${ready.cloudUrl}/#token=${env.CLOUD_TOKEN}&admin=${env.CLOUD_ADMIN_TOKEN}`
    : `${ready.cloudUrl}/  (no console in this build yet; the API: ${ready.cloudUrl}/v1/shapes, see mock-cloud/README.md)`;
  const rows: [string, string][] = [
    ["Both worlds", `${ready.viewLink}    (Kubernetes and the cloud side by side, live)`],
    ["Cloud console", consoleLine],
    [
      "Kubernetes",
      `${kubeconfigExport}    (${cluster.kind === "local" ? "the demo's control plane" : "your cluster"})`,
    ],
    ["", "no kubectl? npm run kubectl -- get shapes -A"],
    ["Apply a Shape", "npm run kubectl -- apply -n default -f crds/examples/red-square.yaml"],
    ["Guided tour", "npm run tour    (in another terminal)"],
    [
      "For scripts",
      `${envFile} holds KUBECONFIG, CLOUD_URL, CLOUD_TOKEN, CLOUD_ADMIN_TOKEN:  set -a; . ${envFile}; set +a`,
    ],
    ["Logs", `controller: ${display(paths.controllerLog)}    cloud: ${display(paths.cloudLog)}`],
    ...(ready.metricsUrl ? ([["Metrics", `${ready.metricsUrl}/metrics`]] as [string, string][]) : []),
    [
      "Why?",
      `npm run why -- default/red-square${whyFlag(ready.metricsUrl)}    (what the controller saw, decided, did)`,
    ],
    [
      "Traces",
      ready.tracesEndpoint
        ? `exported to ${ready.tracesEndpoint} (OTEL_EXPORTER_OTLP_ENDPOINT)`
        : "off: OTEL_EXPORTER_OTLP_ENDPOINT=http://<your collector>:4318 npm start exports them (docs/architecture.md)",
    ],
    [
      "Stop",
      `Ctrl-C: stops everything it started; the data stays in ${display(paths.root)} for the next npm start`,
    ],
  ];
  return [
    "",
    `The demo is running.${ready.firstRun ? "" : " (resumed with the data of the last run)"}`,
    "",
    ...rows.map(([label, text]) => `  ${label.padEnd(14)} ${text}`),
    "",
    "What the controller does (the Events it records, and its log):",
  ].join("\n");
}

/** Runs `npm start` with `argv`; resolves with the exit code once the demo has stopped. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseStartArgs(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`npm start: ${error.message}\n`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(START_USAGE);
    return 0;
  }

  const out: DemoOutput = {
    line: (text) => writeStdout(`${text}\n`),
    error: (text) => process.stderr.write(`npm start: ${text}\n`),
  };
  const demo = new Demo(parsed.options, env, out);
  out.line(`Starting the Shapes demo (state in ${display(demo.paths.root)}; Ctrl-C stops it)`);

  // Ctrl-C or SIGTERM: stop everything, once. (npm forwards the terminal's SIGINT too, so a second
  // signal arrives at once: it must not mean "force".) SIGHUP: the terminal went away.
  const onSignal = (signal: NodeJS.Signals) => {
    if (demo.stopRequested) return;
    out.line(`\n${signal}: stopping everything the demo started...`);
    void demo.stop();
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);

  let code = 0;
  try {
    out.line(banner(await demo.start()));
  } catch (error) {
    if (!(error instanceof StartInterrupted && demo.stopRequested)) {
      out.error((error as Error).message);
      code = 1;
      out.line("stopping what had started...");
      void demo.stop();
    }
  }
  await demo.whenStopped();
  out.line(code === 0 ? "Stopped everything the demo started." : "Stopped.");
  return code;
}

if (isInvokedDirectly(import.meta.filename)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`npm start: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}

/** The `--metrics-url` `npm run why` needs when the controller is not on its default address. */
function whyFlag(metricsUrl: string | undefined): string {
  return metricsUrl === undefined || metricsUrl === DEFAULT_METRICS_URL ? "" : ` --metrics-url ${metricsUrl}`;
}
