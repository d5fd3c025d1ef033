/**
 * The results of a run, as written to results.json: what was run (options, machine, commit), and one record
 * per configuration and repeat with each scenario's measurements. Times are milliseconds, memory bytes,
 * CPU seconds. Counts are totals for the scenario; the report divides by N where it says "per Shape".
 */
import type { ConfigName } from "./configs.ts";
import type { ControllerMemory } from "./controller.ts";
import type { CpuUsage } from "./cpu.ts";
import type { BenchOptions } from "./options.ts";
import type { RssWindow } from "./proc.ts";
import type { RequestCounts } from "./requests.ts";
import type { Percentiles } from "./stats.ts";

/** Scenario 1: N Shapes applied at once, until all are Ready and the cloud holds exactly N of ours. */
export interface ConvergeResult {
  shapes: number;
  /** From the first create request to the moment every Shape was Ready and the cloud verified. */
  durationMs: number;
  /** How long the bench took to create the N Shapes (the controller works meanwhile). */
  createMs: number;
  /** N / duration. */
  shapesPerSecond: number;
  /** Per Shape, from its create's answer to the watch event showing it Ready. */
  latencyMs: Percentiles;
  /** The cloud held exactly N shapes, each with its Shape's spec and our owner tags. */
  cloudVerified: boolean;
  /** ShapeRefs of the workload's Shapes (N expected: one each, written before the cloud create). */
  shapeRefsCreated: number;
  /** CPU seconds by process while converging. */
  cpu: CpuUsage;
  /** The controller's view (its /metrics): Shape reconciles, their mean duration, and the mean queue wait. */
  reconciles?: { count: number; meanMs: number; meanQueueWaitMs: number };
}

/**
 * The floor, beside the converge: the same Kubernetes writes per Shape made by a bare client (one keep-alive
 * pool, plain JSON), no controller and no cloud, on the same stack before the controller starts.
 */
export interface FloorResult {
  shapes: number;
  /** Requests per Shape: the create and the controller's five writes (6). */
  requestsPerShape: number;
  /** Shapes in flight, each a chain of its requests, and the pool's sockets: the converge's concurrency. */
  concurrency: number;
  /** From the first request to the last answer. */
  durationMs: number;
  /** shapes × requestsPerShape / duration. */
  writesPerSecond: number;
  /** The API server's own count of writes to shapes, shaperefs and events meanwhile, by `VERB resource`. */
  kube: RequestCounts;
  /** CPU seconds by process meanwhile (no controller runs). */
  cpu: CpuUsage;
  /** One Shape's six requests before the clock started (the API server's first Shape create is slow). */
  warmUpMs: number;
  /** Deleting what it made (not in `durationMs`). */
  cleanupMs: number;
  /** The converge's durationMs / durationMs (same stack, same run); absent when the converge did not finish. */
  convergeRatio?: number;
}

/** Scenario 2: the API calls the converge run cost, whoever the API server counted them for. */
export interface CostResult {
  shapes: number;
  /** The controller's Kubernetes requests (the bench's own creates and watch taken out), by `VERB resource`. */
  kube: RequestCounts;
  /** Requests for other resources meanwhile (the API server's own leases and the like): not the controller's. */
  kubeBackground: RequestCounts;
  /** The controller's cloud requests, by `METHOD route`. */
  cloud: RequestCounts;
  /** The controller's own count of its Kubernetes writes (`verb resource`), a cross-check of `kube`. */
  controllerKubeWrites: Record<string, number>;
}

/** Scenario 3: nothing to do, over several resync periods. */
export interface SteadyResult {
  windowMs: number;
  resyncPeriodMs: number;
  /** Requests in the window, by `VERB resource` and `METHOD route`. */
  kube: RequestCounts;
  cloud: RequestCounts;
  kubeWrites: number;
  cloudWrites: number;
  /** Cloud reads (lists and gets, not the watch) per resync period. */
  cloudReadsPerPeriod: number;
  /** Shape reconciles per resync period (the resync's own work, N expected). */
  reconcilesPerPeriod: number;
  cpu: CpuUsage;
}

/** Scenario 4: random cloud-side edits and deletes while idle. */
export interface DriftResult {
  edits: number;
  recolors: number;
  deletes: number;
  repaired: number;
  /** From the edit's event to the repair's event on the bench's change feed. */
  latencyMs: Percentiles | undefined;
  /** Cloud writes the controller made for the repairs (one per edit is the least). */
  cloudWrites: number;
}

/** Scenario 4b: a cloud-wide 429 storm while M Shapes need a cloud write. */
export interface ThrottleResult {
  /** M: Shapes recolored (in Kubernetes) when the storm began, each needing a cloud PATCH. */
  keys: number;
  /** How long every cloud API call (`/v1/shapes*`; not the change feed) was answered 429. */
  stormMs: number;
  /** The Retry-After of each 429. */
  retryAfterMs: number;
  /** The controller's --cloud-qps (its default unless the configuration sets it); 0: no limiter. */
  cloudQps: number;
  /** The controller's API calls during the storm (the cloud's own count; the bench made none). */
  calls: number;
  /** `calls` per second of storm. */
  callsPerSecond: number;
  /** How long the controller's limiter held every call during the storm (its /metrics; 0 without a limiter). */
  heldMs: number;
  /** Recolors that reached the cloud (M expected). */
  repaired: number;
  /** From switching the storm off to the change-feed event of the last recolor reaching the cloud. */
  repairMs: number | undefined;
}

/** Scenario 5: a restart with N present. */
export interface RestartResult {
  /** SIGTERM to exit (a graceful stop drains in-flight work). */
  stopMs: number;
  /** From the new process's spawn to /readyz 200: every Shape verified by the startup resync. */
  readyMs: number;
  /** From the spawn to Ready of a Shape created at the spawn. */
  newShapeReadyMs: number;
  /** Requests of the restarted controller until the new Shape was Ready (its own writes included). */
  kube: RequestCounts;
  cloud: RequestCounts;
  cpu: CpuUsage;
  /** What the API server and etcd paid for the new process's initial sync. Absent in results from before it was measured. */
  initialSync?: InitialSyncResult;
}

/**
 * The restart's initial sync: from just before the new process's spawn to its first /readyz 200 — its
 * informers' first lists (watch-lists, or lists then watches with `list-then-watch`) of the N Shapes and
 * their ShapeRefs, the cloud's list, then the startup resync (reads from the caches: nothing to write).
 */
export interface InitialSyncResult {
  /** CPU seconds by process over the window (the controller's from its spawn). */
  cpu: CpuUsage;
  /**
   * VmRSS of kube-apiserver and etcd, read every `sampleIntervalMs` over the window: the first reading (just
   * before the spawn) and the highest. Not VmHWM, the peak of the process's whole life (its converge).
   */
  rss: Partial<Record<"apiServer" | "etcd", RssWindow>>;
  sampleIntervalMs: number;
}

/**
 * One reading of the soak: the controller's memory, and what its /metrics say about the interval since the
 * previous reading.
 */
export interface SoakSample {
  /** Since the load started (the first sample is taken then). */
  atMs: number;
  /** VmRSS (/proc). */
  rssBytes: number;
  /** V8 heap in use (its /metrics). */
  heapUsedBytes: number;
  /**
   * p99 of the event loop's delay over the interval (prom-client's `nodejs_eventloop_lag_p99_seconds`, whose
   * histogram restarts at each scrape; nothing else scrapes the controller during the soak). Absent in the first
   * sample, whose interval is not the soak's.
   */
  eventLoopLagP99Ms?: number;
  /**
   * p99 of the Shape reconciles that finished in the interval, nearest rank over the duration histogram's
   * buckets: the upper bound of the bucket holding it. Absent when none finished, and in the first sample.
   */
  reconcileP99Ms?: number;
  /** Shape reconciles finished in the interval. */
  reconciles: number;
}

/** Scenario 7: steady load on the converged Shapes for minutes, the controller sampled meanwhile. */
export interface SoakResult {
  shapes: number;
  /** How long the load ran (the samples span it). */
  durationMs: number;
  /** Time between two samples. */
  sampleIntervalMs: number;
  /** The first part of the load, left out of the RSS slope (the controller's memory finding its level). */
  warmUpMs: number;
  /** Cloud-side edits per second, and as many spec changes per second. */
  ratePerSecond: number;
  /** Cloud-side edits of owned shapes: recolors and deletes; skipped: the shape was gone (being re-created). */
  cloudEdits: { recolors: number; deletes: number; skipped: number };
  /** Spec changes (color or size) of Shapes, merge patches in Kubernetes. */
  specChanges: number;
  /** Edits or patches that failed (not a 404 of a shape being re-created); the first one's message. */
  failed: number;
  firstFailure?: string;
  samples: SoakSample[];
  /** The first sample's reading (the load's start). */
  start: ControllerMemory;
  /** Once the load stopped, everything converged and the controller settled. */
  end: ControllerMemory;
  /** Least-squares slope of RSS over the samples after the warm-up, MB (2^20 bytes) per hour. */
  rssSlopeMbPerHour?: number;
  /** That slope's standard error: how much garbage collection's ups and downs alone move it. */
  rssSlopeStdErrMbPerHour?: number;
  /** Mean RSS of those samples (the slope's tolerance is a share of it). */
  rssMeanBytes: number;
  /** The worst interval's event-loop lag p99. */
  eventLoopLagP99MaxMs?: number;
  /** The intervals' reconcile p99: the median interval's, and the worst. */
  reconcileP99MedianMs?: number;
  reconcileP99MaxMs?: number;
  /** Every Shape Ready for its generation, with its last spec, and the cloud holding exactly them, after the load. */
  converged: boolean;
  /** From the load's end until converged (or until giving up). */
  convergeMs: number;
  /** What was still wrong when giving up. */
  problem?: string;
  /** CPU seconds by process during the load. */
  cpu: CpuUsage;
}

/** Scenario 6: memory idle, with N Shapes, and after deleting them all. */
export interface MemoryResult {
  /**
   * The controller once ready with no Shape yet (before the converge), settled as the others. Absent in
   * results from before this reading existed.
   */
  idle?: ControllerMemory;
  /** The process that converged the N Shapes, once idle. */
  afterConverge: ControllerMemory;
  /** The restarted process once ready (N present), when the restart scenario ran. */
  afterRestart?: ControllerMemory;
  /** The process that deleted them, once every Shape, ShapeRef and cloud shape was gone and it settled. */
  afterDelete: ControllerMemory;
  /** Deleting every Shape until the cloud and the ShapeRefs were empty too. */
  deleteMs: number;
  /**
   * The cloud's `GET /v1/shapes/by-name/:name` requests while deleting (from its /metrics): every one, and
   * those it answered 404. A delete knows its shape's id, so these are reads it should not need. Absent in
   * results from before this reading.
   */
  deleteByNameReads?: { total: number; notFound: number };
}

/** The `tracing` configuration: what its in-process OTLP receiver got over the whole run. */
export interface TracingResult {
  /** Spans received from every process, counted once the stack stopped (the last exports are in). */
  spans: number;
  /** Spans by the exporting process's service.name. */
  byService: Record<string, number>;
  /** Export requests accepted. */
  requests: number;
  /** Export requests refused (not OTLP/JSON): 0 expected. */
  rejected: number;
}

/**
 * The modules the controller had resolved once ready with no Shape yet (stack/record-modules.js's record,
 * counted by modules.ts): every distinct module URL, node's builtins included.
 */
export interface LoadedModules {
  total: number;
  /** Those of `@kubernetes/client-node` (its files under node_modules). */
  clientNode: number;
}

/** One configuration, one repeat, on its own fresh stack. */
export interface RunRecord {
  config: ConfigName;
  /** 1-based. */
  repeat: number;
  converge?: ConvergeResult;
  /** Measured with the converge (when it is reported), before the controller starts. */
  floor?: FloorResult;
  cost?: CostResult;
  steady?: SteadyResult;
  drift?: DriftResult;
  throttle?: ThrottleResult;
  /** Only on the run's first configuration (see scenarios/soak.ts). */
  soak?: SoakResult;
  restart?: RestartResult;
  memory?: MemoryResult;
  /**
   * Modules loaded once the controller was ready and idle, before the converge (read after the idle memory
   * reading when memory is reported). Absent in results from before this reading.
   */
  modules?: LoadedModules;
  /** Only with tracing on (the `tracing` configuration). */
  tracing?: TracingResult;
  /** Why the run stopped early (the scenarios before it still count). */
  error?: string;
  /** Where its logs are. */
  dir: string;
}

/** The machine and versions a run was measured on. */
export interface Machine {
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  os: string;
  node: string;
  kubernetes: string;
  etcd: string;
  gitCommit: string;
  /** Uncommitted changes in the working tree when the run started. */
  gitDirty: boolean;
  /** The 1-minute load average when the run started (other work on a shared machine). */
  loadAverage: number;
}

/** Everything a run wrote. */
export interface BenchResults {
  /** Bumped when the shape of this file changes. */
  format: 1;
  startedAt: string;
  finishedAt: string;
  /** The command line, as typed (`npm run bench -- ...`). */
  command: string;
  options: BenchOptions;
  machine: Machine;
  /** CPU of the whole run: how much the rest of the machine took meanwhile. */
  cpu: CpuUsage | undefined;
  runs: RunRecord[];
}
