/**
 * One e2e stack per test file: a real kube-apiserver + etcd (envtest), the project's CRDs and deploy/
 * manifests (namespace, service account, least-privilege RBAC), a real mock cloud on a temp-file database,
 * and any number of controller processes running as the `shapes-controller` service account.
 *
 *   let stack: Stack;
 *   beforeAll(async () => (stack = await startStack("create-and-update")));
 *   afterAll(() => stack?.stop());
 *
 * `stop()` stops everything the stack started (controllers, cloud, control plane), even after a failed
 * test; envtest's parent-death signal covers a test process that is killed outright.
 *
 * Two clusters, one cloud: `startStack("b", { cloud: a.cloud })` starts a second control plane whose
 * controllers talk to the first stack's cloud (which only the first stack stops).
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { inject } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { startLocal, silentLog, type Identity, type LocalControlPlane } from "../../envtest/src/index.ts";
import { stderrLog } from "../../envtest/src/progress.ts";
import { CLOUD_TOKEN, startTestCloud, type TestCloud } from "./cloud.ts";
import { ControllerProcess, REPO_ROOT, type ControllerOptions } from "./controller.ts";
import { CloudGate } from "./gate.ts";
import { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT, KubeApi, prepareCluster } from "./kube.ts";

export { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT };

/** A running stack. */
export interface Stack {
  /** The local control plane (restartable: `controlPlane.restartApiServer()`). */
  readonly controlPlane: LocalControlPlane;
  /** An admin KubeConfig. */
  readonly kubeConfig: KubeConfig;
  /**
   * The owner id a controller started with its default settings stamps on its cloud shapes: `k8s-` and the
   * uid of this cluster's kube-system namespace (controller/src/core/cluster-identity.ts).
   */
  readonly ownerId: string;
  /** Shapes, ShapeRefs, Events, as the cluster admin. */
  readonly kube: KubeApi;
  /** The mock cloud and a client for it (maybe shared with another stack: `startStack(suite, { cloud })`). */
  readonly cloud: TestCloud;
  /** The least-privilege identity of deploy/rbac.yaml the controllers run as. */
  readonly controllerIdentity: Identity;
  /** Where this stack's controller logs go (e2e/artifacts/<suite>/). */
  readonly artifactsDir: string;
  /**
   * Starts a controller process against this stack (name default "controller"), and by default waits
   * until it is ready. The stack stops it in `stop()`.
   */
  startController(
    options?: Partial<Omit<ControllerOptions, "artifactsDir" | "kubeconfigPath">> & { waitReady?: boolean },
  ): Promise<ControllerProcess>;
  /**
   * Opens a {@link CloudGate} in front of this stack's cloud: give its `url` to a controller as `cloudUrl`
   * to hold a chosen answer (gate.ts). The stack closes it in `stop()`.
   */
  openCloudGate(): Promise<CloudGate>;
  /**
   * Stops every controller, the gates, the cloud (unless it was given: shared) and the control plane. Safe to
   * call twice.
   */
  stop(): Promise<void>;
}

/** Options of {@link startStack}. */
export interface StackOptions {
  /**
   * Share this cloud (another stack's) instead of starting one: two clusters, one cloud. The stack that
   * started a cloud is the one that stops it; a stack given one never does.
   */
  cloud?: TestCloud;
}

/** Starts a stack for the test file `suite` (names the artifacts folder). */
export async function startStack(suite: string, options: StackOptions = {}): Promise<Stack> {
  const artifactsDir = join(REPO_ROOT, "e2e", "artifacts", suite);
  await mkdir(artifactsDir, { recursive: true });
  const log = process.env.ENVTEST_VERBOSE ? stderrLog("envtest") : silentLog;
  const controllers: ControllerProcess[] = [];
  const gates: CloudGate[] = [];
  let controlPlane: LocalControlPlane | undefined;
  let cloud: TestCloud | undefined;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Controllers first (they talk to both), then the cloud, then the control plane.
      await Promise.all(controllers.map((c) => c.stop(5_000)));
      await Promise.all(gates.map((g) => g.close()));
      if (!options.cloud) await cloud?.stop();
      await controlPlane?.stop();
    })());

  try {
    controlPlane = await startLocal({ binaries: inject("envtestBinaries"), log });
    const kubeConfig = controlPlane.kubeConfig();
    const { ownerId, controllerIdentity } = await prepareCluster(controlPlane, kubeConfig);
    cloud = options.cloud ?? (await startTestCloud());
    const cloudUrl = cloud.url;
    const cp = controlPlane;
    const testCloud = cloud;
    return {
      controlPlane: cp,
      kubeConfig,
      ownerId,
      kube: new KubeApi(kubeConfig),
      cloud: testCloud,
      controllerIdentity,
      artifactsDir,
      async startController({ waitReady = true, ...options } = {}) {
        const controller = new ControllerProcess({
          name: "controller",
          cloudUrl,
          cloudToken: CLOUD_TOKEN,
          ...options,
          artifactsDir,
          kubeconfigPath: controllerIdentity.kubeconfigPath,
        });
        controllers.push(controller);
        await controller.start({ waitReady });
        return controller;
      },
      async openCloudGate() {
        const gate = await CloudGate.start(cloudUrl);
        gates.push(gate);
        return gate;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
