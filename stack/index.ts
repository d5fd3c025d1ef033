/**
 * The e2e harness: one real stack per test file (envtest control plane + project manifests + mock cloud),
 * the controller as a separate process, and the few helpers the scenarios need. Start with stack.ts.
 */
export {
  startStack,
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
  applyManifestFile,
  conditionOf,
  uniqueName,
  type Shape,
  type ShapeRef,
  type ShapeSpec,
} from "./kube.ts";
export { CloudGate, type HeldAnswer, type HoldMatch } from "./gate.ts";
export { MetricsSnapshot, METRIC, CLOUD_WRITE_VERBS } from "./metrics.ts";
export { waitFor, DEFAULT_WAIT_MS, type WaitOptions } from "./wait.ts";
