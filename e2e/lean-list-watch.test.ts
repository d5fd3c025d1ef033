/**
 * Scenario: the lean list-watch (library/src/source/kube-list-watch.ts, over KubeHttp, no client-node at run
 * time) against the real kube-apiserver, with its WatchList feature gate on (1.36's default) and off. With
 * the gate on, the first list is a watch-list (one streamed request, ended by the `k8s.io/initial-events-end`
 * bookmark); with it off, the API server refuses the parameters and the list-watch lists, then watches. Either
 * way a SupervisedInformer on it holds the N objects and sees later creates, updates and deletes. With the
 * gate on, the API server is also restarted under the informer (etcd kept): its watch drops, old
 * resourceVersions expire (a watch from one is answered 410 as an ERROR event: the form the list-watch
 * relists on), the informer lists again, and later changes still arrive.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "reconcile-kit";
import {
  connectKubeconfig,
  KubeApiError,
  KubeHttp,
  KubeListWatch,
  SupervisedInformer,
  type ListReason,
  type WatchListSupport,
} from "reconcile-kit/parts";
import { waitFor } from "reconcile-kit/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { LocalControlPlane } from "@shapes/envtest";
import { startLocalControlPlane } from "./support/envtest.ts";
import { skipOnExistingCluster } from "./support/stack.ts";
import { uniqueName } from "./support/kube.ts";

const existing = skipOnExistingCluster("starts API servers with the WatchList gate on and off");
const OBJECTS = 25;
const LABEL = "lean-list-watch=yes";

interface ConfigMap extends KubernetesObject {
  data?: Record<string, string>;
}

describe.skipIf(existing).each([
  { gate: "on", flags: [] as string[] },
  { gate: "off", flags: ["--feature-gates=ShardedListAndWatch=true,WatchList=false"] },
])("the lean list-watch, WatchList gate $gate", ({ gate, flags }) => {
  let cp: LocalControlPlane;
  let http: KubeHttp;
  let ns: string;
  let path: string;
  /** Why the informer listed, in order. */
  const reasons: ListReason[] = [];
  /** The resourceVersion of the first object created: expired once the API server restarted. */
  let firstRv: string;
  let informer: SupervisedInformer<ConfigMap> | undefined;

  const put = (name: string, value: string) =>
    http.request("POST", path, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, labels: { "lean-list-watch": "yes" } },
      data: { value },
    });

  beforeAll(async () => {
    cp = await startLocalControlPlane({ apiServerFlags: flags });
    http = new KubeHttp(await connectKubeconfig({ path: cp.kubeconfigPath }));
    ns = uniqueName("lean-lw");
    await http.request("POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns },
    });
    path = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < OBJECTS; i++) {
      const created = (await put(`cm-${i}`, String(i))) as { metadata: { resourceVersion: string } };
      firstRv ??= created.metadata.resourceVersion;
    }
  });

  afterAll(async () => {
    await informer?.stop();
    await http?.close();
    await cp?.stop();
  });

  test(`the first list is ${gate === "on" ? "a watch-list" : "refused as a watch-list, then a plain list"} of all ${OBJECTS} objects`, async () => {
    const support: WatchListSupport = { allowed: undefined };
    const lists: number[] = [];
    const lw = new KubeListWatch<ConfigMap>({
      http,
      path,
      labelSelector: LABEL,
      support,
      pageSize: 10,
      listed: (list) => lists.push(list.items.length),
    });
    await lw.start();
    await lw.stop();
    expect(lists).toEqual([OBJECTS]);
    expect(support.allowed).toBe(gate === "on");
    if (gate === "off") {
      // What this API server answers a watch-list with: the refusal the list-watch falls back on.
      const refused = await http
        .stream(`${path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`, () => {})
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(KubeApiError);
      expect((refused as KubeApiError).code).toBe(422);
      expect((refused as KubeApiError).message).toMatch(
        /422 Invalid: .*sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled$/,
      );
    }
  });

  test("an informer on it holds the objects and sees later creates, updates and deletes", async () => {
    reasons.length = 0;
    informer = new SupervisedInformer<ConfigMap>({
      name: "configmaps",
      http,
      path,
      labelSelector: LABEL,
      logger: silentLogger(),
      hooks: { onList: (_name, reason) => reasons.push(reason) },
    });
    await informer.start();
    expect(await informer.waitForSync()).toBe(true);
    expect(informer.list()).toHaveLength(OBJECTS);
    await put("late", "new");
    await http.request(
      "PATCH",
      `${path}/cm-0`,
      { data: { value: "changed" } },
      "application/merge-patch+json",
    );
    await http.request("DELETE", `${path}/cm-1`);
    const live = informer;
    await waitFor("the create, update and delete to reach the cache", () => {
      expect(live.get("late", ns)?.data).toEqual({ value: "new" });
      expect(live.get("cm-0", ns)?.data).toEqual({ value: "changed" });
      expect(live.get("cm-1", ns)).toBeUndefined();
    });
    expect(reasons).toEqual(["initial"]);
  });

  test.skipIf(gate === "off")(
    "an API server restart: the informer recovers, later changes arrive",
    async () => {
      const live = informer;
      if (!live) throw new Error("the informer test did not run");
      await cp.restartApiServer();
      // The new API server's watch cache starts at the current resourceVersion: an older one is expired, and
      // a watch from it is answered 410 as an ERROR event in a 200 stream (the form the list-watch relists on).
      const events: { type: string; object: { code?: number } }[] = [];
      await waitFor("a watch from an old resourceVersion to be answered", () =>
        http.stream(`${path}?watch=true&resourceVersion=${firstRv}&timeoutSeconds=5`, (line) =>
          events.push(line as { type: string; object: { code?: number } }),
        ),
      );
      expect(events.map((e) => `${e.type} ${e.object.code}`)).toEqual(["ERROR 410"]);
      await waitFor("a change made after the restart to reach the cache", async () => {
        await http
          .request("PATCH", `${path}/cm-2`, { data: { value: "after" } }, "application/merge-patch+json")
          .catch(() => undefined);
        expect(live.get("cm-2", ns)?.data).toEqual({ value: "after" });
      });
      await put("after-restart", "x");
      await waitFor("an object created after the restart", () => {
        expect(live.get("after-restart", ns)).toBeDefined();
      });
      // It listed again: after a 410 in its generation ("expired") or a supervised restart ("restart").
      expect(reasons[0]).toBe("initial");
      expect(reasons.length).toBeGreaterThan(1);
      console.log(`lean informer lists across the API server restart: ${reasons.join(", ")}`);
    },
  );
});
