/**
 * The real Kubernetes semantics the controller relies on, proven against the local control plane —
 * and the harness itself: versions, several control planes side by side, nothing left behind, and the
 * persistent cluster of `npm run cluster`.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api, VersionApi, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  installCRDs,
  isAlive,
  isPortFree,
  KUBERNETES_VERSION,
  type LocalControlPlane,
  TEMP_PREFIX,
} from "@shapes/envtest";
import { startLocalControlPlane } from "./support/envtest.ts";
import { createNamespace, eventually, statusOf } from "./support/kube.ts";
import { GROUP, ShapesClient, VERSION, shape } from "./support/shapes.ts";

let cp: LocalControlPlane;
let kc: KubeConfig;
let shapes: ShapesClient;
let ns: string;

beforeAll(async () => {
  cp = await startLocalControlPlane();
  await installCRDs(cp.kubeconfigPath);
  kc = cp.kubeConfig();
  shapes = new ShapesClient(kc);
  ns = await createNamespace(kc, "semantics");
});

afterAll(async () => {
  await cp?.stop();
});

describe("versions", () => {
  it(`/version says ${KUBERNETES_VERSION}, stamped by the build (not v0.0.0-master)`, async () => {
    const info = await kc.makeApiClient(VersionApi).getCode();
    expect(info.gitVersion).toBe(KUBERNETES_VERSION);
    expect(`v${info.major}.${info.minor}`).toBe(KUBERNETES_VERSION.replace(/\.\d+$/, ""));
    expect(info.gitTreeState).toBe("clean");
    expect(Date.parse(info.buildDate)).toBeGreaterThan(Date.parse("2026-01-01"));
  });

  it("kubectl version tells the truth about client and server", async () => {
    const kubectl = inject("envtestBinaries").kubectl;
    if (!kubectl) throw new Error("the binaries have no kubectl");
    const out = await run(kubectl, ["--kubeconfig", cp.kubeconfigPath, "version", "-o", "json"]);
    const versions = JSON.parse(out.stdout) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(versions.clientVersion.gitVersion).toBe(KUBERNETES_VERSION);
    expect(versions.serverVersion.gitVersion).toBe(KUBERNETES_VERSION);
  });
});

describe("finalizers", () => {
  it("hold deletion: deletionTimestamp is set and the object stays until the finalizer is removed", async () => {
    await shapes.createShape(
      ns,
      shape(ns, "held", { type: "square", color: "red" }, { finalizers: ["test.example.com/hold"] }),
    );
    await shapes.deleteShape(ns, "held");

    const deleting = await shapes.getShape(ns, "held");
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    expect(deleting.metadata.finalizers).toEqual(["test.example.com/hold"]);
    // Still there a moment later, and still readable: nothing but the finalizer's owner can let it go.
    expect((await shapes.listShapes(ns)).items.map((s) => s.metadata.name)).toContain("held");

    // Remove the finalizer, guarded by resourceVersion (a concurrent change would make this fail with 409).
    await shapes.jsonPatchShape(ns, "held", [
      { op: "test", path: "/metadata/resourceVersion", value: deleting.metadata.resourceVersion },
      { op: "remove", path: "/metadata/finalizers" },
    ]);
    await eventually("the Shape to be gone", async () =>
      (await statusOf(() => shapes.getShape(ns, "held"))) === 404 ? true : undefined,
    );
  });

  const stale = [
    {
      reason: "a merge patch carrying the resourceVersion it read: 409 Conflict",
      remove: (rv: string) =>
        shapes.patchShape(ns, "raced", { metadata: { resourceVersion: rv, finalizers: null } }),
      code: 409,
    },
    {
      reason: "a JSON Patch whose `test` op checks the resourceVersion: 422",
      remove: (rv: string) =>
        shapes.jsonPatchShape(ns, "raced", [
          { op: "test", path: "/metadata/resourceVersion", value: rv },
          { op: "remove", path: "/metadata/finalizers" },
        ]),
      code: 422,
    },
  ];
  it.each(stale)(
    "a finalizer removal from a stale read is refused, so no change is lost: $reason",
    async ({ remove, code }) => {
      await shapes.createShape(
        ns,
        shape(ns, "raced", { type: "circle", color: "blue" }, { finalizers: ["test.example.com/hold"] }),
      );
      const before = await shapes.getShape(ns, "raced");
      await shapes.patchShape(ns, "raced", { spec: { color: "green" } }); // someone else writes meanwhile
      expect(await statusOf(() => remove(before.metadata.resourceVersion))).toBe(code);
      expect((await shapes.getShape(ns, "raced")).metadata.finalizers).toEqual(["test.example.com/hold"]);
      await shapes.patchShape(ns, "raced", { metadata: { finalizers: null } });
      await shapes.deleteShape(ns, "raced");
      await eventually("the Shape to be gone", async () =>
        (await statusOf(() => shapes.getShape(ns, "raced"))) === 404 ? true : undefined,
      );
    },
  );
});

describe("spec and status are separate", () => {
  it("a status write leaves spec alone, and does not bump generation", async () => {
    const created = await shapes.createShape(ns, shape(ns, "split", { type: "square", color: "red" }));
    const written = await shapes.patchShapeStatus(ns, "split", {
      spec: { color: "purple" }, // ignored: the status subresource only writes status
      status: { cloudId: "shp_1", observedGeneration: 1 },
    });
    expect(written.status).toEqual({ cloudId: "shp_1", observedGeneration: 1 });
    expect(written.spec.color).toBe("red");
    expect(written.metadata.generation).toBe(created.metadata.generation);
  });

  it("a spec write leaves status alone (status in it is ignored), and bumps generation", async () => {
    const before = await shapes.getShape(ns, "split");
    const written = await shapes.patchShape(ns, "split", {
      spec: { color: "blue" },
      status: { cloudId: "forged" }, // ignored: the main resource does not write status
    });
    expect(written.spec.color).toBe("blue");
    expect(written.status).toEqual({ cloudId: "shp_1", observedGeneration: 1 });
    expect(written.metadata.generation).toBe(before.metadata.generation + 1);
  });
});

describe("watches", () => {
  it("a watch from a resourceVersion older than the API server's watch cache gets 410 Expired", async () => {
    const created = await shapes.createShape(ns, shape(ns, "watched", { type: "square", color: "red" }));
    const old = created.metadata.resourceVersion;
    await shapes.patchShape(ns, "watched", { spec: { color: "orange" } });

    // Before: the old resourceVersion is still in the watch cache's window, and the watch replays from it.
    const replay = await firstWatchEvent(kc, ns, old);
    expect(replay).toMatchObject({ type: "MODIFIED", object: { spec: { color: "orange" } } });

    // An API server restart starts a new watch cache at the current revision: everything older has expired.
    // (Compacting etcd alone does not do it: the watch cache serves watches, not etcd.)
    await cp.restartApiServer();
    const expired = await firstWatchEventOnceServed(kc, ns, old);
    expect(expired).toMatchObject({ type: "ERROR", object: { code: 410, reason: "Expired" } });

    // Recovery, as every informer does it: relist, then watch from the list's resourceVersion.
    const list = await shapes.listShapes(ns);
    const next = firstWatchEventOnceServed(kc, ns, list.metadata.resourceVersion);
    await shapes.patchShape(ns, "watched", { spec: { color: "yellow" } });
    expect(await next).toMatchObject({ type: "MODIFIED", object: { spec: { color: "yellow" } } });
  });
});

describe("least privilege", () => {
  let other: string;
  beforeAll(async () => {
    other = await createNamespace(kc, "elsewhere");
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: "shape-reader" },
        rules: [{ apiGroups: [GROUP], resources: ["shapes"], verbs: ["get", "list", "watch"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: "shape-readers" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "shape-reader" },
        subjects: [
          { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" },
          { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "shape-viewers" },
          { kind: "ServiceAccount", name: "reader", namespace: ns },
        ],
      },
    });
  });

  /** What an identity may do: list Shapes here and elsewhere, create one here, list namespaces. */
  async function probe(identity: { kubeConfig(): KubeConfig }) {
    const client = new ShapesClient(identity.kubeConfig());
    const core = identity.kubeConfig().makeApiClient(CoreV1Api);
    return {
      listHere: await statusOf(() => client.listShapes(ns)),
      listElsewhere: await statusOf(() => client.listShapes(other)),
      createHere: await statusOf(() =>
        client.createShape(ns, shape(ns, "not-allowed", { type: "square", color: "red" })),
      ),
      listNamespaces: await statusOf(() => core.listNamespace()),
    };
  }
  const grantOnly = { listHere: 200, listElsewhere: 403, createHere: 403, listNamespaces: 403 };

  const cases = [
    { reason: "a user bound by name", who: { user: "alice" } },
    { reason: "a user bound through a group", who: { user: "bob", groups: ["shape-viewers"] } },
  ];
  it.each(cases)("$reason gets 2xx inside its grant and 403 outside", async ({ who }) => {
    const identity = await cp.identity(who);
    // RBAC reads bindings through an informer: the grant can take a moment to apply.
    await eventually("the grant to apply", async () =>
      (await probe(identity)).listHere === 200 ? true : undefined,
    );
    expect(await probe(identity)).toEqual(grantOnly);
  });

  it("a service account bound in its namespace gets the same, and one elsewhere gets nothing", async () => {
    const reader = await cp.serviceAccountIdentity(ns, "reader");
    await eventually("the grant to apply", async () =>
      (await probe(reader)).listHere === 200 ? true : undefined,
    );
    expect(await probe(reader)).toEqual(grantOnly);
    const stranger = await cp.serviceAccountIdentity(other, "reader"); // same name, other namespace
    expect(await probe(stranger)).toEqual({
      listHere: 403,
      listElsewhere: 403,
      createHere: 403,
      listNamespaces: 403,
    });
  });

  it("an identity nobody granted anything gets 403 everywhere", async () => {
    expect(await probe(await cp.identity({ user: "mallory" }))).toEqual({
      listHere: 403,
      listElsewhere: 403,
      createHere: 403,
      listNamespaces: 403,
    });
  });
});

describe("the harness", () => {
  it("runs two control planes side by side, each with its own data, and stops one without the other", async () => {
    const second = await startLocalControlPlane();
    try {
      expect(second.server).not.toBe(cp.server);
      expect(second.dir).not.toBe(cp.dir);
      expect(new Set([...Object.values(second.ports), ...Object.values(cp.ports)]).size).toBe(6);
      const core2 = second.kubeConfig().makeApiClient(CoreV1Api);
      await core2.createNamespace({ body: { metadata: { name: "only-in-second" } } });
      expect(
        await statusOf(() => kc.makeApiClient(CoreV1Api).readNamespace({ name: "only-in-second" })),
      ).toBe(404);
    } finally {
      await second.stop();
    }
    expect((await kc.makeApiClient(VersionApi).getCode()).gitVersion).toBe(KUBERNETES_VERSION);
  });

  it("stop() leaves nothing behind: no process, no listening port, no folder", async () => {
    const third = await startLocalControlPlane();
    const pids = third.pids();
    expect(isAlive(pids.etcd) && isAlive(pids.apiServer)).toBe(true);
    await third.stop();
    expect(isAlive(pids.etcd)).toBe(false);
    expect(isAlive(pids.apiServer)).toBe(false);
    for (const port of Object.values(third.ports)) expect(await isPortFree(port)).toBe(true);
    expect(existsSync(third.dir)).toBe(false);
    await third.stop(); // a second stop is harmless
  });

  it("a control plane that cannot start says why, with the last lines of the child's log, and leaves nothing", async () => {
    const before = await ourTempDirs();
    const error = await startLocalControlPlane({ apiServerFlags: ["--authorization-mode=NoSuchMode"] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/cannot start kube-apiserver: it exited \(code \d+\) before it was ready/);
    expect(error?.message).toMatch(/NoSuchMode/);
    expect(await ourTempDirs()).toEqual(before);
  });
});

describe("npm run cluster: the persistent cluster", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "e2e-cluster-cli-"));
  });
  afterAll(async () => {
    await run(process.execPath, [CLI, "down", "--purge", "--dir", dir]).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  it("up starts it detached and prints export KUBECONFIG; it outlives the command; down stops it and keeps the data", async () => {
    const up = await run(process.execPath, [CLI, "up", "--dir", dir]);
    expect(up.stdout).toBe(`export KUBECONFIG=${join(dir, "kubeconfig")}\n`);
    const state = JSON.parse(await readFile(join(dir, "state.json"), "utf8")) as {
      pids: { etcd: number; apiServer: number };
    };
    // The command has returned; the cluster still runs and answers.
    expect(isAlive(state.pids.etcd) && isAlive(state.pids.apiServer)).toBe(true);
    const userKc = new KubeConfig();
    userKc.loadFromFile(join(dir, "kubeconfig"));
    await userKc
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: "survives-restarts" } } });

    const again = await run(process.execPath, [CLI, "up", "--dir", dir]);
    expect(again.stderr).toMatch(/already running/);
    expect(again.stdout).toBe(up.stdout);

    const status = await run(process.execPath, [CLI, "status", "--dir", dir]);
    expect(status.stdout).toMatch(
      new RegExp(
        `running\\n\\s+kube-apiserver\\s+pid ${state.pids.apiServer}\\s+https://127\\.0\\.0\\.1:\\d+ ${KUBERNETES_VERSION}`,
      ),
    );

    await run(process.execPath, [CLI, "down", "--dir", dir]);
    expect(isAlive(state.pids.etcd) || isAlive(state.pids.apiServer)).toBe(false);
    expect(await run(process.execPath, [CLI, "status", "--dir", dir], [3])).toMatchObject({ code: 3 });

    // Up again: same kubeconfig path, same data.
    await run(process.execPath, [CLI, "up", "--dir", dir]);
    userKc.loadFromFile(join(dir, "kubeconfig"));
    const kept = await userKc.makeApiClient(CoreV1Api).readNamespace({ name: "survives-restarts" });
    expect(kept.metadata?.name).toBe("survives-restarts");

    await run(process.execPath, [CLI, "down", "--purge", "--dir", dir]);
    expect(existsSync(dir)).toBe(false);
  });
});

/** The temp folders of control planes this process started and has not stopped. */
async function ourTempDirs(): Promise<string[]> {
  const mine: string[] = [];
  for (const entry of await readdir(tmpdir())) {
    if (!entry.startsWith(TEMP_PREFIX)) continue;
    try {
      const owner = JSON.parse(await readFile(join(tmpdir(), entry, "owner.json"), "utf8")) as {
        pid?: number;
      };
      if (owner.pid === process.pid) mine.push(entry);
    } catch {
      // not a control plane folder, or being deleted
    }
  }
  return mine.sort();
}

const CLI = join(import.meta.dirname, "..", "envtest", "src", "cli.ts");

/** Runs a command to completion; rejects unless it exits with one of `codes` (default 0). */
function run(
  command: string,
  args: string[],
  codes = [0],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code) =>
      codes.includes(code ?? -1)
        ? resolve({ code: code ?? -1, stdout, stderr })
        : reject(new Error(`${command} ${args.join(" ")} exited with ${code}:\n${stderr}`)),
    );
  });
}

/**
 * {@link firstWatchEvent}, retried while the API server answers 429: right after a restart it refuses
 * watches (Too Many Requests, with Retry-After) until its watch cache for the resource is initialized.
 */
async function firstWatchEventOnceServed(config: KubeConfig, namespace: string, resourceVersion: string) {
  return eventually("a watch the API server serves", async () => {
    try {
      return await firstWatchEvent(config, namespace, resourceVersion);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 429) return undefined;
      throw error;
    }
  });
}

/** The first event of a watch on the namespace's Shapes from `resourceVersion`; the watch is then closed. */
async function firstWatchEvent(
  config: KubeConfig,
  namespace: string,
  resourceVersion: string,
): Promise<{ type: string; object: Record<string, unknown> }> {
  let controller: AbortController | undefined;
  const event = new Promise<{ type: string; object: Record<string, unknown> }>((resolve, reject) => {
    void new Watch(config)
      .watch(
        `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/shapes`,
        { resourceVersion },
        (type, object: Record<string, unknown>) => resolve({ type, object }),
        (err: unknown) =>
          err ? reject(err as Error) : reject(new Error("the watch ended without an event")),
      )
      .then((c) => (controller = c), reject);
  });
  try {
    return await event;
  } finally {
    controller?.abort();
  }
}
