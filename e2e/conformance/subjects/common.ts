/**
 * What every subject does the same way, whatever its API: how the suite sees a resource, the controller's
 * counters summed over its runs, the crash right after a create, an uninstall, and a test namespace removed.
 */
import type { ManagedResource } from "reconcile-kit";
import type { ResourceView } from "reconcile-kit/conformance";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { orUndefined } from "reconcile-kit/parts";
import { type CloudGate, type ControllerProcess, waitFor } from "@shapes/stack";

/** How long `crashAfterCreate` waits for the controller's create to reach the gate. */
const CREATE_DEADLINE_MS = 60_000;

/** What the suite sees of a managed resource. */
export function resourceView(resource: ManagedResource): ResourceView {
  const conditions: ResourceView["conditions"] = {};
  for (const c of resource.status?.conditions ?? []) {
    conditions[c.type] = { status: c.status, reason: c.reason, message: c.message };
  }
  return {
    uid: resource.metadata.uid,
    generation: resource.metadata.generation ?? 0,
    finalizers: resource.metadata.finalizers ?? [],
    deleting: resource.metadata.deletionTimestamp !== undefined,
    conditions,
    observedGeneration: resource.status?.observedGeneration,
    atProvider: resource.status?.atProvider,
  };
}

/** Where a controller's /metrics counts what {@link RunCounters} sums. */
export interface RunMetrics {
  /** The counter of Kubernetes writes (e.g. `shapes_controller_kube_writes_total`). */
  kubeWrites: string;
  /** The counter of finished reconciles, and the `controller` label of the resource reconciler ("shape"). */
  reconciles: string;
  reconciler: string;
}

/**
 * A controller's Kubernetes writes and resource reconciles, summed over all its runs: each run's /metrics
 * starts at zero, so a run's counts are kept when it ends (`closeRun`, called before every stop or kill).
 */
export class RunCounters {
  readonly #controller: () => ControllerProcess | undefined;
  readonly #metrics: RunMetrics;
  readonly #earlier = { kubeWrites: 0, reconciles: 0 };

  constructor(controller: () => ControllerProcess | undefined, metrics: RunMetrics) {
    this.#controller = controller;
    this.#metrics = metrics;
  }

  /** The counters of every run so far, the current one included. */
  async total(): Promise<{ kubeWrites: number; reconciles: number }> {
    const now = await this.#current();
    return {
      kubeWrites: this.#earlier.kubeWrites + now.kubeWrites,
      reconciles: this.#earlier.reconciles + now.reconciles,
    };
  }

  /** Before a run ends: its counters so far become the earlier runs'. */
  async closeRun(): Promise<void> {
    try {
      const last = await this.#current();
      this.#earlier.kubeWrites += last.kubeWrites;
      this.#earlier.reconciles += last.reconciles;
    } catch {
      // Its /metrics did not answer: the run's counts are lost, which only the no-churn window (one run)
      // could notice, and it never ends a run.
    }
  }

  /** The counters of the running controller's current run (zero when none runs). */
  async #current(): Promise<{ kubeWrites: number; reconciles: number }> {
    const controller = this.#controller();
    if (!controller?.running) return { kubeWrites: 0, reconciles: 0 };
    const m = await controller.metrics();
    return {
      kubeWrites: m.sum(this.#metrics.kubeWrites),
      reconciles: m.sum(this.#metrics.reconciles, { controller: this.#metrics.reconciler }),
    };
  }
}

/**
 * The crash right after a create (Subject.crashAfterCreate): holds the answer to `createPath` at the gate,
 * runs `apply`, waits (at most a minute) until the API created the object and answered, kills the controller
 * before it hears the answer, then lets the gate go.
 */
export async function crashAfterCreate(options: {
  gate: CloudGate;
  controller: ControllerProcess | undefined;
  counters: RunCounters;
  createPath: string;
  apply: () => Promise<void>;
  what: string;
}): Promise<void> {
  const { gate, controller } = options;
  if (!controller?.running) throw new Error("crashAfterCreate needs the controller running");
  const held = gate.hold({ method: "POST", path: options.createPath });
  await options.apply();
  const answer = await withDeadline(held, CREATE_DEADLINE_MS, `the controller to create ${options.what}`);
  if (answer.status !== 201 || !answer.clientWaiting) {
    throw new Error(
      `crashAfterCreate missed its moment: the API answered ${answer.status} (${answer.body}), ` +
        `the controller ${answer.clientWaiting ? "still waits" : "is gone"}`,
    );
  }
  await options.counters.closeRun();
  await controller.kill();
  gate.releaseAll(); // its client is dead: nothing is delivered
}

/**
 * An uninstall and a reinstall (Subject.uninstall): `kubectl delete crd <crd>` as the admin of `kubeConfig`,
 * a wait (at most two minutes) until the CRD is gone — the API server removes it once every resource of it
 * went through its finalizers — then `reinstall` (the subject's CRDs, applied again).
 */
export async function uninstallAndReinstall(
  kubeConfig: KubeConfig,
  crd: string,
  reinstall: () => Promise<unknown>,
): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  await api.deleteCustomResourceDefinition({ name: crd });
  await waitFor(
    `the CRD ${crd} to be gone`,
    async () => {
      if (await orUndefined(api.readCustomResourceDefinition({ name: crd })))
        throw new Error(`the CRD ${crd} is still there`);
    },
    { timeoutMs: 120_000 },
  );
  await reinstall();
}

/** A held answer of the gate, or a rejection naming `what` once a minute passed without it. */
export function waitForHeld<T>(held: Promise<T>, what: string): Promise<T> {
  return withDeadline(held, CREATE_DEADLINE_MS, what);
}

/** `promise`, or a rejection naming `what` once `ms` passed without it settling. */
async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${Math.round(ms / 1000)} s waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `base` with `extras` added, getters kept as getters (a spread would call them: a subject's `ownerId`
 * throws until it is set up). How a crash subject is made from a conformance subject.
 */
export function withExtras<B extends object, E extends object>(base: B, extras: E): B & E {
  const both = {};
  Object.defineProperties(both, Object.getOwnPropertyDescriptors(base));
  Object.defineProperties(both, Object.getOwnPropertyDescriptors(extras));
  return both as B & E;
}

/** The custom resources of a plugin, as the Kubernetes API names them. */
export interface PluginKinds {
  group: string;
  version: string;
  /** The managed resource (namespaced). */
  plural: string;
  /** Its intent record (cluster-scoped). */
  intentPlural: string;
}

/**
 * Removes a test namespace from a cluster that outlives the suite: its resources (finalizers stripped), the
 * intent records whose resource was in it (`namespaceOf` reads that from a record), then the namespace.
 * Does not wait for it to be gone.
 */
export async function deleteTestNamespace<Ref extends { metadata: { name: string } }>(
  kubeConfig: KubeConfig,
  kinds: PluginKinds,
  namespace: string,
  namespaceOf: (ref: Ref) => string,
): Promise<void> {
  const { group, version, plural, intentPlural } = kinds;
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
  const resources = (await api.listNamespacedCustomObject({ group, version, plural, namespace })) as {
    items: ManagedResource[];
  };
  for (const r of resources.items) {
    const at = { group, version, plural, namespace, name: r.metadata.name };
    await orUndefined(
      api.patchNamespacedCustomObject({ ...at, body: { metadata: { finalizers: null } } }, mergePatch),
    );
    await orUndefined(api.deleteNamespacedCustomObject(at));
  }
  const refs = (await api.listClusterCustomObject({ group, version, plural: intentPlural })) as {
    items: Ref[];
  };
  for (const ref of refs.items.filter((r) => namespaceOf(r) === namespace)) {
    await orUndefined(
      api.deleteClusterCustomObject({ group, version, plural: intentPlural, name: ref.metadata.name }),
    );
  }
  await orUndefined(kubeConfig.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace }));
}
