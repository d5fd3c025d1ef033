/**
 * A fresh stack for one chaos trial, from the pieces of stack/ (not its `startStack`, whose cloud is the
 * plain mock cloud): one in-process chaos cloud on a temp-file database, shared by one or more clusters. Each
 * cluster is a local control plane of its own (envtest `startLocal`, restartable) with the project's CRDs,
 * deploy/namespace.yaml and rbac.yaml (and what its topology adds: deploy/sharding/rbac.yaml for a ring),
 * and the least-privilege identity of the `shapes-controller` service account. The controllers are started
 * by the trial (replicas.ts), as separate processes under that identity, one set per cluster.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type Identity,
  type LocalControlPlane,
  type ProgressLog,
  silentLog,
  startLocal,
} from "@shapes/envtest";
import { CONTROLLER_NAMESPACE, KubeApi, prepareCluster } from "@shapes/stack";
import { applyManifestFile } from "reconcile-kit/harness";

export { CONTROLLER_NAMESPACE };
import { startChaosCloud, type ChaosCloud } from "./cloud.ts";

/** The names of a trial's clusters, in order: the first is the only one in a one-cluster topology. */
export const CLUSTER_NAMES = ["east", "west"] as const;

/** One cluster of a stack: a control plane with the project installed. */
export interface ChaosCluster {
  /** `east`, `west`: in the controllers' identities and in violations' subjects. */
  readonly name: string;
  readonly controlPlane: LocalControlPlane;
  /** An admin KubeConfig. */
  readonly kubeConfig: KubeConfig;
  /** The owner id its controllers derive by default: k8s-<uid of this cluster's kube-system namespace>. */
  readonly ownerId: string;
  /** Shapes, ShapeRefs, Events, namespaces, as the cluster admin. */
  readonly kube: KubeApi;
  /** The identity its controllers run as. */
  readonly controllerIdentity: Identity;
}

/** A running chaos stack: its clusters around one cloud. */
export interface ChaosStack {
  /** One or more (at most {@link CLUSTER_NAMES}' length), each with its own owner id. */
  readonly clusters: readonly ChaosCluster[];
  readonly cloud: ChaosCloud;
  /** Stops the cloud and every control plane (the trial stops its controllers first). Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts a stack; everything it started is stopped again if a step fails. */
export async function startChaosStack({
  seedRandom,
  clusters: count = 1,
  manifests = [],
  log = silentLog,
}: {
  /** The dice of the cloud's injected error and throttle rates. */
  seedRandom: () => number;
  /** How many clusters share the cloud. Default 1. */
  clusters?: number;
  /** Manifest files applied to every cluster after the project's (replicas.ts `manifestsFor`). */
  manifests?: readonly string[];
  /** envtest's progress lines. */
  log?: ProgressLog;
}): Promise<ChaosStack> {
  if (!Number.isInteger(count) || count < 1 || count > CLUSTER_NAMES.length) {
    throw new Error(`cannot start a chaos stack of ${count} clusters: 1 to ${CLUSTER_NAMES.length}`);
  }
  const controlPlanes: LocalControlPlane[] = [];
  let cloud: ChaosCloud | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await cloud?.close();
      await Promise.all(controlPlanes.map((c) => c.stop()));
    })());
  try {
    // The control planes start side by side (envtest retries when another takes a port meanwhile); all
    // of them settle before a failure is thrown, so that stop() finds every one that started.
    const started = await Promise.allSettled(
      CLUSTER_NAMES.slice(0, count).map(async (name): Promise<ChaosCluster> => {
        const controlPlane = await startLocal({ log });
        controlPlanes.push(controlPlane);
        const kubeConfig = controlPlane.kubeConfig();
        const { ownerId, controllerIdentity } = await prepareCluster(controlPlane, kubeConfig);
        for (const file of manifests) await applyManifestFile(kubeConfig, file);
        return { name, controlPlane, kubeConfig, ownerId, kube: new KubeApi(kubeConfig), controllerIdentity };
      }),
    );
    const clusters = started.map((r) => {
      if (r.status === "rejected") throw r.reason;
      return r.value;
    });
    cloud = await startChaosCloud({ seedRandom });
    return { clusters, cloud, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
