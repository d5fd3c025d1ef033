/**
 * reconcile-kit: the public surface of the library, grouped as its folders are (README.md says what each is).
 * Everything a controller built on it imports comes from here (or from `reconcile-kit/testing`); a file
 * under src/ that is not re-exported here is an implementation detail. The surface is recorded in
 * api/reconcile-kit.api.md, which `npm run api -w reconcile-kit` checks against the build.
 */

// The pattern: what a plugin fills in, and the three reconcilers built on it.
export * from "./reconcile/contract.ts";
export * from "./reconcile/policies.ts";
export * from "./queue/result.ts";
export * from "./reconcile/status.ts";
export * from "./reconcile/diff.ts";
export * from "./reconcile/ports.ts";
export * from "./reconcile/reconciler.ts";
export * from "./reconcile/intent-reconciler.ts";
export * from "./reconcile/sweep.ts";
export * from "./reconcile/uninstall.ts";
export * from "./reconcile/adoption.ts";
// Assembly: the controllers of one plugin, from the sources to the reconcilers.
export * from "./controllers.ts";

// Sources: the supervised Kubernetes informer and the external list-watch.
export * from "./source/cache-events.ts";
export * from "./source/informer.ts";
export * from "./source/kube-list-watch.ts";
export * from "./source/external-informer.ts";
export * from "./source/resync.ts";

// Queue and worker loop.
export * from "./queue/queue.ts";
export * from "./queue/rate-limiter.ts";
export * from "./queue/controller.ts";

// Kubernetes access. (PooledKubeConfig and beforeRequest load client-node: they are in reconcile-kit/client-node.)
export * from "./kube/kube-http.ts";
export {
  connectKubeconfig,
  connectWithClientNode,
  KubeconfigError,
  loadKubeconfig,
  type KubeConnection,
  type KubeconfigVerdict,
  type KubeCredentials,
  type LoadKubeconfigOptions,
  type NeedsClientNode,
} from "./kube/kubeconfig.ts";
export * from "./reconcile/kube-writer.ts";
export * from "./kube/events.ts";
export * from "./kube/cluster-identity.ts";
export * from "./kube/access-review.ts";
export * from "./manager/kube-access.ts";

// Leadership and sharding.
export * from "./leadership/leader-election.ts";
export * from "./leadership/lean-lease-client.ts";
export * from "./leadership/fence.ts";
export * from "./leadership/kube-ring-leases.ts";
export * from "./leadership/sharded.ts";

// Observability.
export * from "./observability/logger.ts";
export * from "./observability/metrics.ts";
export * from "./observability/history.ts";
export * from "./observability/health.ts";
// The gate itself (AccessGate) is the health server's; a controller passes an AccessControl.
export type {
  AccessAttributes,
  AccessControl,
  AccessDecision,
  AccessReviewer,
  ReviewedUser,
  TokenReviewOutcome,
} from "./observability/access.ts";
export * from "./reconcile/traced.ts";
// The client of a controller's /why (a plugin's `npm run why`).
export {
  fetchHistory,
  historyUrl,
  parseHistory,
  parseSubject,
  parseWhyArgs,
  renderStory,
  runWhy,
  WHY_TIMEOUT_MS,
  WhyAccessDeniedError,
  WhyNothingRecordedError,
  WhyUsageError,
  whyUsage,
  type StoryOptions,
  type WhyCommand,
  type WhyIO,
  type WhyOptions,
  type WhySubject,
} from "./observability/why-client.ts";

// Support.
export * from "./support/clock.ts";
export * from "./support/errors.ts";
export * from "./manager/heap-pages.ts";
export * from "./support/keep-alive-http.ts";

// The manager: a plugin's controllers as a process, by one call, with one command line.
export * from "./manager/index.ts";
