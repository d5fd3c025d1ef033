/**
 * DNS records, as the external-resource library sees them (library/src/reconcile/contract.ts): the `Record`
 * custom resource and its `RecordRef` intent record, the zone record it asks for, and the five zone calls.
 * Everything here is about DNS records; the pattern (finalizer, intent record, ownership, drift, deletion,
 * leaks, pause) is the library's.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  classifyHttp,
  type ExternalClient,
  type ExternalResourcePlugin,
  type IntentRecord,
  type JsonObject,
} from "reconcile-kit";
import {
  FINALIZER,
  GROUP,
  LABEL_NAME,
  LABEL_OWNER,
  LABEL_UID,
  PAUSED_ANNOTATION,
  RECORDREFS,
  RECORDS,
  VERSION,
  fqdnOf,
  recordOfFqdn,
  type DnsRecord,
  type RecordRef,
} from "./api.ts";
import {
  ZoneError,
  type NewZoneRecord,
  type ZoneClient,
  type ZoneRecord,
  type ZoneRecordPatch,
} from "./client.ts";

/** The Record plugin, over a zone client (for the list-watch of our zone records). */
export function dnsPlugin(
  zone: Pick<ZoneClient, "listWatch">,
): ExternalResourcePlugin<DnsRecord, ZoneRecord> {
  return {
    resource: {
      group: GROUP,
      version: VERSION,
      kind: "Record",
      plural: RECORDS,
      intentKind: "RecordRef",
      intentPlural: RECORDREFS,
      finalizer: FINALIZER,
      pausedAnnotation: PAUSED_ANNOTATION,
      externalNameOf: fqdnOf,
      resourceOf: recordOfFqdn,
      // The zone record a Record asks for: its spec, and our three labels.
      desired: (record, marks) => ({
        name: fqdnOf(record.metadata.namespace, record.metadata.name),
        fields: {
          type: record.spec.type ?? null,
          value: record.spec.value ?? null,
          ttl: record.spec.ttl ?? null,
          labels: { [LABEL_OWNER]: marks.owner, [LABEL_UID]: marks.uid, [LABEL_NAME]: marks.resourceKey },
        },
      }),
      statusOf: (observed) => ({ recordId: observed.id, fqdn: observed.name }),
      readIntent: (obj: KubernetesObject): IntentRecord => {
        const ref = obj as RecordRef;
        return {
          name: ref.metadata.name,
          uid: ref.metadata.uid ?? "",
          resource: ref.spec.record,
          externalName: ref.spec.fqdn,
          deletionPolicy: ref.spec.deletionPolicy ?? "Delete",
          ...(ref.spec.owner === undefined ? {} : { owner: ref.spec.owner }),
          phase: ref.status?.phase ?? "Pending",
          ...(ref.status?.recordId === undefined ? {} : { externalId: ref.status.recordId }),
        };
      },
      intentSpec: (record) => ({
        record: record.resource,
        fqdn: record.externalName,
        deletionPolicy: record.deletionPolicy,
        ...(record.owner === undefined ? {} : { owner: record.owner }),
      }),
    },
    external: {
      noun: { text: "zone record", reason: "ZoneRecord" },
      nameOf: (r) => r.name,
      idOf: (r) => r.id,
      revisionOf: (r) => r.revision,
      marksOf: (r) => ({ owner: r.labels[LABEL_OWNER], uid: r.labels[LABEL_UID] }),
      // The whole record: only the keys of the desired fields are compared.
      fieldsOf: (r) => r as unknown as JsonObject,
      // status.atProvider: what a person wants to see of an observed zone record, and whose it is.
      atProvider: (r) => ({
        id: r.id,
        type: r.type,
        value: r.value,
        ...(r.ttl === undefined ? {} : { ttl: r.ttl }),
        ...(r.labels[LABEL_OWNER] === undefined ? {} : { owner: r.labels[LABEL_OWNER] }),
      }),
      listWatch: (ownerId) => zone.listWatch({ [LABEL_OWNER]: ownerId }),
    },
  };
}

/** Our labels removed, nothing else touched: the merge patch that lets a record go (deletionPolicy Orphan). */
const RELEASE: ZoneRecordPatch = { labels: { [LABEL_OWNER]: null, [LABEL_UID]: null, [LABEL_NAME]: null } };

/**
 * The zone calls of the contract (the five, and the rename the zone allows), each ONE request, the writes
 * conditional on the revision.
 */
export function zoneRecordsClient(
  zone: Pick<ZoneClient, "getByName" | "create" | "patch" | "delete">,
): ExternalClient<ZoneRecord> {
  return {
    getByName: (name, signal) => zone.getByName(name, signal),
    create: ({ name, fields }, signal) => {
      const { ttl, ...rest } = fields as Omit<NewZoneRecord, "name" | "ttl"> & { ttl: number | null };
      return zone.create({ name, ...rest, ...(ttl === null ? {} : { ttl }) }, signal);
    },
    update: (r, patch, signal) => zone.patch(r.id, patch, r.revision, signal),
    delete: (r, signal) => zone.delete(r.id, r.revision, signal),
    release: async (r, signal) => {
      await zone.patch(r.id, RELEASE, r.revision, signal);
    },
    rename: (r, name, signal) => zone.patch(r.id, { name }, r.revision, signal),
    // Only the zone client's own errors say what happened; anything else (a bug) is a plain failure.
    classify: (err) => (err instanceof ZoneError ? classifyHttp(err) : { failure: "failed" }),
  };
}
