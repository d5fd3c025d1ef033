/**
 * The running demo: everything `npm start` brings up, in order, and takes down in reverse order.
 *
 *   control socket → cloud token → mock cloud → Kubernetes (+ CRDs, RBAC) → feed → controller → .demo/env
 *
 * Cheap checks that can fail come first (another demo in this folder, a taken port), so a mistake is
 * reported in a second, not after a five-minute build. Each step registers how to undo it before the
 * next one starts; `stop()` undoes them last-to-first, so the controller stops (draining its work) while
 * the API server and the cloud it talks to are still up.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import type { RunningCloud } from "../mock-cloud/src/server.ts";
import { isPortFree } from "../envtest/src/ports.ts";
import { serveControl, type ControlServer, type DemoControl, type DemoStatus } from "./control.ts";
import { startCluster, installProjectManifests, type DemoCluster } from "./cluster.ts";
import { startTracing } from "../telemetry/tracing.ts";
import { startDemoCloud } from "./cloud.ts";
import { ControllerRunner, controllerCommand, controllerEnv } from "./controller-process.ts";
import { writeEnvFile, type DemoEnv } from "./env-file.ts";
import { EventFeed, FileFollower, formatLogLine } from "./feed.ts";
import type { StartOptions } from "./options.ts";
import { demoPaths, display, type DemoPaths } from "./paths.ts";
import { loadOrCreateToken } from "./token.ts";

/** What the demo prints: progress and feed lines (stdout), and problems (stderr). */
export interface DemoOutput {
  line(text: string): void;
  error(text: string): void;
}

/** What a started demo offers, for the banner. */
export interface DemoReady {
  paths: DemoPaths;
  env: DemoEnv;
  cluster: DemoCluster;
  cloudUrl: string;
  /** True when the cloud serves its console at `/` (else only the API). */
  hasConsole: boolean;
  metricsUrl: string | undefined;
  /** Where spans go, when the person set OTEL_EXPORTER_OTLP_ENDPOINT (telemetry/tracing.ts); else tracing is off. */
  tracesEndpoint: string | undefined;
  /** True when this run created the cloud token (a first run in this folder). */
  firstRun: boolean;
}

/** Thrown by `start()` when `stop()` was called before it finished. Not a failure. */
export class StartInterrupted extends Error {
  override name = "StartInterrupted";
}

interface Undo {
  what: string;
  run(): Promise<string | void>;
}

/** One demo, started once and stopped once. Also the control socket's backend (DemoControl). */
export class Demo implements DemoControl {
  readonly paths: DemoPaths;
  readonly #options: StartOptions;
  readonly #env: NodeJS.ProcessEnv;
  readonly #out: DemoOutput;
  readonly #undo: Undo[] = [];
  #starting: Promise<DemoReady> | undefined;
  #stopping: Promise<void> | undefined;
  #stopRequested = false;
  #cluster: DemoCluster | undefined;
  #cloud: RunningCloud | undefined;
  #runner: ControllerRunner | undefined;
  #logLines: FileFollower | undefined;
  #ready = false;
  readonly #stopped = Promise.withResolvers<void>();

  constructor(options: StartOptions, env: NodeJS.ProcessEnv, out: DemoOutput) {
    this.#options = options;
    this.#env = env;
    this.#out = out;
    this.paths = demoPaths(options.stateDir);
  }

  /** Called once: brings everything up; resolves when the controller is ready. */
  start(): Promise<DemoReady> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  /**
   * Called once (further calls join the first): stops everything this demo started, last-to-first.
   * A start under way is interrupted where it can be (a controller waiting to become ready) and
   * otherwise finishes its current step first.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#stopRequested = true;
      // A controller still waiting to become ready would hold the start up for minutes: interrupt it.
      if (!this.#ready) void this.#runner?.stop();
      await this.#starting?.catch(() => {});
      for (const step of this.#undo.reverse()) {
        try {
          const said = await step.run();
          if (said) this.#out.line(said);
        } catch (error) {
          this.#out.error(`cannot stop the ${step.what} cleanly: ${(error as Error).message}`);
        }
      }
      this.#stopped.resolve();
    })();
    return this.#stopping;
  }

  /** Resolves once `stop()` (called by anyone) has finished. */
  whenStopped(): Promise<void> {
    return this.#stopped.promise;
  }

  /** True once stop() was called. */
  get stopRequested(): boolean {
    return this.#stopRequested;
  }

  status(): DemoStatus {
    if (!this.#ready || !this.#cluster || !this.#cloud || !this.#runner) {
      throw new Error("cannot report yet: the demo is still starting (wait for “The demo is running”)");
    }
    return {
      pid: process.pid,
      stateDir: this.paths.root,
      cluster: {
        kind: this.#cluster.kind,
        server: this.#cluster.server,
        kubeconfig: this.#cluster.kubeconfig,
      },
      cloud: { url: this.#cloud.url },
      controller: this.#runner.status(),
    };
  }

  async stopController(): Promise<void> {
    if (!this.#runner || this.#stopRequested)
      throw new Error("cannot stop the controller: the demo is stopping");
    this.#out.line("controller: stopping, as asked through the control socket (npm run tour?)");
    await this.#runner.stop();
    await this.#logLines?.flush(); // its last log lines first, then ours
    this.#out.line("controller: stopped; nothing reconciles until it starts again");
  }

  async startController(): Promise<void> {
    if (!this.#runner || this.#stopRequested)
      throw new Error("cannot start the controller: the demo is stopping");
    this.#out.line("controller: starting again, as asked through the control socket");
    await this.#runner.start();
    await this.#logLines?.flush();
    this.#out.line(`controller: running again (pid ${this.#runner.status().pid}), startup resync done`);
  }

  async #start(): Promise<DemoReady> {
    const { paths } = this;
    const say = (component: string) => (text: string) => this.#out.line(`${component}: ${text}`);
    await mkdir(paths.logsDir, { recursive: true, mode: 0o700 });

    // 1. The control socket: also the lock that keeps a second npm start out of this folder.
    const control: ControlServer = await serveControl(paths.socket, this);
    this.#undo.push({ what: "control socket", run: () => control.close() });

    // 2. Tracing, only when the person has a collector (OTEL_EXPORTER_OTLP_ENDPOINT): the cloud runs in this
    //    process and exports from here; the controller inherits the OTEL_* variables. Stopped after the cloud.
    const tracing = startTracing("shapes-cloud", this.#env);
    if (tracing) {
      this.#undo.push({ what: "tracing", run: () => tracing.shutdown() });
      say("tracing")(`the cloud and the controller export spans to ${tracing.endpoint}`);
    }

    // 3. The cloud: its token (made once, kept), then the server on its fixed port.
    const { token, created: firstRun } = await loadOrCreateToken(paths.tokenFile);
    const cloud = await startDemoCloud({ paths, port: this.#options.port, token });
    this.#cloud = cloud;
    this.#undo.push({
      what: "mock cloud",
      run: async () => {
        await cloud.close();
        return `cloud: stopped (data kept in ${display(paths.cloudDb)})`;
      },
    });
    say("cloud")(`the mock Shapes cloud listens on ${cloud.url} (database ${display(paths.cloudDb)})`);
    const { metricsPort } = this.#options;
    if (metricsPort !== 0 && !(await isPortFree(metricsPort))) {
      throw new Error(
        `cannot give the controller port ${metricsPort} for /metrics: the port is taken ` +
          `(choose another: npm start -- --metrics-port 8091, or 0 for any)`,
      );
    }
    this.#checkpoint();

    // 4. Kubernetes: the cluster (maybe built first: minutes, with progress), then our manifests.
    const cluster = await startCluster({ paths, env: this.#env, log: say("kubernetes") });
    this.#cluster = cluster;
    this.#undo.push({
      what: "Kubernetes control plane",
      run: async () => `kubernetes: ${await cluster.stop(say("kubernetes"))}`,
    });
    say("kubernetes")(`ready: ${cluster.description}`);
    this.#checkpoint();
    const kubeConfig = cluster.kubeConfig();
    const installed = await installProjectManifests(kubeConfig);
    say("kubernetes")(`applied ${installed.join(", ")}`);
    this.#checkpoint();

    // 5. The feed of Events about Shapes (the controller's log lines join once it runs).
    const demoLog = pino(
      { name: "demo", level: "info" },
      pino.destination({ dest: join(paths.logsDir, "demo.log"), sync: true }),
    );
    const events = new EventFeed(kubeConfig, (line) => this.#out.line(line), demoLog);
    this.#undo.push({ what: "event feed", run: () => events.stop() });
    await events.start();

    // 6. The controller, as its own process, as the least-privilege service account.
    const runner = new ControllerRunner({
      ...controllerCommand({
        kubeconfig: cluster.controllerKubeconfig,
        cloudUrl: cloud.url,
        cloudTokenFile: paths.tokenFile,
        metricsAddress: `127.0.0.1:${metricsPort}`,
        logLevel: this.#options.logLevel,
      }),
      env: controllerEnv(this.#env),
      logFile: paths.controllerLog,
      say: (text) => this.#out.line(text),
    });
    this.#runner = runner;
    const logLines = new FileFollower(paths.controllerLog, (raw) => {
      const line = formatLogLine(raw);
      if (line) this.#out.line(line);
    });
    this.#undo.push({
      what: "controller",
      run: async () => {
        const pid = runner.status().pid;
        await runner.stop();
        await logLines.stop(); // its last lines (draining, stopped) print before the line below
        return `controller: stopped${pid ? ` (pid ${pid})` : ""}`;
      },
    });
    say("controller")(
      `starting it as system:serviceaccount:shapes-system:shapes-controller; its log: ${display(paths.controllerLog)}`,
    );
    await runner.start();
    this.#checkpoint();
    say("controller")(`ready (pid ${runner.status().pid}): the startup resync is done`);
    await logLines.start();
    this.#logLines = logLines;

    // 7. Tell scripts (and the tour) where everything is.
    const env: DemoEnv = { KUBECONFIG: cluster.kubeconfig, CLOUD_URL: cloud.url, CLOUD_TOKEN: token };
    await writeEnvFile(paths.envFile, env);
    this.#ready = true;
    return {
      paths,
      env,
      cluster,
      cloudUrl: cloud.url,
      hasConsole: await servesConsole(cloud.url),
      metricsUrl: runner.status().metricsUrl,
      tracesEndpoint: tracing?.endpoint,
      firstRun,
    };
  }

  #checkpoint(): void {
    if (this.#stopRequested) throw new StartInterrupted("stopped while starting");
  }
}

/** True when `GET /` on the cloud answers HTML (the console), not a 404 problem. */
async function servesConsole(cloudUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${cloudUrl}/`);
    await res.body?.cancel();
    return res.ok && (res.headers.get("content-type") ?? "").includes("text/html");
  } catch {
    return false;
  }
}
