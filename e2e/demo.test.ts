/**
 * `npm start` and `npm run tour`, end to end, as a person runs them: `node demo/start.ts` as a separate
 * process on a fresh state folder (a temp dir instead of .demo/, any free ports), the demo's own local
 * control plane, the mock cloud and the controller. The test plays the person at the keyboard:
 *
 * - waits for "The demo is running" and .demo/env; the controller runs as the least-privilege service
 *   account, and its cloud token (the API's) cannot switch the cloud's faults (the admin token can);
 * - applies a Shape and sees it in the cloud; deletes it in the cloud and sees it come back; the
 *   terminal's feed shows both creates;
 * - a second demo on the same folder, and one on a taken port, fail at once with a clear message;
 * - runs the tour non-interactively (--yes): exit 0, every step narrated, nothing left behind; its crash of the
 *   controller (step 7) is told in the demo's terminal, and a crash armed but never triggered does not outlive
 *   the next start of the controller, nor the demo's stop;
 * - Ctrl-C (SIGINT): exit 0, and no process it started is left (checked in /proc: etcd, kube-apiserver,
 *   the controller; the cloud's port is closed);
 * - a second start resumes with the same data (etcd, cloud database, token), then SIGTERM stops it too.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { clusterDown, loadKubeConfig, readState, silentLog, userInfoOf } from "@shapes/envtest";
import { CloudClient } from "../demo/cloud-client.ts";
import { ControlClient } from "../demo/control.ts";
import { DemoScript } from "../demo/demo-process.ts";
import { readEnvFile, type DemoEnv } from "../demo/env-file.ts";
import { demoPaths, type DemoPaths } from "../demo/paths.ts";
import { STEPS } from "../demo/tour-steps.ts";
import { KubeApi, waitFor } from "@shapes/stack";

/** Every live process whose command line mentions `text` (e.g. the state folder), from /proc. */
function processesMentioning(text: string): { pid: number; commandLine: string }[] {
  const found: { pid: number; commandLine: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      if (commandLine.includes(text)) found.push({ pid: Number(entry), commandLine });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"; // a zombie is gone
  } catch {
    return false;
  }
}

/** True when something accepts TCP connections on the URL's port. */
function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Everything a running demo is made of, recorded while it runs, to check afterwards that it is all gone. */
interface Pieces {
  demoPid: number;
  controllerPid: number;
  etcdPid: number;
  apiServerPid: number;
  cloudUrl: string;
}

async function piecesOf(run: DemoScript, paths: DemoPaths, env: DemoEnv): Promise<Pieces> {
  const status = await new ControlClient(paths.socket).status();
  const state = await readState(paths.clusterDir);
  if (!state) throw new Error("no cluster state.json while the demo runs");
  return {
    demoPid: run.pid,
    controllerPid: status.controller.pid ?? -1,
    etcdPid: state.pids.etcd,
    apiServerPid: state.pids.apiServer,
    cloudUrl: env.CLOUD_URL,
  };
}

/** Stops the demo with `signal` and checks that nothing it started is left. */
async function stopAndCheckNothingLeft(
  run: DemoScript,
  paths: DemoPaths,
  pieces: Pieces,
  signal: NodeJS.Signals,
) {
  // Before: each piece runs, and the /proc check below would see it (so its silence afterwards means something).
  const mentioning = processesMentioning(paths.root).map((p) => p.pid);
  for (const [what, pid] of Object.entries(pieces)) {
    if (typeof pid !== "number") continue;
    expect(isAlive(pid), `${what} (pid ${pid}) runs before the stop`).toBe(true);
    expect(mentioning, `${what} (pid ${pid}) mentions the state folder`).toContain(pid);
  }
  run.child.kill(signal);
  const { code } = await run.exited;
  expect(code, run.output.slice(-2000)).toBe(0);
  expect(run.output).toMatch(/Stopped everything the demo started\.\n$/);
  for (const [what, pid] of Object.entries(pieces)) {
    if (typeof pid === "number") expect(isAlive(pid), `${what} (pid ${pid}) still runs`).toBe(false);
  }
  // Nothing at all mentions the state folder: no etcd (--data-dir), kube-apiserver (its certificates),
  // controller (--kubeconfig), or anything else it might have started.
  expect(processesMentioning(paths.root)).toEqual([]);
  expect(await listening(pieces.cloudUrl)).toBe(false);
  expect(await readState(paths.clusterDir)).toBeUndefined(); // the control plane was stopped, not left
}

describe("npm start and npm run tour", () => {
  let root: string;
  let paths: DemoPaths;
  let run: DemoScript | undefined;
  let env: DemoEnv;
  let kube: KubeApi;
  let cloud: CloudClient;
  const start = () =>
    new DemoScript("start.ts", ["--state-dir", paths.root, "--port", "0", "--metrics-port", "0"]);

  beforeAll(async () => {
    // A short path: the control socket lives in it (Unix socket paths are limited to ~100 bytes).
    root = await mkdtemp(join(tmpdir(), "demo-e2e-"));
    paths = demoPaths(join(root, "state"));
  });

  afterAll(async () => {
    // After a failure: stop a demo that still runs, and a control plane a killed demo may have left.
    if (run && run.child.exitCode === null) {
      run.child.kill("SIGTERM");
      await run.exited;
    }
    await clusterDown({ dir: paths.clusterDir, log: silentLog }).catch(() => {});
    await rm(root, { recursive: true, force: true });
  });

  test("starts everything on a fresh state folder and says what to do next", async () => {
    run = start();
    await run.waitForOutput(/The demo is running\./);
    expect(run.output).not.toContain("resumed");
    env = await readEnvFile(paths.envFile);
    expect(Object.keys(env)).toEqual(["KUBECONFIG", "CLOUD_URL", "CLOUD_TOKEN", "CLOUD_ADMIN_TOKEN"]);
    expect(env.CLOUD_ADMIN_TOKEN).not.toBe(env.CLOUD_TOKEN);
    expect(env.KUBECONFIG).toBe(join(paths.clusterDir, "kubeconfig"));
    expect(run.output).toContain(`export KUBECONFIG=${env.KUBECONFIG}`);
    expect(run.output).toContain(`${env.CLOUD_URL}/#token=${env.CLOUD_TOKEN}&admin=${env.CLOUD_ADMIN_TOKEN}`);
    expect(run.output).toContain("npm run kubectl -- apply -n default -f crds/examples/red-square.yaml");
    expect(run.output).toContain(`its log: ${paths.controllerLog}`);

    cloud = new CloudClient(env.CLOUD_URL, env.CLOUD_TOKEN, env.CLOUD_ADMIN_TOKEN);
    expect((await cloud.health()).status).toBe("ok");
    // The controller's cloud token (below, --cloud-token-file) is the API's: it cannot switch the cloud's
    // faults; the admin token can.
    const asController = new CloudClient(env.CLOUD_URL, env.CLOUD_TOKEN, env.CLOUD_TOKEN);
    await expect(asController.setFaults([{ outage: true }])).rejects.toMatchObject({ status: 401 });
    expect(await cloud.faults()).toEqual({ rules: [] });
    kube = new KubeApi(loadKubeConfig(env.KUBECONFIG));

    // The controller is its own process, with the service account's certificate, not the admin's.
    const status = await new ControlClient(paths.socket).status();
    expect(status.controller.state).toBe("running");
    const commandLine = readFileSync(`/proc/${status.controller.pid}/cmdline`, "utf8");
    expect(commandLine).toContain(`--kubeconfig=${paths.controllerKubeconfig}`);
    expect(commandLine).toContain(`--cloud-token-file=${paths.tokenFile}`);
    const certData = /client-certificate-data: (\S+)/.exec(
      await readFile(paths.controllerKubeconfig, "utf8"),
    )?.[1];
    expect(userInfoOf(Buffer.from(certData ?? "", "base64").toString("utf8"))).toEqual({
      user: "system:serviceaccount:shapes-system:shapes-controller",
      groups: ["system:serviceaccounts", "system:serviceaccounts:shapes-system"],
    });
  });

  test("a Shape applied appears in the cloud; deleted there, it comes back", async () => {
    await kube.applyShape("default", "red-square", { type: "square", color: "red" });
    const first = await waitFor("default.red-square in the cloud", async () => {
      const shape = await cloud.byName("default.red-square");
      // The demo cluster's owner id: k8s-<uid of its kube-system namespace> (one per cluster).
      expect(shape).toMatchObject({
        type: "square",
        color: "red",
        tags: { owner: expect.stringMatching(/^k8s-[0-9a-f-]{36}$/) },
      });
      return shape;
    });
    await cloud.delete(first?.id ?? "");
    const second = await waitFor("default.red-square back in the cloud", async () => {
      const shape = await cloud.byName("default.red-square");
      expect(shape?.id).toBeDefined();
      expect(shape?.id).not.toBe(first?.id);
      return shape;
    });
    expect(second).toMatchObject({ type: "square", color: "red" });
    // The terminal's feed told the story: the controller's Events, as they happened.
    await run?.waitForOutput(
      /(event {2}Shape default\/red-square {2}CreatedCloudShape[^\n]*\n[\s\S]*){2}/,
      30_000,
    );
    // And the kubectl helper sees it, with the demo's kubeconfig.
    const kubectl = new DemoScript("kubectl.ts", ["get", "shapes", "-n", "default"], {
      env: { SHAPES_DEMO_DIR: paths.root },
    });
    expect((await kubectl.exited).code, kubectl.output).toBe(0);
    expect(kubectl.output).toMatch(/red-square\s+square\s+red\s+True\s+True\s+shp_/);
  });

  test("a second demo on the same folder, or on a taken port, is refused at once with a clear message", async () => {
    const twin = start();
    expect((await twin.exited).code).toBe(1);
    expect(twin.output).toMatch(/cannot start: a demo already runs from this state folder \(pid \d+\)/);

    const port = new URL(env.CLOUD_URL).port;
    const otherPaths = demoPaths(join(root, "other"));
    const squatter = new DemoScript("start.ts", ["--state-dir", otherPaths.root, "--port", port]);
    expect((await squatter.exited).code).toBe(1);
    expect(squatter.output).toContain(`cannot start the mock cloud on 127.0.0.1:${port}: the port is taken`);
    expect(squatter.output).not.toContain("kubernetes:"); // it stopped before starting anything slow
    expect(processesMentioning(otherPaths.root)).toEqual([]);
  });

  test("npm run tour walks every step against the running demo, and cleans up after itself", async () => {
    const tour = new DemoScript("tour.ts", ["--state-dir", paths.root, "--yes"]);
    const { code } = await tour.exited;
    expect(code, tour.output).toBe(0);
    STEPS.forEach((step, i) =>
      expect(tour.output).toContain(`Step ${i + 1} of ${STEPS.length}: ${step.title}`),
    );
    expect(tour.output).toContain(`Tour finished: ${STEPS.length} of ${STEPS.length} steps passed.`);
    expect(tour.output).not.toContain("✗");
    // The evidence of the scenarios that matter most was found, not skipped.
    expect(tour.output).toMatch(/Event +Normal RepairedCloudShapeDrift: Repaired tour-\w+\.drifting-circle/);
    expect(tour.output).toMatch(
      /Event +Warning NameConflict: cannot create cloud shape tour-\w+\.contested-square/,
    );
    expect(tour.output).toMatch(/Log +removed a leak left by a missed deletion/);
    // A crash right after the create: the window shown, then the same shape adopted; npm start said what it did.
    expect(tour.output).toContain("Evidence of the window");
    expect(tour.output).toMatch(
      /ShapeRef +tour-\w+\.unheard-square:\s+for\s+Shape\s+tour-\w+\/unheard-square\s+\(uid\s+[\w-]+\);\s+no\s+status:\s+a\s+cloud\s+shape\s+may\s+exist\s+—\s+written\s+before\s+the\s+create/,
    );
    const crashed = /Cloud +exactly\s+one\s+shape\s+named\s+(tour-\w+\.unheard-square):\s+(shp_\w+),/.exec(
      tour.output,
    );
    expect(crashed, "the adopted shape").not.toBeNull();
    expect(run?.output).toMatch(
      new RegExp(
        `controller: killed \\(SIGKILL, pid \\d+\\) right after the cloud created ${crashed?.[1] ?? "?"} ` +
          `\\(${crashed?.[2] ?? "?"}\\), before it heard back, as asked by the tour`,
      ),
    );
    // Down for a while: converged at the moment it said ready, and the startup resync's log line.
    expect(tour.output).toMatch(/Evidence, looked at once \d+ ms after \/readyz said 200/);
    expect(tour.output).toMatch(/Repaired +tour-\w+\.painted-square: square red,[\s\S]*?driftRepairs\s+1\n/);
    expect(tour.output).toMatch(/Log +startup resync done/);
    // Two clusters: each its own owner id, the second's NameConflict, then the freed name taken; and the
    // second cluster (control plane and controller) gone again.
    expect(tour.output).toMatch(/Cluster B +kube-system uid ([0-9a-f-]{36})\s+→\s+owner\s+id\s+k8s-\1/);
    expect(tour.output).toMatch(
      /Event +Warning NameConflict: cannot create cloud shape tour-\w+\.twin-square/,
    );
    expect(tour.output).toMatch(
      /Cloud +shp_\w+ is gone;\s+tour-\w+\.twin-square:[\s\S]*?—\s+cluster\s+B's\s+now/,
    );
    expect(tour.output).toContain("cluster B is gone");
    expect(processesMentioning("--identity=tour-cluster-b")).toEqual([]);
    const clusterB = /cluster B runs at\s+(https:\/\/[\d.:]+)/.exec(tour.output)?.[1];
    expect(clusterB, "cluster B's API server URL").toBeDefined();
    expect(await listening(clusterB ?? ""), "cluster B's API server still listens").toBe(false);

    const namespace = /in the namespace (tour-[0-9a-f]+)/.exec(tour.output)?.[1] ?? "?";
    expect(await kube.listShapes(namespace)).toEqual([]);
    expect((await cloud.list()).filter((s) => s.name.startsWith(`${namespace}.`))).toEqual([]);
    expect((await kube.listShapeRefs()).filter((r) => r.spec.shape.namespace === namespace)).toEqual([]);
    const after = await new ControlClient(paths.socket).status();
    expect(after.controller.state).toBe("running"); // restarted
    expect(after.controller.crashArmed).toBeUndefined();
    expect(run?.output).not.toContain("npm start: cannot"); // no problem reported, e.g. with the tour's moments
  });

  test("a crash armed for a create that never comes does not outlive the next start of the controller", async () => {
    const control = new ControlClient(paths.socket);
    const armed = await control.crashAfterCreate({ cloudName: "default.never-applied" });
    const gateUrl = armed.controller.crashArmed?.gateUrl ?? "?";
    expect(armed.controller).toMatchObject({
      state: "running",
      crashArmed: { cloudName: "default.never-applied" },
    });
    expect(readFileSync(`/proc/${armed.controller.pid}/cmdline`, "utf8")).toContain(`--cloud-url=${gateUrl}`);
    expect(await listening(gateUrl)).toBe(true);

    const normal = await control.startController();
    expect(normal.controller.state).toBe("running");
    expect(normal.controller.crashArmed).toBeUndefined();
    expect(readFileSync(`/proc/${normal.controller.pid}/cmdline`, "utf8")).toContain(
      `--cloud-url=${env.CLOUD_URL}`,
    );
    expect(await listening(gateUrl), "the gate still listens").toBe(false);
    expect(run?.output).toContain(
      "controller: taking it from behind the tour's cloud gate first (the crash never came)",
    );
  });

  test("Ctrl-C stops every process it started, and a second start resumes with the same data", async () => {
    if (!run) throw new Error("the demo did not start");
    const before = await kube.shape("default", "red-square");
    const cloudBefore = await cloud.byName("default.red-square");
    await stopAndCheckNothingLeft(run, paths, await piecesOf(run, paths, env), "SIGINT");

    run = start();
    await run.waitForOutput(/The demo is running\. \(resumed with the data of the last run\)/);
    const again = await readEnvFile(paths.envFile);
    expect(again.CLOUD_TOKEN).toBe(env.CLOUD_TOKEN);
    expect(again.CLOUD_ADMIN_TOKEN).toBe(env.CLOUD_ADMIN_TOKEN);
    expect(again.KUBECONFIG).toBe(env.KUBECONFIG);
    env = again;
    cloud = new CloudClient(env.CLOUD_URL, env.CLOUD_TOKEN, env.CLOUD_ADMIN_TOKEN);
    kube = new KubeApi(loadKubeConfig(env.KUBECONFIG));
    // The same Shape (same uid: etcd's data survived) and the same cloud shape (the database survived,
    // and the controller adopted nothing new: no second create).
    const after = await kube.shape("default", "red-square");
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(await cloud.byName("default.red-square")).toMatchObject({
      id: cloudBefore?.id,
      revision: cloudBefore?.revision,
    });
    expect(after.status?.cloudId).toBe(cloudBefore?.id);
    expect((await kube.getShapeRef("default.red-square"))?.spec.shape.uid).toBe(before.metadata.uid);

    // Stopped with a crash armed: the demo's stop takes the controller from behind the gate too.
    await new ControlClient(paths.socket).crashAfterCreate({ cloudName: "default.never-applied" });
    await stopAndCheckNothingLeft(run, paths, await piecesOf(run, paths, env), "SIGTERM");
    expect(run.output).toContain("controller: taking it from behind the tour's cloud gate (the demo stops)");
  });
});
