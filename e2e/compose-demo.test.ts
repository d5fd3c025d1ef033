/**
 * The compose demo, for real: `docker compose up` on the repository's docker-compose.yml against a real
 * Docker engine, as a person would run it, with its own project name (`-p`) and host ports that collide
 * with nothing else. The story, in order: every service healthy and hardened (read from `docker inspect`);
 * from the host, with the kubeconfig the certs job writes, kubectl applies a Shape and the cloud's API shows
 * it; least privilege between the containers (etcd unreachable from the controller's and the cloud's, the
 * controller's /metrics and /why closed to a request without a token the API server accepts, the cloud's
 * fault switches closed to its API token); a cloud-side delete and a recolor are repaired; `docker compose restart controller` makes no
 * duplicate; `down` + `up` keeps the Shape and its cloud id (volumes); a delete goes through the finalizer;
 * `down -v` leaves no container, network or volume of the project (and `--rmi local` takes its images too, so
 * that repeated runs do not pile them up; BuildKit's cache makes the next build quick anyway).
 *
 * Preparation, in beforeAll: scripts/docker-engine.sh (the engine and the Compose CLI; .ci/run ran it
 * already, so it only checks), `npm run images`'s ensureBaseImages (stand-in base images where no registry
 * answers), then `docker compose build` and `up --wait`, each timed. Where no engine can be had (no root,
 * not Debian) the file is skipped with one line saying why.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { ensureBaseImages } from "../deploy/images/stand-ins.ts";
import { elapsed, freePorts, stderrLog } from "@shapes/envtest";
import { CloudHttpClient } from "@shapes/mock-cloud";
import { REPO_ROOT, waitFor } from "@shapes/stack";
import { hardeningProblems, type ContainerInspect } from "../deploy/compose/hardening.ts";

const execFileAsync = promisify(execFile);
const log = stderrLog("compose-demo");

/** Whether scripts/docker-engine.sh can make Docker ready here; the reason when it cannot. */
const readiness = await new Promise<{ ok: boolean; why: string }>((resolve) => {
  execFile("bash", ["scripts/docker-engine.sh", "--check"], { cwd: REPO_ROOT }, (error, stdout, stderr) => {
    const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
    resolve({ ok: code !== 3, why: (stderr || stdout).trim().split("\n").at(-1) ?? "" });
  });
});
if (!readiness.ok) log(`skipped: ${readiness.why}`);

/** The compose file's demo token (deploy/compose/cloud-token): the cloud's API token, the controller's. */
const CLOUD_TOKEN = "demo-cloud-token";
/** The compose file's demo admin token (deploy/compose/cloud-admin-token): the cloud's /admin. */
const CLOUD_ADMIN_TOKEN = "demo-cloud-admin-token";

/**
 * A node one-liner for `docker compose exec <service> node -e REACH <host> <port>`: prints `connected` when a
 * TCP connection to host:port opens, else the error's code (ENOTFOUND: no such name on this container's
 * networks), or `timeout`.
 */
const REACH = [
  'const s = require("node:net").connect({ host: process.argv[1], port: Number(process.argv[2]) });',
  's.setTimeout(10000, () => { console.log("timeout"); process.exit(0); });',
  's.on("connect", () => { console.log("connected"); process.exit(0); });',
  's.on("error", (e) => { console.log(e.code || e.message); process.exit(0); });',
].join("\n");
/** One minute per wait is plenty on an idle machine; 2 shared cores running other suites need more. */
const WAIT = { timeoutMs: 180_000, intervalMs: 500 };

describe.skipIf(!readiness.ok)("docker compose up, for real", () => {
  const project = `shapes-e2e-${process.pid}`;
  let env: NodeJS.ProcessEnv = {};
  let cloud: CloudHttpClient;
  let metricsUrl = "";
  let kubeconfig = "";
  let dir = "";
  const name = `compose-${process.pid}`;
  const cloudName = `default.${name}`;
  let firstId = "";
  /** Why `up --wait` failed, if it did: the hardening is still checked on what was created, then this fails. */
  let upError: Error | undefined;

  /** `docker compose -p <project> ...` in the repository, with the test's ports; throws with its output. */
  async function compose(args: string[], timeoutMs = 600_000): Promise<string> {
    return run("docker", ["compose", "-p", project, ...args], { env, timeoutMs });
  }

  async function kubectl(args: string[]): Promise<string> {
    const binary = inject("envtestBinaries").kubectl;
    if (!binary) throw new Error("cannot run kubectl: envtest built none");
    return run(binary, ["--kubeconfig", kubeconfig, "-n", "default", ...args], { env, timeoutMs: 120_000 });
  }

  /** What REACH prints in `service`'s container for host:port. */
  async function reach(service: string, host: string, port: number): Promise<string> {
    return (await compose(["exec", "-T", service, "node", "-e", REACH, host, String(port)], 60_000)).trim();
  }

  async function cloudShapes(): Promise<{ id: string; color: string }[]> {
    return (await cloud.list()).filter((s) => s.name === cloudName);
  }

  beforeAll(async () => {
    const started = Date.now();
    await run("bash", ["scripts/docker-engine.sh"], { env: process.env, timeoutMs: 30 * 60_000, echo: true });
    await ensureBaseImages({ log });
    const [apiserver, cloudPort, metrics] = await freePorts(3);
    metricsUrl = `http://127.0.0.1:${metrics}`;
    env = {
      ...process.env,
      SHAPES_APISERVER_PORT: String(apiserver),
      SHAPES_CLOUD_PORT: String(cloudPort),
      SHAPES_METRICS_PORT: String(metrics),
    };
    const building = Date.now();
    await compose(["build"], 20 * 60_000);
    log(`images built in ${elapsed(building)}`);
    const upping = Date.now();
    try {
      await compose(["up", "-d", "--wait", "--wait-timeout", "300"]);
      log(
        `stack up (every service healthy) in ${elapsed(upping)}; ready ${elapsed(started)} after the start`,
      );
    } catch (error) {
      upError = error instanceof Error ? error : new Error(String(error));
    }
    cloud = new CloudHttpClient({
      baseUrl: `http://127.0.0.1:${cloudPort}`,
      token: CLOUD_TOKEN,
      adminToken: CLOUD_ADMIN_TOKEN,
      clientId: "e2e-compose",
    });
    dir = await mkdtemp(join(tmpdir(), "compose-demo-"));
    kubeconfig = join(dir, "host.kubeconfig");
    if (upError) return;
    await writeFile(
      kubeconfig,
      await compose(["run", "--rm", "--no-deps", "-T", "certs", "cat", "/pki/host.kubeconfig"]),
    );
  }, 45 * 60_000);

  afterAll(async () => {
    // Whatever happened, leave nothing running: the last test checks this too.
    if (readiness.ok)
      await compose(["down", "-v", "--rmi", "local", "--remove-orphans", "--timeout", "60"]).catch(
        () => undefined,
      );
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 180_000);

  test("every container runs hardened; every service is healthy, or a job that exited 0", async () => {
    const states = await containers(project, env);
    expect(states.map((c) => c.service).sort()).toEqual(
      ["certs", "cloud", "controller", "etcd", "kube-apiserver", "setup"].sort(),
    );
    // First what the engine was told to run, whether or not it came up: a container run as root, say,
    // may well fail its health check, and this says why.
    const problems = states.flatMap((c) => hardeningProblems(c.inspect).map((p) => `${c.service}: ${p}`));
    expect(problems, "hardening").toEqual([]);
    if (upError) throw upError;
    for (const c of states) {
      if (c.service === "certs" || c.service === "setup") {
        expect(c.inspect.State.Status, `${c.service} ran once`).toBe("exited");
        expect(c.inspect.State.ExitCode, `${c.service} exited 0`).toBe(0);
      } else {
        expect(c.inspect.State.Health?.Status, `${c.service} is healthy`).toBe("healthy");
      }
    }
    const running = states.filter((c) => c.inspect.State.Status === "running");
    for (const c of running) {
      // The host's view of the container's processes: `docker top` needs the PID column to answer at all.
      const top = (await run("docker", ["top", c.id, "-o", "pid,uid"], { env })).trim().split("\n").slice(1);
      const uids = top.map((line) => line.trim().split(/\s+/)[1] ?? "");
      expect(uids.length, `${c.service} runs processes`).toBeGreaterThan(0);
      expect(new Set(uids.map((u) => u.trim())), `${c.service}'s processes run as uid 1000`).toEqual(
        new Set(["1000"]),
      );
    }
  });

  const reachable: { reason: string; from: string; host: string; port: number; connects: boolean }[] = [
    {
      reason: "etcd takes no token: only the API server may reach it",
      from: "controller",
      host: "etcd",
      port: 2379,
      connects: false,
    },
    { reason: "nor may the cloud", from: "cloud", host: "etcd", port: 2379, connects: false },
    {
      reason: "the cloud has no business with Kubernetes",
      from: "cloud",
      host: "kube-apiserver",
      port: 6443,
      connects: false,
    },
    {
      reason: "the controller's way into Kubernetes: the API server and its RBAC",
      from: "controller",
      host: "kube-apiserver",
      port: 6443,
      connects: true,
    },
    {
      reason: "the controller calls the cloud",
      from: "controller",
      host: "cloud",
      port: 8080,
      connects: true,
    },
  ];
  test.each(reachable)(
    "from $from's container, $host:$port connects: $connects ($reason)",
    async ({ from, host, port, connects }) => {
      if (upError) throw upError;
      const said = await reach(from, host, port);
      if (connects) expect(said).toBe("connected");
      else expect(said, `${host} is not on ${from}'s networks`).toBe("ENOTFOUND");
    },
  );

  test("/metrics and /why answer only a token the API server accepts and RBAC lets read them", async () => {
    if (upError) throw upError;
    const get = async (path: string, token?: string) => {
      const res = await fetch(`${metricsUrl}${path}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      await res.body?.cancel();
      return res.status;
    };
    // The published port, as any container on the controller's networks reaches it too: no token, 401.
    expect(await get("/why")).toBe(401);
    expect(await get("/metrics")).toBe(401);
    expect(await get("/why/default/anything")).toBe(401);
    expect(await get("/readyz"), "the healthcheck's path stays open").toBe(200);
    // A service account's token: authenticated, yet not allowed (403), until it is bound to the reader role.
    const account = `metrics-reader-${process.pid}`;
    await kubectl(["create", "serviceaccount", account]);
    const token = (await kubectl(["create", "token", account])).trim();
    expect(await get("/metrics", token)).toBe(403);
    await kubectl([
      "create",
      "clusterrolebinding",
      account,
      "--clusterrole=shapes-metrics-reader",
      `--serviceaccount=default:${account}`,
    ]);
    // The controller keeps a denial for 10 s: wait for the grant to show.
    await waitFor(
      "the reader's token to read /metrics",
      async () => expect(await get("/metrics", token)).toBe(200),
      WAIT,
    );
    expect(await get("/why", token)).toBe(200);
    await kubectl(["delete", "clusterrolebinding", account]);
    await kubectl(["delete", "serviceaccount", account]);
  });

  test("the cloud's fault switches take the admin token, not the API token the controller holds", async () => {
    if (upError) throw upError;
    const withApiToken = new CloudHttpClient({
      baseUrl: cloud.baseUrl,
      token: CLOUD_TOKEN,
      adminToken: CLOUD_TOKEN,
      clientId: "e2e-compose",
    });
    // A rule that matches no request: were it let through, the rest of the story would still run.
    const harmless = { path: "/v1/no-such-route", latencyMs: 1 };
    await expect(withApiToken.setFaults([harmless])).rejects.toMatchObject({ status: 401 });
    expect(await cloud.faults()).toEqual({ rules: [] });
    // Nor is the admin token in the controller's container: the cloud's is the only one that mounts it.
    const secret = await compose([
      "exec",
      "-T",
      "controller",
      "node",
      "-e",
      'console.log(require("node:fs").existsSync("/run/secrets/cloud-admin-token"))',
    ]);
    expect(secret.trim()).toBe("false");
  });

  test("a Shape applied with kubectl from the host reaches the cloud", async () => {
    if (upError) throw upError;
    await writeFile(
      join(dir, "shape.yaml"),
      `apiVersion: shapes.example.com/v1alpha1\nkind: Shape\nmetadata:\n  name: ${name}\nspec:\n  type: circle\n  color: blue\n`,
    );
    await kubectl(["apply", "-f", join(dir, "shape.yaml")]);
    const [shape] = await waitFor(
      `the cloud shape ${cloudName}`,
      async () => {
        const found = await cloudShapes();
        expect(found).toHaveLength(1);
        return found;
      },
      WAIT,
    );
    expect(shape?.color).toBe("blue");
    firstId = shape?.id ?? "";
    await waitFor(
      "the Shape's status to carry the cloud id",
      async () =>
        expect(await kubectl(["get", "shape", name, "-o", "jsonpath={.status.cloudId}"])).toBe(firstId),
      WAIT,
    );
  });

  test("a shape deleted in the cloud comes back", async () => {
    await cloud.delete(firstId);
    const back = await waitFor(
      `a new cloud shape ${cloudName}`,
      async () => {
        const found = await cloudShapes();
        expect(found).toHaveLength(1);
        expect(found[0]?.id).not.toBe(firstId);
        return found[0];
      },
      WAIT,
    );
    expect(back?.color).toBe("blue");
    firstId = back?.id ?? "";
  });

  test("a shape recolored in the cloud gets its color back", async () => {
    await cloud.patch(firstId, { color: "green" });
    await waitFor(
      `${cloudName} blue again`,
      async () => {
        const found = await cloudShapes();
        expect(found.map((s) => [s.id, s.color])).toEqual([[firstId, "blue"]]);
      },
      WAIT,
    );
  });

  test("docker compose restart controller: the new process adopts the shape, no duplicate", async () => {
    await compose(["restart", "controller"]);
    await waitFor("the controller healthy again", () => serviceHealthy(project, env, "controller"), WAIT);
    // Ready means its startup resync reconciled every Shape: a duplicate would exist by now.
    expect((await cloudShapes()).map((s) => s.id)).toEqual([firstId]);
  });

  test("down, then up: the Shape and its cloud shape are the same (the volumes kept them)", async () => {
    await compose(["down", "--timeout", "60"]);
    expect(await containers(project, env)).toEqual([]);
    const upping = Date.now();
    await compose(["up", "-d", "--wait", "--wait-timeout", "300"]);
    log(`stack up again (data kept) in ${elapsed(upping)}`);
    expect(await kubectl(["get", "shape", name, "-o", "jsonpath={.status.cloudId}"])).toBe(firstId);
    expect((await cloudShapes()).map((s) => s.id)).toEqual([firstId]);
  });

  test("a Shape deleted with kubectl takes its cloud shape with it (the finalizer)", async () => {
    await kubectl(["delete", "shape", name, "--wait=true", "--timeout=120s"]);
    await waitFor(
      `${cloudName} gone from the cloud`,
      async () => expect(await cloudShapes()).toEqual([]),
      WAIT,
    );
  });

  test("down -v leaves no container, network or volume of the project", async () => {
    await compose(["down", "-v", "--rmi", "local", "--remove-orphans", "--timeout", "60"]);
    const filter = `label=com.docker.compose.project=${project}`;
    for (const kind of ["container", "network", "volume"] as const) {
      const listing =
        kind === "container"
          ? ["ps", "-a", "-q", "--filter", filter]
          : [kind, "ls", "-q", "--filter", filter];
      expect((await run("docker", listing, { env })).trim(), `${kind}s of ${project}`).toBe("");
    }
  });
});

/** One container of the project: its service and what `docker inspect` says. */
interface ProjectContainer {
  id: string;
  service: string;
  inspect: ContainerInspect;
}

/** Every container of `project`, running or not (the one-shot jobs too). */
async function containers(project: string, env: NodeJS.ProcessEnv): Promise<ProjectContainer[]> {
  const ids = (
    await run("docker", ["ps", "-a", "-q", "--filter", `label=com.docker.compose.project=${project}`], {
      env,
    })
  )
    .trim()
    .split("\n")
    .filter(Boolean);
  if (ids.length === 0) return [];
  const inspected = JSON.parse(await run("docker", ["inspect", ...ids], { env })) as ContainerInspect[];
  return inspected.map((inspect) => ({
    id: inspect.Id,
    service: inspect.Config.Labels["com.docker.compose.service"] ?? "?",
    inspect,
  }));
}

async function serviceHealthy(project: string, env: NodeJS.ProcessEnv, service: string): Promise<void> {
  const [state] = (await containers(project, env)).filter((c) => c.service === service);
  expect(state?.inspect.State.Health?.Status, `${service}'s health`).toBe("healthy");
}

/**
 * Runs a command to completion and returns its stdout; throws with its output when it fails or outlives
 * `timeoutMs`. `echo` streams its stderr to ours (progress of the long preparation steps).
 */
async function run(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; timeoutMs?: number; echo?: boolean },
): Promise<string> {
  if (!options.echo) {
    try {
      const { stdout } = await execFileAsync(command, args, {
        cwd: REPO_ROOT,
        env: options.env,
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      return stdout;
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`cannot run ${command} ${args.join(" ")}: ${e.message}\n${e.stderr ?? ""}`.trim(), {
        cause: error,
      });
    }
  }
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: REPO_ROOT,
      env: options.env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGTERM"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`cannot run ${command} ${args.join(" ")}: exited with ${code ?? signal}`));
    });
  });
}
