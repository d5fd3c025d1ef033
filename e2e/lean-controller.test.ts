/**
 * Scenario: the controller on the library's lean Kubernetes client (library/src/manager/kube-access.ts), against
 * the real kube-apiserver and the mock cloud. With the
 * stack's client-certificate kubeconfig it becomes ready, holds its Lease (`--leader-elect`, over the lean
 * `LeanLeaseClient`), converges a Shape through create, update and delete — and never loads
 * `@kubernetes/client-node`: node runs it with a hook (stack/record-modules.js) that writes down every module
 * it resolves, and none of client-node's is among them. The same hook on the controller with an exec-plugin
 * kubeconfig (below) does see client-node (the probe can see it). The idle RSS (ready, no Shapes;
 * /proc/<pid>/status VmRSS) is printed, not asserted: memory is the benchmarks' business.
 *
 * With tracing off (no OTLP endpoint, the default) neither loads any OpenTelemetry package but the API: no
 * SDK, exporter, resources or context manager (library/src/observability/tracing.ts imports tracing-sdk.ts
 * only when an endpoint is set). With an endpoint (an OTLP receiver in this
 * test) the default controller loads them and its reconcile spans arrive.
 *
 * With the same kubeconfig in JSON the lean controller converges a Shape and never loads the `yaml` package:
 * the lean loader JSON.parse's it, and requires yaml only for a YAML file (in-cluster reads none).
 *
 * With a kubeconfig whose user is an exec credential plugin (a node script printing an ExecCredential with a
 * real service-account token from the TokenRequest API), the default controller works through client-node's
 * loader, imported lazily, and says so in one log line.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parse, stringify } from "yaml";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import {
  CONTROLLER_NAMESPACE,
  CLIENT_NODE_MODULES,
  CONTROLLER_SERVICE_ACCOUNT,
  type ControllerProcess,
  forbiddenLines,
  readRecordedModules,
  RECORD_MODULES_FILE,
  RECORD_MODULES_HOOK,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { serviceAccountTokenIdentity } from "reconcile-kit/harness";
import { startOtlpReceiver } from "@shapes/envtest";
import { loadKubeconfig } from "reconcile-kit/parts";
import { startStack } from "./support/stack.ts";

const LEASE = "shapes-controller-lean";
const LOADING_CLIENT_NODE = /which only @kubernetes\/client-node's loader runs: loading it$/;
/**
 * A module of an OpenTelemetry package other than `@opentelemetry/api` (which the ports call, tracing on or
 * off): the SDK, its exporter and OTLP layers, resources, semantic conventions, core, the context manager.
 * Only library/src/observability/tracing-sdk.ts imports them.
 */
const otelBeyondApi = (url: string) =>
  url.includes("/node_modules/@opentelemetry/") && !url.includes("/node_modules/@opentelemetry/api/");
/** Tracing off whatever this test process's environment says: an empty endpoint is off. */
const TRACING_OFF = { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" };

describe("a controller on the library's lean Kubernetes client", () => {
  let stack: Stack;
  let dir: string;
  let ns: string;
  const rss: Record<string, number> = {};

  beforeAll(async () => {
    stack = await startStack("lean-controller");
    dir = await mkdtemp(join(tmpdir(), "lean-controller-"));
    ns = await stack.kube.createNamespace("lean");
  });
  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    // Printed, never asserted (docs/benchmarks.md measures memory).
    console.log(`idle controller RSS (ready, no Shapes): ${JSON.stringify(rss)}`);
  });

  /** Starts a controller whose resolved modules go to `<dir>/<name>.modules`. */
  async function start(
    name: string,
    options: { extraArgs?: string[]; kubeconfigPath?: string; env?: Record<string, string> } = {},
  ) {
    const modulesFile = join(dir, `${name}.modules`);
    const { env = TRACING_OFF, ...rest } = options;
    const controller = await stack.startController({
      name,
      identity: name,
      nodeFlags: [...CONTROLLER_NODE_FLAGS, "--import", RECORD_MODULES_HOOK],
      env: { ...env, [RECORD_MODULES_FILE]: modulesFile },
      ...rest,
    });
    return { controller, modules: () => readRecordedModules(modulesFile) };
  }

  /** The process's resident set now, in MB, from /proc (Linux). */
  function rssMb(controller: ControllerProcess): number {
    const status = readFileSync(`/proc/${controller.pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    if (kb === undefined) throw new Error(`no VmRSS in /proc/${controller.pid}/status`);
    return Math.round(Number(kb) / 1024);
  }

  describe("with the stack's client-certificate kubeconfig and --leader-elect", () => {
    let lean: Awaited<ReturnType<typeof start>>;

    beforeAll(async () => {
      lean = await start("default", {
        extraArgs: [
          "--leader-elect",
          `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
          `--leader-election-name=${LEASE}`,
        ],
      });
    });

    test("the kubeconfig is one the lean loader reads alone: a client certificate", async () => {
      const verdict = loadKubeconfig({ path: stack.controllerIdentity.kubeconfigPath });
      expect(verdict.kind).toBe("lean");
      if (verdict.kind !== "lean") return;
      const credentials = await verdict.connection.credentials();
      expect(credentials.cert).toBeDefined();
      expect(credentials.key).toBeDefined();
    });

    test("it is ready and leads: its identity holds the Lease", async () => {
      rss["default (lean)"] = rssMb(lean.controller);
      await waitFor("the default controller to hold the Lease", async () => {
        const lease = await stack.kube.getLease(CONTROLLER_NAMESPACE, LEASE);
        expect(lease?.spec?.holderIdentity).toBe("default");
      });
      const lines = await lean.controller.logs();
      expect(
        lines.some((l) => l.msg.startsWith("Kubernetes: every call over the library's lean client")),
      ).toBe(true);
      expect(lines.filter((l) => LOADING_CLIENT_NODE.test(l.msg))).toEqual([]);
    });

    test("a Shape converges: created, updated, deleted", async () => {
      await stack.kube.applyShape(ns, "lean", { type: "square", color: "red" });
      const created = await waitConverged(stack, ns, "lean");
      expect(created.cloud).toMatchObject({ name: `${ns}.lean`, color: "red" });

      await stack.kube.patchShape(ns, "lean", { spec: { color: "blue" } });
      const updated = await waitConverged(stack, ns, "lean");
      expect(updated.cloud).toMatchObject({ id: created.cloud.id, color: "blue" });

      await stack.kube.deleteShape(ns, "lean");
      await waitFor(`Shape ${ns}/lean, its ShapeRef and its cloud shape to be gone`, async () => {
        expect(await stack.kube.getShape(ns, "lean"), "Shape").toBeUndefined();
        expect(await stack.kube.getShapeRef(`${ns}.lean`), "ShapeRef").toBeUndefined();
        const cloud = await stack.cloud.list();
        expect(
          cloud.find((s) => s.name === `${ns}.lean`),
          "cloud shape",
        ).toBeUndefined();
      });
      expect(forbiddenLines(await lean.controller.logs())).toEqual([]);
    });

    test("the default never loaded @kubernetes/client-node", async () => {
      const modules = await lean.modules();
      // The record is real: the controller's own modules and the library's are in it.
      expect(modules.some((url) => url.endsWith("/controller/src/main.ts"))).toBe(true);
      expect(modules.some((url) => url.endsWith("/library/src/kube/kube-http.ts"))).toBe(true);
      expect(modules.filter((url) => url.includes(CLIENT_NODE_MODULES))).toEqual([]);
    });

    test("with tracing off it loaded no OpenTelemetry package but the API: no SDK, exporter, resources, context manager", async () => {
      const modules = await lean.modules();
      // The API is there (the ports call it; no provider: the no-op tracer), and the light half of tracing.
      expect(modules.some((url) => url.includes("/node_modules/@opentelemetry/api/"))).toBe(true);
      expect(modules.some((url) => url.endsWith("/library/src/observability/tracing.ts"))).toBe(true);
      expect(modules.filter((url) => otelBeyondApi(url) || url.endsWith("/tracing-sdk.ts"))).toEqual([]);
    });

    afterAll(async () => {
      await lean?.controller.stop();
    });
  });

  test("with an OTLP endpoint the default controller loads the SDK and its reconcile spans arrive", async () => {
    const receiver = await startOtlpReceiver();
    try {
      // Export every 200 ms instead of 5 s: the test waits on the spans, not on a timer.
      const { controller, modules } = await start("traced", {
        env: { ...receiver.env, OTEL_BSP_SCHEDULE_DELAY: "200" },
      });
      const lines = await controller.logs();
      expect(lines.some((l) => l.msg === "tracing: exporting spans (OTLP/HTTP)")).toBe(true);
      await stack.kube.applyShape(ns, "traced", { type: "triangle", color: "blue" });
      await waitConverged(stack, ns, "traced");
      const [reconcile] = await receiver.waitFor(
        (s) => s.name === "reconcile shape" && s.attributes["reconcile.key"] === `${ns}/traced`,
        { what: "of the traced Shape's reconcile" },
      );
      expect(reconcile?.service).toBe("shapes-controller");
      const loaded = await modules();
      expect(loaded.some((url) => url.endsWith("/library/src/observability/tracing-sdk.ts"))).toBe(true);
      expect(loaded.filter(otelBeyondApi).length).toBeGreaterThan(0);
      await controller.stop();
    } finally {
      await receiver.close();
    }
  });

  test("an exec credential plugin: the default controller loads client-node's loader for it, says so once, and works", async () => {
    // A real token of the controller's service account (TokenRequest), printed by a plugin.
    const tokenIdentity = await serviceAccountTokenIdentity(
      stack.kubeConfig,
      CONTROLLER_NAMESPACE,
      CONTROLLER_SERVICE_ACCOUNT,
      dir,
    );
    const config = parse(await readFile(tokenIdentity.kubeconfigPath, "utf8")) as {
      users: { name: string; user: { token?: string; exec?: unknown } }[];
    };
    const user = config.users[0];
    if (!user?.user.token) throw new Error("the service-account kubeconfig has no token");
    const plugin = join(dir, "print-credential.mjs");
    await writeFile(
      plugin,
      `process.stdout.write(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token: ${JSON.stringify(user.user.token)} } }));\n`,
    );
    user.user = {
      exec: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: process.execPath,
        args: [plugin],
        interactiveMode: "Never",
      },
    };
    const kubeconfigPath = join(dir, "exec.kubeconfig");
    await writeFile(kubeconfigPath, stringify(config), { mode: 0o600 });
    expect(loadKubeconfig({ path: kubeconfigPath }).kind).toBe("needs-client-node");

    const { controller, modules } = await start("exec", { kubeconfigPath });
    await stack.kube.applyShape(ns, "exec", { type: "circle", color: "green" });
    await waitConverged(stack, ns, "exec");
    const lines = await controller.logs();
    expect(lines.filter((l) => LOADING_CLIENT_NODE.test(l.msg))).toHaveLength(1);
    expect(forbiddenLines(lines)).toEqual([]);
    // Loaded, lazily, for the plugin.
    expect((await modules()).some((url) => url.includes(CLIENT_NODE_MODULES))).toBe(true);
  });

  test("with the kubeconfig in JSON the lean controller never loads yaml: only a YAML kubeconfig file needs it", async () => {
    const kubeconfigPath = join(dir, "identity.kubeconfig.json");
    const yamlText = await readFile(stack.controllerIdentity.kubeconfigPath, "utf8");
    await writeFile(kubeconfigPath, JSON.stringify(parse(yamlText)), { mode: 0o600 });
    const { controller, modules } = await start("json", { kubeconfigPath });
    await stack.kube.applyShape(ns, "json", { type: "square", color: "green" });
    await waitConverged(stack, ns, "json");
    const loaded = await modules();
    expect(loaded.some((url) => url.endsWith("/library/src/kube/kubeconfig.ts"))).toBe(true);
    expect(loaded.filter((url) => url.includes("/node_modules/yaml/"))).toEqual([]);
    await controller.stop();
    // The probe sees it: the default (lean) controller above, on the stack's YAML kubeconfig, did load yaml.
    const onYaml = await readRecordedModules(join(dir, "default.modules"));
    expect(onYaml.some((url) => url.includes("/node_modules/yaml/"))).toBe(true);
  });
});
