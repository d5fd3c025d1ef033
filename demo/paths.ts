/**
 * Where the demo keeps its state: one folder (default `.demo/` at the repo root, git-ignored) that
 * `npm start` creates, `npm run tour` and `npm run kubectl` read, and a second `npm start` resumes from.
 *
 *   cluster/                the persistent control plane: the same folder `npm run cluster -- up` uses
 *                           (etcd data, PKI, admin kubeconfig, state.json; see envtest/src/persistent.ts)
 *   cluster-owner.json      written while `npm start` owns the control plane (it started it)
 *   cloud/cloud.db          the mock cloud's SQLite database
 *   cloud-token             the cloud's API token (0600), made once and reused; the controller's too
 *   cloud-admin-token       the cloud's admin token (0600): faults and the request log, for the demo's own
 *                           tools (tour, two-worlds page, console link), never the controller
 *   view-token              the two-worlds page's token (0600), made once and reused
 *   controller.kubeconfig   the controller's credentials: the shapes-controller service account (0600)
 *   env                     KUBECONFIG=, CLOUD_URL=, CLOUD_TOKEN=, CLOUD_ADMIN_TOKEN= for scripts
 *                           (`set -a; . .demo/env`)
 *   logs/controller.log     the controller's JSON log (every run appended)
 *   logs/cloud.log          the mock cloud's JSON log
 *   demo.sock               the control socket of a running `npm start` (see control.ts)
 */
import { isAbsolute, join, relative, resolve } from "node:path";

/** The repository root. */
export const REPO_ROOT = resolve(import.meta.dirname, "..");

/** The default state folder: `.demo/` at the repo root. */
export const DEFAULT_STATE_DIR = join(REPO_ROOT, ".demo");

/**
 * The environment variable naming the state folder, for all three commands (start, tour, kubectl).
 * A `--state-dir` flag wins over it.
 */
export const STATE_DIR_ENV = "SHAPES_DEMO_DIR";

/** Every path of one state folder. */
export interface DemoPaths {
  readonly root: string;
  readonly clusterDir: string;
  readonly clusterOwner: string;
  readonly cloudDb: string;
  readonly tokenFile: string;
  readonly adminTokenFile: string;
  readonly viewTokenFile: string;
  readonly controllerKubeconfig: string;
  readonly envFile: string;
  readonly logsDir: string;
  readonly controllerLog: string;
  readonly cloudLog: string;
  readonly socket: string;
}

/** The layout of the state folder `root` (made absolute against the working directory). */
export function demoPaths(root: string): DemoPaths {
  const dir = resolve(root);
  return {
    root: dir,
    clusterDir: join(dir, "cluster"),
    clusterOwner: join(dir, "cluster-owner.json"),
    cloudDb: join(dir, "cloud", "cloud.db"),
    tokenFile: join(dir, "cloud-token"),
    adminTokenFile: join(dir, "cloud-admin-token"),
    viewTokenFile: join(dir, "view-token"),
    controllerKubeconfig: join(dir, "controller.kubeconfig"),
    envFile: join(dir, "env"),
    logsDir: join(dir, "logs"),
    controllerLog: join(dir, "logs", "controller.log"),
    cloudLog: join(dir, "logs", "cloud.log"),
    socket: join(dir, "demo.sock"),
  };
}

/** The state folder a command uses: its flag, else SHAPES_DEMO_DIR, else `.demo/` at the repo root. */
export function stateDirFrom(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const chosen = flag ?? (env[STATE_DIR_ENV]?.trim() || undefined);
  return chosen === undefined ? DEFAULT_STATE_DIR : resolve(chosen);
}

/** `path` relative to the working directory when it lies inside it (shorter to read), else as is. */
export function display(path: string, cwd = process.cwd()): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}
