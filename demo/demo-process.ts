/**
 * The demo's commands as their own processes, as a person runs them. `DemoProcess` is `npm start` for
 * whoever needs the whole demo running: the browser tests of its two-worlds page (e2e/two-worlds-page.test.ts)
 * and the script that takes the docs' screenshots (demo/screenshots.ts); a fresh state folder and free ports,
 * so it never meets a demo the person is running. `DemoScript` is any of them (start, tour, kubectl) as
 * e2e/demo.test.ts runs them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withParentDeathSignal } from "./controller-process.ts";
import { readEnvFile, type DemoEnv } from "./env-file.ts";
import { demoPaths, REPO_ROOT, type DemoPaths } from "./paths.ts";
import { waitFor } from "@shapes/stack";

/**
 * A command of the demo (`demo/<script>`: start, tour, kubectl) run as its own process from this checkout,
 * its output collected: the demo's own control plane, whatever KUBECONFIG says; if this process dies, the
 * kernel sends it SIGTERM, and it stops what it started.
 */
export class DemoScript {
  readonly child: ChildProcess;
  /** Everything it printed, stdout and stderr. */
  output = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What the process is called when a wait fails, e.g. "the demo". */
  readonly #what: string;

  constructor(
    script: string,
    args: readonly string[],
    options: { env?: NodeJS.ProcessEnv; what?: string } = {},
  ) {
    this.#what = options.what ?? "the process";
    const [command, argv] = withParentDeathSignal(process.execPath, [
      join(REPO_ROOT, "demo", script),
      ...args,
    ]);
    this.child = spawn(command, argv, {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, KUBECONFIG: "", USE_EXISTING_CLUSTER: "false", ...options.env },
    });
    const collect = (chunk: Buffer) => (this.output += chunk.toString("utf8"));
    this.child.stdout?.on("data", collect);
    this.child.stderr?.on("data", collect);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Waits until the output matches `pattern`; fails early, with the output, if the process exits. */
  async waitForOutput(pattern: RegExp, timeoutMs = 240_000): Promise<void> {
    await waitFor(
      `output matching ${pattern}`,
      () => {
        if (pattern.test(this.output)) return;
        if (this.child.exitCode !== null) {
          throw new Error(`${this.#what} exited (code ${this.child.exitCode}); output:\n${this.output}`);
        }
        throw new Error(`not yet; output so far ends with:\n${this.output.slice(-1500)}`);
      },
      { timeoutMs, intervalMs: 200 },
    );
  }
}

/** A running `node demo/start.ts` in a state folder of its own, on free ports. */
export class DemoProcess extends DemoScript {
  readonly paths: DemoPaths;

  private constructor(stateDir: string, args: readonly string[]) {
    super(
      "start.ts",
      ["--state-dir", stateDir, "--port", "0", "--metrics-port", "0", "--view-port", "0", ...args],
      { what: "the demo" },
    );
    this.paths = demoPaths(stateDir);
  }

  /**
   * Starts a demo in a fresh temporary state folder (named after `purpose`) and waits until it says
   * "The demo is running" (the first run builds the Kubernetes binaries: minutes). `onProgress` gets each
   * line it prints meanwhile.
   */
  static async start(
    purpose: string,
    options: { args?: readonly string[]; timeoutMs?: number; onProgress?: (line: string) => void } = {},
  ): Promise<DemoProcess> {
    const stateDir = await mkdtemp(join(tmpdir(), `shapes-${purpose}-`));
    const demo = new DemoProcess(stateDir, options.args ?? []);
    if (options.onProgress) {
      let pending = "";
      const report = options.onProgress;
      demo.child.stdout?.on("data", (chunk: Buffer) => {
        const lines = (pending + chunk.toString("utf8")).split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) report(line);
      });
    }
    try {
      await demo.waitForOutput(/The demo is running/, options.timeoutMs ?? 600_000);
    } catch (error) {
      await demo.stop();
      throw error;
    }
    return demo;
  }

  /** The two-worlds page's link, with its token, as the banner printed it. */
  get viewLink(): string {
    const link = /Both worlds\s+(http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]+)/.exec(this.output)?.[1];
    if (!link)
      throw new Error(`cannot find the two-worlds page's link in the demo's output:\n${this.output}`);
    return link;
  }

  /** KUBECONFIG, CLOUD_URL, CLOUD_TOKEN, from the state folder's env file. */
  env(): Promise<DemoEnv> {
    return readEnvFile(this.paths.envFile);
  }

  /** Ctrl-C: the demo stops everything it started; then its state folder is removed. Idempotent. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGINT");
    await this.exited;
    await rm(this.paths.root, { recursive: true, force: true });
  }
}
