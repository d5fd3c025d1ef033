/**
 * What every conformance subject does the same way, whatever its API: how the suite sees a resource, the
 * crash right after a create, an uninstall, a test namespace removed, and a crash subject made from a
 * conformance subject.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { ResourceView } from "../conformance/subject.ts";
import type { ManagedResource } from "../reconcile/contract.ts";
import { orUndefined } from "../support/errors.ts";
import { waitFor } from "../testing/wait.ts";
import type { AnswerGate, HeldAnswer } from "./gate.ts";
import type { ControllerProcess } from "./process.ts";
import type { RunCounters } from "./run-counters.ts";

/** How long `crashAfterCreate` waits for the controller's create to reach the gate. */
const CREATE_DEADLINE_MS = 60_000;

/** What the conformance suite sees of a managed resource (its metadata and status, as the API server has them). */
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

/** Options of {@link crashAfterCreate}. */
export interface CrashAfterCreateOptions {
  /** The gate between the controller and its external API. */
  gate: AnswerGate;
  /** The controller, running. */
  controller: ControllerProcess | undefined;
  /** Its counters: the run the kill ends is closed first. */
  counters: RunCounters;
  /** The path of the create request (method POST unless `createMethod` says otherwise). */
  createPath: string | RegExp;
  /** The create request's method. Default "POST". */
  createMethod?: string;
  /**
   * Whether the held answer says the create committed. Default: a 2xx status. An API that answers a
   * refused write 200 (etcd's failed compare) reads its body.
   */
  committed?: (answer: HeldAnswer) => boolean;
  /** Applies the resource whose create is held. */
  apply: () => Promise<void>;
  /** The resource, for messages ("ns/name"). */
  what: string;
}

/**
 * The crash right after a create (Subject.crashAfterCreate): holds the answer to the create at the gate,
 * runs `apply`, waits (at most a minute) until the API created the object and answered, kills the controller
 * before it hears the answer, then lets the gate go.
 *
 * # Guarantees
 * - The controller is killed (SIGKILL) with the create committed on the API's side and its answer unheard;
 *   the held answer is then dropped, never delivered.
 *
 * # Errors
 * Rejects when the controller does not run, when no create comes within a minute, or when the API's answer
 * says it did not commit or the controller stopped waiting for it (the moment was missed).
 */
export async function crashAfterCreate(options: CrashAfterCreateOptions): Promise<void> {
  const { gate, controller } = options;
  if (!controller?.running) throw new Error("crashAfterCreate needs the controller running");
  const held = gate.hold({ method: options.createMethod ?? "POST", path: options.createPath });
  await options.apply();
  const answer = await withDeadline(held, CREATE_DEADLINE_MS, `the controller to create ${options.what}`);
  const committed = options.committed ?? ((a: HeldAnswer) => a.status >= 200 && a.status < 300);
  if (!committed(answer) || !answer.clientWaiting) {
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
 *
 * # Errors
 * Rejects when the CRD cannot be deleted, is still there after two minutes, or `reinstall` rejects.
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
 * `base` with `extras` added (an extra replaces a property of the same name), getters kept as getters (a
 * spread would call them: a subject's `ownerId` throws until it is set up). How a subject is assembled
 * from its sides, and a crash subject made from a conformance subject.
 */
export function withExtras<B extends object, E extends object>(base: B, extras: E): B & E {
  const both = {};
  Object.defineProperties(both, Object.getOwnPropertyDescriptors(base));
  Object.defineProperties(both, Object.getOwnPropertyDescriptors(extras));
  return both as B & E;
}

/** The custom resources of a plugin, as the Kubernetes API names them. */
export interface PluginKinds {
  /** The API group of both (e.g. "dns.example.com"). */
  group: string;
  /** Their version (e.g. "v1alpha1"). */
  version: string;
  /** The managed resource's kind (e.g. "Record"). */
  kind: string;
  /** The managed resource (namespaced). */
  plural: string;
  /** Its intent record (cluster-scoped). */
  intentPlural: string;
}

/**
 * Removes a test namespace from a cluster that outlives the suite: its resources (finalizers stripped: no
 * controller runs any more to remove them), the intent records whose resource was in it (`namespaceOf`
 * reads that from a record), then the namespace.
 *
 * # Guarantees
 * - Touches only the namespace, the resources in it and the intent records `namespaceOf` maps to it; what
 *   is gone already is no error. Does not wait for the namespace to be gone.
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
