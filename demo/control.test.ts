import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ControlClient,
  DemoNotRunningError,
  serveControl,
  type DemoControl,
  type DemoStatus,
} from "./control.ts";

function fakeDemo(): DemoControl & { calls: string[]; state: DemoStatus["controller"]["state"] } {
  const demo = {
    calls: [] as string[],
    state: "running" as DemoStatus["controller"]["state"],
    status(): DemoStatus {
      return {
        pid: 4242,
        stateDir: "/tmp/x",
        cluster: { kind: "local", server: "https://127.0.0.1:1", kubeconfig: "/tmp/x/kubeconfig" },
        cloud: { url: "http://127.0.0.1:2" },
        controller: { state: demo.state, logFile: "/tmp/x/logs/controller.log" },
      };
    },
    async stopController() {
      demo.calls.push("stop");
      await Promise.resolve();
      demo.state = "stopped";
    },
    async startController() {
      demo.calls.push("start");
      await Promise.resolve();
      if (demo.calls.length > 2) throw new Error("cannot start the controller: it exited (code 1)");
      demo.state = "running";
    },
  };
  return demo;
}

describe("the control socket", () => {
  let dir: string;
  beforeAll(async () => (dir = await mkdtemp(join(tmpdir(), "demo-ctl-"))));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("answers status, and stops and starts the controller, reporting failures as errors", async () => {
    const path = join(dir, "a.sock");
    const demo = fakeDemo();
    const server = await serveControl(path, demo);
    try {
      const client = new ControlClient(path);
      expect((await client.status()).pid).toBe(4242);
      expect((await client.stopController()).controller.state).toBe("stopped");
      expect((await client.startController()).controller.state).toBe("running");
      await expect(client.startController()).rejects.toThrow(
        "cannot start the controller: it exited (code 1)",
      );
      expect(demo.calls).toEqual(["stop", "start", "start"]);
    } finally {
      await server.close();
    }
    expect(existsSync(path)).toBe(false);
  });

  it("keeps a second demo out of a state folder whose demo runs", async () => {
    const path = join(dir, "b.sock");
    const server = await serveControl(path, fakeDemo());
    try {
      await expect(serveControl(path, fakeDemo())).rejects.toThrow(
        /cannot start: a demo already runs from this state folder \(pid 4242\)/,
      );
    } finally {
      await server.close();
    }
  });

  it("takes over a socket file left by a demo that was killed", async () => {
    const path = join(dir, "c.sock");
    // Another process listens on the path, then dies by SIGKILL: its socket file stays behind.
    const holder = spawn(
      process.execPath,
      ["-e", "require('net').createServer().listen(process.argv[1], () => console.log('up'))", path],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()));
    const died = new Promise((resolve) => holder.once("exit", resolve));
    holder.kill("SIGKILL");
    await died;
    expect(existsSync(path)).toBe(true);

    const server = await serveControl(path, fakeDemo());
    try {
      expect((await new ControlClient(path).status()).pid).toBe(4242);
    } finally {
      await server.close();
    }
  });

  it("tells the tour plainly that no demo runs", async () => {
    const client = new ControlClient(join(dir, "nobody.sock"));
    await expect(client.status()).rejects.toThrow(DemoNotRunningError);
    await expect(client.status()).rejects.toThrow(/cannot find a running demo .* start it with `npm start`/);
  });

  it("passes on why a demo cannot report yet", async () => {
    const path = join(dir, "d.sock");
    const server = await serveControl(path, {
      ...fakeDemo(),
      status: () => {
        throw new Error("cannot report yet: the demo is still starting");
      },
    });
    try {
      await expect(new ControlClient(path).status()).rejects.toThrow(
        "cannot report yet: the demo is still starting",
      );
    } finally {
      await server.close();
    }
  });

  it("refuses a socket path the kernel cannot take", async () => {
    await expect(serveControl(join(dir, "x".repeat(120), "demo.sock"), fakeDemo())).rejects.toThrow(
      /cannot create the control socket .*longer than 100 bytes/,
    );
  });
});
