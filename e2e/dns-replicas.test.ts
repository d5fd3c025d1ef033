/**
 * Scenario: the DNS example (examples/dns-controller) run as several replicas, by flag alone — what the
 * library's manager gives every plugin's main. Two replicas with `--leader-elect` (one Lease,
 * dns-system/dns-controller): exactly one leads and reconciles; SIGKILLed, the other takes over once the
 * Lease expires and reconciles a Record created after the kill. Then two replicas with `--sharding` (a ring
 * labelled dns.example.com/ring=dns-controller): each reconciles some of the Records, together all of them,
 * each exactly once.
 *
 * Each replica is its own process under the least-privilege identity of the example's rbac.yaml plus
 * rbac-replicas.yaml, against a real API server and the zone API in this process. Lease timings are short
 * so the takeover fits in a test: --lease-duration 4s, --renew-deadline 3s, --retry-period 500ms. The new
 * leader's `/why` tells the Record it reconciled, through the DNS example's `why` command (the library's client).
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoordinationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runWhy } from "reconcile-kit";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { type ControlPlane, type Identity, installCRDs } from "@shapes/envtest";
import { DNS_WHY, fqdnOf, GROUP, VERSION, ZoneApi, ZoneClient } from "@shapes/dns-controller";
import { ControllerProcess, REPO_ROOT, waitFor } from "@shapes/stack";
import { applyManifestFile, serviceAccountTokenIdentity, uniqueName } from "reconcile-kit/harness";
import { startControlPlane } from "./support/envtest.ts";

const EXAMPLE = join(REPO_ROOT, "examples", "dns-controller");
const ARTIFACTS = join(REPO_ROOT, "e2e", "artifacts", "dns-replicas");
const NAMESPACE = "dns-system";
const LEASE = "dns-controller";
const TIMINGS = ["--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"];
const METRIC = {
  leader: "dns_controller_leader",
  kubeWrites: "dns_controller_kube_writes_total",
  ringOwnedObjects: "dns_controller_ring_owned_objects",
};
/** The value every Record here asks for. */
const VALUE = "192.0.2.1";

/** One replica of the DNS controller, as its own process: the example's main with the manager's flags. */
class DnsReplica extends ControllerProcess {
  override args(): string[] {
    const o = this.options;
    return [
      ...CONTROLLER_NODE_FLAGS,
      join(EXAMPLE, "src", "main.ts"),
      `--zone-url=${o.cloudUrl}`,
      `--kubeconfig=${o.kubeconfigPath}`,
      "--metrics-address=127.0.0.1:0",
      "--leak-grace=2s",
      "--log-level=debug",
      `--identity=${o.name}`,
      ...TIMINGS,
      ...(o.extraArgs ?? []),
    ];
  }
}

describe("the DNS example as several replicas", () => {
  let cluster: ControlPlane;
  let kubeConfig: KubeConfig;
  let kubeconfigPath: string;
  let tokensDir: string | undefined;
  let zone: ZoneApi;
  let person: ZoneClient;
  let ns: string;
  const replicas: DnsReplica[] = [];

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    cluster = await startControlPlane();
    kubeConfig = cluster.kubeConfig();
    await installCRDs(kubeConfig, { dir: join(EXAMPLE, "crds") });
    await applyManifestFile(kubeConfig, join(EXAMPLE, "rbac.yaml"));
    await applyManifestFile(kubeConfig, join(EXAMPLE, "rbac-replicas.yaml"));
    let identity: Identity;
    if (cluster.kind === "local") {
      identity = await cluster.serviceAccountIdentity(NAMESPACE, "dns-controller");
    } else {
      tokensDir = await mkdtemp(join(tmpdir(), "dns-replicas-"));
      identity = await serviceAccountTokenIdentity(kubeConfig, NAMESPACE, "dns-controller", tokensDir);
    }
    kubeconfigPath = identity.kubeconfigPath;
    zone = new ZoneApi();
    await zone.start();
    person = new ZoneClient({ baseUrl: zone.url, clientId: "dns-replicas" });
    ns = uniqueName("dns-replicas");
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    for (const r of replicas) await r.stop(5_000);
    await zone?.stop();
    if (cluster?.kind === "existing") {
      await kubeConfig.makeApiClient(CoreV1Api).deleteNamespace({ name: ns });
    }
    await cluster?.stop();
    if (tokensDir) await rm(tokensDir, { recursive: true, force: true });
  });

  async function startReplica(name: string, flags: string[]): Promise<DnsReplica> {
    const replica = new DnsReplica({
      name,
      artifactsDir: ARTIFACTS,
      kubeconfigPath,
      cloudUrl: zone.url,
      cloudToken: "",
      extraArgs: flags,
    });
    replicas.push(replica);
    await replica.start();
    return replica;
  }

  async function applyRecord(name: string): Promise<void> {
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "Record",
      metadata: { namespace: ns, name },
      spec: { type: "A", value: VALUE },
    };
    const api = KubernetesObjectApi.makeApiClient(kubeConfig);
    await api.patch(body, undefined, undefined, "dns-replicas", true, PatchStrategy.ServerSideApply);
  }

  /** Waits until the zone holds the Record's record, with its value. */
  async function waitInZone(name: string): Promise<void> {
    await waitFor(`the zone record of ${ns}/${name}`, async () => {
      expect((await person.getByName(fqdnOf(ns, name)))?.value).toBe(VALUE);
    });
  }

  /** The running replicas whose `leader` gauge is 1. */
  async function leaders(among: readonly DnsReplica[]): Promise<DnsReplica[]> {
    const leading: DnsReplica[] = [];
    for (const r of among) if (r.running && (await r.metrics()).sum(METRIC.leader) === 1) leading.push(r);
    return leading;
  }

  describe("--leader-elect: one leader, and a failover", () => {
    let pair: DnsReplica[] = [];
    afterAll(async () => {
      for (const r of pair) await r.stop(5_000);
    });

    test("exactly one replica leads and holds the Lease; only it writes", async () => {
      pair = await Promise.all(["leader-a", "leader-b"].map((n) => startReplica(n, ["--leader-elect"])));
      const [leader] = await waitFor("exactly one leader", async () => {
        const leading = await leaders(pair);
        expect(leading).toHaveLength(1);
        return leading as [DnsReplica];
      });
      const lease = await kubeConfig
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: NAMESPACE, name: LEASE });
      expect(lease.spec?.holderIdentity).toBe(leader.options.name);

      await applyRecord("before-kill");
      await waitInZone("before-kill");
      const standby = pair.find((r) => r !== leader) as DnsReplica;
      expect((await standby.metrics()).sum(METRIC.kubeWrites)).toBe(0);
    });

    test("the leader is SIGKILLed: the other takes over and reconciles a Record created after the kill", async () => {
      const [leader] = await leaders(pair);
      if (!leader) throw new Error("no leader to kill");
      const standby = pair.find((r) => r !== leader) as DnsReplica;
      await leader.kill();
      await waitFor("the standby to lead", async () => {
        expect((await leaders(pair)).map((r) => r.options.name)).toEqual([standby.options.name]);
      });
      await applyRecord("after-kill");
      await waitInZone("after-kill");
      expect((await standby.metrics()).sum(METRIC.kubeWrites)).toBeGreaterThan(0);

      let story = "";
      const why = [`${ns}/after-kill`, "--metrics-url", standby.url];
      const code = await runWhy(DNS_WHY, why, {
        out: (text) => (story += text),
        err: (text) => (story += text),
      });
      expect(code, story).toBe(0);
      expect(story).toMatch(new RegExp(`^${ns}/after-kill: \\d+ reconciles? `));
      expect(story).toContain(`create: no zone record of ours is named ${fqdnOf(ns, "after-kill")}`);
      expect(await standby.problems(), standby.options.name).toEqual([]);
    });
  });

  describe("--sharding: two replicas split the Records", () => {
    const RECORDS = Array.from({ length: 20 }, (_, i) => `shard-${String(i).padStart(2, "0")}`);
    let ring: DnsReplica[] = [];
    afterAll(async () => {
      for (const r of ring) await r.stop(5_000);
    });

    test("each replica holds a labelled Lease and reconciles some of the Records; together, all of them", async () => {
      ring = await Promise.all(["ring-a", "ring-b"].map((n) => startReplica(n, ["--sharding"])));
      await waitFor("a Lease of its own for each replica of the ring", async () => {
        const leases = await kubeConfig.makeApiClient(CoordinationV1Api).listNamespacedLease({
          namespace: NAMESPACE,
          labelSelector: `${GROUP}/ring=${LEASE}`,
        });
        expect(leases.items.map((l) => l.spec?.holderIdentity).sort()).toEqual(["ring-a", "ring-b"]);
      });
      // Both hold a part before a Record exists: each owns half of the ring.
      await waitFor("each replica to own a part of the ring", async () => {
        for (const r of ring) {
          expect((await r.metrics()).sum("dns_controller_ring_owned_share")).toBeGreaterThan(0);
        }
      });
      for (const name of RECORDS) await applyRecord(name);
      for (const name of RECORDS) await waitInZone(name);
      const owned = await waitFor("the replicas' caches to add up to every Record", async () => {
        const counts = await Promise.all(
          ring.map(async (r) => (await r.metrics()).sum(METRIC.ringOwnedObjects, { cache: "resources" })),
        );
        // These, and the two Records of the leader-election tests.
        expect(counts.reduce((a, b) => a + b, 0)).toBe(RECORDS.length + 2);
        return counts;
      });
      for (const count of owned) expect(count).toBeGreaterThan(0);
      for (const r of ring) {
        expect((await r.metrics()).sum(METRIC.kubeWrites), r.options.name).toBeGreaterThan(0);
      }
      // One zone record each: no Record was created twice.
      const page = await person.list({ limit: 500 });
      expect(page.nextPageToken).toBeUndefined();
      const ours = page.items.filter((z) => z.name.includes(`.${ns}.`));
      expect(ours.map((z) => z.name).sort()).toEqual(
        [...RECORDS, "before-kill", "after-kill"].map((name) => fqdnOf(ns, name)).sort(),
      );
      for (const r of ring) expect(await r.problems(), r.options.name).toEqual([]);
    });
  });
});
