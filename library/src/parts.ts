/**
 * reconcile-kit/parts: the library's own building blocks, for the repo's harnesses that take the process
 * apart — the benchmarks, the e2e scenarios, the demo, the chaos regressions — and not for a plugin. A
 * plugin needs only the main entry point (its contract, `createExternalResourceControllers`, `runManager`);
 * these are what the manager and the reconcilers are made of: the lean Kubernetes client and its writers,
 * the informers, the work queue and the worker loop, the status conditions, the why client's pieces. They
 * carry the same guarantees as inside the library, but the set may change with it. The types they speak in
 * (a `ManagedResource`, an `ExternalClient`, a `Logger`) are the main entry point's. Recorded in
 * api/reconcile-kit-parts.api.md.
 */

// Kubernetes access: the lean client, the kubeconfig loader, the writers and the cluster's identity.
export {
  KubeApiError,
  KubeHttp,
  type KubeHttpOptions,
  type KubeMethod,
  MERGE_PATCH,
} from "./kube/kube-http.ts";
export {
  connectKubeconfig,
  KubeconfigError,
  loadKubeconfig,
  type LoadedKubeconfig,
  type LoadKubeconfigOptions,
  type NeedsClientNode,
} from "./kube/kubeconfig.ts";
export { KubeResourceWriter, type WriteHook } from "./reconcile/kube-writer.ts";
export {
  type EventSink,
  KubeEventRecorder,
  type KubeEventRecorderOptions,
  leanEventSink,
} from "./kube/events.ts";
export { readClusterId, readDefaultOwnerId } from "./kube/cluster-identity.ts";

// Status: the conditions the reconcilers write and the reasons they give.
export {
  type ConditionInput,
  type ConditionReason,
  type ConditionUpdate,
  type KindReasons,
  type LibraryReason,
  Reason,
  ready,
  reasonsFor,
  rfc3339,
  setCondition,
  synced,
} from "./reconcile/status.ts";

// Sources: the supervised Kubernetes informer, its list-watch, and the external informer.
export { type ListReason, SupervisedInformer, type SupervisedInformerOptions } from "./source/informer.ts";
export type { CacheEvent, CacheHandlers } from "./source/cache-events.ts";
export { KubeListWatch, type KubeListWatchOptions, type WatchListSupport } from "./source/kube-list-watch.ts";
export {
  DEFAULT_WATCH_IDLE_MS,
  ExternalInformer,
  type ExternalInformerHooks,
  type ExternalInformerOptions,
  type RelistReason,
} from "./source/external-informer.ts";

// The work queue and the worker loop that drains it into a reconciler.
export { DEFAULT_BASE_DELAY_MS, WorkQueue, type WorkQueueOptions } from "./queue/queue.ts";
export { Controller, type ControllerOptions, type ReconciledListener } from "./queue/controller.ts";
export type { ResyncTarget } from "./source/resync.ts";
export type { EnqueueCause } from "./observability/reconcile-scope.ts";

// Tracing decorators: a span per external call and per Kubernetes write.
export { TracedExternalClient, TracedResourceWriter } from "./reconcile/traced.ts";

// The why client's pieces, under `runWhy`: its command line, the fetch, the story.
export {
  fetchHistory,
  historyUrl,
  parseHistory,
  parseWhyArgs,
  renderStory,
  type StoryOptions,
  WhyAccessDeniedError,
  type WhyOptions,
  WhyNothingRecordedError,
  whyUsage,
} from "./observability/why-client.ts";

// Errors: reading an unknown thrown value.
export { asError, orUndefined } from "./support/errors.ts";
