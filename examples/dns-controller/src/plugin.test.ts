/**
 * The Record plugin against the REAL zone API over HTTP: the desired state round-trips through a create
 * (converged at once, no drift), the writes are conditional, release lets go of our labels only, every
 * failure is read the way the library needs, and the names map both ways.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diffManaged, type ExternalFailure, type Json } from "reconcile-kit";
import { fqdnOf, recordOfFqdn, type DnsRecord, type RecordSpec } from "./api.ts";
import { ZoneClient } from "./client.ts";
import { dnsPlugin, zoneRecordsClient } from "./plugin.ts";
import { ZoneApi } from "./zone-api.ts";

let zone: ZoneApi;
let zoneClient: ZoneClient;
const plugin = () => dnsPlugin(zoneClient);
const client = () => zoneRecordsClient(zoneClient);
const signal = () => AbortSignal.timeout(10_000);

beforeAll(async () => {
  zone = new ZoneApi();
  zoneClient = new ZoneClient({ baseUrl: await zone.start() });
});
afterAll(() => zone.stop());

function recordResource(name: string, spec: RecordSpec): DnsRecord {
  return {
    apiVersion: "dns.example.com/v1alpha1",
    kind: "Record",
    metadata: { namespace: "team-a", name, uid: `uid-${name}` },
    spec,
  };
}
const marks = (name: string) => ({ owner: "k8s-test", uid: `uid-${name}`, resourceKey: `team-a/${name}` });

/** Creates the zone record `name` asks for, through the plugin. */
async function created(name: string, spec: RecordSpec = { type: "A", value: "192.0.2.1" }) {
  const desired = plugin().resource.desired(recordResource(name, spec), marks(name));
  return { desired, record: await client().create(desired, signal()) };
}

describe("the Record plugin over the zone API", () => {
  it("creates exactly the desired record: observed again, it has no drift", async () => {
    const { desired, record } = await created("web");
    expect(desired).toEqual({
      name: "web.team-a.example.test",
      fields: {
        type: "A",
        value: "192.0.2.1",
        ttl: null,
        labels: { owner: "k8s-test", "k8s-uid": "uid-web", "k8s-name": "team-a/web" },
      },
    });
    expect(record.ttl).toBeUndefined();
    const observed = plugin().external.fieldsOf(record) as Json;
    expect(diffManaged(desired.fields as Json, observed)).toEqual([]);
    expect(plugin().external.marksOf(record)).toEqual({ owner: "k8s-test", uid: "uid-web" });
    expect(plugin().resource.statusOf({ id: record.id, name: record.name })).toEqual({
      recordId: record.id,
      fqdn: "web.team-a.example.test",
    });
  });

  it("updates with a merge patch at the observed revision, and refuses a stale one", async () => {
    const { record } = await created("api", { type: "TXT", value: "v1", ttl: 300 });
    const updated = await client().update(record, { value: "v2", ttl: null }, signal());
    expect(updated).toMatchObject({ value: "v2", labels: record.labels });
    expect(updated.ttl).toBeUndefined();
    const stale = await client()
      .update(record, { value: "v3" }, signal())
      .catch((e: unknown) => e);
    expect(client().classify(stale).failure).toBe("stale");
  });

  it("releases by removing our three labels and nothing else", async () => {
    const { record } = await created("kept");
    const withTeam = await zoneClient.patch(record.id, { labels: { team: "blue" } });
    await client().release(withTeam, signal());
    const after = await client().getByName(record.name, signal());
    expect(after).toMatchObject({ type: "A", value: "192.0.2.1", labels: { team: "blue" } });
    expect(plugin().external.marksOf(after!)).toEqual({ owner: undefined, uid: undefined });
  });

  it("deletes at the observed revision; a second delete is notFound", async () => {
    const { record } = await created("doomed");
    await client().delete(record, signal());
    const again = await client()
      .delete(record, signal())
      .catch((e: unknown) => e);
    expect(client().classify(again).failure).toBe("notFound");
  });

  it("lists and watches only the records carrying the owner label", async () => {
    await created("mine");
    await zoneClient.create({
      name: "theirs.team-a.example.test",
      type: "A",
      value: "192.0.2.1",
      labels: {},
    });
    const page = await plugin().external.listWatch("k8s-test").list(undefined, signal());
    expect(page.items.map((r) => r.name)).toContain("mine.team-a.example.test");
    expect(page.items.map((r) => r.name)).not.toContain("theirs.team-a.example.test");
  });

  it.each<{ reason: string; fail: () => Promise<unknown>; failure: ExternalFailure; retryAfterMs?: number }>([
    {
      reason: "404: the record is gone (a delete is then done)",
      fail: () => zoneClient.delete("rec_missing"),
      failure: "notFound",
    },
    {
      reason: "409: the name is taken (the library reads the holder next)",
      fail: async () => client().create((await created("twice")).desired, signal()),
      failure: "conflict",
    },
    {
      reason: "412: the record changed since it was read (the change feed brings it)",
      fail: async () => {
        const { record } = await created("raced");
        await zoneClient.patch(record.id, { value: "192.0.2.7" });
        return client().delete(record, signal());
      },
      failure: "stale",
    },
    {
      reason: "429: the zone asks us to slow down, and for how long",
      fail: () => (zone.throttleNext(3), client().getByName("any.example.test", signal())),
      failure: "throttled",
      retryAfterMs: 3_000,
    },
    {
      reason: "no answer at all (network): the zone may be down, back off",
      fail: () => new ZoneClient({ baseUrl: "http://127.0.0.1:1" }).getByName("x.example.test"),
      failure: "throttled",
    },
    {
      reason: "422: the zone refuses the spec for good (a ttl below its minimum): not retried",
      fail: () => {
        const spec: RecordSpec = { type: "TXT", value: "v", ttl: 30 };
        const desired = plugin().resource.desired(recordResource("short", spec), marks("short"));
        return client().create(desired, signal());
      },
      failure: "rejected",
    },
    {
      reason: "400: an invalid request is refused just the same",
      fail: () => zoneClient.create({ name: "NOT A NAME", type: "A", value: "1", labels: {} }),
      failure: "rejected",
    },
    {
      reason: "not a zone error at all",
      fail: () => Promise.reject(new Error("boom")),
      failure: "failed",
    },
  ])("classify: $reason", async ({ fail, failure, retryAfterMs }) => {
    const err = await fail().then(
      () => expect.unreachable("the call succeeded"),
      (e: unknown) => e,
    );
    expect(client().classify(err)).toEqual({ failure, ...(retryAfterMs ? { retryAfterMs } : {}) });
  });

  it.each<{ reason: string; fqdn: string; record: { namespace: string; name: string } | undefined }>([
    { reason: "a plain name", fqdn: "web.team-a.example.test", record: { namespace: "team-a", name: "web" } },
    {
      reason: "a name with dots: a namespace holds none, so the last dot before the zone splits",
      fqdn: "www.eu.team-a.example.test",
      record: { namespace: "team-a", name: "www.eu" },
    },
    { reason: "another zone is never ours", fqdn: "web.team-a.example.org", record: undefined },
    { reason: "no namespace part", fqdn: "web.example.test", record: undefined },
    { reason: "an empty name part", fqdn: ".team-a.example.test", record: undefined },
  ])("names: $reason", ({ fqdn, record }) => {
    expect(recordOfFqdn(fqdn)).toEqual(record);
    if (record) expect(fqdnOf(record.namespace, record.name)).toBe(fqdn);
  });

  it("writes a RecordRef in the CRD's field names, and reads one (a Created status too, as older versions wrote)", () => {
    const { resource } = plugin();
    const spec = resource.intentSpec({
      resource: { namespace: "team-a", name: "web", uid: "u1" },
      externalName: "web.team-a.example.test",
      deletionPolicy: "Orphan",
      owner: "k8s-test",
    });
    expect(spec).toEqual({
      record: { namespace: "team-a", name: "web", uid: "u1" },
      fqdn: "web.team-a.example.test",
      deletionPolicy: "Orphan",
      owner: "k8s-test",
    });
    const obj = {
      metadata: { name: "web.team-a.example.test", uid: "ref-1" },
      spec,
      status: { phase: "Created", recordId: "rec_1" },
    };
    expect(resource.readIntent(obj)).toEqual({
      name: "web.team-a.example.test",
      uid: "ref-1",
      resource: { namespace: "team-a", name: "web", uid: "u1" },
      externalName: "web.team-a.example.test",
      deletionPolicy: "Orphan",
      owner: "k8s-test",
      phase: "Created",
      externalId: "rec_1",
    });
  });
});
