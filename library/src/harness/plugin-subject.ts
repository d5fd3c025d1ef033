/**
 * The Kubernetes side of a conformance subject, for any plugin: the cluster (a local control plane, or the
 * USE_EXISTING_CLUSTER one), the plugin's CRDs and RBAC, its controller as a separate process under its
 * service account, talking to the external API through an {@link AnswerGate} (and, for the crash explorer,
 * through a write tap on each connection), and the resources as a person with kubectl acts on them. What is
 * left to the plugin's subject is its external API: how to start it, and how another person acts on it.
 *
 *   const kube = pluginSubjectKit({ name: "dns records", kinds, ..., startExternal: async () => ... });
 *   const subject: Subject = withExtras(kube.side, { externalNameOf, getExternal, drift, ... });
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { type BinaryPaths, type ControlPlane, installCRDs } from "@shapes/envtest";
import type { Rejected, Subject, Variant } from "../conformance/subject.ts";
import type { CrashSubject } from "../crash-points/subject.ts";
import type { ManagedResource } from "../reconcile/contract.ts";
import { readDefaultOwnerId } from "../kube/cluster-identity.ts";
import { orUndefined } from "../support/errors.ts";
import { serviceAccountIdentityOn, startControlPlane } from "./cluster.ts";
import { AnswerGate, type HeldAnswer, type HoldMatch } from "./gate.ts";
import { applyManifestFile, uniqueName, withKubeHttp } from "./kube.ts";
import { openKubeTap } from "./kube-tap.ts";
import { ControllerProcess } from "./process.ts";
import { type RunMetrics, RunCounters } from "./run-counters.ts";
import {
  crashAfterCreate,
  deleteTestNamespace,
  type PluginKinds,
  resourceView,
  uninstallAndReinstall,
} from "./subject-kit.ts";
import { WriteTapProxy } from "./tap.ts";

/** What the caller of a plugin's subject factory decides: where the binaries and the logs are. */
export interface SubjectHarnessOptions {
  /**
   * The kube-apiserver and etcd binaries of a local control plane (under Vitest, the global setup's). Default:
   * KUBEBUILDER_ASSETS, else envtest's build cache. Unused on an existing cluster.
   */
  binaries?: BinaryPaths;
  /** The folder of the controller's logs (created when missing). Default: `<os tmpdir>/<suite>`. */
  artifactsDir?: string;
}

/** The subject methods {@link pluginSubjectKit} gives: its lifecycle and the Kubernetes side. */
export type SubjectKubeSide = Pick<
  Subject,
  | "name"
  | "ownerId"
  | "annotations"
  | "setUp"
  | "tearDown"
  | "startController"
  | "stopController"
  | "crashAfterCreate"
  | "newNamespace"
  | "apply"
  | "delete"
  | "stripFinalizers"
  | "annotate"
  | "read"
  | "intentExists"
  | "kubeWrites"
  | "reconciles"
  | "uninstall"
  | "restartApiServer"
>;

/** What a plugin's subject writes itself: its external API, as another person acts on it. */
export type SubjectExternalSide = Omit<Subject, keyof SubjectKubeSide>;

/** An intent record as the kit reads it: its name, and what the plugin reads from it. */
export type IntentRecord = KubernetesObject & { metadata: { name: string } };

/** Options of {@link pluginSubjectKit}: what is the plugin's. `Intent` is its intent record's type. */
export interface PluginSubjectOptions<
  Intent extends IntentRecord = IntentRecord,
> extends SubjectHarnessOptions {
  /** Names the subject in test titles ("dns records"). */
  name: string;
  /** Names the artifacts folder and the test namespaces (e.g. "conformance-dns", "crash-points-dns"). */
  suite: string;
  /** The plugin's custom resources. */
  kinds: PluginKinds;
  /** The name of a resource's intent record (the plugin's own mapping). */
  intentNameOf: (namespace: string, name: string) => string;
  /** The namespace of the resource an intent record stands for: to clean an existing cluster. */
  namespaceOfIntent: (intent: Intent) => string;
  /** The folder of the plugin's CRDs (every YAML file in it). */
  crdsDir: string;
  /** Manifests applied after the CRDs, in order: the controller's namespace, service account and RBAC. */
  manifests: readonly string[];
  /** The service account (in those manifests) the controller runs as. */
  serviceAccount: { namespace: string; name: string };
  /** The spec of a variant (its managed fields): `apply` adds the deletion and management policies. */
  specOf: (variant: Variant | Rejected) => Record<string, unknown>;
  /** The annotation keys of the library's conventions for the resource kind. */
  annotations: Subject["annotations"];
  /** Where the controller's /metrics counts its Kubernetes writes and reconciles. */
  metrics: RunMetrics;
  /**
   * The controller's process name and command line (after node), given where its external API and its
   * kubeconfig are. Its resync period must be minutes (within a scenario only an event, a start or the
   * refresh annotation explains a reconcile); a short leak grace (seconds) lets the sweep be seen.
   */
  controller: { name: string; args: (at: { externalUrl: string; kubeconfigPath: string }) => string[] };
  /** Starts the external API for one setUp: its base URL, and how to stop it. */
  startExternal: () => Promise<{ url: string; stop(): Promise<void> }>;
  /**
   * The create request whose answer `crashAfterCreate` holds, and whether a held answer says it committed
   * (default: a 2xx).
   */
  create: HoldMatch & { committed?: (answer: HeldAnswer) => boolean };
  /** Requests through the gate that `countedWrites()` counts (an API that keeps no count per client). */
  countWrites?: (method: string, path: string) => boolean;
  /** A write tap on each of the controller's connections, for the crash explorer. Default false. */
  tapped?: boolean;
}

/** What {@link pluginSubjectKit} gives. */
export interface PluginSubjectKit {
  /** The subject's lifecycle and Kubernetes side: complete it with the external side (`withExtras`). */
  readonly side: SubjectKubeSide;
  /** The taps of a `tapped` kit, once set up: a {@link CrashSubject}'s `taps`. */
  readonly taps: CrashSubject["taps"];
  /** Kills the controller (SIGKILL), its counters kept: a {@link CrashSubject}'s `killController`. */
  killController(): Promise<void>;
  /** The admin KubeConfig of the cluster, once set up. */
  readonly kubeConfig: KubeConfig;
  /** The requests `countWrites` picked since setUp (0 without it). */
  countedWrites(): number;
}

/** What a kit started, for tearDown. */
interface Running {
  cluster: ControlPlane;
  kubeConfig: KubeConfig;
  ownerId: string;
  external: { url: string; stop(): Promise<void> };
  gate: AnswerGate;
  controller: ControllerProcess;
  tokensDir: string;
  taps: WriteTapProxy[];
  counted: () => number;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * The lifecycle and Kubernetes side of a plugin's conformance (and crash) subject.
 *
 * # Guarantees
 * - `setUp` starts, in order: the cluster ({@link startControlPlane}: local unless USE_EXISTING_CLUSTER=true),
 *   the CRDs (waiting until served) and `manifests`, the service account's identity, the external API, the
 *   gate (and the taps). A setUp that fails stops what it started, and rejects with the first failure.
 * - `tearDown` stops the controller, then on an existing cluster deletes every namespace `newNamespace` made
 *   (with their resources and intent records), then closes the taps, the gate, the external API and a local
 *   cluster. The CRDs and manifests of an existing cluster stay.
 * - `kubeWrites` and `reconciles` are summed over every run of the controller ({@link RunCounters}).
 * - `apply` is a server-side apply, as `kubectl apply --server-side` (field manager `<suite>`).
 *
 * # Assumptions
 * - @shapes/envtest is installed (an optional peer dependency of reconcile-kit).
 * - The suite skips `uninstall` and `restartApiServer` on an existing cluster; called there anyway,
 *   `restartApiServer` rejects.
 */
export function pluginSubjectKit<Intent extends IntentRecord>(
  options: PluginSubjectOptions<Intent>,
): PluginSubjectKit {
  const { kinds } = options;
  let running: Running | undefined;
  const namespaces: string[] = [];
  const the = (): Running => {
    if (!running) throw new Error(`the ${options.name} subject is not set up (call setUp first)`);
    return running;
  };
  const counters = new RunCounters(() => running?.controller, options.metrics);
  const custom = () => the().kubeConfig.makeApiClient(CustomObjectsApi);
  const at = (namespace: string, name: string) => ({
    group: kinds.group,
    version: kinds.version,
    plural: kinds.plural,
    namespace,
    name,
  });
  const tap = (side: "kube" | "external"): WriteTapProxy => {
    const found = running?.taps.find((t) => t.side === side);
    if (!found) throw new Error(`the ${options.name} subject has no ${side} tap (tapped, and set up?)`);
    return found;
  };

  const side: SubjectKubeSide = {
    name: options.name,
    get ownerId() {
      return the().ownerId;
    },
    annotations: options.annotations,

    async setUp() {
      const artifactsDir = options.artifactsDir ?? join(tmpdir(), options.suite);
      await mkdir(artifactsDir, { recursive: true });
      const parts: Partial<Running> = { taps: [] };
      try {
        const cluster = (parts.cluster = await startControlPlane(
          options.binaries ? { binaries: options.binaries } : {},
        ));
        const kubeConfig = cluster.kubeConfig();
        await installCRDs(kubeConfig, { dir: options.crdsDir });
        for (const file of options.manifests) await applyManifestFile(kubeConfig, file, options.suite);
        parts.tokensDir = await mkdtemp(join(tmpdir(), `${options.suite}-tokens-`));
        const { namespace, name } = options.serviceAccount;
        const identity = await serviceAccountIdentityOn(
          cluster,
          kubeConfig,
          namespace,
          name,
          parts.tokensDir,
        );
        const external = (parts.external = await options.startExternal());
        const gate = (parts.gate = await AnswerGate.start(external.url));
        const counted = options.countWrites ? gate.count(options.countWrites) : () => 0;
        let kubeconfigPath = identity.kubeconfigPath;
        let externalUrl = gate.url;
        if (options.tapped) {
          // The kube tap's kubeconfig holds a private key: the tokens folder, deleted at tearDown.
          const kube = await openKubeTap(identity.kubeconfigPath, parts.tokensDir);
          parts.taps?.push(kube.tap);
          kubeconfigPath = kube.kubeconfigPath;
          const externalTap = await WriteTapProxy.start({ side: "external", target: gate.url });
          parts.taps?.push(externalTap);
          externalUrl = externalTap.url;
        }
        running = {
          cluster,
          kubeConfig,
          ownerId: await withKubeHttp(kubeConfig, readDefaultOwnerId),
          external,
          gate,
          controller: new ControllerProcess({
            name: options.controller.name,
            artifactsDir,
            args: options.controller.args({ externalUrl, kubeconfigPath }),
          }),
          tokensDir: parts.tokensDir,
          taps: parts.taps ?? [],
          counted,
        };
      } catch (error) {
        await stopAll(parts).catch(() => {}); // the setup's failure is the one to report
        throw error;
      }
    },
    async tearDown() {
      const was = running;
      running = undefined;
      if (!was) return;
      await was.controller.stop(5_000);
      // On a cluster that outlives us, take away what we made; a local one goes as a whole.
      if (was.cluster.kind === "existing") {
        for (const ns of namespaces.splice(0)) {
          await deleteTestNamespace<Intent>(was.kubeConfig, kinds, ns, options.namespaceOfIntent);
        }
      }
      await stopAll(was);
    },
    async startController() {
      const { controller } = the();
      // Already running (a scenario's cleanup after a failure): only wait until it is ready.
      if (controller.running) await controller.waitReady();
      else await controller.start();
    },
    async stopController() {
      await counters.closeRun();
      await running?.controller.stop();
    },
    async crashAfterCreate(namespace, name) {
      const { gate, controller } = the();
      await crashAfterCreate({
        gate,
        controller,
        counters,
        createMethod: options.create.method,
        createPath: options.create.path,
        ...(options.create.committed ? { committed: options.create.committed } : {}),
        apply: () => side.apply(namespace, name, "first"),
        what: `${namespace}/${name}`,
      });
    },

    async newNamespace() {
      const name = uniqueName(options.suite);
      await the()
        .kubeConfig.makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name } } });
      namespaces.push(name);
      return name;
    },
    async apply(namespace, name, variant, applyOptions = {}) {
      const body = {
        apiVersion: `${kinds.group}/${kinds.version}`,
        kind: kinds.kind,
        metadata: {
          namespace,
          name,
          ...(applyOptions.annotations ? { annotations: applyOptions.annotations } : {}),
        },
        spec: {
          ...options.specOf(variant),
          ...(applyOptions.deletionPolicy ? { deletionPolicy: applyOptions.deletionPolicy } : {}),
          ...(applyOptions.managementPolicies ? { managementPolicies: applyOptions.managementPolicies } : {}),
        },
      };
      const api = KubernetesObjectApi.makeApiClient(the().kubeConfig);
      await api.patch(body, undefined, undefined, options.suite, true, PatchStrategy.ServerSideApply);
    },
    async delete(namespace, name) {
      await custom().deleteNamespacedCustomObject(at(namespace, name));
    },
    async stripFinalizers(namespace, name) {
      const body = { metadata: { finalizers: null } };
      await custom().patchNamespacedCustomObject({ ...at(namespace, name), body }, mergePatch);
    },
    async annotate(namespace, name, key, value) {
      const body = { metadata: { annotations: { [key]: value } } };
      await custom().patchNamespacedCustomObject({ ...at(namespace, name), body }, mergePatch);
    },
    async read(namespace, name) {
      const read = custom().getNamespacedCustomObject(at(namespace, name)) as Promise<ManagedResource>;
      const resource = await orUndefined(read);
      return resource && resourceView(resource);
    },
    async intentExists(namespace, name) {
      const intent = custom().getClusterCustomObject({
        group: kinds.group,
        version: kinds.version,
        plural: kinds.intentPlural,
        name: options.intentNameOf(namespace, name),
      });
      return (await orUndefined(intent)) !== undefined;
    },
    async kubeWrites() {
      return (await counters.total()).kubeWrites;
    },
    async reconciles() {
      return (await counters.total()).reconciles;
    },

    async uninstall() {
      const { kubeConfig } = the();
      await uninstallAndReinstall(kubeConfig, `${kinds.plural}.${kinds.group}`, () =>
        installCRDs(kubeConfig, { dir: options.crdsDir }),
      );
    },
    async restartApiServer() {
      const { cluster } = the();
      if (cluster.kind !== "local") throw new Error("cannot restart the API server of an existing cluster");
      await cluster.restartApiServer();
    },
  };

  return {
    side,
    taps: {
      get kube() {
        return tap("kube");
      },
      get external() {
        return tap("external");
      },
    },
    async killController() {
      await counters.closeRun();
      await running?.controller.kill();
    },
    get kubeConfig() {
      return the().kubeConfig;
    },
    countedWrites: () => running?.counted() ?? 0,
  };
}

/** Stops what was started, in order: the controller, the taps, the gate, the external API, the cluster. */
async function stopAll(parts: Partial<Running>): Promise<void> {
  await parts.controller?.stop(5_000);
  for (const tap of parts.taps ?? []) await tap.close();
  await parts.gate?.close();
  await parts.external?.stop();
  if (parts.tokensDir) await rm(parts.tokensDir, { recursive: true, force: true });
  await parts.cluster?.stop();
}
