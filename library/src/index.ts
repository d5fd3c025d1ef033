/**
 * reconcile-kit: the public surface of the library, chosen by hand and grouped by role. A plugin author
 * needs the contract, the reconcilers' assembly and the manager; an operator of the process the why client
 * and what the manager reports through. Everything else under src/ is the library's own plumbing and is not
 * exported. The repo's own harnesses (benchmarks, e2e, the demo) reach a few parts through
 * `reconcile-kit/parts`; tests of a plugin through `reconcile-kit/testing` and `reconcile-kit/conformance`.
 * The surface is recorded in api/reconcile-kit.api.md, which `npm run api -w reconcile-kit` checks against
 * the build.
 */

// The plugin contract: what a plugin fills in (its kinds, its external client) and the resource's shape.
export {
  classifyHttp,
  type Condition,
  type DeletionPolicy,
  type Desired,
  type ExternalClient,
  type ExternalFailure,
  type ExternalKind,
  type ExternalResourcePlugin,
  type IntentPhase,
  type IntentRecord,
  type JsonObject,
  type ManagedResource,
  type ManagedStatus,
  type OwnerMarks,
  type ResourceKind,
} from "./reconcile/contract.ts";
export { deletionPolicyOf, type ManagementPolicy } from "./reconcile/policies.ts";
export { diffManaged, type Drift, type Json } from "./reconcile/diff.ts";
export { adoptionAnnotation } from "./reconcile/adoption.ts";
export {
  type ExternalWatchEvent,
  GoneError,
  type ListPage,
  type ListWatchClient,
  type Revision,
} from "./source/external-informer.ts";

// The reconcilers: the three built on the contract, what they read and write, and their assembly.
export {
  createExternalResourceControllers,
  type ExternalResourceControllers,
  type ExternalResourceSettings,
} from "./controllers.ts";
export { ExternalResourceReconciler, type ReconcilerDeps } from "./reconcile/reconciler.ts";
export {
  IntentReconciler,
  type IntentReconcilerDeps,
  type LastSeenPolicies,
} from "./reconcile/intent-reconciler.ts";
export { Sweep, type SweepDeps } from "./reconcile/sweep.ts";
export type { Counters, EventRecorder, ExternalCache, Lister, SharedDeps } from "./reconcile/ports.ts";
export type { Reconciler, ReconcileResult } from "./queue/result.ts";
export type { ResourceDefinition, ResourceWriter } from "./reconcile/kube-writer.ts";
export type { Handoff, OwnWrites } from "./source/own-writes.ts";
export type { HashRange } from "./leadership/ring.ts";
export type { Clock } from "./support/clock.ts";

// The manager and its flags: a plugin's controllers as a process, by one call, with one command line.
export {
  allOptions,
  ConfigError,
  type FlagReader,
  type FlagSpec,
  type ManagedSettings,
  type ManagerConfig,
  type ManagerContext,
  type ManagerDefaults,
  type ManagerFlags,
  type ManagerSpec,
  managerUsage,
  parseDuration,
  type ParsedFlags,
  parseManagerFlags,
  runManager,
  type RunManagerOptions,
} from "./manager/index.ts";
export type { KubeConnection, KubeCredentials } from "./kube/kubeconfig.ts";
export { METRICS_AUTH_MODES, type MetricsAuthMode } from "./kube/access-review.ts";

// What an operator of the process needs: the why client, the history and metrics it reads, the logger.
export { runWhy, type WhyCommand, type WhyIO, type WhySubject } from "./observability/why-client.ts";
export {
  DecisionHistory,
  type DecisionHistoryOptions,
  type HistoryEntry,
  type HistorySize,
  type SubjectHistory,
} from "./observability/history.ts";
export type { CallNote, ReconcileRecord } from "./observability/reconcile-scope.ts";
export { CoreMetrics, type CoreMetricsOptions } from "./observability/metrics.ts";
export { type Logger, silentLogger } from "./observability/logger.ts";

// A plugin's HTTP client to its external API: keep-alive connections and a shared rate limiter.
export {
  type HttpAnswer,
  type HttpStream,
  KeepAliveHttp,
  type KeepAliveHttpOptions,
  type KeepAliveRequest,
} from "./support/keep-alive-http.ts";
export {
  type HoldReason,
  RateLimiter,
  type RateLimiterHooks,
  type RateLimiterOptions,
  type RequestLimiter,
} from "./queue/rate-limiter.ts";
