/**
 * The `setup` job of docker-compose.yml, as the cluster admin: install the CRDs (crds/), the namespace and
 * the least-privilege RBAC (deploy/namespace.yaml, deploy/rbac.yaml), then give the controller its identity:
 * a token of the `shapes-controller` service account from the TokenRequest API, in a kubeconfig of its own.
 * The controller never sees the admin's credentials; what it may do is exactly what deploy/rbac.yaml grants,
 * as in a real cluster. Idempotent: every `docker compose up` runs it again and refreshes the token.
 *
 *   node deploy/compose/setup.ts --kubeconfig /pki/admin.kubeconfig --out /var/run/shapes/controller.kubeconfig
 *
 * TokenRequest is served by kube-apiserver itself (with --service-account-signing-key-file), so it works
 * without a kube-controller-manager, which this control plane does not run.
 */
import { mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import { apiMessage, installCRDs, writePrivateFile } from "@shapes/envtest";

/** The repository's deploy/ folder. */
export const DEPLOY_DIR = join(import.meta.dirname, "..");

/** The manifests the setup job applies, in order (the namespace before what lives in it). */
export const MANIFESTS = ["namespace.yaml", "rbac.yaml"] as const;

/** The field manager of the setup job's server-side applies. */
export const FIELD_MANAGER = "shapes-compose-setup";

/** Options of {@link runSetup}. */
export interface SetupOptions {
  /** The admin kubeconfig file. */
  kubeconfig: string;
  /** Where to write the controller's kubeconfig (0600). */
  out: string;
  /** The API server URL written into the controller's kubeconfig. Default: the admin kubeconfig's. */
  server?: string;
  /** Lifetime of the service-account token. Default 8760 h (a year; every `up` mints a new one). */
  tokenHours?: number;
  /** How long to wait for the API server to answer. Default 120 s. */
  timeoutMs?: number;
  /** Progress lines. Default: stdout. */
  log?: (line: string) => void;
}

/** Who the controller is: the ServiceAccount of deploy/rbac.yaml. */
export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

/** Reads every object of a YAML file; throws "cannot parse ..." on a syntax error. */
export async function readManifest(path: string): Promise<KubernetesObject[]> {
  const objects: KubernetesObject[] = [];
  for (const doc of parseAllDocuments(await readFile(path, "utf8"))) {
    if (doc.errors.length > 0) throw new Error(`cannot parse ${path}: ${doc.errors[0]?.message}`);
    const object = doc.toJS() as KubernetesObject | null;
    if (object) objects.push(object);
  }
  return objects;
}

/** The one ServiceAccount of deploy/rbac.yaml; throws when there is not exactly one. */
export async function controllerServiceAccount(deployDir = DEPLOY_DIR): Promise<ServiceAccountRef> {
  const accounts = (await readManifest(join(deployDir, "rbac.yaml"))).filter(
    (o) => o.kind === "ServiceAccount",
  );
  const sa = accounts[0];
  if (accounts.length !== 1 || !sa?.metadata?.name || !sa.metadata.namespace) {
    throw new Error(
      `cannot find the controller's identity: rbac.yaml must hold one namespaced ServiceAccount`,
    );
  }
  return { namespace: sa.metadata.namespace, name: sa.metadata.name };
}

/** Waits until the API server answers an authenticated read; throws with the last error after `timeoutMs`. */
export async function waitForApiServer(kc: KubeConfig, timeoutMs: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await core.readNamespace({ name: "default" });
      return;
    } catch (error) {
      if (Date.now() >= deadline) {
        throw new Error(`cannot reach the API server within ${timeoutMs / 1000} s: ${apiMessage(error)}`, {
          cause: error,
        });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Server-side applies every object of each manifest, in order. */
export async function applyManifests(kc: KubeConfig, paths: readonly string[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const applied: KubernetesObject[] = [];
  for (const path of paths) {
    for (const object of await readManifest(path)) {
      try {
        applied.push(
          await api.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
        );
      } catch (error) {
        throw new Error(
          `cannot apply ${object.kind ?? "?"} ${object.metadata?.name ?? "?"} from ${path}: ${apiMessage(error)}`,
          { cause: error },
        );
      }
    }
  }
  return applied;
}

/**
 * A kubeconfig that authenticates as `account` with a fresh TokenRequest token valid for `tokenHours`,
 * against `server` (default: the admin kubeconfig's), trusting the admin kubeconfig's CA.
 */
export async function serviceAccountKubeconfig(
  kc: KubeConfig,
  account: ServiceAccountRef,
  options: { server?: string; tokenHours: number },
): Promise<{ yaml: string; expires: Date | undefined }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("cannot write a kubeconfig: the admin kubeconfig has no current cluster");
  const caData =
    cluster.caData ?? (cluster.caFile ? (await readFile(cluster.caFile)).toString("base64") : undefined);
  if (!caData) throw new Error("cannot write a kubeconfig: the admin kubeconfig names no CA");
  let token: string | undefined;
  let expires: Date | undefined;
  try {
    const answer = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      namespace: account.namespace,
      name: account.name,
      body: { spec: { audiences: [], expirationSeconds: Math.round(options.tokenHours * 3600) } },
    });
    token = answer.status?.token;
    expires = answer.status?.expirationTimestamp;
  } catch (error) {
    throw new Error(
      `cannot get a token for the service account ${account.namespace}/${account.name}: ${apiMessage(error)}`,
      { cause: error },
    );
  }
  if (!token) throw new Error("cannot use the TokenRequest answer: it holds no token");
  const user = `system:serviceaccount:${account.namespace}:${account.name}`;
  const yaml = stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "shapes-compose",
        cluster: { server: options.server ?? cluster.server, "certificate-authority-data": caData },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: "shapes-controller", context: { cluster: "shapes-compose", user } }],
    "current-context": "shapes-controller",
  });
  return { yaml, expires };
}

/** The whole job: wait, install CRDs, apply namespace and RBAC, write the controller's kubeconfig. */
export async function runSetup(options: SetupOptions): Promise<ServiceAccountRef> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfig);
  await waitForApiServer(kc, options.timeoutMs ?? 120_000);
  const crds = await installCRDs(kc);
  log(`setup: CRDs installed and served: ${crds.join(", ")}`);
  const applied = await applyManifests(
    kc,
    MANIFESTS.map((m) => join(DEPLOY_DIR, m)),
  );
  log(`setup: applied ${applied.map((o) => `${o.kind}/${o.metadata?.name}`).join(", ")}`);
  const account = await controllerServiceAccount();
  const { yaml, expires } = await serviceAccountKubeconfig(kc, account, {
    ...(options.server ? { server: options.server } : {}),
    tokenHours: options.tokenHours ?? 8760,
  });
  await mkdir(dirname(options.out), { recursive: true });
  await writePrivateFile(options.out, yaml);
  log(
    `setup: wrote ${options.out} for system:serviceaccount:${account.namespace}:${account.name}` +
      (expires ? ` (token valid until ${expires.toISOString()})` : ""),
  );
  return account;
}

/** The command line's options (node:util parseArgs). */
export const SETUP_OPTIONS = {
  kubeconfig: { type: "string" },
  out: { type: "string" },
  server: { type: "string" },
  "token-hours": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

const USAGE = `Usage: node deploy/compose/setup.ts --kubeconfig FILE --out FILE [--server URL] [--token-hours N]

As the admin of --kubeconfig: installs crds/, applies deploy/namespace.yaml and deploy/rbac.yaml, and writes
to --out a kubeconfig that authenticates as the controller's service account (a TokenRequest token valid for
--token-hours, default 8760), against --server (default: the admin kubeconfig's server).
`;

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: SETUP_OPTIONS,
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`setup: cannot parse the command line: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const tokenHours = values["token-hours"] === undefined ? 8760 : Number(values["token-hours"]);
  if (!values.kubeconfig || !values.out || !(tokenHours >= 1)) {
    process.stderr.write(
      `setup: cannot run without --kubeconfig and --out (and --token-hours >= 1)\n${USAGE}`,
    );
    return 2;
  }
  await runSetup({
    kubeconfig: values.kubeconfig,
    out: values.out,
    tokenHours,
    ...(values.server ? { server: values.server } : {}),
  });
  return 0;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`setup: ${(error as Error).message}\n`);
    return 1;
  });
}
