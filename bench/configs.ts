/**
 * The controller configurations the benchmark compares: our defaults, and one ablation per design choice
 * still in question, so a reader sees what each choice buys. (The ablations that answered theirs —
 * `no-kube-pool`, `generated-client`, `own-echoes`, `record-cloud-id`, `no-watch`, `observe-get`,
 * `list-then-watch`, `client-node` — were removed with their code; their numbers stay in docs/benchmarks.md.) Each is just extra controller flags (the controller already has them: `node
 * controller/src/main.ts --help`), except `tracing`, which adds what tracing costs: the runner gives the
 * controller and the cloud an OTLP endpoint to export to. `default` is the controller as shipped, on the
 * library's lean Kubernetes client.
 */
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";

/** The configurations, the baseline first. */
export const CONFIG_NAMES = [
  "default",
  "one-worker",
  "workers-4",
  "default-semi-space",
  "no-rate-limit",
  "tracing",
] as const;
/** One configuration's name. */
export type ConfigName = (typeof CONFIG_NAMES)[number];

/** A configuration: what it is, and the flags that make it. */
export interface ControllerConfig {
  name: ConfigName;
  /** What it takes away, for the table's footnote. */
  description: string;
  /** Flags appended to the controller's command line. */
  flags: readonly string[];
  /** Flags for the controller's node, before the script, instead of its own (CONTROLLER_NODE_FLAGS). */
  nodeFlags?: readonly string[];
  /** Runs only when asked for with --config: a what-if, not an ablation of the controller as it is. */
  optIn?: boolean;
  /**
   * Tracing on: the runner starts an in-process OTLP receiver (envtest/src/otlp-receiver.ts) and gives the
   * controller and the cloud OTEL_EXPORTER_OTLP_ENDPOINT=<its URL>. Off (every other configuration), the
   * variable is empty: OpenTelemetry's "unset", whatever the bench's own environment says.
   */
  tracing?: boolean;
}

/** Every configuration by name. */
export const CONFIGS: Readonly<Record<ConfigName, ControllerConfig>> = {
  default: {
    name: "default",
    description:
      "the controller's defaults: cloud change feed on, 16 workers, observation from the list-watch cache, own echoes ignored, no ShapeRef status write; every Kubernetes call (loader, list-watch, writes, Lease, cluster identity) over the library's lean loader and keep-alive client, @kubernetes/client-node never loaded",
    flags: [],
  },
  "one-worker": {
    name: "one-worker",
    description: "--workers=1: one reconcile at a time",
    flags: ["--workers=1"],
  },
  "workers-4": {
    name: "workers-4",
    description: "--workers=4: four reconciles at a time, the default before issue 16",
    flags: ["--workers=4"],
  },
  "default-semi-space": {
    name: "default-semi-space",
    description:
      "node without --max-semi-space-size=2: V8's default young generation (16 MB semi-spaces), as before issue 16",
    flags: [],
    nodeFlags: CONTROLLER_NODE_FLAGS.filter((flag) => !flag.startsWith("--max-semi-space-size")),
  },
  "no-rate-limit": {
    name: "no-rate-limit",
    description:
      "--cloud-qps=0: no client-side rate limiter, so no shared hold either: each key meets its own 429s and outage",
    flags: ["--cloud-qps=0"],
  },
  tracing: {
    name: "tracing",
    description:
      "tracing exporting every span to an in-process OTLP receiver (OTEL_EXPORTER_OTLP_ENDPOINT) vs. off: the controller and the mock cloud export, the bench receives",
    flags: [],
    tracing: true,
  },
};

/** The configuration every ratio is taken against. */
export const BASELINE: ConfigName = "default";
