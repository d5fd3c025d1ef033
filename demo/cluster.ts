/**
 * The Kubernetes side of the demo: a cluster, the project's manifests in it, and the controller's
 * least-privilege credentials.
 *
 * Which cluster (envtest's resolution order):
 * - KUBECONFIG set (or USE_EXISTING_CLUSTER=true): that cluster. Nothing is started or stopped; the
 *   controller impersonates the service account (the admin needs the `impersonate` verb).
 * - Otherwise the persistent local control plane of `npm run cluster -- up` (envtest/src/persistent.ts),
 *   in <state-dir>/cluster. If it already runs because someone ran `npm run cluster -- up`, it is used
 *   and left running on exit. If `npm start` starts it, `npm start` stops it on exit; a marker file
 *   (cluster-owner.json) remembers that, so a control plane left behind by an `npm start` that was killed
 *   is taken over (and stopped) by the next one. The controller gets a client certificate for the
 *   service account, minted from the control plane's CA: it holds exactly what deploy/rbac.yaml grants.
 */
import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT, installProjectManifests } from "@shapes/stack";
import {
  clusterDown,
  clusterStatus,
  clusterUp,
  connectExisting,
  ensurePki,
  issueClientCertificate,
  loadKubeConfig,
  type ProgressLog,
  renderKubeconfig,
  resolveSource,
  serviceAccountUser,
  useExistingClusterFromEnv,
  writePrivateFile,
} from "@shapes/envtest";
import { display, type DemoPaths } from "./paths.ts";

// Who the controller runs as, and how the project is installed: shared with the stacks (stack/), bench and chaos.
export { CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT, installProjectManifests };

/** The cluster the demo runs against. */
export interface DemoCluster {
  /** `local`: the demo's control plane (no kube-controller-manager); `existing`: the user's. */
  readonly kind: "local" | "existing";
  readonly server: string;
  /** The admin kubeconfig: a path, or the user's KUBECONFIG value (a list is allowed). */
  readonly kubeconfig: string;
  /** The controller's kubeconfig: the shapes-controller service account. */
  readonly controllerKubeconfig: string;
  /** One line for the terminal: what this cluster is and where it came from. */
  readonly description: string;
  /** A client-node KubeConfig of the admin. */
  kubeConfig(): KubeConfig;
  /**
   * Called once, at the end: stops what `npm start` started (the local control plane, when it started
   * it) and leaves the rest running. Resolves with a line saying which.
   */
  stop(log: ProgressLog): Promise<string>;
}

/** Options of {@link startCluster}. */
export interface StartClusterOptions {
  paths: DemoPaths;
  env: NodeJS.ProcessEnv;
  /** Progress lines, including the build's when the binaries must be built first. */
  log: ProgressLog;
}

/** Brings up (or connects to) the cluster and prepares the controller's credentials. */
export async function startCluster(options: StartClusterOptions): Promise<DemoCluster> {
  return useExistingClusterFromEnv(options.env) ? connectToExisting(options) : startLocal(options);
}

async function connectToExisting({ env, log }: StartClusterOptions): Promise<DemoCluster> {
  const source = resolveSource({ env, useExistingCluster: true });
  if (source.kind !== "existing") throw new Error("cannot happen: an existing cluster was asked for");
  const cluster = await connectExisting(source.kubeconfig);
  log(
    `using your cluster at ${cluster.server} (${source.why}: ${source.kubeconfig}); it is left running on exit`,
  );
  const identity = await cluster.serviceAccountIdentity(CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT);
  return {
    kind: "existing",
    server: cluster.server,
    kubeconfig: source.kubeconfig,
    controllerKubeconfig: identity.kubeconfigPath,
    description: `your cluster at ${cluster.server} (from ${source.kubeconfig})`,
    kubeConfig: () => cluster.kubeConfig(),
    async stop() {
      await cluster.stop(); // deletes only our impersonating kubeconfig
      return `your cluster at ${cluster.server} is left running (the CRDs, RBAC and Shapes stay in it)`;
    },
  };
}

async function startLocal({ paths, log }: StartClusterOptions): Promise<DemoCluster> {
  const dir = paths.clusterDir;
  const before = await clusterStatus(dir);
  const running = before.state !== undefined && before.etcd && before.apiServer;
  const markedOurs = await ownerMarker(paths.clusterOwner);
  // Ours to stop on exit: we start it now, or an earlier npm start did and died before stopping it.
  const ours = !running || markedOurs;
  if (ours) await writeFile(paths.clusterOwner, JSON.stringify({ pid: process.pid }) + "\n");
  if (running && markedOurs) log(`taking over the control plane an earlier npm start left running`);
  else if (running)
    log(`using the control plane that \`npm run cluster -- up\` started; it is left running on exit`);
  else if (existsSync(join(dir, "etcd")))
    log(`starting the local control plane again, with the data of the last run (${display(dir)})`);
  else log(`starting a new local control plane (data in ${display(dir)})`);

  const { state } = await clusterUp({ dir, log });
  const controllerKubeconfig = await mintServiceAccountKubeconfig(
    dir,
    state.server,
    paths.controllerKubeconfig,
  );
  return {
    kind: "local",
    server: state.server,
    kubeconfig: state.kubeconfig,
    controllerKubeconfig,
    description:
      `a local control plane (etcd + kube-apiserver) at ${state.server}, data in ${display(dir)}` +
      (ours ? "" : " (started by `npm run cluster -- up`)"),
    kubeConfig: () => loadKubeConfig(state.kubeconfig),
    async stop(stopLog) {
      if (!ours)
        return `the control plane of \`npm run cluster -- up\` is left running (npm run cluster -- down stops it)`;
      await clusterDown({ dir, log: stopLog });
      await rm(paths.clusterOwner, { force: true });
      return `control plane stopped (data kept in ${display(dir)})`;
    },
  };
}

/** True when the marker says an `npm start` started the control plane in this folder. */
async function ownerMarker(path: string): Promise<boolean> {
  try {
    await readFile(path, "utf8");
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a kubeconfig (0600) that authenticates as the controller's service account with a client
 * certificate from the control plane's CA: user system:serviceaccount:shapes-system:shapes-controller,
 * groups system:serviceaccounts and system:serviceaccounts:shapes-system — what RBAC sees for a real
 * token, and nothing more.
 */
async function mintServiceAccountKubeconfig(
  clusterDir: string,
  server: string,
  path: string,
): Promise<string> {
  const pki = await ensurePki(join(clusterDir, "pki"));
  const who = serviceAccountUser(CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT);
  const cert = await issueClientCertificate(pki.ca, who);
  await writePrivateFile(
    path,
    renderKubeconfig({
      server,
      caPem: pki.ca.certPem,
      certPem: cert.certPem,
      keyPem: cert.keyPem,
      userName: who.user,
      contextName: "shapes-demo",
    }),
  );
  return path;
}
