/**
 * A FRESH local stack per configuration and repeat: a real kube-apiserver + etcd (envtest's startLocal),
 * the project's CRDs and deploy/ manifests (namespace, service account, least-privilege RBAC), the mock
 * cloud as its own process on a temp-file database, and the controller as its own process under the
 * `shapes-controller` service account — the same stack as stack/stack.ts (the e2e suite's), with the cloud
 * as a process of its own and kube-apiserver flags of the bench's choosing.
 *
 * Children die with the bench even when it is killed (envtest's parent-death signal); `stop()` stops them
 * in order: controller, cloud, control plane.
 */
import { mkdir } from "node:fs/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type BinaryPaths,
  type Identity,
  type LocalControlPlane,
  silentLog,
  startLocal,
} from "@shapes/envtest";
import { PooledKubeConfig } from "reconcile-kit/client-node";
import { CLOUD_TOKEN, KubeApi, prepareCluster } from "@shapes/stack";
import { startCloudProcess, type CloudProcess } from "./cloud-process.ts";
import { BenchController } from "./controller.ts";
import type { ProcessRole } from "./cpu.ts";
import { ApiServerMetrics } from "./requests.ts";

/** How the benchmarked controller runs (its flags beyond the stack's own). */
export interface ControllerRun {
  /** Names the log files: `<name>.run<N>.log` in the stack's folder. */
  name: string;
  /** The configuration's flags (`--workers=1`, ...). */
  flags: readonly string[];
  resyncPeriodMs: number;
  /** Node flags before the script (`--cpu-prof`, ...). */
  nodeFlags?: readonly string[];
  /** Environment variables of this controller, over the stack's (the module-recording hook's file). */
  env?: Readonly<Record<string, string>>;
  /** The script node runs: the sources by default; CONTROLLER_BUILD_MAIN (the image's build) with `--build`. */
  script?: string;
}

/** A running stack. */
export interface BenchStack {
  readonly controlPlane: LocalControlPlane;
  /** The cluster admin's KubeConfig (the workload and the watches use it). */
  readonly kubeConfig: KubeConfig;
  /** The owner id the controller derives by default: k8s-<uid of this cluster's kube-system namespace>. */
  readonly ownerId: string;
  readonly kube: KubeApi;
  readonly cloud: CloudProcess;
  /** kube-apiserver's own request counters. */
  readonly apiServerMetrics: ApiServerMetrics;
  /** The least-privilege identity the controller runs as. */
  readonly controllerIdentity: Identity;
  /** This stack's folder: controller and cloud logs, the cloud's database, CPU profiles. */
  readonly dir: string;
  /** The stack's processes by role, for CPU accounting (the controller's when one runs). */
  pids(): Partial<Record<ProcessRole, number>>;
  /** Creates a controller (not started). The stack stops it in `stop()`. */
  controller(run: ControllerRun): BenchController;
  /** Stops every controller, the cloud and the control plane. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of {@link startBenchStack}. */
export interface BenchStackOptions {
  /** Flags for kube-apiserver (e.g. `--profiling=true` to read its /debug/pprof). */
  apiServerFlags?: readonly string[];
  /**
   * Environment variables for the cloud and every controller, over the bench's own: the `tracing`
   * configuration's OTEL_EXPORTER_OTLP_ENDPOINT.
   */
  env?: Readonly<Record<string, string>>;
}

/** Starts a stack whose files go to `dir`. `binaries`: envtest's (found or built once by the caller). */
export async function startBenchStack(
  dir: string,
  binaries: BinaryPaths,
  { apiServerFlags = [], env = {} }: BenchStackOptions = {},
): Promise<BenchStack> {
  await mkdir(dir, { recursive: true });
  const controllers: BenchController[] = [];
  let controlPlane: LocalControlPlane | undefined;
  let cloud: CloudProcess | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.all(controllers.map((c) => c.stop(10_000)));
      await cloud?.stop();
      await controlPlane?.stop();
    })());

  try {
    // Both start at once: the control plane takes seconds, the cloud well under one.
    [controlPlane, cloud] = await Promise.all([
      startLocal({ binaries, log: silentLog, apiServerFlags }),
      startCloudProcess(dir, { env }),
    ]);
    // The workload's client reuses its connections, as kubectl would (the controller's PooledKubeConfig).
    const kubeConfig = new PooledKubeConfig();
    kubeConfig.loadFromString(controlPlane.kubeConfig().exportConfig());
    const { ownerId, controllerIdentity } = await prepareCluster(controlPlane, kubeConfig);
    const cp = controlPlane;
    const theCloud = cloud;
    return {
      controlPlane: cp,
      kubeConfig,
      ownerId,
      kube: new KubeApi(kubeConfig),
      cloud: theCloud,
      apiServerMetrics: new ApiServerMetrics(kubeConfig),
      controllerIdentity,
      dir,
      pids() {
        const { apiServer, etcd } = cp.pids();
        const running = controllers.findLast((c) => c.running);
        return { apiServer, etcd, cloud: theCloud.pid, ...(running ? { controller: running.pid } : {}) };
      },
      controller(run) {
        const controller = new BenchController({
          name: run.name,
          artifactsDir: dir,
          kubeconfigPath: controllerIdentity.kubeconfigPath,
          cloudUrl: theCloud.url,
          cloudToken: CLOUD_TOKEN,
          resyncPeriod: `${run.resyncPeriodMs}ms`,
          // The controller's default grace: the bench never makes leaks, and a short one would only add sweeps.
          leakGrace: "60s",
          // info, not the harness's debug: a log line per reconcile would be part of what is measured.
          logLevel: "info",
          extraArgs: run.flags,
          nodeFlags: run.nodeFlags ?? [],
          ...(run.script === undefined ? {} : { script: run.script }),
          env: { ...env, ...run.env },
        });
        controllers.push(controller);
        return controller;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
