/**
 * The Shapes controller's metric names. Reading /metrics (MetricsSnapshot: the Prometheus text format parsed,
 * sums over the samples whose labels match) is reconcile-kit/harness's.
 */
export { MetricsSnapshot, type Sample } from "reconcile-kit/harness";

/** The prefix of every controller metric. */
export const PREFIX = "shapes_controller_";

/** The cloud verbs that change something (as the controller's cloud client labels them). */
export const CLOUD_WRITE_VERBS = ["create", "patch", "update", "delete"] as const;

/** The counters the tests, the tour and the bench read, by their full names. */
export const METRIC = {
  kubeWrites: `${PREFIX}kube_writes_total`,
  externalRequests: `${PREFIX}external_requests_total`,
  driftRepairs: `${PREFIX}drift_repairs_total`,
  leaksRemoved: `${PREFIX}leaks_removed_total`,
  foreignObjectsSeen: `${PREFIX}foreign_objects_seen_total`,
  reconciles: `${PREFIX}reconcile_total`,
  informerRestarts: `${PREFIX}informer_restarts_total`,
  leader: `${PREFIX}leader`,
  ownerInfo: `${PREFIX}owner_info`,
  adoptions: `${PREFIX}adoptions_total`,
  ringMembers: `${PREFIX}ring_members`,
  ringOwnedShare: `${PREFIX}ring_owned_share`,
  ringOwnedObjects: `${PREFIX}ring_owned_objects`,
  ringHandovers: `${PREFIX}ring_handovers_total`,
} as const;
