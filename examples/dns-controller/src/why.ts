/**
 * `npm run why -w @shapes/dns-controller -- <namespace>/<name>`: why did the DNS controller do what it did to
 * this Record? The library's client (`runWhy`) reads the controller's `/why`, as it does for any plugin; this
 * file gives it the Record's names and the controller's defaults. `--help` says more.
 */
import { runWhy, type WhyCommand } from "reconcile-kit";
import { GROUP, RECORDS } from "./api.ts";

/** The DNS controller's `why` command. */
export const DNS_WHY: WhyCommand = {
  command: "npm run why -w @shapes/dns-controller",
  resource: { kind: "Record", plural: RECORDS, group: GROUP },
  example: "default/www",
  defaultMetricsUrl: "http://127.0.0.1:8081",
  metricsUrlEnv: "DNS_METRICS_URL",
  tokenEnv: "DNS_METRICS_TOKEN",
  listCommand: `kubectl get ${RECORDS}.${GROUP} -n <namespace>`,
  dottedNameHint: "a Record's zone record is named <name>.<namespace>.example.test",
};

if (import.meta.main) {
  runWhy(DNS_WHY, process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${DNS_WHY.command}: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
