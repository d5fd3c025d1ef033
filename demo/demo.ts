/**
 * The running demo: everything `npm start` brings up, in order, and takes down in reverse order.
 *
 *   control socket → cloud token → mock cloud → Kubernetes (+ CRDs, RBAC) → feed → controller → .demo/env
 *     → the two-worlds page (view/)
 *
 * Cheap checks that can fail come first (another demo in this folder, a taken port), so a mistake is
 * reported in a second, not after a five-minute build. Each step registers how to undo it before the
 * next one starts; `stop()` undoes them last-to-first, so the controller stops (draining its work) while
 * the API server and the cloud it talks to are still up.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { CloudHttpClient, type RunningCloud, startCloudTracing } from "@shapes/mock-cloud";
import { isPortFree } from "@shapes/envtest";
import { serveControl, type ControlServer, type DemoControl, type DemoStatus } from "./control.ts";
import { startCluster, installProjectManifests, type DemoCluster } from "./cluster.ts";
import { startDemoCloud } from "./cloud.ts";
import { ControllerRunner, controllerCommand, controllerEnv } from "./controller-process.ts";
import { writeEnvFile, type DemoEnv } from "./env-file.ts";
import { EventFeed, FileFollower, formatLogLine } from "./feed.ts";
import type { StartOptions } from "./options.ts";
import { demoPaths, display, type DemoPaths } from "./paths.ts";
import { loadOrCreateToken } from "./token.ts";
import { KubeApi } from "@shapes/stack";
import { AnswerGate, type HeldAnswer } from "reconcile-kit/harness";
import { DEFAULT_CRASH_TIMEOUT_MS, type CrashRequest, type TourMoment } from "./control.ts";
import { withCloudUrl } from "./controller-process.ts";
import { ControlClient } from "./control.ts";
import { startView } from "./view/server.ts";
import { VIEW_CLIENT_ID, Worlds } from "./view/worlds.ts";

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
  /** The two-worlds page, with its token in the fragment: `http://127.0.0.1:8082/#token=…`. */
  viewLink: string;
  /** Where spans go, when the person set OTEL_EXPORTER_OTLP_ENDPOINT (mock-cloud/src/tracing.ts); else tracing is off. */
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

/** The tour's crash after create, armed: the controller talks to the cloud through `gate`. */
interface ArmedCrash {
  /** The cloud name whose create has the controller killed. */
  cloudName: string;
  gate: AnswerGate;
  /** Aborted when the crash is called off (the controller leaves the gate without being killed). */
  disarmed: AbortController;
  /** Calls the crash off if the create does not come in time (the tour is gone, say). */
  expiry: NodeJS.Timeout | undefined;
  /** Set once the create came: the kill, under way. Never rejects. */
  firing: Promise<void> | undefined;
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
  #viewUrl: string | undefined;
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
      ...(this.#viewUrl ? { view: { url: this.#viewUrl } } : {}),
      controller: {
        ...this.#runner.status(),
        ...(this.#crash
          ? { crashArmed: { cloudName: this.#crash.cloudName, gateUrl: this.#crash.gate.url } }
          : {}),
      },
    };
  }

  // The control socket's calls that change the controller (stop, start, arming a crash, a crash expiring) run
  // one at a time, so none of them meets the controller halfway through another one's change.
  #controlQueue: Promise<unknown> = Promise.resolve();
  /** The tour's crash after create, while armed. */
  #crash: ArmedCrash | undefined;
  #crashUndoRegistered = false;
  #tourMoment: TourMoment | undefined;
  readonly #tourListeners = new Set<(moment: TourMoment | undefined) => void>();

  stopController(): Promise<void> {
    return this.#serially(async () => {
      const runner = this.#controllable("stop");
      this.#out.line("controller: stopping, as asked through the control socket (npm run tour?)");
      await this.#disarmCrash("taking it from behind the tour's cloud gate first");
      await runner.stop();
      await this.#logLines?.flush(); // its last log lines first, then ours
      this.#out.line("controller: stopped; nothing reconciles until it starts again");
    });
  }

  startController(): Promise<void> {
    return this.#serially(async () => {
      const runner = this.#controllable("start");
      await this.#disarmCrash("taking it from behind the tour's cloud gate first (the crash never came)");
      this.#out.line("controller: starting again, as asked through the control socket");
      await runner.start();
      await this.#logLines?.flush();
      this.#out.line(`controller: running again (pid ${runner.status().pid}), startup resync done`);
    });
  }

  /**
   * The tour's crash right after a create, for real: the controller is restarted with its cloud URL pointed at
   * an AnswerGate (reconcile-kit/harness) in front of the cloud. When the cloud has answered the create of `cloudName`,
   * the gate holds the answer: the cloud has the shape, the controller still waits. Right then it is killed
   * (SIGKILL: state "crashed", not restarted) and the gate closed, so it never hears the answer. Resolves once
   * the controller is ready behind the gate.
   *
   * It is never left behind the gate: the next start or stop through the control socket, the demo's stop, or
   * `timeoutMs` without that create (the tour was killed, say) call the crash off first.
   */
  crashAfterCreate({ cloudName, timeoutMs = DEFAULT_CRASH_TIMEOUT_MS }: CrashRequest): Promise<void> {
    return this.#serially(async () => {
      const runner = this.#controllable("crash");
      if (!this.#cloud) throw new Error("cannot crash the controller: the demo is still starting");
      await this.#disarmCrash("calling off the crash still armed: the tour asks for a new one");
      if (!this.#crashUndoRegistered) {
        // Pushed after every step of the start, so the demo's stop runs it first: the controller leaves the
        // gate while the gate still passes its calls on, and only then does the gate close.
        this.#crashUndoRegistered = true;
        this.#undo.push({
          what: "tour's cloud gate",
          run: () => this.#disarmCrash("taking it from behind the tour's cloud gate (the demo stops)"),
        });
      }
      this.#out.line(
        `controller: restarting it behind a gate in front of the cloud, as asked by the tour: the moment the ` +
          `cloud has created ${cloudName}, before the controller hears back, it is killed (SIGKILL)`,
      );
      await runner.stop();
      await this.#logLines?.flush();
      const gate = await AnswerGate.start(this.#cloud.url);
      if (this.#stopRequested) {
        // The demo's stop came meanwhile and found nothing armed: nothing may start behind its back.
        await gate.close();
        throw new Error("cannot crash the controller: the demo is stopping");
      }
      const crash: ArmedCrash = {
        cloudName,
        gate,
        disarmed: new AbortController(),
        expiry: undefined,
        firing: undefined,
      };
      this.#crash = crash;
      void this.#killWhenCreated(runner, crash);
      crash.expiry = setTimeout(() => void this.#expireCrash(runner, crash, timeoutMs), timeoutMs);
      try {
        await runner.start({ args: withCloudUrl(runner.args, gate.url) });
      } catch (error) {
        await this.#disarmCrash("the controller did not start behind the gate: starting it normally");
        if (!this.#stopRequested) {
          await runner.start().catch((again: unknown) => {
            this.#out.error(`cannot start the controller again: ${(again as Error).message}`);
          });
        }
        throw error;
      }
      await this.#logLines?.flush();
      this.#out.line(
        `controller: running behind the gate ${gate.url} (pid ${runner.status().pid}), until the cloud ` +
          `creates ${cloudName}`,
      );
    });
  }

  /** What `npm run tour` shows now (`POST /tour`), for the two-worlds page; undefined when nothing. */
  get tourMoment(): TourMoment | undefined {
    return this.#tourMoment;
  }

  showTourMoment(moment: TourMoment | undefined): void {
    this.#tourMoment = moment;
    for (const listener of [...this.#tourListeners]) {
      try {
        listener(moment);
      } catch (error) {
        this.#out.error(`cannot pass the tour's moment on: ${(error as Error).message}`);
      }
    }
  }

  /** Calls `listener` with each moment the tour shows from now on (undefined: none any more). Returns the unsubscribe. */
  onTourMoment(listener: (moment: TourMoment | undefined) => void): () => void {
    const entry = (moment: TourMoment | undefined) => listener(moment); // subscribing twice is two calls
    this.#tourListeners.add(entry);
    return () => void this.#tourListeners.delete(entry);
  }

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#controlQueue.then(work);
    this.#controlQueue = run.catch(() => {});
    return run;
  }

  /** The runner, unless the demo is stopping (or not that far yet). */
  #controllable(action: string): ControllerRunner {
    if (!this.#runner || this.#stopRequested) {
      throw new Error(`cannot ${action} the controller: the demo is stopping`);
    }
    return this.#runner;
  }

  /** Waits for the create of the crash's name (other creates pass on), then kills the controller. */
  async #killWhenCreated(runner: ControllerRunner, crash: ArmedCrash): Promise<void> {
    const answer = await this.#heldCreateOf(crash);
    if (!answer) return;
    if (this.#crash !== crash) return answer.release(); // called off meanwhile: as if never held
    clearTimeout(crash.expiry);
    crash.firing = (async () => {
      try {
        const pid = runner.status().pid;
        await runner.kill();
        await crash.gate.close(); // the held answer goes nowhere: the controller is gone
        await this.#logLines?.flush();
        let id: unknown;
        try {
          id = (JSON.parse(answer.body) as { id?: unknown }).id;
        } catch {
          // the answer was checked to be the created shape: its id is there
        }
        this.#out.line(
          `controller: killed (SIGKILL, pid ${pid ?? "?"}) right after the cloud created ${crash.cloudName} ` +
            `(${typeof id === "string" ? id : "?"}), before it heard back, as asked by the tour; it stays down until it is started again`,
        );
      } catch (error) {
        this.#out.error(`cannot crash the controller cleanly: ${(error as Error).message}`);
      } finally {
        if (this.#crash === crash) this.#crash = undefined;
      }
    })();
    await crash.firing;
  }

  /** `timeoutMs` passed without the create: the controller goes back to the real cloud by itself. */
  async #expireCrash(runner: ControllerRunner, crash: ArmedCrash, timeoutMs: number): Promise<void> {
    try {
      await this.#serially(async () => {
        if (this.#crash !== crash || crash.firing || this.#stopRequested) return;
        await this.#disarmCrash(
          `the tour's crash did not come within ${Math.round(timeoutMs / 1000)} s (no create of ` +
            `${crash.cloudName}): taking the controller from behind the gate`,
        );
        await runner.start();
        await this.#logLines?.flush();
        this.#out.line(`controller: running again against the cloud (pid ${runner.status().pid})`);
      });
    } catch (error) {
      this.#out.error(`cannot start the controller again: ${(error as Error).message}`);
    }
  }

  /**
   * Calls an armed crash off, saying `why`: the controller is stopped while the gate still passes its calls on,
   * then the gate closes. A kill already under way is waited for instead. Does nothing when none is armed.
   */
  async #disarmCrash(why: string): Promise<void> {
    const crash = this.#crash;
    if (!crash) return;
    if (crash.firing) return crash.firing;
    this.#crash = undefined;
    crash.disarmed.abort();
    clearTimeout(crash.expiry);
    this.#out.line(`controller: ${why}`);
    await this.#runner?.stop();
    await crash.gate.close();
  }

  /**
   * The cloud's answer to the create of the crash's name (201), held while the controller still waits; undefined
   * once the crash is called off. Other creates (another Shape of the demo) pass on untouched.
   */
  async #heldCreateOf(crash: ArmedCrash): Promise<HeldAnswer | undefined> {
    const create = { method: "POST", path: "/v1/shapes" };
    const disarmed = new Promise<undefined>((resolve) =>
      crash.disarmed.signal.addEventListener("abort", () => resolve(undefined), { once: true }),
    );
    let next = crash.gate.hold(create);
    for (;;) {
      const answer = await Promise.race([next, disarmed]);
      if (!answer) return undefined;
      let name: unknown;
      try {
        name = (JSON.parse(answer.body) as { name?: unknown }).name;
      } catch {
        // not a created shape (an error answer)
      }
      if (answer.status === 201 && name === crash.cloudName && answer.clientWaiting) return answer;
      next = crash.gate.hold(create); // hold the next create before this one goes on: none slips by
      answer.release();
    }
  }

  async #start(): Promise<DemoReady> {
    const { paths } = this;
    const say = (component: string) => (text: string) => this.#out.line(`${component}: ${text}`);
    await mkdir(paths.logsDir, { recursive: true, mode: 0o700 });

    // 1. The control socket: also the lock that keeps a second npm start out of this folder.
    const control: ControlServer = await serveControl(paths.socket, this);
    this.#undo.push({ what: "control socket", run: () => control.close() });

    // 2. Tracing, only when the person has a collector (OTEL_EXPORTER_OTLP_ENDPOINT): the cloud runs in this
    //    process and exports from here, with the cloud's own tracing (the same variables as the controller's);
    //    the controller inherits the OTEL_* variables. Stopped after the cloud.
    const tracing = await startCloudTracing(this.#env);
    if (tracing) {
      this.#undo.push({ what: "tracing", run: () => tracing.shutdown() });
      say("tracing")(`the cloud and the controller export spans to ${tracing.endpoint}`);
    }

    // 3. The cloud: its two tokens (made once, kept), then the server on its fixed port.
    const { token, created: firstRun } = await loadOrCreateToken(paths.tokenFile);
    const { token: adminToken } = await loadOrCreateToken(paths.adminTokenFile);
    const cloud = await startDemoCloud({ paths, port: this.#options.port, token, adminToken });
    this.#cloud = cloud;
    this.#undo.push({
      what: "mock cloud",
      run: async () => {
        await cloud.close();
        return `cloud: stopped (data kept in ${display(paths.cloudDb)})`;
      },
    });
    say("cloud")(`the mock Shapes cloud listens on ${cloud.url} (database ${display(paths.cloudDb)})`);
    const { metricsPort, viewPort } = this.#options;
    if (metricsPort !== 0 && !(await isPortFree(metricsPort))) {
      throw new Error(
        `cannot give the controller port ${metricsPort} for /metrics: the port is taken ` +
          `(choose another: npm start -- --metrics-port 8091, or 0 for any)`,
      );
    }
    if (viewPort !== 0 && !(await isPortFree(viewPort))) {
      throw new Error(
        `cannot serve the two-worlds page on port ${viewPort}: the port is taken ` +
          `(choose another: npm start -- --view-port 8092, or 0 for any)`,
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
    const env: DemoEnv = {
      KUBECONFIG: cluster.kubeconfig,
      CLOUD_URL: cloud.url,
      CLOUD_TOKEN: token,
      CLOUD_ADMIN_TOKEN: adminToken,
    };
    await writeEnvFile(paths.envFile, env);
    this.#ready = true;

    // 8. The two-worlds page: both worlds read live with the demo's own credentials, and the controller
    //    steered through the control socket, like the tour does. Last, so the socket already reports.
    const worlds = new Worlds({ kubeConfig, cloudUrl: cloud.url, cloudToken: token, logger: demoLog });
    this.#undo.push({ what: "two-worlds page's caches", run: () => worlds.stop() });
    await worlds.start();
    const steering = new ControlClient(paths.socket);
    const viewToken = (await loadOrCreateToken(paths.viewTokenFile)).token;
    const view = await startView({
      worlds,
      kube: new KubeApi(kubeConfig),
      cloud: new CloudHttpClient({ baseUrl: cloud.url, token, adminToken, clientId: VIEW_CLIENT_ID }),
      controller: {
        status: async () => (await steering.status()).controller,
        stop: () => steering.stopController(),
        start: () => steering.startController(),
      },
      tour: { current: () => this.tourMoment, subscribe: (listener) => this.onTourMoment(listener) },
      token: viewToken,
      port: viewPort,
      logger: demoLog,
    });
    this.#undo.push({ what: "two-worlds page", run: () => view.close() });
    this.#viewUrl = view.url;
    this.#checkpoint();
    return {
      paths,
      env,
      cluster,
      cloudUrl: cloud.url,
      hasConsole: await servesConsole(cloud.url),
      metricsUrl: runner.status().metricsUrl,
      viewLink: `${view.url}/#token=${viewToken}`,
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
