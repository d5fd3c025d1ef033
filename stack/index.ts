/**
 * The local stack: a real control plane (envtest's, or an existing cluster with USE_EXISTING_CLUSTER=true),
 * the project's manifests, the mock cloud, the Shapes controller as separate processes, and the helpers to
 * drive them and wait for convergence. Used by the e2e tests, the demo, the bench and the chaos trials. Start
 * with stack.ts (`startStack`); README.md says more. What is not the Shapes controller's (the process runner,
 * the answer gate, the write taps, service-account kubeconfigs, manifest apply) is reconcile-kit/harness's.
 */
export {
  startStack,
  usesExistingCluster,
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  type Stack,
  type StackOptions,
} from "./stack.ts";
export {
  ControllerProcess,
  describeLogLine,
  forbiddenLines,
  LOG_LEVEL,
  type ControllerOptions,
  type LogLine,
} from "./controller.ts";
export {
  CloudApi,
  CloudCallError,
  CLOUD_TOKEN,
  writesTo,
  type CloudShape,
  type FaultRule,
  type NewCloudShape,
  type RequestLogEntry,
  type TestCloud,
} from "./cloud.ts";
export {
  KubeApi,
  installProjectManifests,
  prepareCluster,
  conditionOf,
  type Shape,
  type ShapeRef,
  type PrepareOptions,
  type PreparedCluster,
  type ShapeSpec,
} from "./kube.ts";
export {
  waitConverged,
  waitNameConflict,
  checkEqual,
  checkFields,
  checkShapeRef,
  type Converged,
} from "./converged.ts";
export { MetricsSnapshot, METRIC, CLOUD_WRITE_VERBS } from "./metrics.ts";
export { waitFor, DEFAULT_WAIT_MS, type WaitOptions } from "./wait.ts";
export { launchChromium, type Misbehaviour, requireChromium, watchMisbehaviour } from "./browser.ts";
export { CLOUD_ADMIN_TOKEN } from "./cloud.ts";
export { CONTROLLER_BUILD_MAIN, REPO_ROOT } from "./controller.ts";
export {
  CLIENT_NODE_MODULES,
  readRecordedModules,
  RECORD_MODULES_FILE,
  RECORD_MODULES_HOOK,
} from "./modules.ts";
