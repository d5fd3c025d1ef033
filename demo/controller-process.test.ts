/**
 * The ControllerRunner against a stand-in that keeps the controller's process contract (logs its
 * metrics URL as JSON on stderr, serves /readyz, drains on SIGTERM): start, graceful stop, restart after
 * a crash, a start that fails, and the parent-death signal when `npm start` itself is killed.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { isAlive } from "@shapes/envtest";
import {
  controllerCommand,
  controllerEnv,
  ControllerRunner,
  CONTROLLER_MAIN,
  withCloudUrl,
} from "./controller-process.ts";
import { waitUntil } from "./narrator.ts";

/** The stand-in: `node fake.mjs [exit-early]`. */
const FAKE = `
import { createServer } from "node:http";
const log = (fields) => process.stderr.write(JSON.stringify({ level: 30, time: Date.now(), ...fields }) + "\\n");
if (process.argv[2] === "exit-early") { log({ msg: "cannot load the kubeconfig" }); process.exit(3); }
const server = createServer((req, res) => res.end("ok")).listen(0, "127.0.0.1", () => {
  log({ msg: "serving /healthz, /readyz, /metrics", url: "http://127.0.0.1:" + server.address().port, args: process.argv.slice(2) });
});
process.on("SIGTERM", () => { log({ msg: "stopped" }); server.close(); process.exit(0); });
`;

const setpriv =
  process.platform === "linux" &&
  (spawnSync("setpriv", ["--help"], { encoding: "utf8" }).stdout ?? "").includes("--pdeathsig");

describe("ControllerRunner", () => {
  let dir: string;
  let fake: string;
  const runners: ControllerRunner[] = [];
  let made = 0; // each runner its own log file, so one test's lines never show up in another's
  const runner = (args: string[], said: string[] = []) => {
    const r = new ControllerRunner({
      command: process.execPath,
      args: [fake, ...args],
      logFile: join(dir, `controller-${made++}.log`),
      say: (line) => said.push(line),
      readyTimeoutMs: 30_000,
      restartDelaysMs: [50],
    });
    runners.push(r);
    return r;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "demo-runner-"));
    fake = join(dir, "fake.mjs");
    await writeFile(fake, FAKE);
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("starts it, waits until /readyz answers, and stops it gracefully with SIGTERM", async () => {
    const r = runner([]);
    await r.start();
    const running = r.status();
    expect(running).toMatchObject({
      state: "running",
      metricsUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
    });
    expect((await fetch(`${running.metricsUrl}/readyz`)).status).toBe(200);
    const pid = running.pid ?? 0;
    expect(isAlive(pid)).toBe(true);

    await r.stop();
    expect(isAlive(pid)).toBe(false);
    expect(r.status()).toEqual({ state: "stopped", logFile: running.logFile });
    expect(await readFile(running.logFile, "utf8")).toContain('"msg":"stopped"'); // it drained, not killed
  });

  it("starts it again after it exits on its own, like a pod's restart policy", async () => {
    const said: string[] = [];
    const r = runner([], said);
    await r.start();
    const first = r.status().pid ?? 0;
    process.kill(first, "SIGKILL"); // a crash
    const again = await waitUntil(
      "a new controller process",
      () => {
        const s = r.status();
        if (s.state !== "running" || s.pid === first) throw new Error(`state ${s.state}, pid ${s.pid}`);
        return s;
      },
      30_000,
    );
    expect(isAlive(again.pid ?? 0)).toBe(true);
    expect(said.join("\n")).toMatch(/exited on its own \(signal SIGKILL\); starting it again/);
  });

  it("runs one start with other arguments, and a kill leaves it down until it is started again", async () => {
    const said: string[] = [];
    const r = runner([], said);
    await r.start({ args: [fake, "--cloud-url=http://127.0.0.1:1"] });
    const gated = r.status().pid ?? 0;
    const { logFile } = r.status();
    expect(await readFile(logFile, "utf8")).toContain('"args":["--cloud-url=http://127.0.0.1:1"]');

    await r.kill();
    expect(isAlive(gated)).toBe(false);
    expect(r.status()).toEqual({ state: "crashed", logFile });
    expect(said, "no restart is scheduled after a kill").toEqual([]);
    expect(await readFile(logFile, "utf8")).not.toContain('"msg":"stopped"'); // no draining

    await r.start(); // the configured arguments again
    expect(r.status().pid).not.toBe(gated);
    expect(await readFile(logFile, "utf8")).toContain('"args":[]');
  });

  it("fails a start with the log's last lines when the process exits first", async () => {
    const r = runner(["exit-early"]);
    await expect(r.start()).rejects.toThrow(
      /cannot start the controller: it exited \(code 3\)[\s\S]*cannot load the kubeconfig/,
    );
    expect(r.status().state).toBe("crashed");
  });

  it.skipIf(!setpriv)(
    "is ended by the kernel when npm start dies without stopping it (SIGKILL)",
    async () => {
      // A parent like npm start: runs a ControllerRunner, prints the child's pid, and is then killed.
      const parentScript = join(dir, "parent.ts");
      await writeFile(
        parentScript,
        `import { ControllerRunner } from ${JSON.stringify(join(import.meta.dirname, "controller-process.ts"))};
const r = new ControllerRunner({ command: process.execPath, args: [${JSON.stringify(fake)}],
  logFile: ${JSON.stringify(join(dir, "orphan.log"))}, say: () => {} });
await r.start();
process.stdout.write(String(r.status().pid) + "\\n");
setInterval(() => {}, 1000);`,
      );
      const parent = spawn(process.execPath, [parentScript], { stdio: ["ignore", "pipe", "inherit"] });
      const pid = await new Promise<number>((resolve) =>
        parent.stdout.once("data", (d: Buffer) => resolve(Number(d.toString()))),
      );
      expect(isAlive(pid)).toBe(true);
      parent.kill("SIGKILL");
      await waitUntil(
        "the orphaned controller to be gone",
        () => {
          if (isAlive(pid)) throw new Error(`pid ${pid} lives`);
        },
        30_000,
      );
      // SIGTERM, not SIGKILL: it shut down the way it does on Ctrl-C.
      expect(await readFile(join(dir, "orphan.log"), "utf8")).toContain('"msg":"stopped"');
    },
  );
});

describe("the controller's command line and environment", () => {
  it("runs controller/src/main.ts with every setting as a flag", () => {
    const { command, args } = controllerCommand({
      kubeconfig: "/s/controller.kubeconfig",
      cloudUrl: "http://127.0.0.1:8080",
      cloudTokenFile: "/s/cloud-token",
      metricsAddress: "127.0.0.1:8081",
      logLevel: "info",
    });
    expect(command).toBe(process.execPath);
    expect(args).toEqual([
      ...CONTROLLER_NODE_FLAGS, // node's, as everywhere the controller starts
      CONTROLLER_MAIN,
      "--kubeconfig=/s/controller.kubeconfig",
      "--cloud-url=http://127.0.0.1:8080",
      "--cloud-token-file=/s/cloud-token", // never the token itself: command lines are visible to all
      "--metrics-address=127.0.0.1:8081",
      "--log-level=info",
      "--identity=shapes-demo",
    ]);
  });

  it("points the same command line at another cloud URL (the tour's crash gate)", () => {
    const { args } = controllerCommand({
      kubeconfig: "/k",
      cloudUrl: "http://127.0.0.1:8080",
      cloudTokenFile: "/t",
      metricsAddress: "127.0.0.1:8081",
      logLevel: "info",
    });
    const gated = withCloudUrl(args, "http://127.0.0.1:40000");
    expect(gated).toEqual(
      args.map((a) => (a === "--cloud-url=http://127.0.0.1:8080" ? "--cloud-url=http://127.0.0.1:40000" : a)),
    );
    expect(() => withCloudUrl(["main.ts"], "http://x")).toThrow(/cannot point the controller at http:\/\/x/);
  });

  it("drops the variables the controller would read as configuration, keeps the rest", () => {
    const env = controllerEnv({
      PATH: "/bin",
      HOME: "/h",
      CLOUD_URL: "x",
      OWNER_ID: "y",
      WORKERS: "9",
      KUBECONFIG: "/k",
    });
    expect(env).toEqual({ PATH: "/bin", HOME: "/h" });
  });
});
