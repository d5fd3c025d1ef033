/**
 * The mock cloud of a chaos trial, run in the harness's own process so the harness can do what no client
 * could:
 * - read the truth: every shape straight from the repository (no faults, no lag) for the invariants, and
 *   the request log of every write for the single-writer check;
 * - aim a kill: a write trap runs a callback (SIGKILL of the writer) the instant a controller's write has
 *   committed, before its answer is sent or right after it;
 * - cut the change-feed connections, as a flaky network would.
 * People's edits go over HTTP like anyone's (`api`, a CloudApi from the e2e harness), so they meet the
 * same injected faults as the controller.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildCloud, type Cloud } from "../../mock-cloud/src/app.ts";
import type { FaultRule, RequestLogEntry, Shape as CloudShape } from "../../mock-cloud/src/schemas.ts";
import { CLOUD_ADMIN_TOKEN, CLOUD_TOKEN, CloudApi } from "../../e2e/harness/cloud.ts";

/** The user agent of the controller's cloud client (controller/src/shapes/cloud/client.ts). */
const CONTROLLER_USER_AGENT = "shapes-controller";

/** A controller write the trap caught, committed. */
export interface TrapHit {
  method: string;
  path: string;
  status: number;
  /** The writer's X-Client-Id. */
  clientId: string;
}

/** What a trap waits for, and what it does then (synchronously, before the cloud answers or just after). */
export interface TrapSpec {
  method: "POST" | "PATCH" | "DELETE";
  moment: "before-answer" | "after-answer";
  spring: (hit: TrapHit) => void;
}

/** A trap while armed. */
interface ArmedTrap extends TrapSpec {
  resolve: (hit: TrapHit) => void;
  sprang: boolean;
}

/** A running chaos cloud. */
export interface ChaosCloud {
  readonly url: string;
  /** Writes over HTTP as a person would (token `CLOUD_TOKEN`; faults apply). */
  readonly api: CloudApi;
  /** Every shape, read from the database directly. */
  shapes(): CloudShape[];
  /** Every write the API answered since the start (the log keeps them all). */
  requests(): RequestLogEntry[];
  setFaults(rules: FaultRule[]): void;
  clearFaults(): void;
  /**
   * Arms a trap for the next committed controller write of `spec.method`. Resolves with the hit once it
   * sprang; `disarm()` cancels it (the promise then never resolves).
   */
  armTrap(spec: TrapSpec): { sprung: Promise<TrapHit>; disarm(): void };
  /** Destroys every open change-feed connection; returns how many there were. */
  cutWatches(): number;
  /** Stops the server, closes the database and deletes its folder. Safe to call twice. */
  close(): Promise<void>;
}

/** Starts a cloud on a free port with a fresh database file in a temp folder. */
export async function startChaosCloud({ seedRandom }: { seedRandom: () => number }): Promise<ChaosCloud> {
  const dir = await mkdtemp(join(tmpdir(), "shapes-chaos-cloud-"));
  let cloud: Cloud;
  try {
    cloud = buildCloud({
      token: CLOUD_TOKEN,
      adminToken: CLOUD_ADMIN_TOKEN,
      db: join(dir, "cloud.db"),
      heartbeatMs: 2_000,
      requestLogLimit: 1_000_000,
      // The dice of injected error and throttle rates, from the trial's seed.
      random: seedRandom,
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  let trap: ArmedTrap | undefined;
  const watches = new Set<Socket>();

  const server = createServer((req, res) => {
    if (req.url?.startsWith("/v1/watch")) {
      const socket = req.socket;
      watches.add(socket);
      socket.once("close", () => watches.delete(socket));
    }
    if (trap && req.method === trap.method && req.headers["user-agent"] === CONTROLLER_USER_AGENT) {
      setTrap(req, res, trap, () => (trap = undefined));
    }
    cloud.app(req, res);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    api: new CloudApi(url),
    shapes: () =>
      cloud.deps.repository.list({ tags: [], after: 0, limit: 1_000_000, notBefore: 0, lagMs: 0 }).items,
    requests: () => cloud.deps.requestLog.entries(),
    setFaults: (rules) => cloud.deps.faults.set({ rules }),
    clearFaults: () => cloud.deps.faults.clear(),
    armTrap(spec) {
      let resolve!: (hit: TrapHit) => void;
      const sprung = new Promise<TrapHit>((r) => (resolve = r));
      const armed: ArmedTrap = { ...spec, resolve, sprang: false };
      trap = armed;
      return {
        sprung,
        disarm: () => {
          if (trap === armed) trap = undefined;
        },
      };
    },
    cutWatches() {
      const n = watches.size;
      for (const socket of watches) socket.destroy();
      watches.clear();
      return n;
    },
    close() {
      closing ??= (async () => {
        cloud.deps.feed.closeAll();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        cloud.dispose();
        await rm(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

/**
 * Hooks one request: when its answer is a success (the write committed), the trap springs — inside
 * `writeHead`, before a byte of the answer leaves, or once the answer was handed to the kernel.
 */
function setTrap(req: IncomingMessage, res: ServerResponse, trap: ArmedTrap, disarm: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = (...args: unknown[]) => {
    const status = typeof args[0] === "number" ? args[0] : res.statusCode;
    // Several requests may be hooked while the trap is armed: the first to commit springs it.
    if (!trap.sprang && status >= 200 && status < 300) {
      trap.sprang = true;
      disarm();
      const hit: TrapHit = {
        method: req.method ?? "",
        path: req.url ?? "",
        status,
        clientId: String(req.headers["x-client-id"] ?? ""),
      };
      if (trap.moment === "before-answer") {
        trap.spring(hit);
        trap.resolve(hit);
      } else {
        res.once("finish", () => {
          trap.spring(hit);
          trap.resolve(hit);
        });
      }
    }
    return writeHead(...args);
  };
}
