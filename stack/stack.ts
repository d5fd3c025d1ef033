/**
 * The local stack, one per test file (or per conformance run): a Kubernetes API (a real kube-apiserver +
 * etcd started by envtest, or an existing cluster), the project's CRDs and deploy/ manifests (namespace,
 * service account, least-privilege RBAC), a real mock cloud on a temp-file database, and any number of
 * controller processes running as the `shapes-controller` service account.
 *
 *   let stack: Stack;
 *   beforeAll(async () => (stack = await startStack("create-and-update", { binaries })));
 *   afterAll(() => stack?.stop());
 *
 * `stop()` stops everything the stack started (controllers, cloud, control plane), even after a failed
 * test; envtest's parent-death signal covers a process that is killed outright.
 *
 * Existing-cluster mode (controller-runtime's USE_EXISTING_CLUSTER): with `useExistingCluster` (default:
 * USE_EXISTING_CLUSTER=true in the environment) no control plane is started; the stack uses the cluster of
 * KUBECONFIG (default ~/.kube/config), applies the CRDs and manifests there (server-side apply: idempotent),
 * and gives the controllers a token of the `shapes-controller` service account (TokenRequest API). `stop()`
 * then deletes the namespaces made with `stack.kube.createNamespace` (with their Shapes and ShapeRefs), never
 * the CRDs, the manifests or the cluster. `stack.controlPlane` is undefined there: a test that restarts the
 * API server or counts its processes skips.
 *
 * Two clusters, one cloud: `startStack("b", { cloud: a.cloud })` starts a second control plane whose
 * controllers talk to the first stack's cloud (which only the first stack stops).
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type BinaryPaths,
  type ControlPlane,
  type Identity,
  type LocalControlPlane,
  type ProgressLog,
  silentLog,
  start,
  startLocal,
  stderrLog,
} from "@shapes/envtest";
import {
  AnswerGate,
  openKubeTap,
  serviceAccountTokenIdentity,
  usesExistingCluster,
  WriteTapProxy,
} from "reconcile-kit/harness";
import { CLOUD_TOKEN, startTestCloud, type TestCloud } from "./cloud.ts";
import { ControllerProcess, REPO_ROOT, type ControllerOptions } from "./controller.ts";
import { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT, KubeApi, prepareCluster } from "./kube.ts";

export { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT, usesExistingCluster };

/** A running stack. */
export interface Stack {
  /**
   * The cluster the stack talks to: `kind: "local"` (started by the stack, stopped with it) or
   * `kind: "existing"` (USE_EXISTING_CLUSTER; left running). Its `kubeconfigPath` is an admin's.
   */
  readonly cluster: ControlPlane;
  /**
   * The local control plane the stack started (restartable: `controlPlane.restartApiServer()`; `pids()`,
   * `logs`, `identity()` with groups), or undefined on an existing cluster: a test that needs it skips.
   */
  readonly controlPlane: LocalControlPlane | undefined;
  /** An admin KubeConfig. */
  readonly kubeConfig: KubeConfig;
  /**
   * The owner id a controller started with its default settings stamps on its cloud shapes: `k8s-` and the
   * uid of this cluster's kube-system namespace (library/src/kube/cluster-identity.ts).
   */
  readonly ownerId: string;
  /**
   * Shapes, ShapeRefs, Events, as the cluster admin. On an existing cluster, the namespaces made with its
   * `createNamespace` are deleted by `stop()`.
   */
  readonly kube: KubeApi;
  /** The mock cloud and a client for it (maybe shared with another stack: `startStack(suite, { cloud })`). */
  readonly cloud: TestCloud;
  /** The least-privilege identity of deploy/rbac.yaml the controllers run as. */
  readonly controllerIdentity: Identity;
  /** Where this stack's controller logs go (default e2e/artifacts/<suite>/). */
  readonly artifactsDir: string;
  /**
   * An identity of the service account `namespace/name` (which must exist): a client certificate from
   * the local control plane's CA, or on an existing cluster a token from the TokenRequest API.
   */
  serviceAccountIdentity(namespace: string, name: string): Promise<Identity>;
  /**
   * Starts a controller process against this stack (name default "controller"), and by default waits
   * until it is ready. Its kubeconfig is the `controllerIdentity`'s unless `kubeconfigPath` says otherwise
   * (a kube tap's: `openKubeTap()`). The stack stops it in `stop()`.
   */
  startController(
    options?: Partial<Omit<ControllerOptions, "artifactsDir">> & { waitReady?: boolean },
  ): Promise<ControllerProcess>;
  /**
   * Opens an {@link AnswerGate} (reconcile-kit/harness) in front of this stack's cloud: give its `url` to a
   * controller as `cloudUrl` to hold a chosen answer. The stack closes it in `stop()`.
   */
  openAnswerGate(): Promise<AnswerGate>;
  /**
   * Opens a write tap (reconcile-kit/harness) in front of the API server that authenticates upstream as the
   * `controllerIdentity`: start a controller with its `kubeconfigPath` to see and fault its Kubernetes
   * writes. The stack closes it (and deletes the kubeconfig) in `stop()`.
   */
  openKubeTap(): Promise<{ tap: WriteTapProxy; kubeconfigPath: string }>;
  /**
   * Opens a write tap (side "external") in front of this stack's cloud: give its `url` to a controller as
   * `cloudUrl`. The stack closes it in `stop()`.
   */
  openExternalTap(): Promise<WriteTapProxy>;
  /**
   * Stops every controller, the gates and taps, the cloud (unless it was given: shared) and a local control plane;
   * on an existing cluster deletes the namespaces made with `kube.createNamespace` instead. Safe to call
   * twice.
   */
  stop(): Promise<void>;
}

/** Options of {@link startStack}. Every field has a default. */
export interface StackOptions {
  /**
   * The kube-apiserver and etcd binaries of a local control plane. Default: KUBEBUILDER_ASSETS, else the
   * build cache (built when empty: minutes). Unused on an existing cluster.
   */
  binaries?: BinaryPaths;
  /**
   * Extra kube-apiserver flags of a local control plane (`--name=value`; one with a default's name replaces
   * it, so `--feature-gates=...` names every gate the stack needs). Unused on an existing cluster.
   */
  apiServerFlags?: readonly string[];
  /**
   * Use the cluster of KUBECONFIG (default ~/.kube/config) instead of starting a local control plane.
   * Default reconcile-kit/harness's `usesExistingCluster()`: USE_EXISTING_CLUSTER=true. Unlike envtest's
   * `start()`, a KUBECONFIG alone does not switch it on.
   */
  useExistingCluster?: boolean;
  /**
   * Share this cloud (another stack's) instead of starting one: two clusters, one cloud. The stack that
   * started a cloud is the one that stops it; a stack given one never does.
   */
  cloud?: TestCloud;
  /** How many writes the cloud's request log keeps (when the stack starts the cloud). Default the cloud's: 1,000. */
  cloudRequestLog?: number;
  /** The folder of the controllers' logs. Default `<repo>/e2e/artifacts/<suite>` (git-ignored). */
  artifactsDir?: string;
  /** envtest's progress lines. Default: none, or stderr when ENVTEST_VERBOSE is set. */
  log?: ProgressLog;
}

/** Starts a stack for `suite` (a test file's name: names the artifacts folder). */
export async function startStack(suite: string, options: StackOptions = {}): Promise<Stack> {
  const artifactsDir = options.artifactsDir ?? join(REPO_ROOT, "e2e", "artifacts", suite);
  await mkdir(artifactsDir, { recursive: true });
  const log = options.log ?? (process.env.ENVTEST_VERBOSE ? stderrLog("envtest") : silentLog);
  const existing = options.useExistingCluster ?? usesExistingCluster();
  const controllers: ControllerProcess[] = [];
  const gates: AnswerGate[] = [];
  const taps: WriteTapProxy[] = [];
  const tapDirs: string[] = [];
  let cluster: ControlPlane | undefined;
  let cloud: TestCloud | undefined;
  let kube: TrackingKubeApi | undefined;
  let identitiesDir: string | undefined;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Controllers first (they talk to both), then the test namespaces, the cloud, the control plane.
      await Promise.all(controllers.map((c) => c.stop(5_000)));
      await Promise.all(gates.map((g) => g.close()));
      await Promise.all(taps.map((t) => t.close()));
      await Promise.all(tapDirs.map((d) => rm(d, { recursive: true, force: true })));
      let cleanup: Error | undefined;
      const madeThere = existing ? kube : undefined;
      if (madeThere) {
        const failed = (
          await Promise.allSettled(madeThere.createdNamespaces.map((ns) => madeThere.deleteNamespace(ns)))
        ).filter((r) => r.status === "rejected");
        if (failed.length > 0) {
          cleanup = new AggregateError(
            failed.map((r) => r.reason as unknown),
            `cannot delete ${failed.length} test namespace(s) of the existing cluster`,
          );
        }
      }
      if (!options.cloud) await cloud?.stop();
      if (identitiesDir) await rm(identitiesDir, { recursive: true, force: true });
      await cluster?.stop();
      if (cleanup) throw cleanup;
    })());

  try {
    // envtest's start() resolves the cluster of KUBECONFIG (or ~/.kube/config) and starts nothing.
    cluster = existing
      ? await start({ useExistingCluster: true, log })
      : await startLocal({
          ...(options.binaries ? { binaries: options.binaries } : {}),
          ...(options.apiServerFlags ? { apiServerFlags: options.apiServerFlags } : {}),
          log,
        });
    const kubeConfig = cluster.kubeConfig();
    const local = cluster.kind === "local" ? cluster : undefined;
    const tokensDir = existing ? await mkdtemp(join(tmpdir(), "shapes-stack-tokens-")) : undefined;
    identitiesDir = tokensDir;
    const theCluster = cluster;
    const serviceAccountIdentity = (namespace: string, name: string): Promise<Identity> =>
      tokensDir
        ? serviceAccountTokenIdentity(kubeConfig, namespace, name, tokensDir)
        : theCluster.serviceAccountIdentity(namespace, name);
    const { ownerId, controllerIdentity } = await prepareCluster(cluster, kubeConfig, {
      serviceAccountIdentity,
    });
    kube = new TrackingKubeApi(kubeConfig);
    cloud =
      options.cloud ??
      (await startTestCloud(
        options.cloudRequestLog === undefined ? {} : { requestLogLimit: options.cloudRequestLog },
      ));
    const cloudUrl = cloud.url;
    const testCloud = cloud;
    return {
      cluster,
      controlPlane: local,
      kubeConfig,
      ownerId,
      kube,
      cloud: testCloud,
      controllerIdentity,
      artifactsDir,
      serviceAccountIdentity,
      async startController({ waitReady = true, ...options } = {}) {
        const controller = new ControllerProcess({
          name: "controller",
          cloudUrl,
          cloudToken: CLOUD_TOKEN,
          ...options,
          artifactsDir,
          kubeconfigPath: options.kubeconfigPath ?? controllerIdentity.kubeconfigPath,
        });
        controllers.push(controller);
        await controller.start({ waitReady });
        return controller;
      },
      async openAnswerGate() {
        const gate = await AnswerGate.start(cloudUrl);
        gates.push(gate);
        return gate;
      },
      async openKubeTap() {
        // A temp folder, not the artifacts: the kubeconfig holds a private key.
        const dir = await mkdtemp(join(tmpdir(), "shapes-kube-tap-"));
        tapDirs.push(dir);
        const opened = await openKubeTap(controllerIdentity.kubeconfigPath, dir);
        taps.push(opened.tap);
        return opened;
      },
      async openExternalTap() {
        const tap = await WriteTapProxy.start({ side: "external", target: cloudUrl });
        taps.push(tap);
        return tap;
      },
      stop,
    };
  } catch (error) {
    await stop().catch(() => {}); // the start's failure is the one to report
    throw error;
  }
}

/** The stack's KubeApi: remembers the namespaces it made, for `stop()` on an existing cluster. */
class TrackingKubeApi extends KubeApi {
  readonly createdNamespaces: string[] = [];

  override async createNamespace(prefix: string): Promise<string> {
    const name = await super.createNamespace(prefix);
    this.createdNamespaces.push(name);
    return name;
  }
}
