/**
 * deploy/ against a real API server: every manifest applies (the kustomization with the kubectl a user
 * runs, the example Secret on its own), the API server keeps the Deployment with the fields we meant, and
 * what the Deployment asks of the controller matches the controller's real flags (controller/src/config.ts)
 * and the RBAC it runs under (deploy/rbac.yaml).
 *
 * There is no kubelet: the Deployment is created for real but its pods never run. What a kubelet would
 * check is checked another way: the Pod Security admission of the API server judges the pod template in a
 * server-side dry run in its own namespace (deploy/namespace.yaml enforces the restricted standard there),
 * and SubjectAccessReviews ask the authorizer what the service account may do.
 *
 * Then the compose `setup` job (deploy/compose/setup.ts) runs as docker-compose.yml runs it, against the
 * same API server, and a controller process runs on the token kubeconfig it writes: the controller's
 * identity in `docker compose up` is proven here, since no Docker engine is available to prove it there.
 *
 * Last, `docker compose up` without Docker: every service's command and environment, read from
 * docker-compose.yml and relocated to this machine (container paths to a temp folder, service names and
 * ports to free loopback ports, and --advertise-address for a machine without a default route), run in
 * dependency order against the etcd and kube-apiserver releases the images hold, each healthcheck run as
 * compose would run it. A Shape applied with the host kubeconfig, as deploy/README.md tells a person to,
 * ends up in the cloud.
 */
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import { promisify } from "node:util";
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  type V1Container,
  type V1PodSpec,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { CONTROLLER_NODE_FLAGS, loadConfig, OPTIONS } from "@shapes/controller";
import { apiMessage, type Child, etcdHealth, freePorts, spawnChild } from "@shapes/envtest";
import { interpolate } from "../deploy/build-context.ts";
import {
  CLOUD_TOKEN,
  ControllerProcess,
  forbiddenLines,
  REPO_ROOT,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { applyManifestFile, uniqueName } from "reconcile-kit/harness";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

const run = promisify(execFile);
const DEPLOY_DIR = join(REPO_ROOT, "deploy");

/** The parts of a Deployment this test reads, in wire (JSON) form. */
interface Deployment extends KubernetesObject {
  metadata: { name: string; namespace: string };
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    strategy: {
      type: string;
      rollingUpdate?: { maxSurge: number | string; maxUnavailable: number | string };
    };
    template: { metadata: { labels: Record<string, string> }; spec: V1PodSpec };
  };
}

/** A Role or ClusterRole rule, in wire form. */
interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** Every object of a YAML file (several documents allowed). */
async function readObjects(path: string): Promise<KubernetesObject[]> {
  return parseAllDocuments(await readFile(path, "utf8"))
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

/** The single object of `kind` in `objects`; fails when there is not exactly one. */
function only<T extends KubernetesObject>(objects: readonly KubernetesObject[], kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  expect(
    found.map((o) => o.metadata?.name),
    `exactly one ${kind}`,
  ).toHaveLength(1);
  return found[0] as T;
}

const appliesDeploy = skipOnExistingCluster(
  "applies deploy/ (a Deployment of the controller) and would leave it running in the cluster",
);

describe.skipIf(appliesDeploy)("deploy/ manifests on a real API server", () => {
  let stack: Stack;
  let kubectl: string;
  let rbac: KubernetesObject[];
  let deployment: Deployment;
  let container: V1Container;

  /** Runs kubectl as the cluster admin; resolves with stdout, rejects with stderr in the message. */
  async function kubectlRun(...args: string[]): Promise<string> {
    try {
      const { stdout } = await run(kubectl, [`--kubeconfig=${stack.cluster.kubeconfigPath}`, ...args]);
      return stdout;
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      throw new Error(`cannot run kubectl ${args.join(" ")}: ${e.stderr?.trim() || e.message}`, {
        cause: error,
      });
    }
  }

  /** Asks the API server's authorizer whether deploy/rbac.yaml's service account may `verb` Leases in `namespace`. */
  async function mayUseLeases(namespace: string, verb: string): Promise<boolean> {
    const sa = only(rbac, "ServiceAccount");
    const user = `system:serviceaccount:${sa.metadata?.namespace}:${sa.metadata?.name}`;
    const groups = ["system:serviceaccounts", `system:serviceaccounts:${sa.metadata?.namespace}`];
    const review = await stack.kubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user,
          groups,
          resourceAttributes: { namespace, verb, group: "coordination.k8s.io", resource: "leases" },
        },
      },
    });
    return review.status?.allowed === true;
  }

  beforeAll(async () => {
    const binaries = inject("envtestBinaries");
    if (!binaries.kubectl)
      throw new Error(`cannot test deploy/: no kubectl next to ${binaries.kubeApiServer}`);
    kubectl = binaries.kubectl;
    // startStack applies namespace.yaml and rbac.yaml already (every e2e test runs the controller under
    // them); applying them again below through the kustomization must be a no-op.
    stack = await startStack("deploy-manifests");
    rbac = await readObjects(join(DEPLOY_DIR, "rbac.yaml"));
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("the kustomization lists every manifest in deploy/, except the examples a person must edit", async () => {
    const manifests = (await readdir(DEPLOY_DIR)).filter(
      (f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml",
    );
    const kustomization = parse(await readFile(join(DEPLOY_DIR, "kustomization.yaml"), "utf8")) as {
      resources: string[];
    };
    expect(kustomization.resources.toSorted()).toEqual(
      manifests.filter((f) => !f.endsWith(".example.yaml")).toSorted(),
    );
    expect(manifests.filter((f) => f.endsWith(".example.yaml"))).toEqual(["secret.example.yaml"]);
  });

  test("`kubectl apply -k deploy/` and the example Secret are accepted; applying again changes nothing", async () => {
    const first = await kubectlRun("apply", "-k", DEPLOY_DIR);
    expect(first).toMatch(/deployment\.apps\/shapes-controller (created|configured)/);
    await applyManifestFile(stack.kubeConfig, join(DEPLOY_DIR, "secret.example.yaml"));

    const second = await kubectlRun("apply", "-k", DEPLOY_DIR);
    for (const line of second.trim().split("\n")) expect(line).toMatch(/ unchanged$/);

    deployment = JSON.parse(
      await kubectlRun("get", "deployment", "-n", "shapes-system", "shapes-controller", "-o", "json"),
    ) as Deployment;
    expect(deployment.spec.template.spec.containers).toHaveLength(1);
    container = deployment.spec.template.spec.containers[0] as V1Container;
  });

  test("the API server kept the Deployment as meant: 2 replicas, image, probes, resources, hardening", () => {
    const spec = deployment.spec;
    const pod = spec.template.spec;
    expect(spec.replicas).toBe(2);
    expect(spec.template.metadata.labels).toMatchObject(spec.selector.matchLabels);
    // A new replica starts before an old one stops: a warm standby is always there.
    expect(spec.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(container.image).toBe("shapes-controller:0.1.0"); // the kustomization's images: entry
    expect(pod.enableServiceLinks).toBe(false);

    expect(container.livenessProbe?.httpGet).toMatchObject({ path: "/healthz", port: "metrics" });
    expect(container.readinessProbe?.httpGet).toMatchObject({ path: "/readyz", port: "metrics" });
    expect(container.resources).toEqual({
      requests: { cpu: "50m", memory: "256Mi" },
      limits: { memory: "640Mi" },
    });

    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
  });

  test("its command line is the controller's: every flag and variable exists and the whole parses", async () => {
    expect(container.command).toEqual(["node", ...CONTROLLER_NODE_FLAGS, "controller/dist/main.js"]);
    const args = container.args ?? [];
    const flags = new Set(OPTIONS.map((o) => o.flag));
    for (const arg of args) {
      expect(arg, "flags are --name or --name=value").toMatch(/^--[a-z-]+(=.*)?$/);
      expect(flags, `${arg} is a flag of controller/src/config.ts`).toContain(arg.slice(2).split("=")[0]);
    }
    const envNames = new Set(OPTIONS.map((o) => o.env));
    for (const e of container.env ?? [])
      expect(envNames, `${e.name} is read by the controller`).toContain(e.name);

    // POD_NAME comes from the downward API: the pod's own name is the replica's identity in the Lease.
    const podName = container.env?.find((e) => e.name === "POD_NAME");
    expect(podName?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.name");

    // The token file is the Secret's key, mounted read-only where the flag says.
    const tokenFile = flagValue(args, "cloud-token-file");
    const mount = container.volumeMounts?.find((m) => tokenFile?.startsWith(`${m.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = deployment.spec.template.spec.volumes?.find((v) => v.name === mount?.name);
    const secret = only<KubernetesObject & { stringData: Record<string, string> }>(
      await readObjects(join(DEPLOY_DIR, "secret.example.yaml")),
      "Secret",
    );
    expect(volume?.secret?.secretName).toBe(secret.metadata?.name);
    const item = volume?.secret?.items?.find((i) => posix.join(mount?.mountPath ?? "", i.path) === tokenFile);
    expect(Object.keys(secret.stringData)).toContain(item?.key);
    expect(volume?.secret?.defaultMode).toBe(0o440);

    // The controller's own parser, given what the pod would have: the args and the env (with a token file
    // standing in for the mounted Secret).
    const dir = await mkdtemp(join(tmpdir(), "deploy-manifests-"));
    try {
      await writeFile(join(dir, "token"), "t0ken\n");
      const localArgs = args.map((a) =>
        a === `--cloud-token-file=${tokenFile}` ? `--cloud-token-file=${join(dir, "token")}` : a,
      );
      const config = loadConfig(localArgs, { POD_NAME: "shapes-controller-5d8f7c9b6-x2x4q" });
      if (config === "help") throw new Error("cannot happen: --help is not among the args");
      expect(config).toMatchObject({
        cloudToken: "t0ken",
        leaderElect: true,
        leaderElectionNamespace: deployment.metadata.namespace,
        identity: "shapes-controller-5d8f7c9b6-x2x4q",
        metricsAddress: "0.0.0.0:8081",
        // /metrics and /why ask for a token (e2e/why-authz.test.ts proves what that does).
        metricsAuth: "kubernetes",
      });
      // The probes' named port is the metrics address's port.
      const port = container.ports?.find((p) => p.name === "metrics");
      expect(port?.containerPort).toBe(Number(config.metricsAddress.split(":").at(-1)));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("it runs as the service account of deploy/rbac.yaml, which may use exactly its Lease", async () => {
    const sa = only(rbac, "ServiceAccount");
    expect(deployment.spec.template.spec.serviceAccountName).toBe(sa.metadata?.name);
    expect(deployment.metadata.namespace).toBe(sa.metadata?.namespace);

    const leaseRole = rbac.find(
      (o) =>
        o.kind === "Role" &&
        (o as KubernetesObject & { rules: PolicyRule[] }).rules.some((r) => r.resources.includes("leases")),
    );
    expect(leaseRole?.metadata?.namespace).toBe(flagValue(container.args ?? [], "leader-election-namespace"));

    // Ask the API server's authorizer, as the service account: the Lease verbs leader election uses
    // (library/src/leadership/lean-lease-client.ts: get, create, update) in its namespace, nothing elsewhere.
    const namespace = deployment.metadata.namespace;
    expect(await mayUseLeases(namespace, "get")).toBe(true);
    expect(await mayUseLeases(namespace, "create")).toBe(true);
    expect(await mayUseLeases(namespace, "update")).toBe(true);
    expect(await mayUseLeases(namespace, "delete")).toBe(false);
    expect(await mayUseLeases("default", "update")).toBe(false);
  });

  test("it may read the cluster's identity (the kube-system namespace) and no other namespace", async () => {
    // The default owner id is k8s-<uid of kube-system> (library/src/kube/cluster-identity.ts): the grant
    // must be exactly `get` on that one namespace, asked of the API server's authorizer as the service account.
    const sa = only(rbac, "ServiceAccount");
    const user = `system:serviceaccount:${sa.metadata?.namespace}:${sa.metadata?.name}`;
    const groups = ["system:serviceaccounts", `system:serviceaccounts:${sa.metadata?.namespace}`];
    const authz = stack.kubeConfig.makeApiClient(AuthorizationV1Api);
    const allowed = async (verb: string, name?: string) =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user,
              groups,
              resourceAttributes: { verb, group: "", resource: "namespaces", ...(name ? { name } : {}) },
            },
          },
        })
      ).status?.allowed === true;
    const cases: { reason: string; verb: string; name?: string; expected: boolean }[] = [
      { reason: "read the cluster identity", verb: "get", name: "kube-system", expected: true },
      { reason: "no other namespace", verb: "get", name: "default", expected: false },
      { reason: "no listing of namespaces", verb: "list", expected: false },
      { reason: "no watching of namespaces", verb: "watch", expected: false },
      { reason: "no writes to kube-system", verb: "update", name: "kube-system", expected: false },
      { reason: "no deletes of kube-system", verb: "delete", name: "kube-system", expected: false },
    ];
    for (const c of cases) expect(await allowed(c.verb, c.name), c.reason).toBe(c.expected);
  });

  test("it may read its own CRD (an uninstall is told from a deletion by it), and no other CRD", async () => {
    // Before a cloud shape is deleted, the controller reads the Shape CRD: while it is being deleted (an
    // uninstall) the shapes are released, not deleted (library/src/reconcile/uninstall.ts). Exactly `get` on
    // that one CRD, asked of the API server's authorizer as the service account.
    const sa = only(rbac, "ServiceAccount");
    const user = `system:serviceaccount:${sa.metadata?.namespace}:${sa.metadata?.name}`;
    const groups = ["system:serviceaccounts", `system:serviceaccounts:${sa.metadata?.namespace}`];
    const authz = stack.kubeConfig.makeApiClient(AuthorizationV1Api);
    const allowed = async (verb: string, name?: string) =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user,
              groups,
              resourceAttributes: {
                verb,
                group: "apiextensions.k8s.io",
                resource: "customresourcedefinitions",
                ...(name ? { name } : {}),
              },
            },
          },
        })
      ).status?.allowed === true;
    const shapes = "shapes.shapes.example.com";
    const cases: { reason: string; verb: string; name?: string; expected: boolean }[] = [
      { reason: "read the Shape CRD before a delete", verb: "get", name: shapes, expected: true },
      { reason: "not the ShapeRef CRD", verb: "get", name: "shaperefs.shapes.example.com", expected: false },
      { reason: "no other CRD", verb: "get", name: "records.dns.example.com", expected: false },
      { reason: "no listing of CRDs", verb: "list", expected: false },
      { reason: "no watching of CRDs", verb: "watch", expected: false },
      { reason: "no writes to the Shape CRD", verb: "update", name: shapes, expected: false },
      { reason: "no deletes of the Shape CRD", verb: "delete", name: shapes, expected: false },
    ];
    for (const c of cases) expect(await allowed(c.verb, c.name), c.reason).toBe(c.expected);
  });

  test("who may read the metrics port: the controller may review tokens and accesses, scrapers get /metrics, the NetworkPolicy lets in only monitoring", async () => {
    // --metrics-auth=kubernetes: the controller's service account creates TokenReviews and
    // SubjectAccessReviews (controller-runtime's metrics-auth-role), and nothing else of those groups.
    const sa = only(rbac, "ServiceAccount");
    const authz = stack.kubeConfig.makeApiClient(AuthorizationV1Api);
    const allowed = async (
      user: string,
      groups: string[],
      attributes:
        | { resourceAttributes: { verb: string; group: string; resource: string } }
        | { nonResourceAttributes: { verb: string; path: string } },
    ) =>
      (await authz.createSubjectAccessReview({ body: { spec: { user, groups, ...attributes } } })).status
        ?.allowed === true;
    const controllerUser = `system:serviceaccount:${sa.metadata?.namespace}:${sa.metadata?.name}`;
    const controllerGroups = ["system:serviceaccounts", `system:serviceaccounts:${sa.metadata?.namespace}`];
    const review = (verb: string, group: string, resource: string) =>
      allowed(controllerUser, controllerGroups, { resourceAttributes: { verb, group, resource } });
    expect(await review("create", "authentication.k8s.io", "tokenreviews")).toBe(true);
    expect(await review("create", "authorization.k8s.io", "subjectaccessreviews")).toBe(true);
    expect(await review("create", "authorization.k8s.io", "localsubjectaccessreviews")).toBe(false);
    // The controller itself may not read /metrics: that is for scrapers.
    const metricsGet = { nonResourceAttributes: { verb: "get", path: "/metrics" } };
    expect(await allowed(controllerUser, controllerGroups, metricsGet)).toBe(false);

    // shapes-metrics-reader: get on /metrics, nothing else; bound, a scraper may scrape.
    const reader = rbac.find(
      (o) => o.kind === "ClusterRole" && o.metadata?.name === "shapes-metrics-reader",
    ) as (KubernetesObject & { rules: unknown[] }) | undefined;
    expect(reader?.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    const scraper = `system:serviceaccount:monitoring:prometheus-${uniqueName("s")}`;
    expect(await allowed(scraper, [], metricsGet)).toBe(false);
    const binding = uniqueName("shapes-metrics-reader");
    await kubectlRun(
      "create",
      "clusterrolebinding",
      binding,
      "--clusterrole=shapes-metrics-reader",
      `--user=${scraper}`,
    );
    try {
      await waitFor("the binding to reach the authorizer", async () => {
        if (!(await allowed(scraper, [], metricsGet))) throw new Error("not yet allowed");
      });
      expect(
        await allowed(scraper, [], { nonResourceAttributes: { verb: "get", path: "/why" } }),
        "the reader role is /metrics only",
      ).toBe(false);
    } finally {
      await kubectlRun("delete", "clusterrolebinding", binding);
    }

    // The NetworkPolicy, as the API server kept it: the controller's pods, ingress only, port `metrics` from
    // namespaces labelled metrics=enabled.
    const policy = JSON.parse(
      await kubectlRun(
        "get",
        "networkpolicy",
        "-n",
        deployment.metadata.namespace,
        "shapes-controller-metrics",
        "-o",
        "json",
      ),
    ) as { spec: Record<string, unknown> };
    expect(policy.spec).toEqual({
      podSelector: { matchLabels: deployment.spec.selector.matchLabels },
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { metrics: "enabled" } } }],
          ports: [{ port: "metrics", protocol: "TCP" }],
        },
      ],
    });
    const port = container.ports?.find((p) => p.name === "metrics");
    expect(port?.containerPort).toBe(8081);
  });

  describe("the pod template in its own namespace, which enforces the restricted Pod Security Standard (server-side dry run)", () => {
    let namespace: string;
    let core: CoreV1Api;
    /** The standard the namespace enforces, as the API server names it in a refusal: `restricted:v1.36`. */
    let enforced: string;

    beforeAll(() => {
      namespace = deployment.metadata.namespace;
      core = stack.kubeConfig.makeApiClient(CoreV1Api);
    });

    test("the namespace, as deploy/namespace.yaml made it, enforces restricted at a pinned version", async () => {
      const labels = (await core.readNamespace({ name: namespace })).metadata?.labels ?? {};
      expect(labels).toMatchObject({
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "latest",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "latest",
      });
      const version = labels["pod-security.kubernetes.io/enforce-version"];
      expect(version).toMatch(/^v1\.\d+$/);
      enforced = `restricted:${version}`;
    });

    /** Submits a Pod with `spec` to the admission chain without storing it: "" when admitted, else why not. */
    async function dryRunPod(spec: V1PodSpec): Promise<string> {
      try {
        await core.createNamespacedPod({
          namespace,
          dryRun: "All",
          body: { apiVersion: "v1", kind: "Pod", metadata: { name: "template-check" }, spec },
        });
        return "";
      } catch (error) {
        return apiMessage(error);
      }
    }

    test("the template as written is admitted", async () => {
      expect(await dryRunPod(deployment.spec.template.spec)).toBe("");
    });

    // Each hardening field matters: without it, the same template is refused. (So the test above can fail.)
    const weakenings: {
      reason: string;
      weaken: (pod: V1PodSpec, c: V1Container) => void;
      refusal: RegExp;
    }[] = [
      {
        reason: "a process must not gain more privileges than its parent (setuid binaries)",
        weaken: (_pod, c) => (c.securityContext = { ...c.securityContext, allowPrivilegeEscalation: true }),
        refusal: /allowPrivilegeEscalation != false/,
      },
      {
        reason: "every Linux capability is dropped",
        weaken: (_pod, c) => (c.securityContext = { ...c.securityContext, capabilities: {} }),
        refusal: /unrestricted capabilities/,
      },
      {
        reason: "the container must not run as root",
        weaken: (pod, c) => {
          pod.securityContext = { ...pod.securityContext, runAsNonRoot: undefined };
          c.securityContext = { ...c.securityContext, runAsNonRoot: undefined };
        },
        refusal: /runAsNonRoot != true/,
      },
      {
        reason: "system calls are filtered by the runtime's default seccomp profile",
        weaken: (pod) => (pod.securityContext = { ...pod.securityContext, seccompProfile: undefined }),
        refusal: /seccompProfile/,
      },
    ];
    test.each(weakenings)("refused without its hardening: $reason", async ({ weaken, refusal }) => {
      const pod = structuredClone(deployment.spec.template.spec);
      weaken(pod, pod.containers[0] as V1Container);
      const message = await dryRunPod(pod);
      expect(message).toContain(`violates PodSecurity "${enforced}"`);
      expect(message).toMatch(refusal);
    });
  });

  describe("the compose setup job (deploy/compose/setup.ts), as docker-compose.yml runs it", () => {
    let dir: string;
    let out: string;
    let controller: ControllerProcess | undefined;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "compose-setup-"));
      out = join(dir, "controller.kubeconfig");
    });
    afterAll(async () => {
      await controller?.stop(5_000);
      await rm(dir, { recursive: true, force: true });
    });

    /** Runs the job as a process, as compose does; resolves with its output. */
    async function setupJob(): Promise<string> {
      const { stdout } = await run(process.execPath, [
        join(DEPLOY_DIR, "compose", "setup.ts"),
        `--kubeconfig=${stack.cluster.kubeconfigPath}`,
        `--out=${out}`,
      ]);
      return stdout;
    }

    test("it installs CRDs and RBAC and writes a token kubeconfig; a second run (the next `up`) also succeeds", async () => {
      const first = await setupJob();
      expect(first).toMatch(/CRDs installed and served: .*\bshapes\.shapes\.example\.com/);
      expect(first).toMatch(/CRDs installed and served: .*\bshaperefs\.shapes\.example\.com/);
      expect(first).toMatch(
        /applied Namespace\/shapes-system, ServiceAccount\/shapes-controller, ClusterRole/,
      );
      // The token lives a year: the API server does not cap it without --service-account-max-token-expiration.
      const until = new Date(/token valid until (\S+)\)/.exec(first)?.[1] ?? "");
      expect(until.getTime() - Date.now()).toBeGreaterThan(360 * 24 * 3600 * 1000);
      await setupJob();
    });

    test("the kubeconfig authenticates as the controller's service account, which has only what RBAC grants", async () => {
      const kc = new KubeConfig();
      kc.loadFromFile(out);
      expect(kc.getCurrentUser()?.token, "a bearer token, no client certificate").toBeTruthy();
      const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
      expect(review.status?.userInfo?.username).toBe("system:serviceaccount:shapes-system:shapes-controller");
      expect(review.status?.userInfo?.groups).toContain("system:serviceaccounts:shapes-system");
      const core = kc.makeApiClient(CoreV1Api);
      await expect(core.listNamespacedSecret({ namespace: "shapes-system" })).rejects.toMatchObject({
        code: 403,
      });
    });

    test("a controller on that kubeconfig reconciles a Shape into the cloud, and is never refused", async () => {
      controller = new ControllerProcess({
        name: "compose-identity",
        artifactsDir: stack.artifactsDir,
        kubeconfigPath: out,
        cloudUrl: stack.cloud.url,
        cloudToken: CLOUD_TOKEN,
      });
      await controller.start();
      const ns = await stack.kube.createNamespace("compose");
      await stack.kube.applyShape(ns, "red-square", { type: "square", color: "red" });
      const converged = await waitConverged(stack, ns, "red-square");
      expect(converged.cloud.tags.owner).toBe(stack.ownerId);
      expect(forbiddenLines(await controller.logs())).toEqual([]);
    });
  });

  test("deploy/ with its sharding component: three replicas with --sharding, which may list and delete the ring's Leases", async () => {
    // deploy/ with its sharding component turned on, as a person does in their copy of deploy/kustomization.yaml
    // (kustomize takes the folders by relative path only).
    const dir = await mkdtemp(join(tmpdir(), "deploy-sharding-"));
    const base = relative(dir, DEPLOY_DIR);
    await writeFile(
      join(dir, "kustomization.yaml"),
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${base}\ncomponents:\n  - ${base}/sharding\n`,
    );
    const out = await kubectlRun("apply", "-k", dir).finally(() => rm(dir, { recursive: true, force: true }));
    expect(out).toMatch(
      /role\.rbac\.authorization\.k8s\.io\/shapes-controller-sharding (created|configured|unchanged)/,
    );
    const sharded = JSON.parse(
      await kubectlRun("get", "deployment", "-n", "shapes-system", "shapes-controller", "-o", "json"),
    ) as Deployment;
    const args = sharded.spec.template.spec.containers[0]?.args ?? [];
    expect(sharded.spec.replicas).toBe(3);
    expect(args).toContain("--sharding");
    expect(args).not.toContain("--leader-elect");
    // The whole command line still parses, as the controller reads it.
    expect(loadConfig(args, { CLOUD_TOKEN: "t" })).toMatchObject({ sharding: true, leaderElect: false });

    // The ring's verbs (library/src/leadership/kube-ring-leases.ts: list, create, update, delete), asked of the API
    // server's authorizer as the service account: in its namespace, and nowhere else.
    for (const verb of ["get", "list", "create", "update", "delete"]) {
      expect(await mayUseLeases("shapes-system", verb), verb).toBe(true);
      expect(await mayUseLeases("default", verb), `${verb} elsewhere`).toBe(false);
    }
    expect(await mayUseLeases("shapes-system", "watch")).toBe(false);
  });
});

/** The value of `--name=value` in `args`, or undefined. */
function flagValue(args: readonly string[], name: string): string | undefined {
  const prefix = `--${name}=`;
  return args.find((a) => a.startsWith(prefix))?.slice(prefix.length);
}

/** A compose service as this test reads it. */
interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
}

/**
 * A compose service's `node …` command as this machine runs it: node's flags as they are, the script (node's
 * first argument that is not a flag) in this checkout instead of the image's /app, then its own arguments.
 */
function nodeArgs(command: readonly string[]): string[] {
  const args = command.slice(1);
  const script = args.findIndex((a) => !a.startsWith("-"));
  if (command[0] !== "node" || script < 0)
    throw new Error(`cannot run ${JSON.stringify(command)}: not node <script>`);
  return args.map((a, i) => (i === script ? join(REPO_ROOT, a) : a));
}

describe("docker compose up, relocated to this machine (no Docker engine here)", () => {
  const compose = parse(interpolate(readFileSync(join(REPO_ROOT, "docker-compose.yml"), "utf8")), {
    merge: true,
  }) as {
    services: Record<string, ComposeService>;
    secrets: Record<string, { file: string }>;
  };
  const children: Child[] = [];
  let dir: string;
  let relocate: (value: string) => string;
  let ports: { etcd: number; peer: number; api: number; cloud: number; metrics: number };

  /** The service's command and environment, relocated. */
  const service = (name: string) => {
    const s = compose.services[name];
    if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
    return {
      command: (s.command ?? []).map((a) => relocate(a)),
      env: Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, relocate(String(v))])),
      healthcheck: (s.healthcheck?.test.slice(1) ?? []).map((a) => relocate(a)),
    };
  };

  /** Starts a long-running service's process, its output in a log file. */
  async function start(name: string, command: string, args: string[], env: Record<string, string> = {}) {
    const child = await spawnChild({ name, command, args, env, logFile: join(dir, `${name}.log`) });
    children.push(child);
    return child;
  }

  /** Runs a service's compose healthcheck until it passes (compose's `service_healthy`). */
  async function healthy(name: string, child: Child, check: () => Promise<void>): Promise<void> {
    let exited = "";
    await waitFor(`${name} to be healthy`, async () => {
      if (child.exitStatus()) exited = await child.logTail(20);
      if (exited === "") await check();
    });
    if (exited !== "") throw new Error(`cannot start ${name}: it exited. Its log ends with:\n${exited}`);
  }

  /** Runs `node <script> ...` as a one-shot job; resolves with stdout, rejects with stderr. */
  async function job(argv: string[], env: Record<string, string> = {}): Promise<string> {
    const [node, script, ...args] = argv;
    expect(node).toBe("node");
    const { stdout } = await run(process.execPath, [join(REPO_ROOT, script ?? ""), ...args], {
      env: { ...process.env, ...env },
    });
    return stdout;
  }

  beforeAll(async () => {
    // The controller's service runs controller/dist/main.js, built JavaScript, as its image does: built here
    // the way the Dockerfile builds it (the library, then the controller against it).
    await promisify(execFile)(
      "npm",
      ["run", "-s", "build", "-w", "reconcile-kit", "-w", "@shapes/controller"],
      {
        cwd: REPO_ROOT,
      },
    );
    dir = await mkdtemp(join(tmpdir(), "compose-relocated-"));
    const [etcd = 0, peer = 0, api = 0, cloud = 0, metrics = 0] = await freePorts(5);
    ports = { etcd, peer, api, cloud, metrics };
    const secret = compose.secrets["cloud-token"]?.file ?? "";
    const adminSecret = compose.secrets["cloud-admin-token"]?.file ?? "";
    // Container paths → the temp folder; service names and ports → loopback ports. Nothing else changes.
    const paths: [string, string][] = [
      ["/pki", join(dir, "pki")],
      ["/var/lib/etcd", join(dir, "etcd")],
      ["/var/run/shapes", join(dir, "shapes")],
      ["/data", join(dir, "data")],
      ["/run/secrets/cloud-token", join(REPO_ROOT, secret)],
      ["/run/secrets/cloud-admin-token", join(REPO_ROOT, adminSecret)],
    ];
    const moves: [RegExp, string][] = [
      // A container path, alone or as a flag's value: `/pki/ca.crt`, `--dir=/pki`, `-ca=/pki/ca.crt`.
      ...paths.map(([from, to]): [RegExp, string] => [new RegExp(`(^|=)${from}(?=/|$)`, "g"), `$1${to}`]),
      [/(kube-apiserver|127\.0\.0\.1):6443/g, `127.0.0.1:${api}`],
      [/--secure-port=6443/, `--secure-port=${api}`],
      [/(etcd|0\.0\.0\.0|127\.0\.0\.1):2379/g, `127.0.0.1:${etcd}`],
      [/127\.0\.0\.1:2380/g, `127.0.0.1:${peer}`],
      [/(cloud|127\.0\.0\.1):8080/g, `127.0.0.1:${cloud}`],
      [/(0\.0\.0\.0|127\.0\.0\.1):8081/g, `127.0.0.1:${metrics}`],
      [/^8080$/, String(cloud)],
      [/^0\.0\.0\.0$/, "127.0.0.1"],
      [/^--bind-address=0\.0\.0\.0$/, "--bind-address=127.0.0.1"],
    ];
    relocate = (value) => {
      const moved = moves.reduce((v, [from, to]) => v.replace(from, to), value);
      // Never let a job write to this machine's real /pki, /data, ...: every container path must have moved.
      for (const [from] of paths) {
        if (new RegExp(`(^|=)${from}(/|$)`).test(moved)) throw new Error(`cannot relocate ${value}`);
      }
      return moved;
    };
  });
  afterAll(async () => {
    for (const child of children.toReversed()) await child.stop(10_000);
    await rm(dir, { recursive: true, force: true });
  });

  test("certs, etcd, kube-apiserver (healthy by its probe), setup, cloud, controller: each as compose runs it", async () => {
    const binaries = inject("envtestBinaries");

    // certs: one-shot. The host kubeconfig is the one deploy/README.md hands a person.
    expect(await job(service("certs").command)).toMatch(/created the PKI/);

    // etcd: compose's flags; healthy when /health says so (compose asks etcdctl, which the image has).
    const etcd = service("etcd");
    const etcdChild = await start("etcd", binaries.etcd, etcd.command);
    await healthy("etcd", etcdChild, async () => {
      const health = await etcdHealth(`http://127.0.0.1:${ports.etcd}`);
      if (!health.ready) throw new Error(health.detail);
    });

    // kube-apiserver: compose's flags. The machine may have no default route, which a container has: the
    // advertise address is the one flag added (deploy/compose.test.ts lists it as a deliberate difference).
    const apiServer = service("kube-apiserver");
    const apiChild = await start("kube-apiserver", binaries.kubeApiServer, [
      ...apiServer.command,
      "--advertise-address=127.0.0.1",
    ]);
    const probeDir = join(REPO_ROOT, "deploy", "compose", "probe");
    const probe = join(dir, "apiserver-probe");
    const built = spawnSync("go", ["build", "-trimpath", "-o", probe, "."], {
      cwd: probeDir,
      encoding: "utf8",
      env: { ...process.env, CGO_ENABLED: "0", GOTOOLCHAIN: "local" },
    });
    expect(built.status, `the probe builds: ${built.stderr}`).toBe(0);
    await healthy("kube-apiserver", apiChild, async () => {
      const [, ...args] = apiServer.healthcheck; // [/usr/local/bin/apiserver-probe, -url=..., -ca=...]
      await run(probe, args);
    });

    // setup: one-shot, as the admin (the certs job wrote the in-network kubeconfig with the relocated server).
    expect(await job(service("setup").command)).toMatch(/wrote .*controller\.kubeconfig/);

    // cloud and controller: their environment, relocated; healthy by compose's own healthcheck command.
    const cloud = service("cloud");
    const cloudChild = await start("cloud", process.execPath, nodeArgs(cloud.command), cloud.env);
    await healthy("cloud", cloudChild, () => job(cloud.healthcheck).then(() => undefined));
    const controller = service("controller");
    const controllerChild = await start(
      "controller",
      process.execPath,
      nodeArgs(controller.command),
      controller.env,
    );
    await healthy("controller", controllerChild, () => job(controller.healthcheck).then(() => undefined));
  });

  test("a person's path: kubectl with the host kubeconfig applies an example; the cloud holds it, the console serves", async () => {
    const kubectl = inject("envtestBinaries").kubectl ?? "kubectl";
    await run(kubectl, [
      `--kubeconfig=${join(dir, "pki", "host.kubeconfig")}`,
      "apply",
      "-n",
      "default",
      "-f",
      join(REPO_ROOT, "crds", "examples", "red-square.yaml"),
    ]);
    const token = (
      await readFile(join(REPO_ROOT, compose.secrets["cloud-token"]?.file ?? ""), "utf8")
    ).trim();
    const shape = await waitFor("default.red-square in the cloud", async () => {
      const res = await fetch(`http://127.0.0.1:${ports.cloud}/v1/shapes?limit=1000`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const { items } = (await res.json()) as {
        items: { name: string; color: string; tags: Record<string, string> }[];
      };
      const found = items.find((i) => i.name === "default.red-square");
      // The compose cluster's own owner id: k8s-<uid of its kube-system namespace>.
      expect(found?.tags).toMatchObject({
        owner: expect.stringMatching(/^k8s-[0-9a-f-]{36}$/),
        "k8s-name": "default/red-square",
      });
      return found;
    });
    expect(shape?.color).toBe("red");
    const page = await fetch(`http://127.0.0.1:${ports.cloud}/`);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
  });
});
