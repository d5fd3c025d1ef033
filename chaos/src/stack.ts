/**
 * A fresh stack for one chaos trial, without vitest (e2e/harness/stack.ts takes its binaries from vitest's
 * `inject`): a local control plane (envtest `startLocal`, restartable), the project's CRDs, deploy/
 * namespace.yaml and rbac.yaml, the least-privilege identity of the `shapes-controller` service account,
 * and an in-process chaos cloud on a temp-file database. The controllers are started by the trial
 * (replicas.ts), as separate processes under that identity.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import {
  silentLog,
  startLocal,
  type Identity,
  type LocalControlPlane,
  type ProgressLog,
} from "../../envtest/src/index.ts";
import {
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  KubeApi,
  installProjectManifests,
} from "../../e2e/harness/kube.ts";

export { CONTROLLER_NAMESPACE };
import { startChaosCloud, type ChaosCloud } from "./cloud.ts";

/** A running chaos stack. */
export interface ChaosStack {
  readonly controlPlane: LocalControlPlane;
  /** An admin KubeConfig. */
  readonly kubeConfig: KubeConfig;
  /** Shapes, ShapeRefs, Events, namespaces, as the cluster admin. */
  readonly kube: KubeApi;
  readonly cloud: ChaosCloud;
  /** The identity the controllers run as. */
  readonly controllerIdentity: Identity;
  /** Stops the cloud and the control plane (the trial stops its controllers first). Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts a stack; everything it started is stopped again if a step fails. */
export async function startChaosStack({
  seedRandom,
  log = silentLog,
}: {
  /** The dice of the cloud's injected error and throttle rates. */
  seedRandom: () => number;
  /** envtest's progress lines. */
  log?: ProgressLog;
}): Promise<ChaosStack> {
  let controlPlane: LocalControlPlane | undefined;
  let cloud: ChaosCloud | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await cloud?.close();
      await controlPlane?.stop();
    })());
  try {
    controlPlane = await startLocal({ log });
    const kubeConfig = controlPlane.kubeConfig();
    await installProjectManifests(kubeConfig);
    const controllerIdentity = await controlPlane.serviceAccountIdentity(
      CONTROLLER_NAMESPACE,
      CONTROLLER_SERVICE_ACCOUNT,
    );
    cloud = await startChaosCloud({ seedRandom });
    return {
      controlPlane,
      kubeConfig,
      kube: new KubeApi(kubeConfig),
      cloud,
      controllerIdentity,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
