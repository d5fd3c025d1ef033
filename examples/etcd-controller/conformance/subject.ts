/**
 * The etcd controller as a conformance {@link Subject} and a crash {@link CrashSubject}: what is this
 * plugin's own. reconcile-kit/harness's `pluginSubjectKit` gives the rest: a control plane (a local one; the
 * KUBECONFIG cluster only with USE_EXISTING_CLUSTER=true), the CRDs and rbac.yaml, the controller as a
 * separate process (`node src/main.ts`) under the least-privilege identity of rbac.yaml, talking to a
 * SEPARATE etcd (the binary the control plane is built with, started by EtcdServer on its own ports and
 * data) through an answer gate (and, for the crash explorer, a write tap on each connection), the resources
 * as a person with kubectl acts on them, and the counters summed over the controller's runs.
 *
 * Variants: "first" is the value "first", "second" the value "second". Drift puts "drifted"; foreign keys
 * hold "foreign". "rejected" is a value of 10,000 characters: the CRD allows it, etcd refuses the request
 * for good (`etcdserver: request is too large`: EtcdServer starts it with --max-request-bytes 8 KiB).
 * `externalWrites` counts the controller's write requests (txn, put, deleterange) at the gate: etcd counts
 * no client's writes. An etcd key cannot be renamed: no `renameExternal`.
 */
import { join } from "node:path";
import type { ExternalView, Subject, Variant } from "reconcile-kit/conformance";
import type { CrashSubject } from "reconcile-kit/crash-points";
import { pluginSubjectKit, type SubjectHarnessOptions, withExtras } from "reconcile-kit/harness";
import { binariesIn, cacheDir } from "@shapes/envtest";
import {
  ADOPTION_POLICY_ANNOTATION,
  CONFIG_ENTRIES,
  CONFIG_ENTRY_REFS,
  type ConfigEntryRef,
  type ConfigEntrySpec,
  entryNameOf,
  GROUP,
  keyOfName,
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  VERSION,
} from "../src/api.ts";
import { EtcdClient, type EtcdEntry, MARK_OWNER, MARK_UID } from "../src/client.ts";
import { EtcdServer } from "../src/etcd-server.ts";
import { attributeEtcdWrite, describeEtcdWrite, WRITE_PATHS } from "./writes.ts";

/** The example's folder. */
const EXAMPLE = join(import.meta.dirname, "..");

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const ENTRY_VARIANTS: Readonly<Record<Variant, ConfigEntrySpec>> = {
  first: { value: "first" },
  second: { value: "second" },
};
/** The spec etcd refuses for good: a value above its --max-request-bytes (8 KiB, EtcdServer's default). */
export const ENTRY_REJECTED: Readonly<ConfigEntrySpec> = { value: "x".repeat(10_000) };
/** The value `drift` puts: neither variant's. */
const DRIFT_VALUE = "drifted";

/** The etcd controller over a fresh control plane (or the USE_EXISTING_CLUSTER one) and a fresh etcd. */
export function etcdSubject(options: SubjectHarnessOptions = {}): Subject {
  return makeEtcdSubject(options, false).subject;
}

/**
 * The etcd controller for the crash explorer (reconcile-kit/crash-points), a write tap on each of its
 * connections. etcd's requests are base64 JSON and a failed compare answers 200, so the subject attributes
 * writes itself ({@link attributeEtcdWrite}). The example has no earlier owner ids, so the adoption
 * lifecycle is skipped.
 */
export function etcdCrashSubject(options: SubjectHarnessOptions = {}): CrashSubject {
  const { subject, kit } = makeEtcdSubject(options, true);
  return withExtras(subject, {
    taps: kit.taps,
    killController: () => kit.killController(),
    describeWrite: describeEtcdWrite,
    attributeWrite: attributeEtcdWrite,
  });
}

function makeEtcdSubject(options: SubjectHarnessOptions, tapped: boolean) {
  let client: EtcdClient | undefined;
  const kit = pluginSubjectKit({
    ...options,
    name: "etcd keys",
    suite: tapped ? "crash-points-etcd" : "conformance-etcd",
    tapped,
    kinds: {
      group: GROUP,
      version: VERSION,
      kind: "ConfigEntry",
      plural: CONFIG_ENTRIES,
      intentPlural: CONFIG_ENTRY_REFS,
    },
    intentNameOf: entryNameOf,
    namespaceOfIntent: (ref: ConfigEntryRef) => ref.spec.entry.namespace,
    crdsDir: join(EXAMPLE, "crds"),
    manifests: [join(EXAMPLE, "rbac.yaml")],
    serviceAccount: { namespace: "etcd-config-system", name: "etcd-controller" },
    specOf: (variant) => ({ ...(variant === "rejected" ? ENTRY_REJECTED : ENTRY_VARIANTS[variant]) }),
    annotations: {
      paused: PAUSED_ANNOTATION,
      refresh: REFRESH_ANNOTATION,
      adoptionPolicy: ADOPTION_POLICY_ANNOTATION,
    },
    // As main.ts prefixes them; the resource reconciler is labelled "configentry".
    metrics: {
      kubeWrites: "etcd_controller_kube_writes_total",
      reconciles: "etcd_controller_reconcile_total",
      reconciler: "configentry",
    },
    controller: {
      name: "etcd-controller",
      args: ({ externalUrl, kubeconfigPath }) => [
        join(EXAMPLE, "src", "main.ts"),
        `--etcd-url=${externalUrl}`,
        `--kubeconfig=${kubeconfigPath}`,
        "--metrics-address=127.0.0.1:0",
        "--resync-period=5m",
        "--leak-grace=2s",
      ],
    },
    async startExternal() {
      // The etcd the control plane is built with: ETCD_BINARY, the caller's binaries, or envtest's cache.
      const binary = process.env.ETCD_BINARY ?? options.binaries?.etcd ?? binariesIn(cacheDir()).etcd;
      const etcd = await EtcdServer.start({ binary });
      client = new EtcdClient({ baseUrl: etcd.url });
      return {
        url: etcd.url,
        async stop() {
          client?.close();
          await etcd.stop();
        },
      };
    },
    // Every write is a POST to /v3/kv/txn: the next one after the apply is the create (a new name: no update
    // or delete of it can come first). It committed when etcd answered 200 with `succeeded`.
    create: {
      method: "POST",
      path: "/v3/kv/txn",
      committed: (answer) =>
        answer.status === 200 && (JSON.parse(answer.body) as { succeeded?: boolean }).succeeded === true,
    },
    countWrites: (method, path) => method === "POST" && WRITE_PATHS.has(path),
  });

  const person = (): EtcdClient => {
    if (!client) throw new Error("the etcd subject is not set up (call setUp first)");
    return client;
  };
  const keyOf = (name: string): string => {
    const key = keyOfName(name);
    if (key === undefined) throw new Error(`${name} is no ConfigEntry's external name`);
    return key;
  };

  const subject: Subject = withExtras(kit.side, {
    rejectedMessage: "request is too large",
    externalNameOf: entryNameOf,
    async getExternal(name: string) {
      const entry = await person().getByName(name);
      return entry && externalView(entry);
    },
    async drift(name: string) {
      const entry = await person().getByName(name);
      if (!entry) throw new Error(`no etcd key is named ${name}`);
      await person().put(entry.key, JSON.stringify({ ...entry.fields, value: DRIFT_VALUE }));
    },
    async deleteExternal(name: string) {
      await person().deleteKey(keyOf(name));
    },
    async listExternal() {
      const entries: EtcdEntry[] = [];
      let pageToken: string | undefined;
      do {
        const page = await person().list(pageToken === undefined ? {} : { pageToken });
        entries.push(...page.items);
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return entries.map(externalView);
    },
    async createForeign(name: string, owner: string | undefined) {
      const fields = { value: "foreign", ...(owner === undefined ? {} : { [MARK_OWNER]: owner }) };
      await person().create(keyOf(name), fields);
    },
    externalWrites: () => Promise.resolve(kit.countedWrites()),
  });
  return { subject, kit };
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
