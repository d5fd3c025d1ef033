/**
 * A second cluster for the tour's "two clusters, one cloud" step: a local control plane of its own (envtest's
 * `startLocal`, in a fresh temp folder), the project's CRDs and RBAC in it, and a controller with DEFAULT
 * ownership settings, run the way `npm start` runs its own (a separate process, flags only, as the cluster's
 * least-privilege service account), against the demo's cloud.
 *
 * Everything here is the tour's: `stop()` removes it all. If the tour dies without stopping it, the
 * parent-death signals take the processes along (envtest's for etcd and kube-apiserver, `setpriv` for the
 * controller) and the next `startLocal` sweeps the temp folder. The control plane does not outlive a Ctrl-C
 * (the terminal's SIGINT reaches it, and envtest's exit hooks end it); the controller, in a process group of
 * its own, waits for `stop()`.
 */
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { KubeApi, prepareCluster } from "@shapes/stack";
import { ensureBinaries, type LocalControlPlane, type ProgressLog, startLocal } from "@shapes/envtest";
import { ControllerRunner, controllerCommand, controllerEnv } from "./controller-process.ts";

/** Options of {@link startSecondCluster}. */
export interface SecondClusterOptions {
  /** The demo's cloud. */
  cloudUrl: string;
  /** The file holding the demo's cloud token (kept off the controller's command line). */
  cloudTokenFile: string;
  /** The controller's --identity: its name in the cloud's request log. */
  identity: string;
  /** The controller's log file (appended to). */
  logFile: string;
  /** Progress lines (the binaries are built first when they are not cached: minutes). */
  log: ProgressLog;
  /** How long the control plane, and then the controller, may take to be ready. */
  readyTimeoutMs: number;
  /** Aborted (Ctrl-C): stop starting; what was started is stopped again before the abort is thrown. */
  signal: AbortSignal;
}

/** A running second cluster: its control plane, an admin client, and its controller. */
export interface SecondCluster {
  readonly controlPlane: LocalControlPlane;
  /** The owner id its controller derives (default settings): k8s-<uid of its kube-system namespace>. */
  readonly ownerId: string;
  /** An admin KubeConfig of the second cluster. */
  readonly kubeConfig: KubeConfig;
  /** Shapes, ShapeRefs and Events of the second cluster, as its admin. */
  readonly kube: KubeApi;
  /** Its controller process (`status()` has its pid and metrics URL). */
  readonly controller: ControllerRunner;
  /** Creates the namespace `name` (e.g. the tour's, so that a Shape can have the same namespace/name here). */
  createNamespace(name: string): Promise<void>;
  /** Stops the controller, then the control plane (its temp folder is deleted). Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts the second cluster and its controller; resolves once the controller is ready. */
export async function startSecondCluster(options: SecondClusterOptions): Promise<SecondCluster> {
  const { signal, log } = options;
  let controlPlane: LocalControlPlane | undefined;
  let controller: ControllerRunner | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await controller?.stop();
      await controlPlane?.stop();
    })());
  try {
    const binaries = await ensureBinaries({ log });
    signal.throwIfAborted();
    controlPlane = await startLocal({ binaries, log, startTimeoutMs: options.readyTimeoutMs });
    signal.throwIfAborted();
    const kubeConfig = controlPlane.kubeConfig();
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const { ownerId, controllerIdentity: identity } = await prepareCluster(controlPlane, kubeConfig);
    signal.throwIfAborted();
    const runner = new ControllerRunner({
      ...controllerCommand({
        kubeconfig: identity.kubeconfigPath,
        cloudUrl: options.cloudUrl,
        cloudTokenFile: options.cloudTokenFile,
        metricsAddress: "127.0.0.1:0",
        logLevel: "info",
        identity: options.identity,
      }),
      env: controllerEnv(process.env), // flags only: an OWNER_ID in the shell must not change the defaults
      logFile: options.logFile,
      say: (line) => log(`cluster B's ${line}`),
      readyTimeoutMs: options.readyTimeoutMs,
    });
    controller = runner;
    await runner.start();
    signal.throwIfAborted();
    return {
      controlPlane,
      ownerId,
      kubeConfig,
      kube: new KubeApi(kubeConfig),
      controller: runner,
      async createNamespace(name) {
        await core.createNamespace({ body: { metadata: { name } } });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
