/**
 * The mock cloud of a chaos trial, run in the harness's own process so the harness can do what no client
 * could:
 * - read the truth: every shape straight from the repository (no faults, no lag) for the invariants, and
 *   the request log of every write for the single-writer check, each write of a shape by id with the shape
 *   as it was the instant before the write (`before`: whose owner tag it carried) for the no-foreign-write
 *   check;
 * - aim a kill: a write trap runs a callback (SIGKILL of the writer) the instant a controller's write has
 *   committed, before its answer is sent or right after it;
 * - cut the change-feed connections, as a flaky network would.
 * People's edits go over HTTP like anyone's (`api`, a CloudApi from stack/cloud.ts), so they meet the
 * same injected faults as the controller.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Request } from "express";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildCloud,
  type Cloud,
  type FaultRule,
  type RequestLogEntry,
  type Shape as CloudShape,
} from "@shapes/mock-cloud";
import { CLOUD_ADMIN_TOKEN, CLOUD_TOKEN, CloudApi } from "@shapes/stack";

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
  /** Only writes of the controllers whose X-Client-Id this accepts (default: any controller's). */
  from?: (clientId: string) => boolean;
  spring: (hit: TrapHit) => void;
}

/** A write the cloud answered, as its request log has it, and the shape it was aimed at. */
export interface ChaosRequestLogEntry extends RequestLogEntry {
  /**
   * For a PATCH, PUT or DELETE of `/v1/shapes/{id}` the cloud's repository carried out: the shape as it
   * was the instant before (read in the same synchronous step as the write itself). Absent for every
   * other write: a create, or a write refused (by authentication, an injected fault, a bad body, a failed
   * If-Match, an unknown id), which changed nothing.
   */
  before?: CloudShape;
}

/** What the harness notes about one logged write while the cloud handles it. */
interface WriteNote {
  method: string;
  path: string;
  clientId: string | undefined;
  before?: CloudShape;
}

/** The methods and paths the cloud's request log keeps (mock-cloud/src/middleware/observe.ts). */
const LOGGED_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

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
  /**
   * Every write the API answered since the start (the log keeps them all), with the shape each write by
   * id found (`before`). Throws when the harness's notes and the cloud's log do not line up.
   */
  requests(): ChaosRequestLogEntry[];
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

  // The shape each write by id finds. The repository reads the row and writes it in one synchronous step
  // (better-sqlite3, one transaction), so reading it just before, in that same step, reads it as the write
  // found it. Noted only when the write went through (a refused one, 412 or 404, changed nothing), on the
  // request whose async context the handler runs in.
  const inRequest = new AsyncLocalStorage<WriteNote>();
  const { repository } = cloud.deps;
  const noted = <T>(id: string, write: () => T): T => {
    const before = repository.get(id);
    const result = write();
    const note = inRequest.getStore();
    if (note && before) note.before = before;
    return result;
  };
  const update = repository.update.bind(repository);
  const remove = repository.delete.bind(repository);
  repository.update = (id, change, condition) => noted(id, () => update(id, change, condition));
  repository.delete = (id, condition) => noted(id, () => remove(id, condition));
  // One note per entry of the cloud's request log, in the same order: both are appended by a "close"
  // listener of the same response, with the same filter; note i belongs to the entry with seq i + 1.
  const notes: WriteNote[] = [];

  const server = createServer((req, res) => {
    if (req.url?.startsWith("/v1/watch")) {
      const socket = req.socket;
      watches.add(socket);
      socket.once("close", () => watches.delete(socket));
    }
    const clientId = req.headers["x-client-id"];
    if (
      trap &&
      req.method === trap.method &&
      req.headers["user-agent"] === CONTROLLER_USER_AGENT &&
      (trap.from?.(String(clientId ?? "")) ?? true)
    ) {
      setTrap(req, res, trap, () => (trap = undefined));
    }
    const note: WriteNote = {
      method: req.method ?? "",
      path: "",
      clientId: typeof clientId === "string" ? clientId : undefined,
    };
    inRequest.run(note, () => {
      cloud.app(req, res);
    });
    res.once("close", () => {
      // Express's parsed path, as the request log's filter reads it.
      note.path = (req as Request).path;
      if (LOGGED_METHODS.has(note.method) && note.path.startsWith("/v1/")) notes.push(note);
    });
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
    requests: () =>
      cloud.deps.requestLog.entries().map((entry): ChaosRequestLogEntry => {
        const note = notes[entry.seq - 1];
        if (
          !note ||
          note.method !== entry.method ||
          note.path !== entry.path ||
          note.clientId !== entry.clientId
        ) {
          throw new Error(
            `cannot line up the cloud's request log with the harness's notes at seq ${entry.seq}: ` +
              `${entry.method} ${entry.path} (${entry.clientId ?? "no client id"}) vs ` +
              (note ? `${note.method} ${note.path} (${note.clientId ?? "no client id"})` : "no note"),
          );
        }
        return note.before === undefined ? entry : { ...entry, before: note.before };
      }),
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
