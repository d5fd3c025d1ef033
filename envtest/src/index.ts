/**
 * envtest: a real Kubernetes control plane (etcd + kube-apiserver) for tests and the demo, built from
 * Go modules and started as child processes — the TypeScript counterpart of controller-runtime's envtest.
 *
 * ```ts
 * import { start, installCRDs } from "@shapes/envtest";
 * const cp = await start();                 // KUBECONFIG's cluster, or a local one
 * await installCRDs(cp.kubeconfigPath);     // crds/*.yaml, waits until served
 * const kc = cp.kubeConfig();               // a client-node KubeConfig for the admin
 * await cp.stop();
 * ```
 */
export {
  connectExisting,
  serviceAccountUser,
  start,
  startLocal,
  sweepStaleTempDirs,
  type ControlPlane,
  type ControlPlaneBase,
  type ControlPlanePorts,
  type ExistingCluster,
  type Identity,
  type LocalControlPlane,
  type StartOptions,
} from "./control-plane.ts";
export {
  binariesIn,
  cacheDir,
  ensureBinaries,
  readBinaryVersions,
  resolveSource,
  useExistingClusterFromEnv,
  type BinaryPaths,
  type BinaryVersions,
  type ControlPlaneSource,
} from "./assets.ts";
export {
  apiMessage,
  CRDS_DIR,
  installCRDs,
  readCRDs,
  type CrdManifest,
  type InstallOptions,
} from "./crds.ts";
export { loadKubeConfig } from "./kubeconfig.ts";
export type { UserInfo } from "./pki.ts";
export { silentLog, stderrLog, type ProgressLog } from "./progress.ts";
export { ETCD_VERSION, KUBERNETES_VERSION } from "./versions.ts";
export { apiServerFlags, SERVICE_ACCOUNT_ISSUER } from "./apiserver.ts";
export { cacheRoot } from "./assets.ts";
export { run } from "./build.ts";
export { TEMP_PREFIX } from "./control-plane.ts";
export { type CrdSchema } from "./crds.ts";
export { etcdFlags, etcdHealth } from "./etcd.ts";
export { flagName, flagValue } from "./flags.ts";
export { renderKubeconfig, writePrivateFile } from "./kubeconfig.ts";
export { withLock } from "./lock.ts";
export {
  type Attributes,
  type AttributeValue,
  OTLP_TRACES_PATH,
  OtlpReceiver,
  type OtlpReceiverOptions,
  type ReceivedSpan,
  startOtlpReceiver,
  type WaitForSpansOptions,
} from "./otlp-receiver.ts";
export { clusterDown, clusterStatus, clusterUp, readState } from "./persistent.ts";
export { ADMIN, ensurePki } from "./pki-dir.ts";
export {
  createCertificateAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  userInfoOf,
} from "./pki.ts";
export { freePorts, isPortFree } from "./ports.ts";
export { type Child, type ExitStatus, isAlive, isInvokedDirectly, spawnChild } from "./processes.ts";
export { elapsed } from "./progress.ts";
export { type ClientTls, httpsGet } from "./readiness.ts";
export { startTlsApiStub, type TlsApiStub } from "./tls-api.ts";
export { MINIMUM_GO_VERSION } from "./versions.ts";
