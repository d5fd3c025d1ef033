/**
 * The DNS records controller (examples/dns-controller/) as a conformance {@link Subject}: a control plane
 * (a local one; the KUBECONFIG cluster only with USE_EXISTING_CLUSTER=true, as for the stack), the example's CRDs and rbac.yaml, the zone API
 * in this process, and the controller as a separate process (`node examples/dns-controller/src/main.ts`)
 * under the least-privilege identity of rbac.yaml, talking to the zone through a {@link CloudGate} that
 * passes everything through until `crashAfterCreate` holds the answer to one create. Logs go to
 * e2e/artifacts/conformance-dns/ (the crash subject's to crash-points-dns/).
 *
 * Variants: "first" is an A record 192.0.2.1 (no ttl), "second" a TXT record "v=second" with ttl 300. Drift
 * sets the value to 198.51.100.7, which neither variant has; foreign records are CNAMEs. "rejected" is a TXT
 * record with ttl 5: the CRD allows it (a ttl from 1), the zone refuses it for good (422: its minimum TTL is
 * 60 seconds, its own rule).
 *
 * Counters: `externalWrites` reads the zone's count of write requests from the controller's X-Client-Id,
 * `kubeWrites` and `reconciles` the controller's /metrics, summed over its runs (each run starts at zero).
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
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
import { type CrashSubject, kubeWriteLabel, type TappedWrite } from "reconcile-kit/crash-points";
import { type ControlPlane, type Identity, installCRDs } from "@shapes/envtest";
import {
  type DnsRecord,
  fqdnOf,
  GROUP,
  MIN_TTL_SECONDS,
  ADOPTION_POLICY_ANNOTATION,
  PAUSED_ANNOTATION,
  type RecordRef,
  RECORDREFS,
  RECORDS,
  type RecordSpec,
  REFRESH_ANNOTATION,
  VERSION,
  ZoneApi,
  ZoneClient,
  type ZoneRecord,
} from "@shapes/dns-controller";
import {
  applyManifestFile,
  CloudGate,
  ControllerProcess,
  openKubeTap,
  REPO_ROOT,
  serviceAccountTokenIdentity,
  uniqueName,
  usesExistingCluster,
  WriteTapProxy,
  withKubeHttp,
} from "@shapes/stack";
import { startControlPlane } from "../../support/envtest.ts";
import {
  RunCounters,
  crashAfterCreate,
  deleteTestNamespace,
  resourceView,
  uninstallAndReinstall,
  withExtras,
} from "./common.ts";

/** The example's folder. */
const EXAMPLE = join(REPO_ROOT, "examples", "dns-controller");
/** The service account of rbac.yaml the controller runs as. */
const SERVICE_ACCOUNT = { namespace: "dns-system", name: "dns-controller" };
/** The X-Client-Id the controller sends (main.ts), and the one of the person editing the zone. */
const CONTROLLER_CLIENT = "dns-controller";
const PERSON_CLIENT = "conformance";
const FIELD_MANAGER = "conformance-dns";
/** The controller's metrics, as main.ts prefixes them; its resource reconciler is labelled "record". */
const METRIC = {
  kubeWrites: "dns_controller_kube_writes_total",
  reconciles: "dns_controller_reconcile_total",
};

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const RECORD_VARIANTS: Readonly<Record<Variant, RecordSpec>> = {
  first: { type: "A", value: "192.0.2.1" },
  second: { type: "TXT", value: "v=second", ttl: 300 },
};
/** The spec the zone refuses for good: a ttl below its minimum (a rule the CRD does not know). */
export const RECORD_REJECTED: Readonly<RecordSpec> = { type: "TXT", value: "v=rejected", ttl: 5 };
/** The value `drift` writes: neither variant's. */
const DRIFT_VALUE = "198.51.100.7";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * The DNS controller run as its own process: the stack's {@link ControllerProcess} (start, readiness, kill,
 * logs, /metrics) with the example's command line. `cloudUrl` is the zone's URL.
 */
class DnsControllerProcess extends ControllerProcess {
  override args(): string[] {
    return [
      join(EXAMPLE, "src", "main.ts"),
      `--zone-url=${this.options.cloudUrl}`,
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

/** What the subject started, for `tearDown`. */
interface Running {
  cluster: ControlPlane;
  kubeConfig: KubeConfig;
  ownerId: string;
  zone: ZoneApi;
  gate: CloudGate;
  person: ZoneClient;
  controller: DnsControllerProcess;
  tokensDir: string | undefined;
  /** The crash subject's taps (kube, external), closed with the rest. */
  taps: WriteTapProxy[];
}

/** The DNS controller over a fresh control plane (or the KUBECONFIG cluster) and zone. */
export function dnsSubject(): Subject {
  return makeDnsSubject(false).subject;
}

/**
 * The DNS controller for the crash explorer (reconcile-kit/crash-points): its Kubernetes connection goes
 * through a tap in front of the API server (as its own least-privilege identity), its zone connection through
 * a tap in front of the gate. The example has no earlier owner ids, so the adoption lifecycle is skipped.
 */
export function dnsCrashSubject(): CrashSubject {
  const made = makeDnsSubject(true);
  const tap = (side: "kube" | "external"): WriteTapProxy => {
    const found = made.running().taps.find((t) => t.side === side);
    if (!found) throw new Error(`the dns crash subject has no ${side} tap`);
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
    describeWrite: describeDnsWrite,
  });
}

/** "POST RecordRef", "PATCH Record finalizers", "POST zone record", "DELETE zone record". */
function describeDnsWrite(write: TappedWrite): { label: string; create: boolean } {
  if (write.side === "kube") {
    return {
      label: kubeWriteLabel(write, { [RECORDS]: "Record", [RECORDREFS]: "RecordRef" }),
      create: false,
    };
  }
  return {
    label: `${write.method} zone record`,
    create: write.method === "POST" && /^\/records\/?$/.test(write.path),
  };
}

function makeDnsSubject(tapped: boolean): { subject: Subject; running(): Running; kill(): Promise<void> } {
  let running: Running | undefined;
  const namespaces: string[] = [];
  /** How many records `renameExternal` renamed: each new name's first label ends in `-renamed-<n>`. */
  let renames = 0;

  const the = (): Running => {
    if (!running) throw new Error("the dns subject is not set up (call setUp first)");
    return running;
  };
  const custom = () => the().kubeConfig.makeApiClient(CustomObjectsApi);
  const coords = (namespace: string, name: string) => ({
    group: GROUP,
    version: VERSION,
    plural: RECORDS,
    namespace,
    name,
  });

  const counters = new RunCounters(() => running?.controller, { ...METRIC, reconciler: "record" });
  const requireExternal = async (name: string): Promise<ZoneRecord> => {
    const record = await the().person.getByName(name);
    if (!record) throw new Error(`no zone record is named ${name}`);
    return record;
  };

  const subject: Subject = {
    name: "dns records",
    canRestartApiServer: !usesExistingCluster(),
    get ownerId() {
      return the().ownerId;
    },

    async setUp() {
      const artifactsDir = join(
        REPO_ROOT,
        "e2e",
        "artifacts",
        tapped ? "crash-points-dns" : "conformance-dns",
      );
      await mkdir(artifactsDir, { recursive: true });
      const cluster = await startControlPlane();
      const parts: Partial<Running> = { cluster };
      try {
        const kubeConfig = cluster.kubeConfig();
        await installCRDs(kubeConfig, { dir: join(EXAMPLE, "crds") });
        await applyManifestFile(kubeConfig, join(EXAMPLE, "rbac.yaml"));
        // The controller's identity: a client certificate locally, a service-account token elsewhere.
        let identity: Identity;
        if (cluster.kind === "local") {
          identity = await cluster.serviceAccountIdentity(SERVICE_ACCOUNT.namespace, SERVICE_ACCOUNT.name);
        } else {
          parts.tokensDir = await mkdtemp(join(tmpdir(), "conformance-dns-"));
          identity = await serviceAccountTokenIdentity(
            kubeConfig,
            SERVICE_ACCOUNT.namespace,
            SERVICE_ACCOUNT.name,
            parts.tokensDir,
          );
        }
        parts.zone = new ZoneApi();
        await parts.zone.start();
        parts.gate = await CloudGate.start(parts.zone.url);
        parts.taps = [];
        let kubeconfigPath = identity.kubeconfigPath;
        let zoneUrl = parts.gate.url;
        if (tapped) {
          const kube = await openKubeTap(identity.kubeconfigPath, artifactsDir);
          parts.taps.push(kube.tap);
          kubeconfigPath = kube.kubeconfigPath;
          const external = await WriteTapProxy.start({ side: "external", target: parts.gate.url });
          parts.taps.push(external);
          zoneUrl = external.url;
        }
        running = {
          cluster,
          kubeConfig,
          ownerId: await withKubeHttp(kubeConfig, readDefaultOwnerId),
          zone: parts.zone,
          gate: parts.gate,
          person: new ZoneClient({ baseUrl: parts.zone.url, clientId: PERSON_CLIENT }),
          controller: new DnsControllerProcess({
            name: "dns-controller",
            artifactsDir,
            kubeconfigPath,
            cloudUrl: zoneUrl,
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
      // On a cluster that outlives us, take away what we made; a local one goes as a whole.
      if (was.cluster.kind === "existing") {
        for (const ns of namespaces) {
          await deleteTestNamespace<RecordRef>(
            was.kubeConfig,
            { group: GROUP, version: VERSION, plural: RECORDS, intentPlural: RECORDREFS },
            ns,
            (r) => r.spec.record.namespace,
          );
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
        createPath: "/records",
        apply: () => this.apply(namespace, name, "first"),
        what: `${namespace}/${name}`,
      });
    },

    async newNamespace() {
      const name = uniqueName("conformance-dns");
      await the()
        .kubeConfig.makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name } } });
      namespaces.push(name);
      return name;
    },
    async apply(namespace, name, variant, options = {}) {
      const body = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "Record",
        metadata: { namespace, name, ...(options.annotations ? { annotations: options.annotations } : {}) },
        spec: {
          ...(variant === "rejected" ? RECORD_REJECTED : RECORD_VARIANTS[variant]),
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
      const record = await orUndefined(
        custom().getNamespacedCustomObject(coords(namespace, name)) as Promise<DnsRecord>,
      );
      return record && resourceView(record);
    },
    async intentExists(namespace, name) {
      const ref = custom().getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: RECORDREFS,
        name: fqdnOf(namespace, name),
      });
      return (await orUndefined(ref)) !== undefined;
    },
    annotations: {
      paused: PAUSED_ANNOTATION,
      refresh: REFRESH_ANNOTATION,
      adoptionPolicy: ADOPTION_POLICY_ANNOTATION,
    },
    rejectedMessage: `below this zone's minimum TTL of ${MIN_TTL_SECONDS} seconds`,

    externalNameOf: fqdnOf,
    async getExternal(name) {
      const record = await the().person.getByName(name);
      return record && externalView(record);
    },
    async drift(name) {
      await the().person.patch((await requireExternal(name)).id, { value: DRIFT_VALUE });
    },
    async deleteExternal(name) {
      await the().person.delete((await requireExternal(name)).id);
    },
    async renameExternal(name) {
      // The first label changes (`foo.ns.zone` becomes `foo-renamed-1.ns.zone`): a name no Record maps to.
      const dot = name.indexOf(".");
      const renamed = `${name.slice(0, dot)}-renamed-${++renames}${name.slice(dot)}`;
      await the().person.patch((await requireExternal(name)).id, { name: renamed });
      return renamed;
    },
    async listExternal() {
      const records: ZoneRecord[] = [];
      let pageToken: string | undefined;
      do {
        const page = await the().person.list(pageToken === undefined ? {} : { pageToken });
        records.push(...page.items);
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return records.map(externalView);
    },
    async createForeign(name, owner) {
      const labels: Record<string, string> = owner === undefined ? {} : { owner };
      await the().person.create({ name, type: "CNAME", value: "elsewhere.example.org", labels });
    },
    externalWrites() {
      return Promise.resolve(the().zone.writes(CONTROLLER_CLIENT));
    },
    async kubeWrites() {
      return (await counters.total()).kubeWrites;
    },
    async reconciles() {
      return (await counters.total()).reconciles;
    },

    // Never on an existing cluster: it would lose the example's CRD, and with it every Record there.
    ...(usesExistingCluster()
      ? {}
      : {
          async uninstall() {
            const { kubeConfig } = the();
            await uninstallAndReinstall(kubeConfig, `${RECORDS}.${GROUP}`, () =>
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

/** Stops what was started, in order: the controller, the gate, the zone, the identities, the control plane. */
async function stopAll(parts: Partial<Running>): Promise<void> {
  await parts.controller?.stop(5_000);
  for (const tap of parts.taps ?? []) await tap.close();
  await parts.gate?.close();
  await parts.zone?.stop();
  if (parts.tokensDir) await rm(parts.tokensDir, { recursive: true, force: true });
  await parts.cluster?.stop();
}

/** What the suite sees of a zone record: its owner labels, and which variant its managed fields are. */
function externalView(record: ZoneRecord): ExternalView {
  const matches = (Object.keys(RECORD_VARIANTS) as Variant[]).find((variant) => {
    const want = RECORD_VARIANTS[variant];
    return record.type === want.type && record.value === want.value && record.ttl === want.ttl;
  });
  return {
    id: record.id,
    name: record.name,
    owner: record.labels.owner,
    uid: record.labels["k8s-uid"],
    matches: matches ?? "neither",
  };
}
