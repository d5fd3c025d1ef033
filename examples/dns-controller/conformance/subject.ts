/**
 * The DNS records controller as a conformance {@link Subject} and a crash {@link CrashSubject}: what is this
 * plugin's own. reconcile-kit/harness's `pluginSubjectKit` gives the rest: a control plane (a local one; the
 * KUBECONFIG cluster only with USE_EXISTING_CLUSTER=true), the CRDs and rbac.yaml, the controller as a
 * separate process (`node src/main.ts`) under the least-privilege identity of rbac.yaml, talking to the
 * zone through an answer gate (and, for the crash explorer, a write tap on each connection), the resources
 * as a person with kubectl acts on them, and the counters summed over the controller's runs.
 *
 * Variants: "first" is an A record 192.0.2.1 (no ttl), "second" a TXT record "v=second" with ttl 300. Drift
 * sets the value to 198.51.100.7, which neither variant has; foreign records are CNAMEs. "rejected" is a TXT
 * record with ttl 5: the CRD allows it (a ttl from 1), the zone refuses it for good (422: its minimum TTL is
 * 60 seconds, its own rule). `externalWrites` reads the zone's count of write requests from the controller's
 * X-Client-Id.
 */
import { join } from "node:path";
import type { ExternalView, Subject, Variant } from "reconcile-kit/conformance";
import { type CrashSubject, kubeWriteLabel, type TappedWrite } from "reconcile-kit/crash-points";
import { pluginSubjectKit, type SubjectHarnessOptions, withExtras } from "reconcile-kit/harness";
import {
  ADOPTION_POLICY_ANNOTATION,
  fqdnOf,
  GROUP,
  PAUSED_ANNOTATION,
  type RecordRef,
  RECORDREFS,
  RECORDS,
  type RecordSpec,
  REFRESH_ANNOTATION,
  VERSION,
} from "../src/api.ts";
import { ZoneClient, type ZoneRecord } from "../src/client.ts";
import { MIN_TTL_SECONDS, ZoneApi } from "../src/zone-api.ts";

/** The example's folder. */
const EXAMPLE = join(import.meta.dirname, "..");
/** The X-Client-Id the controller sends (main.ts), and the one of the person editing the zone. */
const CONTROLLER_CLIENT = "dns-controller";
const PERSON_CLIENT = "conformance";

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const RECORD_VARIANTS: Readonly<Record<Variant, RecordSpec>> = {
  first: { type: "A", value: "192.0.2.1" },
  second: { type: "TXT", value: "v=second", ttl: 300 },
};
/** The spec the zone refuses for good: a ttl below its minimum (a rule the CRD does not know). */
export const RECORD_REJECTED: Readonly<RecordSpec> = { type: "TXT", value: "v=rejected", ttl: 5 };
/** The value `drift` writes: neither variant's. */
const DRIFT_VALUE = "198.51.100.7";

/** The DNS controller over a fresh control plane (or the USE_EXISTING_CLUSTER one) and zone. */
export function dnsSubject(options: SubjectHarnessOptions = {}): Subject {
  return makeDnsSubject(options, false).subject;
}

/**
 * The DNS controller for the crash explorer (reconcile-kit/crash-points), a write tap on each of its
 * connections. The example has no earlier owner ids, so the adoption lifecycle is skipped.
 */
export function dnsCrashSubject(options: SubjectHarnessOptions = {}): CrashSubject {
  const { subject, kit } = makeDnsSubject(options, true);
  return withExtras(subject, {
    taps: kit.taps,
    killController: () => kit.killController(),
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

function makeDnsSubject(options: SubjectHarnessOptions, tapped: boolean) {
  let zone: ZoneApi | undefined;
  let client: ZoneClient | undefined;
  /** How many records `renameExternal` renamed: each new name's first label ends in `-renamed-<n>`. */
  let renames = 0;
  const kit = pluginSubjectKit({
    ...options,
    name: "dns records",
    suite: tapped ? "crash-points-dns" : "conformance-dns",
    tapped,
    kinds: { group: GROUP, version: VERSION, kind: "Record", plural: RECORDS, intentPlural: RECORDREFS },
    intentNameOf: fqdnOf,
    namespaceOfIntent: (ref: RecordRef) => ref.spec.record.namespace,
    crdsDir: join(EXAMPLE, "crds"),
    manifests: [join(EXAMPLE, "rbac.yaml")],
    serviceAccount: { namespace: "dns-system", name: "dns-controller" },
    specOf: (variant) => ({ ...(variant === "rejected" ? RECORD_REJECTED : RECORD_VARIANTS[variant]) }),
    annotations: {
      paused: PAUSED_ANNOTATION,
      refresh: REFRESH_ANNOTATION,
      adoptionPolicy: ADOPTION_POLICY_ANNOTATION,
    },
    // As main.ts prefixes them; the resource reconciler is labelled "record".
    metrics: {
      kubeWrites: "dns_controller_kube_writes_total",
      reconciles: "dns_controller_reconcile_total",
      reconciler: "record",
    },
    controller: {
      name: "dns-controller",
      args: ({ externalUrl, kubeconfigPath }) => [
        join(EXAMPLE, "src", "main.ts"),
        `--zone-url=${externalUrl}`,
        `--kubeconfig=${kubeconfigPath}`,
        "--metrics-address=127.0.0.1:0",
        "--resync-period=5m",
        "--leak-grace=2s",
      ],
    },
    async startExternal() {
      const started = new ZoneApi();
      await started.start();
      zone = started;
      client = new ZoneClient({ baseUrl: started.url, clientId: PERSON_CLIENT });
      return {
        url: started.url,
        async stop() {
          client?.close();
          await started.stop();
        },
      };
    },
    create: { method: "POST", path: "/records", committed: (answer) => answer.status === 201 },
  });

  const person = (): ZoneClient => {
    if (!client) throw new Error("the dns subject is not set up (call setUp first)");
    return client;
  };
  const requireExternal = async (name: string): Promise<ZoneRecord> => {
    const record = await person().getByName(name);
    if (!record) throw new Error(`no zone record is named ${name}`);
    return record;
  };

  const subject: Subject = withExtras(kit.side, {
    rejectedMessage: `below this zone's minimum TTL of ${MIN_TTL_SECONDS} seconds`,
    externalNameOf: fqdnOf,
    async getExternal(name: string) {
      const record = await person().getByName(name);
      return record && externalView(record);
    },
    async drift(name: string) {
      await person().patch((await requireExternal(name)).id, { value: DRIFT_VALUE });
    },
    async deleteExternal(name: string) {
      await person().delete((await requireExternal(name)).id);
    },
    async renameExternal(name: string) {
      // The first label changes (`foo.ns.zone` becomes `foo-renamed-1.ns.zone`): a name no Record maps to.
      const dot = name.indexOf(".");
      const renamed = `${name.slice(0, dot)}-renamed-${++renames}${name.slice(dot)}`;
      await person().patch((await requireExternal(name)).id, { name: renamed });
      return renamed;
    },
    async listExternal() {
      const records: ZoneRecord[] = [];
      let pageToken: string | undefined;
      do {
        const page = await person().list(pageToken === undefined ? {} : { pageToken });
        records.push(...page.items);
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return records.map(externalView);
    },
    async createForeign(name: string, owner: string | undefined) {
      const labels: Record<string, string> = owner === undefined ? {} : { owner };
      await person().create({ name, type: "CNAME", value: "elsewhere.example.org", labels });
    },
    externalWrites: () => Promise.resolve(zone?.writes(CONTROLLER_CLIENT) ?? 0),
  });
  return { subject, kit };
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
