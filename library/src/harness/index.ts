/**
 * reconcile-kit/harness: what a proof of a controller needs besides the controller — a local control plane
 * or the USE_EXISTING_CLUSTER one, a service account's kubeconfig and the manifests applied, the controller
 * run as its own process (waiting for /readyz, its logs and /metrics read, its counters summed over
 * restarts), a gate that holds the external API's answer to one request, the write taps of the crash
 * explorer, and the Kubernetes side of a conformance subject ({@link pluginSubjectKit}). A plugin's subject
 * is then what is truly its own: its external API. Needs @shapes/envtest installed (an optional peer
 * dependency of the package): it starts control planes and processes. README.md says more.
 */
export * from "./cluster.ts";
export * from "./gate.ts";
export * from "./kube.ts";
export * from "./kube-tap.ts";
export * from "./metrics.ts";
export * from "./plugin-subject.ts";
export * from "./process.ts";
export * from "./run-counters.ts";
export * from "./subject-kit.ts";
export * from "./tap.ts";
export { waitFor, DEFAULT_WAIT_MS, type WaitOptions } from "../testing/wait.ts";
