/**
 * The Shapes controller as a SEPARATE PROCESS (`node controller/src/main.ts`), exactly as an operator would
 * start it: flags only, its own kubeconfig, JSON logs on stderr. Each run's output goes to its own file in the
 * stack's artifacts folder (e2e/artifacts/<suite>/ by default, git-ignored), kept for debugging.
 *
 * The process runner (start, readiness, stop, kill, pause, logs, /metrics) is reconcile-kit/harness's
 * {@link HarnessProcess}; this file gives it the Shapes controller's command line.
 */
import { join } from "node:path";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { ControllerProcess as HarnessProcess, type ProcessOptions } from "reconcile-kit/harness";

export { describeLogLine, forbiddenLines, LOG_LEVEL, type LogLine } from "reconcile-kit/harness";

/** The repository root. */
export const REPO_ROOT = join(import.meta.dirname, "..");
/** The controller's entry point. */
export const CONTROLLER_MAIN = join(REPO_ROOT, "controller", "src", "main.ts");
/**
 * The controller's build (`npm run build -w reconcile-kit -w @shapes/controller`): what the image, compose and
 * the Deployment run. Give it as `script`, with NODE_OPTIONS emptied, so that no `--conditions=shapes-source`
 * of an npm script turns its library back into the sources.
 */
export const CONTROLLER_BUILD_MAIN = join(REPO_ROOT, "controller", "dist", "main.js");

/** How to run one controller replica. Durations are strings as the flags take them ("3s", "5m"). */
export interface ControllerOptions extends Omit<ProcessOptions, "args" | "command"> {
  /** The kubeconfig the controller uses (least privilege: the shapes-controller service account). */
  kubeconfigPath: string;
  cloudUrl: string;
  cloudToken: string;
  /** --owner-id. Default: the controller's default, `k8s-<uid of kube-system>` (the stack's `ownerId`). */
  ownerId?: string;
  /** --resync-period. Default "5m": long enough that only events, not resyncs, explain what a test sees. */
  resyncPeriod?: string;
  /** --leak-grace. Default "2s": short, so the sweep's decisions are visible within a test. */
  leakGrace?: string;
  /** --workers. Default: the controller's default. */
  workers?: number;
  /** Turn on leader election (--leader-elect) in this namespace, under this Lease name. */
  leaderElection?: { namespace: string; name: string };
  /** --identity: this replica's name in the Lease and in the cloud's X-Client-Id. Default: `name`. */
  identity?: string;
  /** Any further flags, appended as given. */
  extraArgs?: readonly string[];
  /** --log-level. Default "debug" (the logs are for reading when a test fails). */
  logLevel?: string;
  /** Flags for node itself, before the script. Default: the controller's own (CONTROLLER_NODE_FLAGS). */
  nodeFlags?: readonly string[];
  /** The script node runs. Default: the sources, CONTROLLER_MAIN; CONTROLLER_BUILD_MAIN for the build. */
  script?: string;
}

/** One Shapes controller replica: started, stopped, killed and restarted by the test. */
export class ControllerProcess extends HarnessProcess<ControllerOptions> {
  /** The command line of a run after node: node's flags, the script, the controller's flags. */
  override args(): string[] {
    const o = this.options;
    return [
      ...(o.nodeFlags ?? CONTROLLER_NODE_FLAGS),
      o.script ?? CONTROLLER_MAIN,
      `--kubeconfig=${o.kubeconfigPath}`,
      `--cloud-url=${o.cloudUrl}`,
      `--cloud-token=${o.cloudToken}`,
      `--metrics-address=127.0.0.1:0`,
      `--resync-period=${o.resyncPeriod ?? "5m"}`,
      `--leak-grace=${o.leakGrace ?? "2s"}`,
      `--log-level=${o.logLevel ?? "debug"}`,
      `--identity=${o.identity ?? o.name}`,
      ...(o.ownerId ? [`--owner-id=${o.ownerId}`] : []),
      ...(o.workers ? [`--workers=${o.workers}`] : []),
      ...(o.leaderElection
        ? [
            "--leader-elect",
            `--leader-election-namespace=${o.leaderElection.namespace}`,
            `--leader-election-name=${o.leaderElection.name}`,
          ]
        : []),
      ...(o.extraArgs ?? []),
    ];
  }
}
