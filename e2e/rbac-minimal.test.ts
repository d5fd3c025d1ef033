/**
 * deploy/rbac.yaml proven minimal, not only sufficient: for every verb it grants the controller (its
 * ClusterRole and its leader-election Role, one row per API group × resource × verb; and the ring's verbs of
 * deploy/sharding/rbac.yaml, with --sharding), a controller runs on
 * one real API server with exactly that verb taken away, drives the smallest scenario that needs it, and
 * the test shows what a person would see break: a Forbidden in the controller's log naming that verb and
 * resource, and where there is one, the symptom (a readiness that never comes, a condition's reason, a 503
 * on the metrics port, a Shape stuck deleting). A control row runs every scenario with every rule, so a
 * broken scenario is not taken for a needed rule; a completeness check parses deploy/rbac.yaml, so a rule
 * added without a row (or a row for a verb no longer granted) fails here. The DNS example's rbac.yaml is
 * checked to grant the same library verbs on its own kinds (a comparison of the files, not a run).
 *
 * Rows are independent: each has a fresh service account bound to a fresh ClusterRole and Role (the
 * project's rules minus one verb), its own namespace and Lease, and its controller is stopped and its
 * objects removed before the next row starts. Every controller runs with the same flags (`--leader-elect`,
 * `--metrics-auth=kubernetes`; `--sharding` instead of `--leader-elect` for the ring's rows and their
 * control), so the rows differ in one verb only.
 *
 * Two verbs run on a second API server: `list` of Shapes and of ShapeRefs. On an API server that serves
 * watch-lists (kube-apiserver 1.36 by default: its WatchList gate is beta, on) the informers' first list is a
 * watch-list, which needs `watch` alone, so taking `list` away breaks nothing there. They send a `list` where
 * the API server refuses watch-lists (e2e/lean-list-watch.test.ts), as one with the gate off does, or an older
 * one: those rows ({@link LIST_ROWS}) run, with their own control row, on a stack whose API server runs
 * with `WatchList=false`, and that control row checks the API server does refuse a watch-list.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubernetesObject,
  type V1PolicyRule,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  CLOUD_TOKEN,
  conditionOf,
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  ControllerProcess,
  forbiddenLines,
  REPO_ROOT,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { uniqueName } from "reconcile-kit/harness";
import { VERSION } from "@shapes/controller";
import { connectKubeconfig, KubeApiError, KubeHttp } from "reconcile-kit/parts";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

const RBAC_FILE = join(REPO_ROOT, "deploy", "rbac.yaml");
/** The sharding component's Role: the ring's verbs on top of rbac.yaml's (replicas with --sharding). */
const SHARDING_RBAC_FILE = join(REPO_ROOT, "deploy", "sharding", "rbac.yaml");
const GROUP = "shapes.example.com";

/** A role of deploy/rbac.yaml, in wire form. */
interface Role extends KubernetesObject {
  kind: "ClusterRole" | "Role";
  metadata: { name: string; namespace?: string };
  rules: V1PolicyRule[];
}

/** One granted verb: `<apiGroup>/<resource> <verb>` (core group: `/<resource>`), e.g. `/events create`. */
type Grant = string;
const grantOf = (group: string, resource: string, verb: string): Grant => `${group}/${resource} ${verb}`;

/** The DNS example's RBAC: the same library, on its own kinds (records, recordrefs), without leader election. */
const DNS_RBAC_FILE = join(REPO_ROOT, "examples", "dns-controller", "rbac.yaml");
const ETCD_RBAC_FILE = join(REPO_ROOT, "examples", "etcd-controller", "rbac.yaml");

/**
 * The roles `file` binds to the service account `account` (default the Shapes controller's; rbac.yaml's
 * scrapers' role is not one).
 */
async function controllerRoles(
  file: string,
  account = { namespace: CONTROLLER_NAMESPACE, name: CONTROLLER_SERVICE_ACCOUNT },
): Promise<Role[]> {
  const objects = parseAllDocuments(await readFile(file, "utf8"))
    .map((d) => d.toJS() as KubernetesObject & Record<string, unknown>)
    .filter((o) => o !== null);
  const bound = objects
    .filter((o) => o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding")
    .filter((b) =>
      (b.subjects as { kind: string; name: string; namespace?: string }[]).some(
        (s) => s.kind === "ServiceAccount" && s.name === account.name && s.namespace === account.namespace,
      ),
    )
    .map((b) => `${(b.roleRef as { kind: string }).kind}/${(b.roleRef as { name: string }).name}`);
  return objects.filter((o) => bound.includes(`${o.kind}/${o.metadata?.name}`)) as unknown as Role[];
}

/** Every (apiGroup, resource, verb) the roles grant. */
function grantsOf(roles: readonly Role[]): Grant[] {
  return roles.flatMap((role) =>
    role.rules.flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((group) =>
        (rule.resources ?? []).flatMap((resource) =>
          rule.verbs.map((verb) => grantOf(group, resource, verb)),
        ),
      ),
    ),
  );
}

/** The rules of `role` with the one grant `without` taken away (a rule left with no verb goes). */
function rulesWithout(role: Role, without: Grant | undefined): V1PolicyRule[] {
  return role.rules.flatMap((rule) => {
    const groups = rule.apiGroups ?? [];
    const resources = rule.resources ?? [];
    if (groups.length !== 1 || resources.length !== 1) {
      throw new Error(
        `cannot take one verb out of a rule of ${role.metadata.name} with several groups or resources: split it`,
      );
    }
    const verbs = rule.verbs.filter((verb) => grantOf(groups[0] ?? "", resources[0] ?? "", verb) !== without);
    return verbs.length === 0 ? [] : [{ ...rule, verbs }];
  });
}

/** What a row's scenario has at hand. */
interface Run {
  stack: Stack;
  controller: ControllerProcess;
  /** The row's namespace (its Shapes). */
  ns: string;
  /** The row's Lease in the controller's namespace (with --sharding: the ring's name, its Leases' label). */
  lease: string;
  /** A token of a scraper bound to `shapes-metrics-reader`. */
  scraperToken: string;
}

/** The smallest thing a person does that needs a verb: `drive` does it, `works` checks it worked. */
interface Scenario {
  /** Start without waiting for /readyz (readiness is what breaks). */
  startOnly?: boolean;
  drive: (run: Run) => Promise<void>;
  works: (run: Run) => Promise<void>;
}

const RED = { type: "square", color: "red" } as const;

/** Creates a ShapeRef as the admin, as a controller would have written it, for a Shape that never was. */
async function createDanglingShapeRef({ stack, ns }: Run): Promise<void> {
  await stack.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: "shaperefs",
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "ShapeRef",
      metadata: { name: `${ns}.ghost` },
      spec: {
        shape: { namespace: ns, name: "ghost", uid: randomUUID() },
        cloudName: `${ns}.ghost`,
        deletionPolicy: "Delete",
        owner: stack.ownerId,
      },
    },
  });
}

/** GET /metrics with the scraper's token. */
async function scrape({ controller, scraperToken }: Run): Promise<{ status: number; text: string }> {
  const res = await fetch(`${controller.url}/metrics`, {
    headers: { authorization: `Bearer ${scraperToken}` },
  });
  return { status: res.status, text: await res.text() };
}

type ScenarioName = "start" | "converge" | "policy" | "delete" | "dangling" | "metrics" | "lease" | "ring";

const scenarios: Record<ScenarioName, Scenario> = {
  /** The controller starts: owner id known, caches synced, /readyz 200. */
  start: {
    startOnly: true,
    drive: async () => {},
    works: ({ controller }) => controller.waitReady(),
  },
  /** A Shape applied: finalizer, ShapeRef, cloud shape, status, and an Event about it. */
  converge: {
    drive: ({ stack, ns }) => stack.kube.applyShape(ns, "red", RED).then(() => undefined),
    works: async ({ stack, ns }) => {
      await waitConverged(stack, ns, "red");
      await waitFor("an Event about the Shape", async () => {
        expect((await stack.kube.eventsFor(ns, "red")).map((e) => e.reason)).toContain("CreatedCloudShape");
      });
    },
  },
  /** A converged Shape's deletionPolicy changed: the ShapeRef's copy follows. */
  policy: {
    drive: async ({ stack, ns }) => {
      await stack.kube.applyShape(ns, "orphaned", RED);
      await waitConverged(stack, ns, "orphaned");
      await stack.kube.applyShape(ns, "orphaned", { ...RED, deletionPolicy: "Orphan" });
    },
    works: ({ stack, ns }) =>
      waitFor("the ShapeRef to say deletionPolicy Orphan", async () => {
        expect((await stack.kube.getShapeRef(`${ns}.orphaned`))?.spec.deletionPolicy).toBe("Orphan");
      }),
  },
  /** A converged Shape deleted: its cloud shape, ShapeRef and the Shape go. */
  delete: {
    drive: async ({ stack, ns }) => {
      await stack.kube.applyShape(ns, "deleted", RED);
      await waitConverged(stack, ns, "deleted");
      await stack.kube.deleteShape(ns, "deleted");
    },
    works: ({ stack, ns }) =>
      waitFor("the Shape, its ShapeRef and its cloud shape to be gone", async () => {
        expect(await stack.kube.getShape(ns, "deleted"), "Shape").toBeUndefined();
        expect(await stack.kube.getShapeRef(`${ns}.deleted`), "ShapeRef").toBeUndefined();
        expect(
          (await stack.cloud.list()).filter((s) => s.name === `${ns}.deleted`),
          "cloud",
        ).toEqual([]);
      }),
  },
  /** A ShapeRef whose Shape is gone (a deletion the controller missed): checked live, then removed. */
  dangling: {
    drive: createDanglingShapeRef,
    works: ({ stack, ns }) =>
      waitFor("the dangling ShapeRef to be removed", async () => {
        expect(await stack.kube.getShapeRef(`${ns}.ghost`)).toBeUndefined();
      }),
  },
  /** A scraper reads /metrics with its token (the controller reviews the token and the access). */
  metrics: {
    drive: async () => {},
    works: async (run) => {
      const answer = await scrape(run);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text).toMatch(/^# HELP /m);
    },
  },
  /** The controller leads: it holds its Lease and renews it. */
  lease: {
    drive: async () => {},
    works: async ({ stack, controller, lease }) => {
      const first = await waitFor("the controller to hold its Lease", async () => {
        const held = await stack.kube.getLease(CONTROLLER_NAMESPACE, lease);
        expect(held?.spec?.holderIdentity).toBe(controller.options.name);
        return held?.spec?.renewTime;
      });
      await waitFor("the Lease to be renewed", async () => {
        const held = await stack.kube.getLease(CONTROLLER_NAMESPACE, lease);
        expect(held?.spec?.holderIdentity).toBe(controller.options.name);
        expect(held?.spec?.renewTime).not.toEqual(first);
      });
    },
  },
  /** With --sharding: the replica joins the ring (a Lease of its own, found among the ring's) and leaves it when stopped. */
  ring: {
    startOnly: true,
    drive: async () => {},
    works: async (run) => {
      await run.controller.waitReady();
      await ringLease(run);
      await run.controller.stop();
      await waitFor("the replica's ring Lease to be deleted", async () => {
        expect(await run.stack.kube.listLeases(CONTROLLER_NAMESPACE, `${RING_LABEL}=${run.lease}`)).toEqual(
          [],
        );
      });
    },
  },
};

const RING_LABEL = "shapes.example.com/ring";

/** Waits for the replica's Lease in the ring `run.lease` and returns its name. */
const ringLease = ({ stack, lease }: Run) =>
  waitFor("the replica's Lease in the ring", async () => {
    const leases = await stack.kube.listLeases(CONTROLLER_NAMESPACE, `${RING_LABEL}=${lease}`);
    expect(leases).toHaveLength(1);
    return leases[0]?.metadata?.name ?? "";
  });

/** Waits for a Forbidden in the controller's log for `verb` on `group`/`resource` (the API server's words). */
async function forbidden({ controller }: Run, group: string, resource: string, verb: string): Promise<void> {
  // The API server's message, quoted once or many times over in the line: compared without quotes.
  const words = `cannot ${verb} resource ${resource} in API group ${group} `;
  await waitFor(`a Forbidden for ${verb} ${resource} in the controller's log`, async () => {
    const lines = forbiddenLines(await controller.logs()).map((l) => JSON.stringify(l).replace(/[\\"]/g, ""));
    expect(
      lines.filter((l) => l.includes(words)),
      `among ${lines.length} Forbidden lines`,
    ).not.toEqual([]);
  });
}

/** One granted verb, why the controller needs it, and what breaks without it. */
interface Row {
  grant: Grant;
  reason: string;
  scenario: ScenarioName;
  /** With --sharding (and deploy/sharding/'s Role) instead of --leader-elect. */
  sharding?: boolean;
  breaks: (run: Run) => Promise<void>;
}

/** Waits until the Shape's Synced condition says `reason`. */
const syncedReason = (run: Run, name: string, reason: string) =>
  waitFor(`Synced=False ${reason} on ${name}`, async () => {
    expect(conditionOf(await run.stack.kube.getShape(run.ns, name), "Synced")).toMatchObject({
      status: "False",
      reason,
    });
  });

const notReady = async ({ controller }: Run) => expect(await controller.isReady(), "/readyz").toBe(false);

/**
 * The kube-apiserver flags of the stack {@link LIST_ROWS} run on: watch-lists refused. The flag replaces
 * envtest's `--feature-gates`, so it names ShardedListAndWatch again.
 */
const WATCH_LIST_OFF = ["--feature-gates=ShardedListAndWatch=true,WatchList=false"];

/** The informers' `list`: needed where the API server refuses watch-lists (see the header). */
const LIST_ROWS: Row[] = (
  [
    ["shapes", "Shape"],
    ["shaperefs", "ShapeRef"],
  ] as const
).map(([resource, kind]) => ({
  grant: grantOf(GROUP, resource, "list"),
  reason: `the ${kind} informer's first list, where the API server refuses watch-lists`,
  scenario: "start",
  breaks: async (run) => {
    await forbidden(run, GROUP, resource, "list");
    await notReady(run);
  },
}));

const rows: Row[] = [
  {
    grant: grantOf(GROUP, "shapes", "watch"),
    reason: "the Shape informer's watch-list (its first list) and watch (changes after it)",
    scenario: "start",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shapes", "watch");
      await notReady(run);
    },
  },
  {
    grant: grantOf(GROUP, "shapes", "get"),
    reason: "a live read of the Shape before a dangling ShapeRef is judged a leak (the cache may trail)",
    scenario: "dangling",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shapes", "get");
      expect(await run.stack.kube.getShapeRef(`${run.ns}.ghost`), "the ShapeRef stays").toBeDefined();
    },
  },
  {
    grant: grantOf(GROUP, "shapes", "patch"),
    reason: "the finalizer, added and removed by merge patch",
    scenario: "converge",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shapes", "patch");
      await syncedReason(run, "red", "CannotAddFinalizer");
    },
  },
  {
    grant: grantOf(GROUP, "shapes/status", "patch"),
    reason: "the Shape's status (conditions, cloud id)",
    scenario: "converge",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shapes/status", "patch");
      expect((await run.stack.kube.shape(run.ns, "red")).status?.conditions ?? [], "no status").toEqual([]);
    },
  },
  {
    grant: grantOf(GROUP, "shaperefs", "watch"),
    reason: "the ShapeRef informer's watch-list (its first list) and watch",
    scenario: "start",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shaperefs", "watch");
      await notReady(run);
    },
  },
  {
    grant: grantOf(GROUP, "shaperefs", "get"),
    reason: "a live read of a ShapeRef that looks dangling, before anything is deleted on its word",
    scenario: "dangling",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shaperefs", "get");
      expect(await run.stack.kube.getShapeRef(`${run.ns}.ghost`), "the ShapeRef stays").toBeDefined();
    },
  },
  {
    grant: grantOf(GROUP, "shaperefs", "create"),
    reason: "the ShapeRef written before any cloud create (the intent)",
    scenario: "converge",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shaperefs", "create");
      await syncedReason(run, "red", "CannotRecordIntent");
      expect(
        (await run.stack.cloud.list()).filter((s) => s.name === `${run.ns}.red`),
        "no cloud shape",
      ).toEqual([]);
    },
  },
  {
    grant: grantOf(GROUP, "shaperefs", "patch"),
    reason: "the ShapeRef's copy of deletionPolicy kept current",
    scenario: "policy",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shaperefs", "patch");
      expect((await run.stack.kube.getShapeRef(`${run.ns}.orphaned`))?.spec.deletionPolicy).not.toBe(
        "Orphan",
      );
    },
  },
  {
    grant: grantOf(GROUP, "shaperefs", "delete"),
    reason: "the ShapeRef removed once its cloud shape is gone",
    scenario: "delete",
    breaks: async (run) => {
      await forbidden(run, GROUP, "shaperefs", "delete");
      expect(
        (await run.stack.kube.shape(run.ns, "deleted")).metadata.deletionTimestamp,
        "stuck deleting",
      ).toBeDefined();
    },
  },
  {
    grant: grantOf("", "events", "create"),
    reason: "Events about Shapes, for kubectl describe",
    scenario: "converge",
    breaks: async (run) => {
      await forbidden(run, "", "events", "create");
      await waitConverged(run.stack, run.ns, "red");
      expect(await run.stack.kube.eventsFor(run.ns, "red"), "no Events").toEqual([]);
    },
  },
  {
    grant: grantOf("", "namespaces", "get"),
    reason: "the owner id: the kube-system namespace's uid, read at startup",
    scenario: "start",
    breaks: async (run) => {
      await forbidden(run, "", "namespaces", "get");
      const said = (await run.controller.logs()).find((l) => l.msg.startsWith("cannot know our owner id"));
      expect(said, "it says it writes nothing").toBeDefined();
      await notReady(run);
    },
  },
  {
    grant: grantOf("apiextensions.k8s.io", "customresourcedefinitions", "get"),
    reason: "the Shape CRD read before a cloud shape is deleted (an uninstall releases instead)",
    scenario: "delete",
    breaks: async (run) => {
      await forbidden(run, "apiextensions.k8s.io", "customresourcedefinitions", "get");
      await syncedReason(run, "deleted", "CannotCheckUninstall");
      expect(
        (await run.stack.cloud.list()).filter((s) => s.name === `${run.ns}.deleted`),
        "not deleted",
      ).toHaveLength(1);
    },
  },
  {
    grant: grantOf("authentication.k8s.io", "tokenreviews", "create"),
    reason: "--metrics-auth=kubernetes: who a bearer token is",
    scenario: "metrics",
    breaks: async (run) => {
      const answer = await scrape(run);
      expect(answer.status).toBe(503);
      expect(answer.text).toMatch(/cannot check the token/);
      await forbidden(run, "authentication.k8s.io", "tokenreviews", "create");
    },
  },
  {
    grant: grantOf("authorization.k8s.io", "subjectaccessreviews", "create"),
    reason: "--metrics-auth=kubernetes: what that user may read",
    scenario: "metrics",
    breaks: async (run) => {
      const answer = await scrape(run);
      expect(answer.status).toBe(503);
      expect(answer.text).toMatch(/cannot check what user .* may read/);
      await forbidden(run, "authorization.k8s.io", "subjectaccessreviews", "create");
    },
  },
  {
    grant: grantOf("coordination.k8s.io", "leases", "get"),
    reason: "leader election reads the Lease before it takes or renews it",
    scenario: "lease",
    breaks: async (run) => {
      await forbidden(run, "coordination.k8s.io", "leases", "get");
      expect(await run.stack.kube.getLease(CONTROLLER_NAMESPACE, run.lease), "no Lease").toBeUndefined();
    },
  },
  {
    grant: grantOf("coordination.k8s.io", "leases", "create"),
    reason: "leader election creates the Lease the first time",
    scenario: "lease",
    breaks: async (run) => {
      await forbidden(run, "coordination.k8s.io", "leases", "create");
      expect(await run.stack.kube.getLease(CONTROLLER_NAMESPACE, run.lease), "no Lease").toBeUndefined();
    },
  },
  {
    grant: grantOf("coordination.k8s.io", "leases", "update"),
    reason: "leader election renews the Lease it holds",
    scenario: "lease",
    breaks: (run) => forbidden(run, "coordination.k8s.io", "leases", "update"),
  },
  {
    grant: grantOf("coordination.k8s.io", "leases", "list"),
    reason: "--sharding: the ring's members, found by their label",
    scenario: "ring",
    sharding: true,
    breaks: async (run) => {
      await forbidden(run, "coordination.k8s.io", "leases", "list");
      await notReady(run);
    },
  },
  {
    grant: grantOf("coordination.k8s.io", "leases", "delete"),
    reason: "--sharding: a stopping replica deletes its Lease, so the others take its part at once",
    scenario: "ring",
    sharding: true,
    breaks: async (run) => {
      await run.controller.waitReady();
      const name = await ringLease(run);
      await run.controller.stop();
      await forbidden(run, "coordination.k8s.io", "leases", "delete");
      expect(await run.stack.kube.getLease(CONTROLLER_NAMESPACE, name), "its Lease stays").toBeDefined();
    },
  },
];

/** Where rows run: a stack, the roles of the project's files, and a scraper's token (for /metrics). */
interface RowPlace {
  stack: Stack;
  roles: Role[];
  shardingRoles: Role[];
  rbacApi: RbacAuthorizationV1Api;
  scraperToken: string;
}

/**
 * Runs `scenario` on `place`'s stack under a fresh service account with the project's roles minus `without`; `check` then
 * says what it saw. Everything the row made is removed afterwards.
 */
async function runRow(
  { stack, roles, shardingRoles, rbacApi, scraperToken }: RowPlace,
  label: string,
  without: Grant | undefined,
  scenarioNames: ScenarioName[],
  check: (run: Run) => Promise<void>,
  { sharding = false } = {},
): Promise<void> {
  const sa = uniqueName("rbac-min");
  const rowRoles = sharding ? [...roles, ...shardingRoles] : roles;
  const subjects = [{ kind: "ServiceAccount", name: sa, namespace: CONTROLLER_NAMESPACE }];
  const core = stack.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({
    namespace: CONTROLLER_NAMESPACE,
    body: { metadata: { name: sa } },
  });
  const made: (() => Promise<unknown>)[] = [
    () => core.deleteNamespacedServiceAccount({ namespace: CONTROLLER_NAMESPACE, name: sa }),
  ];
  let controller: ControllerProcess | undefined;
  let ns = "";
  try {
    for (const [i, role] of rowRoles.entries()) {
      const rules = rulesWithout(role, without);
      const name = `${sa}-${i}`;
      const ref = (kind: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name });
      if (role.kind === "ClusterRole") {
        await rbacApi.createClusterRole({ body: { metadata: { name }, rules } });
        await rbacApi.createClusterRoleBinding({
          body: { metadata: { name }, roleRef: ref("ClusterRole"), subjects },
        });
        made.push(
          () => rbacApi.deleteClusterRoleBinding({ name }),
          () => rbacApi.deleteClusterRole({ name }),
        );
      } else {
        const namespace = role.metadata.namespace ?? CONTROLLER_NAMESPACE;
        await rbacApi.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
        await rbacApi.createNamespacedRoleBinding({
          namespace,
          body: { metadata: { name }, roleRef: ref("Role"), subjects },
        });
        made.push(
          () => rbacApi.deleteNamespacedRoleBinding({ namespace, name }),
          () => rbacApi.deleteNamespacedRole({ namespace, name }),
        );
      }
    }
    await waitAuthorized(stack, sa, without, rowRoles);
    ns = await stack.kube.createNamespace("rbac");
    const identity = await stack.serviceAccountIdentity(CONTROLLER_NAMESPACE, sa);
    const lease = sa;
    controller = new ControllerProcess({
      name: sa,
      artifactsDir: stack.artifactsDir,
      kubeconfigPath: identity.kubeconfigPath,
      cloudUrl: stack.cloud.url,
      cloudToken: CLOUD_TOKEN,
      ...(sharding ? {} : { leaderElection: { namespace: CONTROLLER_NAMESPACE, name: lease } }),
      extraArgs: [
        "--metrics-auth=kubernetes",
        ...(sharding
          ? [
              "--sharding",
              `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
              `--leader-election-name=${lease}`,
            ]
          : []),
      ],
    });
    await controller.start({ waitReady: !scenarioNames.every((s) => scenarios[s].startOnly === true) });
    const run: Run = { stack, controller, ns, lease, scraperToken };
    for (const name of scenarioNames) await scenarios[name].drive(run);
    await check(run);
  } catch (error) {
    const tail = controller ? `\n--- ${label}: ${controller.logFile}` : "";
    throw new Error(`${label}: ${(error as Error).message}${tail}`, { cause: error });
  } finally {
    await controller?.stop(5_000);
    if (ns) {
      await stack.kube.deleteNamespace(ns);
      for (const s of (await stack.cloud.list()).filter((c) => c.name.startsWith(`${ns}.`))) {
        await stack.cloud.delete(s.id);
      }
    }
    for (const undo of made.toReversed()) await undo().catch(() => {});
  }
}

/**
 * Waits until the API server's authorizer sees the row's roles: every verb of the project's roles
 * allowed to `sa`, except `without`, which is denied. (A controller started earlier would see a 403 that
 * is only the binding's delay.)
 */
async function waitAuthorized(
  stack: Stack,
  sa: string,
  without: Grant | undefined,
  rowRoles: Role[],
): Promise<void> {
  const authz = stack.kubeConfig.makeApiClient(AuthorizationV1Api);
  const user = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${sa}`;
  const groups = ["system:serviceaccounts", `system:serviceaccounts:${CONTROLLER_NAMESPACE}`];
  const asks = rowRoles.flatMap((role) =>
    role.rules.flatMap((rule) =>
      rule.verbs.map((verb) => ({
        grant: grantOf(rule.apiGroups?.[0] ?? "", rule.resources?.[0] ?? "", verb),
        attributes: {
          verb,
          group: rule.apiGroups?.[0] ?? "",
          ...(() => {
            const [resource = "", subresource] = (rule.resources?.[0] ?? "").split("/");
            return { resource, ...(subresource ? { subresource } : {}) };
          })(),
          ...(rule.resourceNames?.[0] ? { name: rule.resourceNames[0] } : {}),
          ...(role.metadata.namespace ? { namespace: role.metadata.namespace } : {}),
        },
      })),
    ),
  );
  await waitFor(`the roles of ${sa} to reach the authorizer`, async () => {
    const wrong: string[] = [];
    await Promise.all(
      asks.map(async ({ grant, attributes }) => {
        const review = await authz.createSubjectAccessReview({
          body: { spec: { user, groups, resourceAttributes: attributes } },
        });
        const allowed = review.status?.allowed === true;
        if (allowed !== (grant !== without)) wrong.push(`${grant}: allowed ${allowed}`);
      }),
    );
    expect(wrong).toEqual([]);
  });
}

describe("deploy/rbac.yaml is minimal: every verb it grants the controller is needed", () => {
  let stack: Stack;
  let roles: Role[];
  let shardingRoles: Role[];
  let scraperToken = "";
  let rbacApi: RbacAuthorizationV1Api;

  beforeAll(async () => {
    stack = await startStack("rbac-minimal");
    roles = await controllerRoles(RBAC_FILE);
    shardingRoles = await controllerRoles(SHARDING_RBAC_FILE);
    rbacApi = stack.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    // A scraper, as deploy/rbac.yaml's shapes-metrics-reader is meant for: its token reads /metrics.
    const core = stack.kubeConfig.makeApiClient(CoreV1Api);
    const scraper = uniqueName("scraper");
    await core.createNamespacedServiceAccount({
      namespace: CONTROLLER_NAMESPACE,
      body: { metadata: { name: scraper } },
    });
    await rbacApi.createClusterRoleBinding({
      body: {
        metadata: { name: scraper },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "shapes-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: scraper, namespace: CONTROLLER_NAMESPACE }],
      },
    });
    const answer = await core.createNamespacedServiceAccountToken({
      namespace: CONTROLLER_NAMESPACE,
      name: scraper,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    scraperToken = answer.status?.token ?? "";
  });
  afterAll(async () => {
    await stack?.stop();
  });
  const here = (): RowPlace => ({ stack, roles, shardingRoles, rbacApi, scraperToken });

  test("every verb granted to the controller has a row, and every row names a granted verb", () => {
    const granted = grantsOf([...roles, ...shardingRoles]).toSorted();
    expect(new Set(granted).size, "no verb granted twice").toBe(granted.length);
    const named = [...rows, ...LIST_ROWS].map((r) => r.grant);
    expect(
      granted.filter((g) => !named.includes(g)),
      "granted in deploy/rbac.yaml or deploy/sharding/rbac.yaml without a row",
    ).toEqual([]);
    expect(
      named.filter((g) => !granted.includes(g)),
      "a row for a verb neither file grants",
    ).toEqual([]);
    expect(new Set(named).size, "one row per verb").toBe(named.length);
  });

  test("examples/dns-controller/rbac.yaml grants the verbs proven above on its own kinds (records for shapes, recordrefs for shaperefs), and no Lease (one replica)", async () => {
    // Not a run of the DNS controller: the same library code asks for these verbs (informers, finalizer and
    // status patches, intent records, Events, the cluster id, the CRD read, the metrics port's reviews).
    const dns = await controllerRoles(DNS_RBAC_FILE, { namespace: "dns-system", name: "dns-controller" });
    const asShapes = (g: Grant) =>
      g
        .replace("dns.example.com/recordrefs ", `${GROUP}/shaperefs `)
        .replace(/^dns\.example\.com\/records/, `${GROUP}/shapes`);
    const proven = grantsOf(roles).filter((g) => !g.startsWith("coordination.k8s.io/"));
    expect(grantsOf(dns).map(asShapes).toSorted()).toEqual(proven.toSorted());
    const named = (rs: Role[]) =>
      rs.flatMap((r) =>
        r.rules.flatMap((rule) => (rule.resourceNames ?? []).map((n) => `${rule.resources?.[0]} ${n}`)),
      );
    expect(named(dns).toSorted()).toEqual([
      "customresourcedefinitions records.dns.example.com",
      "namespaces kube-system",
    ]);
  });

  test("examples/etcd-controller/rbac.yaml grants the verbs proven above on its own kinds (configentries for shapes, configentryrefs for shaperefs), and no Lease (one replica)", async () => {
    // Not a run of the etcd controller: the same library code asks for these verbs, as for the DNS example.
    const etcd = await controllerRoles(ETCD_RBAC_FILE, {
      namespace: "etcd-config-system",
      name: "etcd-controller",
    });
    const asShapes = (g: Grant) =>
      g
        .replace("config.example.com/configentryrefs ", `${GROUP}/shaperefs `)
        .replace(/^config\.example\.com\/configentries/, `${GROUP}/shapes`);
    const proven = grantsOf(roles).filter((g) => !g.startsWith("coordination.k8s.io/"));
    expect(grantsOf(etcd).map(asShapes).toSorted()).toEqual(proven.toSorted());
    const named = (rs: Role[]) =>
      rs.flatMap((r) =>
        r.rules.flatMap((rule) => (rule.resourceNames ?? []).map((n) => `${rule.resources?.[0]} ${n}`)),
      );
    expect(named(etcd).toSorted()).toEqual([
      "customresourcedefinitions configentries.config.example.com",
      "namespaces kube-system",
    ]);
  });

  test("control: with every rule, every scenario works, and nothing is refused", async () => {
    const all = Object.keys(scenarios) as ScenarioName[];
    await runRow(
      here(),
      "control",
      undefined,
      all.filter((s) => s !== "ring"),
      async (run) => {
        for (const name of all.filter((s) => s !== "ring")) await scenarios[name].works(run);
        expect(forbiddenLines(await run.controller.logs()), "no Forbidden").toEqual([]);
      },
    );
  });

  test("control, --sharding with deploy/sharding/'s Role: a Shape converges, the replica joins and leaves the ring, nothing is refused", async () => {
    await runRow(
      here(),
      "control, sharding",
      undefined,
      ["converge", "ring"],
      async (run) => {
        await scenarios.converge.works(run);
        await scenarios.ring.works(run);
        expect(forbiddenLines(await run.controller.logs()), "no Forbidden").toEqual([]);
      },
      { sharding: true },
    );
  });

  test.each(rows)("without $grant ($reason): the $scenario scenario breaks", async (row) => {
    await runRow(here(), row.grant, row.grant, [row.scenario], row.breaks, {
      sharding: row.sharding === true,
    });
  });
});

describe.skipIf(skipOnExistingCluster("starts an API server with the WatchList gate off"))(
  "with watch-lists refused (WatchList=false), the informers' list is needed",
  () => {
    let place: RowPlace;

    beforeAll(async () => {
      const stack = await startStack("rbac-minimal-watch-list-off", { apiServerFlags: WATCH_LIST_OFF });
      place = {
        stack,
        roles: await controllerRoles(RBAC_FILE),
        shardingRoles: await controllerRoles(SHARDING_RBAC_FILE),
        rbacApi: stack.kubeConfig.makeApiClient(RbacAuthorizationV1Api),
        scraperToken: "", // no row here reads /metrics
      };
    });
    afterAll(async () => {
      await place?.stack.stop();
    });

    test("control: the API server refuses a watch-list; with every rule, the controller starts, a Shape converges, nothing is refused", async () => {
      const http = new KubeHttp(
        await connectKubeconfig({ path: place.stack.controlPlane?.kubeconfigPath ?? "" }),
      );
      try {
        const refused = await http
          .stream(
            `/apis/${GROUP}/${VERSION}/shapes?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`,
            () => {},
          )
          .catch((e: unknown) => e);
        expect(refused, "a watch-list is refused").toBeInstanceOf(KubeApiError);
        expect((refused as KubeApiError).code).toBe(422);
      } finally {
        await http.close();
      }
      await runRow(place, "control, WatchList off", undefined, ["converge"], async (run) => {
        await scenarios.converge.works(run);
        expect(forbiddenLines(await run.controller.logs()), "no Forbidden").toEqual([]);
      });
    });

    test.each(LIST_ROWS)("without $grant ($reason): the $scenario scenario breaks", async (row) => {
      await runRow(place, row.grant, row.grant, [row.scenario], row.breaks);
    });
  },
);
