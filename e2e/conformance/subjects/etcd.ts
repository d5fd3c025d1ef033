/**
 * The etcd controller (examples/etcd-controller/) as a conformance {@link Subject}: a control plane (a local
 * one; the KUBECONFIG cluster only with USE_EXISTING_CLUSTER=true), the example's CRDs and rbac.yaml, a
 * SEPARATE etcd (the binary the control plane is built with, started by the example's EtcdServer on its own
 * ports and data), and the controller as a separate process (`node examples/etcd-controller/src/main.ts`)
 * under the least-privilege identity of rbac.yaml, talking to etcd through a {@link CloudGate} that passes
 * everything through until `crashAfterCreate` holds the answer to one create. Logs go to
 * e2e/artifacts/conformance-etcd/ (the crash subject's to crash-points-etcd/).
 *
 * Variants: "first" is the value "first", "second" the value "second". Drift puts "drifted"; foreign keys
 * hold "foreign". "rejected" is a value of 10,000 characters: the CRD allows it, etcd refuses the request
 * for good (`etcdserver: request is too large`: the harness starts it with --max-request-bytes 8 KiB).
 *
 * Counters: `externalWrites` counts the controller's write requests (txn, put, deleterange) in front of the
 * gate (etcd counts no client's writes), `kubeWrites` and `reconciles` the controller's /metrics, summed over
 * its runs (each run starts at zero).
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { orUndefined, readDefaultOwnerId } from "reconcile-kit/parts";
import type { ExternalView, Subject, Variant } from "reconcile-kit/conformance";
import {
  type CrashSubject,
  kubeWriteLabel,
  restWriteAttribution,
  type TappedWrite,
  type TrialScope,
  type WriteAttribution,
} from "reconcile-kit/crash-points";
import { binariesIn, cacheDir, type ControlPlane, type Identity, installCRDs } from "@shapes/envtest";
import {
  ADOPTION_POLICY_ANNOTATION,
  CONFIG_ENTRIES,
  CONFIG_ENTRY_REFS,
  type ConfigEntry,
  type ConfigEntryRef,
  type ConfigEntrySpec,
  entryNameOf,
  EtcdClient,
  type EtcdEntry,
  EtcdServer,
  GROUP,
  keyOfName,
  MARK_OWNER,
  nameOfKey,
  MARK_UID,
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  VERSION,
} from "@shapes/etcd-controller";
import {
  applyManifestFile,
  CloudGate,
  ControllerProcess,
  openKubeTap,
  REPO_ROOT,
  serviceAccountTokenIdentity,
  uniqueName,
  usesExistingCluster,
  withKubeHttp,
  WriteTapProxy,
} from "@shapes/stack";
import { startControlPlane } from "../../support/envtest.ts";
import { preparedBinaries } from "../../support/stack.ts";
import {
  deleteTestNamespace,
  RunCounters,
  resourceView,
  uninstallAndReinstall,
  waitForHeld,
  withExtras,
} from "./common.ts";

/** The example's folder. */
const EXAMPLE = join(REPO_ROOT, "examples", "etcd-controller");
/** The service account of rbac.yaml the controller runs as. */
const SERVICE_ACCOUNT = { namespace: "etcd-config-system", name: "etcd-controller" };
const FIELD_MANAGER = "conformance-etcd";
/** The controller's metrics, as main.ts prefixes them; its resource reconciler is labelled "configentry". */
const METRIC = {
  kubeWrites: "etcd_controller_kube_writes_total",
  reconciles: "etcd_controller_reconcile_total",
};
/** The gateway's paths that write. Every call is a POST, reads (range) and the watch too. */
const WRITE_PATHS = new Set(["/v3/kv/txn", "/v3/kv/put", "/v3/kv/deleterange"]);

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const ENTRY_VARIANTS: Readonly<Record<Variant, ConfigEntrySpec>> = {
  first: { value: "first" },
  second: { value: "second" },
};
/** The spec etcd refuses for good: a value above its --max-request-bytes (8 KiB, EtcdServer's default). */
export const ENTRY_REJECTED: Readonly<ConfigEntrySpec> = { value: "x".repeat(10_000) };
/** The value `drift` puts: neither variant's. */
const DRIFT_VALUE = "drifted";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** The etcd binary: the one the control plane is built with (the global setup's, or the build cache's). */
function etcdBinary(): string {
  return process.env.ETCD_BINARY ?? preparedBinaries().binaries?.etcd ?? binariesIn(cacheDir()).etcd;
}

/** The etcd controller run as its own process. `cloudUrl` is etcd's URL (through the gate). */
class EtcdControllerProcess extends ControllerProcess {
  override args(): string[] {
    return [
      join(EXAMPLE, "src", "main.ts"),
      `--etcd-url=${this.options.cloudUrl}`,
      `--kubeconfig=${this.options.kubeconfigPath}`,
      "--metrics-address=127.0.0.1:0",
      // Minutes: within a scenario only an event, a start or the refresh annotation explains a reconcile.
      "--resync-period=5m",
      // Short, so the sweep's decisions are seen within a scenario.
      "--leak-grace=2s",
      ...(this.options.extraArgs ?? []),
    ];
  }
}

/** An HTTP front of the gate that counts the write requests through it (etcd counts no client's writes). */
interface WriteCounter {
  readonly url: string;
  writes(): number;
  close(): Promise<void>;
}

async function startWriteCounter(gate: CloudGate): Promise<WriteCounter> {
  let writes = 0;
  const server = createServer((req, res) => {
    if (req.method === "POST" && WRITE_PATHS.has((req.url ?? "").split("?")[0] ?? "")) writes++;
    gate.forward(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    writes: () => writes,
    async close() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** What the subject started, for `tearDown`. */
interface Running {
  cluster: ControlPlane;
  kubeConfig: KubeConfig;
  ownerId: string;
  etcd: EtcdServer;
  gate: CloudGate;
  counter: WriteCounter;
  person: EtcdClient;
  controller: EtcdControllerProcess;
  tokensDir: string | undefined;
  /** The crash subject's taps (kube, external), closed with the rest. */
  taps: WriteTapProxy[];
}

/** The etcd controller over a fresh control plane (or the KUBECONFIG cluster) and a fresh etcd. */
export function etcdSubject(): Subject {
  return makeEtcdSubject(false).subject;
}

/**
 * The etcd controller for the crash explorer (reconcile-kit/crash-points): its Kubernetes connection goes
 * through a tap in front of the API server (as its own least-privilege identity), its etcd connection
 * through a tap in front of the gate. etcd's requests are base64 JSON and a failed compare answers 200, so
 * the subject attributes writes itself ({@link attributeEtcdWrite}). The example has no earlier owner ids,
 * so the adoption lifecycle is skipped.
 */
export function etcdCrashSubject(): CrashSubject {
  const made = makeEtcdSubject(true);
  const tap = (side: "kube" | "external"): WriteTapProxy => {
    const found = made.running().taps.find((t) => t.side === side);
    if (!found) throw new Error(`the etcd crash subject has no ${side} tap`);
    return found;
  };
  return withExtras(made.subject, {
    taps: {
      get kube() {
        return tap("kube");
      },
      get external() {
        return tap("external");
      },
    },
    killController: () => made.kill(),
    describeWrite: describeEtcdWrite,
    attributeWrite: attributeEtcdWrite,
  });
}

/** A gateway request's body, decoded: the keys it names, and what its transaction does. */
interface DecodedRequest {
  keys: string[];
  /** For a txn: "create" (compare create_revision = 0), "put" or "delete" (compare mod_revision). */
  op: "create" | "put" | "delete" | undefined;
}

/** Decodes the base64 keys of a gateway request (range, put, deleterange, txn, watch). */
export function decodeEtcdRequest(path: string, body: string): DecodedRequest {
  const unb64 = (text: unknown) =>
    typeof text === "string" ? Buffer.from(text, "base64").toString("utf8") : "";
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { keys: [], op: undefined };
  }
  if (path !== "/v3/kv/txn") return { keys: [unb64(parsed.key)].filter(Boolean), op: undefined };
  const txn = parsed as {
    compare?: { key?: string; target?: string }[];
    success?: { request_put?: { key?: string }; request_delete_range?: { key?: string } }[];
  };
  const keys = (txn.compare ?? []).map((c) => unb64(c.key));
  const first = txn.success?.[0];
  const op =
    txn.compare?.[0]?.target === "CREATE"
      ? "create"
      : first?.request_delete_range
        ? "delete"
        : first?.request_put
          ? "put"
          : undefined;
  return { keys, op };
}

/** "POST ConfigEntryRef", "PATCH ConfigEntry finalizers", "txn create etcd key", "txn delete etcd key". */
export function describeEtcdWrite(write: TappedWrite): { label: string; create: boolean } {
  if (write.side === "kube") {
    return {
      label: kubeWriteLabel(write, {
        [CONFIG_ENTRIES]: "ConfigEntry",
        [CONFIG_ENTRY_REFS]: "ConfigEntryRef",
      }),
      create: false,
    };
  }
  const path = write.path.split("?")[0] ?? write.path;
  if (path !== "/v3/kv/txn") return { label: `POST ${path}`, create: false };
  const { op } = decodeEtcdRequest(path, write.requestBody);
  return { label: `txn ${op ?? "other"} etcd key`, create: op === "create" };
}

/**
 * Which writes are the trial's, for etcd: a write (txn, put, deleterange) to the trial's key, read from the
 * base64 body; reads (range) and the watch are POSTs too, and never the trial's writes. A create committed
 * when etcd answered 200 with `succeeded` (a failed compare answers 200 without it). The object's id is the
 * key's create revision, the revision of the transaction that created it. The Kubernetes side is plain
 * text: the REST default.
 */
export function attributeEtcdWrite(write: TappedWrite, trial: TrialScope): WriteAttribution {
  if (write.side === "kube") return restWriteAttribution(write, trial, false);
  const path = write.path.split("?")[0] ?? write.path;
  const key = keyOfName(trial.externalName);
  const { keys, op } = decodeEtcdRequest(path, write.requestBody);
  const ours = WRITE_PATHS.has(path) && key !== undefined && keys.includes(key);
  let answer: { succeeded?: boolean; header?: { revision?: string } } = {};
  try {
    answer = write.responseBody ? (JSON.parse(write.responseBody) as typeof answer) : {};
  } catch {
    // No answer yet, or not etcd's.
  }
  const committedCreate = ours && op === "create" && write.status === 200 && answer.succeeded === true;
  // A read addresses nothing written, and a create's compare asks that the key not exist: it addresses no
  // existing entry. Any other write addresses the entries of its keys, by key and by name.
  const addresses = !WRITE_PATHS.has(path) || op === "create" ? [] : keys.flatMap((k) => [k, nameOfKey(k)]);
  return {
    ours,
    committedCreate,
    objectId: committedCreate ? answer.header?.revision : undefined,
    addresses,
  };
}

function makeEtcdSubject(tapped: boolean): { subject: Subject; running(): Running; kill(): Promise<void> } {
  let running: Running | undefined;
  const namespaces: string[] = [];

  const the = (): Running => {
    if (!running) throw new Error("the etcd subject is not set up (call setUp first)");
    return running;
  };
  const custom = () => the().kubeConfig.makeApiClient(CustomObjectsApi);
  const coords = (namespace: string, name: string) => ({
    group: GROUP,
    version: VERSION,
    plural: CONFIG_ENTRIES,
    namespace,
    name,
  });

  const counters = new RunCounters(() => running?.controller, { ...METRIC, reconciler: "configentry" });
  const keyOf = (name: string): string => {
    const key = keyOfName(name);
    if (key === undefined) throw new Error(`${name} is no ConfigEntry's external name`);
    return key;
  };
  const requireExternal = async (name: string): Promise<EtcdEntry> => {
    const entry = await the().person.getByName(name);
    if (!entry) throw new Error(`no etcd key is named ${name}`);
    return entry;
  };

  const subject: Subject = {
    name: "etcd keys",
    canRestartApiServer: !usesExistingCluster(),
    get ownerId() {
      return the().ownerId;
    },

    async setUp() {
      const artifactsDir = join(
        REPO_ROOT,
        "e2e",
        "artifacts",
        tapped ? "crash-points-etcd" : "conformance-etcd",
      );
      await mkdir(artifactsDir, { recursive: true });
      const cluster = await startControlPlane();
      const parts: Partial<Running> = { cluster };
      try {
        const kubeConfig = cluster.kubeConfig();
        await installCRDs(kubeConfig, { dir: join(EXAMPLE, "crds") });
        await applyManifestFile(kubeConfig, join(EXAMPLE, "rbac.yaml"));
        let identity: Identity;
        if (cluster.kind === "local") {
          identity = await cluster.serviceAccountIdentity(SERVICE_ACCOUNT.namespace, SERVICE_ACCOUNT.name);
        } else {
          parts.tokensDir = await mkdtemp(join(tmpdir(), "conformance-etcd-"));
          identity = await serviceAccountTokenIdentity(
            kubeConfig,
            SERVICE_ACCOUNT.namespace,
            SERVICE_ACCOUNT.name,
            parts.tokensDir,
          );
        }
        parts.etcd = await EtcdServer.start({ binary: etcdBinary() });
        parts.gate = await CloudGate.start(parts.etcd.url);
        parts.counter = await startWriteCounter(parts.gate);
        parts.taps = [];
        let kubeconfigPath = identity.kubeconfigPath;
        let etcdUrl = parts.counter.url;
        if (tapped) {
          const kube = await openKubeTap(identity.kubeconfigPath, artifactsDir);
          parts.taps.push(kube.tap);
          kubeconfigPath = kube.kubeconfigPath;
          const external = await WriteTapProxy.start({ side: "external", target: parts.counter.url });
          parts.taps.push(external);
          etcdUrl = external.url;
        }
        running = {
          cluster,
          kubeConfig,
          ownerId: await withKubeHttp(kubeConfig, readDefaultOwnerId),
          etcd: parts.etcd,
          gate: parts.gate,
          counter: parts.counter,
          person: new EtcdClient({ baseUrl: parts.etcd.url }),
          controller: new EtcdControllerProcess({
            name: "etcd-controller",
            artifactsDir,
            kubeconfigPath,
            cloudUrl: etcdUrl,
            cloudToken: "",
          }),
          tokensDir: parts.tokensDir,
          taps: parts.taps,
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
      if (was.cluster.kind === "existing") {
        for (const ns of namespaces) {
          await deleteTestNamespace<ConfigEntryRef>(
            was.kubeConfig,
            { group: GROUP, version: VERSION, plural: CONFIG_ENTRIES, intentPlural: CONFIG_ENTRY_REFS },
            ns,
            (r) => r.spec.entry.namespace,
          );
        }
      }
      was.person.close();
      await stopAll(was);
    },
    async startController() {
      const { controller } = the();
      if (controller.running) await controller.waitReady();
      else await controller.start();
    },
    async stopController() {
      await counters.closeRun();
      await running?.controller.stop();
    },
    async crashAfterCreate(namespace, name) {
      // Every write is a POST to /v3/kv/txn: the next one after the apply is the create (a new name: no
      // update or delete of it can come first), and etcd answers it 200 with `succeeded`.
      const { gate, controller } = the();
      if (!controller.running) throw new Error("crashAfterCreate needs the controller running");
      const held = gate.hold({ method: "POST", path: "/v3/kv/txn" });
      await this.apply(namespace, name, "first");
      const answer = await waitForHeld(held, `the controller to create ${namespace}/${name}`);
      const succeeded = (JSON.parse(answer.body) as { succeeded?: boolean }).succeeded === true;
      if (answer.status !== 200 || !succeeded || !answer.clientWaiting) {
        throw new Error(
          `crashAfterCreate missed its moment: etcd answered ${answer.status} (${answer.body}), ` +
            `the controller ${answer.clientWaiting ? "still waits" : "is gone"}`,
        );
      }
      await counters.closeRun();
      await controller.kill();
      gate.releaseAll(); // its client is dead: nothing is delivered
    },

    async newNamespace() {
      const name = uniqueName("conformance-etcd");
      await the()
        .kubeConfig.makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name } } });
      namespaces.push(name);
      return name;
    },
    async apply(namespace, name, variant, options = {}) {
      const body = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "ConfigEntry",
        metadata: { namespace, name, ...(options.annotations ? { annotations: options.annotations } : {}) },
        spec: {
          ...(variant === "rejected" ? ENTRY_REJECTED : ENTRY_VARIANTS[variant]),
          ...(options.deletionPolicy ? { deletionPolicy: options.deletionPolicy } : {}),
          ...(options.managementPolicies ? { managementPolicies: options.managementPolicies } : {}),
        },
      };
      const api = KubernetesObjectApi.makeApiClient(the().kubeConfig);
      await api.patch(body, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    },
    async delete(namespace, name) {
      await custom().deleteNamespacedCustomObject(coords(namespace, name));
    },
    async stripFinalizers(namespace, name) {
      const body = { metadata: { finalizers: null } };
      await custom().patchNamespacedCustomObject({ ...coords(namespace, name), body }, mergePatch);
    },
    async annotate(namespace, name, key, value) {
      const body = { metadata: { annotations: { [key]: value } } };
      await custom().patchNamespacedCustomObject({ ...coords(namespace, name), body }, mergePatch);
    },
    async read(namespace, name) {
      const entry = await orUndefined(
        custom().getNamespacedCustomObject(coords(namespace, name)) as Promise<ConfigEntry>,
      );
      return entry && resourceView(entry);
    },
    async intentExists(namespace, name) {
      const ref = custom().getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: CONFIG_ENTRY_REFS,
        name: entryNameOf(namespace, name),
      });
      return (await orUndefined(ref)) !== undefined;
    },
    annotations: {
      paused: PAUSED_ANNOTATION,
      refresh: REFRESH_ANNOTATION,
      adoptionPolicy: ADOPTION_POLICY_ANNOTATION,
    },
    rejectedMessage: "request is too large",

    externalNameOf: entryNameOf,
    async getExternal(name) {
      const entry = await the().person.getByName(name);
      return entry && externalView(entry);
    },
    async drift(name) {
      const entry = await requireExternal(name);
      await the().person.put(entry.key, JSON.stringify({ ...entry.fields, value: DRIFT_VALUE }));
    },
    async deleteExternal(name) {
      await the().person.deleteKey(keyOf(name));
    },
    // No renameExternal: an etcd key cannot be renamed (a new key is a new create revision, a new object).
    async listExternal() {
      const entries: EtcdEntry[] = [];
      let pageToken: string | undefined;
      do {
        const page = await the().person.list(pageToken === undefined ? {} : { pageToken });
        entries.push(...page.items);
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return entries.map(externalView);
    },
    async createForeign(name, owner) {
      const fields = { value: "foreign", ...(owner === undefined ? {} : { [MARK_OWNER]: owner }) };
      await the().person.create(keyOf(name), fields);
    },
    externalWrites() {
      return Promise.resolve(the().counter.writes());
    },
    async kubeWrites() {
      return (await counters.total()).kubeWrites;
    },
    async reconciles() {
      return (await counters.total()).reconciles;
    },

    // Never on an existing cluster: it would lose the example's CRD, and with it every ConfigEntry there.
    ...(usesExistingCluster()
      ? {}
      : {
          async uninstall() {
            const { kubeConfig } = the();
            await uninstallAndReinstall(kubeConfig, `${CONFIG_ENTRIES}.${GROUP}`, () =>
              installCRDs(kubeConfig, { dir: join(EXAMPLE, "crds") }),
            );
          },
        }),
    async restartApiServer() {
      const { cluster } = the();
      if (cluster.kind !== "local") throw new Error("cannot restart the API server of an existing cluster");
      await cluster.restartApiServer();
    },
  };
  return {
    subject,
    running: the,
    async kill() {
      await counters.closeRun();
      await running?.controller.kill();
    },
  };
}

/** Stops what was started, in order: the controller, the taps, the counter, the gate, etcd, the control plane. */
async function stopAll(parts: Partial<Running>): Promise<void> {
  await parts.controller?.stop(5_000);
  for (const tap of parts.taps ?? []) await tap.close();
  await parts.counter?.close();
  await parts.gate?.close();
  await parts.etcd?.stop();
  if (parts.tokensDir) await rm(parts.tokensDir, { recursive: true, force: true });
  await parts.cluster?.stop();
}

/** What the suite sees of an etcd key: its owner marks, and which variant its value is. */
function externalView(entry: EtcdEntry): ExternalView {
  const matches = (Object.keys(ENTRY_VARIANTS) as Variant[]).find(
    (variant) => entry.fields.value === ENTRY_VARIANTS[variant].value,
  );
  const mark = (field: string) => {
    const value = entry.fields[field];
    return typeof value === "string" ? value : undefined;
  };
  return {
    id: entry.id,
    name: entry.name,
    owner: mark(MARK_OWNER),
    uid: mark(MARK_UID),
    matches: matches ?? "neither",
  };
}
