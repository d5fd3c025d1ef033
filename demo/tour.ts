/**
 * `npm run tour`: the story's scenarios, one step at a time, against the demo `npm start` runs.
 *
 * It finds the demo through the state folder: .demo/env (KUBECONFIG, CLOUD_URL, CLOUD_TOKEN) and the
 * control socket (is it running? and, for steps 6 to 8, stop, start or crash its controller; and, at each
 * moment a step shows, what the demo's two-worlds page should highlight). It works in a namespace
 * of its own, `tour-<random>` (a fresh one each run, so it never meets the leftovers of an earlier run or
 * a namespace still being deleted), and cleans up at the end: its Shapes are deleted through the
 * controller (so their cloud shapes go too), the shapes it created as "someone else" are deleted, then
 * the namespace.
 *
 * Exit codes: 0 every step passed; 1 a step failed or the demo is not running; 2 bad command line;
 * 130 interrupted (Ctrl-C; it still cleans up).
 *
 * `runTour` is the same without the command line, for scripts: e.g. one that takes a screenshot of the
 * two-worlds page at each moment, through its `onMoment` hook.
 */
import { createInterface } from "node:readline/promises";
import { delimiter } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { KubeApi } from "@shapes/stack";
import { apiMessage, isInvokedDirectly } from "@shapes/envtest";
import { CloudClient } from "./cloud-client.ts";
import { ControlClient, DemoNotRunningError, type DemoStatus, type TourMoment } from "./control.ts";
import { DemoEnvError, readEnvFile } from "./env-file.ts";
import { Narrator, waitUntil, type Write } from "./narrator.ts";
import { parseTourArgs, tourUsage, UsageError, type TourOptions } from "./options.ts";
import { demoPaths } from "./paths.ts";
import { writeStdout } from "./stdout.ts";
import {
  ensureControllerRunning,
  STEPS,
  type MomentFocus,
  type TourContext,
  type TourStep,
} from "./tour-steps.ts";

/** How the tour meets the person: where it writes, and whether it may pause for Enter. */
export interface TourIO {
  write: Write;
  /** True when stdin and stdout are a terminal: then the tour pauses between steps (unless --yes). */
  interactive: boolean;
}

/** For scripts that run the tour: see {@link runTour}. */
export interface TourHooks {
  /**
   * What `TourContext.show` does with each moment of a step, awaited before the step goes on (a script can
   * take its screenshot first). It replaces the default, which sends the moment to the demo's control socket
   * (`POST /tour`, for the two-worlds page) and ignores any error there; a hook that wants the page to
   * highlight the moment sends it itself, `await control.showTourMoment(moment)`, with the ControlClient it
   * is given. An error it throws fails the step.
   */
  onMoment?: (moment: TourMoment, control: ControlClient) => Promise<void>;
  /** The steps to run instead of {@link STEPS} (numbered, and counted in each moment, as given). */
  steps?: readonly TourStep[];
}

const TERMINAL: TourIO = {
  write: writeStdout,
  interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
};

/** Runs `npm run tour` with `argv`; resolves with the exit code. */
export async function main(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: TourIO = TERMINAL,
): Promise<number> {
  let options: TourOptions;
  try {
    const parsed = parseTourArgs(argv, env, STEPS.length);
    if (parsed.help) {
      io.write(tourUsage(STEPS));
      return 0;
    }
    options = parsed.options;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`npm run tour: ${error.message}\n`);
    return 2;
  }
  if (options.list) {
    io.write(STEPS.map((s, i) => `${i + 1}. ${s.title}\n`).join(""));
    return 0;
  }
  return runTour(options, {}, io);
}

/**
 * The tour, as `npm run tour` runs it after reading its command line: finds the demo of `options.stateDir`,
 * runs every step (or `options.step`) in a namespace of its own, clears the moment it showed, and cleans up.
 * Resolves with the exit code: 0 every step passed, 1 a step failed or no demo runs, 130 interrupted (Ctrl-C).
 * `hooks` change what each moment does, or which steps run.
 */
export async function runTour(
  options: Omit<TourOptions, "list">,
  hooks: TourHooks = {},
  io: TourIO = TERMINAL,
): Promise<number> {
  const steps = hooks.steps ?? STEPS;

  // Find the running demo.
  const paths = demoPaths(options.stateDir);
  const control = new ControlClient(paths.socket);
  let status: DemoStatus;
  let kube: KubeApi;
  let kubeConfig: KubeConfig;
  let cloud: CloudClient;
  try {
    status = await control.status();
    const demoEnv = await readEnvFile(paths.envFile);
    kubeConfig = loadKubeConfigList(demoEnv.KUBECONFIG);
    kube = new KubeApi(kubeConfig);
    cloud = new CloudClient(demoEnv.CLOUD_URL, demoEnv.CLOUD_TOKEN, demoEnv.CLOUD_ADMIN_TOKEN);
    await cloud.health();
  } catch (error) {
    const known = error instanceof DemoNotRunningError || error instanceof DemoEnvError;
    process.stderr.write(
      `npm run tour: ${known ? "" : "cannot reach the demo: "}${(error as Error).message}\n`,
    );
    return 1;
  }

  // Ctrl-C: stop waiting, clean up, exit 130. A second Ctrl-C while cleaning up ends at once.
  const interrupt = new AbortController();
  const onSigint = () => {
    if (interrupt.signal.aborted) process.exit(130);
    io.write("\nInterrupted: cleaning up (Ctrl-C again to leave things as they are)...\n");
    interrupt.abort(new Error("interrupted"));
  };
  process.on("SIGINT", onSigint);

  const n = new Narrator(io.write);
  let namespace: string;
  try {
    namespace = await kube.createNamespace("tour"); // tour-<6 hex>
  } catch (error) {
    process.stderr.write(`npm run tour: cannot create the tour's namespace: ${apiMessage(error)}\n`);
    return 1;
  }
  const base: StepsContext = {
    kube,
    kubeConfig,
    cloud,
    control,
    status,
    namespace,
    n,
    timeoutMs: options.timeoutMs,
    signal: interrupt.signal,
    foreignIds: new Set(),
  };
  const chosen = options.step === undefined ? steps.map((_, i) => i) : [options.step - 1];
  const pause = io.interactive && !options.yes;
  let passed = 0;
  let failure: Error | undefined;

  io.write(
    `The Shapes tour: ${chosen.length === steps.length ? `${steps.length} steps` : `step ${options.step} of ${steps.length}`}, ` +
      `against the demo of ${paths.root} (cloud ${cloud.baseUrl}, ${status.cluster.kind === "local" ? "its local control plane" : "your cluster"} ${status.cluster.server}).\n` +
      `Everything happens in the namespace ${namespace}; watch npm start's terminal for the controller's side of it` +
      (status.view
        ? `,\nand both worlds on the demo's page, ${status.view.url} (open the link npm start printed: it carries the token).\n`
        : ".\n"),
  );
  try {
    // A tour killed halfway through step 6, 7 or 8 may have left the controller stopped, or crashed.
    await ensureControllerRunning(base);
  } catch (error) {
    failure = error as Error;
  }
  if (!failure) {
    ({ passed, failure } = await runSteps(base, steps, {
      chosen,
      // The page is a bonus: a demo that cannot take the moment (an older one, say) must not stop the tour.
      onMoment: (moment) =>
        hooks.onMoment ? hooks.onMoment(moment, control) : control.showTourMoment(moment).catch(() => {}),
      beforeStep: pause
        ? (index, step) => waitForEnter(`\nPress Enter for step ${index + 1}: ${step.title} `, onSigint)
        : undefined,
      write: io.write,
    }));
  }
  await control.showTourMoment(undefined).catch(() => {}); // the page highlights nothing any more

  if (failure && !interrupt.signal.aborted) {
    const failed = chosen[passed];
    io.write(`\n✗ cannot finish step ${failed === undefined ? "?" : failed + 1}: ${apiMessage(failure)}\n`);
  }
  await cleanUp(base, kubeConfig, status, options, io.write);
  process.off("SIGINT", onSigint);
  if (interrupt.signal.aborted) return 130;
  if (failure) return 1;
  io.write(
    `\nTour finished: ${passed} of ${chosen.length} step${chosen.length === 1 ? "" : "s"} passed.\n` +
      "Try it by hand next: the console, npm run kubectl -- apply -f crds/examples/, and see docs/README.md.\n",
  );
  return 0;
}

/** A TourContext before {@link runSteps} gives it its `show`. */
export type StepsContext = Omit<TourContext, "show">;

/** How {@link runSteps} runs the steps. */
export interface RunStepsOptions {
  /** The steps to run, as 0-based indexes into the list, in order. Default: all of them. */
  chosen?: readonly number[];
  /** Called with each moment a step shows; awaited before the step goes on. */
  onMoment: (moment: TourMoment) => Promise<void>;
  /** Called before each step but the first (the pause for Enter). */
  beforeStep?: ((index: number, step: TourStep) => Promise<void>) | undefined;
  /** Where the blank line after each step's story goes. */
  write: Write;
}

/**
 * Runs the chosen steps in order, each after its heading and story, and stops at the first that fails. The
 * steps' TourContext is `base` itself, given a `show` that makes a TourMoment of the step under way (its
 * number, the list's length, its title, the namespace, the focus) and awaits `onMoment` with it; so what the
 * steps change in the context (`status`) stays visible to the caller. Outside a step, `show` does nothing.
 */
export async function runSteps(
  base: StepsContext,
  steps: readonly TourStep[],
  options: RunStepsOptions,
): Promise<{ passed: number; failure: Error | undefined }> {
  let current: { step: number; title: string } | undefined;
  const ctx: TourContext = Object.assign(base, {
    show: async (caption: string, focus: MomentFocus = {}) => {
      if (!current) return;
      await options.onMoment({
        step: current.step,
        steps: steps.length,
        title: current.title,
        caption,
        namespace: base.namespace,
        shapes: focus.shapes ?? [],
        cloudNames: focus.cloudNames ?? [],
        ...(focus.key ? { key: true } : {}),
      });
    },
  });
  const chosen = options.chosen ?? steps.map((_, i) => i);
  let passed = 0;
  try {
    for (const [position, index] of chosen.entries()) {
      const step = steps[index];
      if (!step) continue;
      if (position > 0) await options.beforeStep?.(index, step);
      current = { step: index + 1, title: step.title };
      ctx.n.heading(index + 1, steps.length, step.title);
      ctx.n.say(step.story);
      options.write("\n");
      await step.run(ctx);
      passed += 1;
    }
    return { passed, failure: undefined };
  } catch (error) {
    return { passed, failure: error as Error };
  } finally {
    current = undefined;
  }
}

/**
 * Leaves the demo as the tour found it: the controller running, the tour's Shapes deleted through the
 * controller (so their cloud shapes go too), the foreign shapes it made deleted, its namespace deleted.
 * Problems are reported, never thrown: cleaning up must not hide why the tour stopped.
 */
async function cleanUp(
  ctx: StepsContext,
  kubeConfig: KubeConfig,
  status: DemoStatus,
  options: Pick<TourOptions, "keep">,
  write: Write,
): Promise<void> {
  const { kube, cloud, namespace } = ctx;
  const problem = (what: string, error: unknown) => write(`  ! cannot ${what}: ${apiMessage(error)}\n`);
  try {
    await ensureControllerRunning(ctx);
  } catch (error) {
    problem("start the controller again", error);
  }
  if (options.keep) {
    write(
      `\nKept namespace ${namespace}, its Shapes and the foreign cloud shapes (--keep). To clean up later:\n` +
        `  npm run kubectl -- delete namespace ${namespace}   (then delete the shapes named ${namespace}.* in the console)\n`,
    );
    return;
  }
  write(`\nCleaning up namespace ${namespace}...\n`);
  // A fresh deadline: the Ctrl-C that may have brought us here must not cut the cleanup short.
  const deadline = Math.max(ctx.timeoutMs, 30_000);
  try {
    const shapes = await kube.listShapes(namespace);
    for (const shape of shapes) await kube.deleteShape(namespace, shape.metadata.name);
    await waitUntil(
      "the tour's Shapes to be deleted through the controller",
      async () => {
        const left = await kube.listShapes(namespace);
        if (left.length > 0) throw new Error(`${left.map((s) => s.metadata.name).join(", ")} still there`);
      },
      deadline,
    );
  } catch (error) {
    problem(`delete the Shapes in ${namespace}`, error);
  }
  for (const id of ctx.foreignIds) {
    try {
      await cloud.delete(id);
    } catch (error) {
      problem(`delete the foreign cloud shape ${id}`, error);
    }
  }
  try {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    await core.deleteNamespace({ name: namespace });
    if (status.cluster.kind === "local") {
      // The demo's control plane has no kube-controller-manager, whose namespace controller would empty
      // the namespace and then remove its `kubernetes` finalizer. It is empty (the Shapes are gone; the
      // Events expire by themselves), so we do that last step ourselves.
      await core.replaceNamespaceFinalize({
        name: namespace,
        body: { metadata: { name: namespace }, spec: { finalizers: [] } },
      });
    }
  } catch (error) {
    problem(`delete the namespace ${namespace}`, error);
  }
  write(
    `Cleaned up: namespace ${namespace}, its Shapes and their cloud shapes, and the tour's foreign shapes.\n`,
  );
}

/** A KubeConfig from a path or a KUBECONFIG-style list (merged the way kubectl does). */
function loadKubeConfigList(kubeconfig: string): KubeConfig {
  const kc = new KubeConfig();
  const files = kubeconfig.split(delimiter).filter(Boolean);
  if (files.length === 1 && files[0]) kc.loadFromFile(files[0]);
  else {
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = kubeconfig;
    try {
      kc.loadFromDefault();
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  }
  return kc;
}

/** Waits for Enter. On a terminal, readline turns Ctrl-C into its own event: passed on to `onInterrupt`. */
async function waitForEnter(prompt: string, onInterrupt: () => void): Promise<void> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  const gone = new AbortController();
  rl.on("SIGINT", () => {
    onInterrupt();
    gone.abort(new Error("interrupted"));
  });
  try {
    await rl.question(prompt, { signal: gone.signal });
  } finally {
    rl.close();
  }
}

if (isInvokedDirectly(import.meta.filename)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`npm run tour: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
