import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import {
  ControlClient,
  DemoNotRunningError,
  parseTourMoment,
  serveControl,
  type CrashRequest,
  type DemoControl,
  type DemoStatus,
  type TourMoment,
} from "./control.ts";

type FakeDemo = DemoControl & {
  calls: string[];
  state: DemoStatus["controller"]["state"];
  crashes: CrashRequest[];
  moments: (TourMoment | undefined)[];
};

function fakeDemo(): FakeDemo {
  const demo: FakeDemo = {
    calls: [],
    state: "running",
    crashes: [],
    moments: [],
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
    async crashAfterCreate(crash) {
      demo.crashes.push(crash);
      await Promise.resolve();
    },
    showTourMoment(moment) {
      demo.moments.push(moment);
    },
  };
  return demo;
}

const MOMENT: TourMoment = {
  step: 7,
  steps: 9,
  title: "A crash right after the create",
  caption: "The cloud has the shape; Kubernetes has no id for it.",
  namespace: "tour-1a2b3c",
  shapes: ["unheard-square"],
  cloudNames: ["tour-1a2b3c.unheard-square"],
};

/** A raw request on the socket: what a client other than ControlClient might send. */
function raw(
  socketPath: string,
  method: string,
  path: string,
  body: string,
): Promise<{ status: number; body: { error?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { error?: string } }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
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

  it("passes the tour's moments on, and clears them", async () => {
    const path = join(dir, "e.sock");
    const demo = fakeDemo();
    const server = await serveControl(path, demo);
    try {
      const client = new ControlClient(path);
      await client.showTourMoment(MOMENT);
      await client.showTourMoment(undefined);
      expect(demo.moments).toEqual([MOMENT, undefined]);
    } finally {
      await server.close();
    }
  });

  it("refuses a moment or a crash request it cannot use, with 400 and what is wrong", async () => {
    const path = join(dir, "f.sock");
    const demo = fakeDemo();
    const server = await serveControl(path, demo);
    try {
      const bad = await raw(path, "POST", "/tour", JSON.stringify({ ...MOMENT, step: 0, shapes: "x" }));
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/^cannot show the tour moment: step: .*; shapes: /);
      const above = await raw(path, "POST", "/tour", JSON.stringify({ ...MOMENT, step: 10 }));
      expect(above.body.error).toBe("cannot show the tour moment: step: step must not be above steps");
      const notJson = await raw(path, "POST", "/tour", "{step: 1");
      expect(notJson).toMatchObject({ status: 400, body: { error: expect.stringMatching(/not JSON/) } });
      const huge = await raw(path, "POST", "/tour", "x".repeat(100_000));
      expect(huge).toMatchObject({ status: 400, body: { error: expect.stringMatching(/larger than/) } });
      const crash = await raw(
        path,
        "POST",
        "/controller/crash-after-create",
        JSON.stringify({ timeoutMs: -1 }),
      );
      expect(crash.status).toBe(400);
      expect(crash.body.error).toMatch(/^cannot arm the crash: cloudName: .*; timeoutMs: /);
      expect(demo.moments).toEqual([]);
      expect(demo.crashes).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("arms the tour's crash, answering with the status", async () => {
    const path = join(dir, "g.sock");
    const demo = fakeDemo();
    const server = await serveControl(path, demo);
    try {
      const status = await new ControlClient(path).crashAfterCreate({ cloudName: "ns.a", timeoutMs: 5_000 });
      expect(status.pid).toBe(4242);
      expect(demo.crashes).toEqual([{ cloudName: "ns.a", timeoutMs: 5_000 }]);
    } finally {
      await server.close();
    }
  });

  it("checks a moment field by field", () => {
    expect(parseTourMoment(MOMENT)).toEqual(MOMENT);
    expect(() => parseTourMoment({ ...MOMENT, extra: 1 })).toThrow(/cannot show the tour moment: .*extra/);
    expect(() => parseTourMoment({ ...MOMENT, namespace: "" })).toThrow(/namespace/);
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
