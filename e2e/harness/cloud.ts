/**
 * The cloud side of an e2e stack: a real mock cloud (mock-cloud/) on a temp-file SQLite database, and a
 * small fetch client that plays "a human (or another system) using the cloud": list, create, recolor,
 * delete shapes, switch faults on and off, read the request log.
 *
 * This client is deliberately independent of the controller's own cloud client: the tests observe the
 * cloud the way a person would, not through the code under test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCloud, type RunningCloud } from "../../mock-cloud/src/server.ts";
import type {
  FaultRule,
  RequestLogEntry,
  RequestLogPage,
  Shape as CloudShape,
  ShapeCreate,
  ShapePage,
  ShapePatch,
} from "../../mock-cloud/src/schemas.ts";

export type { CloudShape, FaultRule, RequestLogEntry };

/** A shape to create: the cloud's create body, whose `tags` may be left out. */
export type NewCloudShape = Omit<ShapeCreate, "tags"> & { tags?: ShapeCreate["tags"] };

/** The API token of e2e clouds (and of the controllers talking to them). */
export const CLOUD_TOKEN = "e2e-cloud-token";
/** The admin token of e2e clouds (faults, request log). */
export const CLOUD_ADMIN_TOKEN = "e2e-cloud-admin-token";

/** A running mock cloud with a client, and how to stop it (the database file is deleted). */
export interface TestCloud extends CloudApi {
  readonly url: string;
  /** The SQLite file the cloud keeps its shapes in. */
  readonly dbPath: string;
  /** Stops the cloud and deletes its database. Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts a mock cloud on a free port with a fresh database file in a temp folder. */
export async function startTestCloud(): Promise<TestCloud> {
  const dir = await mkdtemp(join(tmpdir(), "shapes-e2e-cloud-"));
  const dbPath = join(dir, "cloud.db");
  let running: RunningCloud;
  try {
    // Heartbeats every 2 s keep the change feed visibly alive (the default is 15 s).
    running = await startCloud({
      token: CLOUD_TOKEN,
      adminToken: CLOUD_ADMIN_TOKEN,
      db: dbPath,
      heartbeatMs: 2_000,
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const api = new CloudApi(running.url);
  let stopping: Promise<void> | undefined;
  return Object.assign(api, {
    url: running.url,
    dbPath,
    stop: () =>
      (stopping ??= (async () => {
        await running.close();
        await rm(dir, { recursive: true, force: true });
      })()),
  });
}

/** A failed cloud call, with the HTTP status and the problem text the cloud sent. */
export class CloudCallError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = "CloudCallError";
    this.status = status;
  }
}

/** A fetch client for the cloud's API and admin endpoints. */
export class CloudApi {
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  /** Every shape in the cloud (all pages), ours and foreign, oldest first. */
  async list(): Promise<CloudShape[]> {
    const all: CloudShape[] = [];
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ limit: "1000", ...(token ? { pageToken: token } : {}) });
      const page = await this.#call<ShapePage>("GET", `/v1/shapes?${query.toString()}`);
      all.push(...page.items);
      token = page.nextPageToken;
    } while (token);
    return all;
  }

  /** The shape holding `name`, or undefined. */
  async byName(name: string): Promise<CloudShape | undefined> {
    return (await this.list()).find((s) => s.name === name);
  }

  /** The shape with `id`, or undefined when it does not exist. */
  async get(id: string): Promise<CloudShape | undefined> {
    try {
      return await this.#call<CloudShape>("GET", `/v1/shapes/${encodeURIComponent(id)}`);
    } catch (error) {
      if (error instanceof CloudCallError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Creates a shape (as someone other than the controller would). No `tags`: none. */
  create(shape: NewCloudShape): Promise<CloudShape> {
    return this.#call<CloudShape>("POST", "/v1/shapes", shape);
  }

  /** A JSON merge patch of a shape, unconditionally (a human in the console does not send If-Match). */
  patch(id: string, patch: ShapePatch): Promise<CloudShape> {
    return this.#call<CloudShape>("PATCH", `/v1/shapes/${encodeURIComponent(id)}`, patch);
  }

  /** Deletes a shape, unconditionally. */
  async delete(id: string): Promise<void> {
    await this.#call<undefined>("DELETE", `/v1/shapes/${encodeURIComponent(id)}`);
  }

  /** Replaces every fault rule (an empty list: a well-behaved cloud again). */
  async setFaults(rules: FaultRule[]): Promise<void> {
    await this.#call<unknown>("PUT", "/admin/faults", { rules }, true);
  }

  /** Removes every fault rule. */
  async clearFaults(): Promise<void> {
    await this.#call<undefined>("DELETE", "/admin/faults", undefined, true);
  }

  /** The write requests the cloud answered (POST, PUT, PATCH, DELETE under /v1), oldest first. */
  async requests(): Promise<RequestLogEntry[]> {
    return (await this.#call<RequestLogPage>("GET", "/admin/requests", undefined, true)).items;
  }

  /** Empties the request log (its `seq` keeps counting), so a test sees only the writes after this point. */
  async clearRequests(): Promise<void> {
    await this.#call<undefined>("DELETE", "/admin/requests", undefined, true);
  }

  async #call<T>(method: string, path: string, body?: unknown, admin = false): Promise<T> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${admin ? CLOUD_ADMIN_TOKEN : CLOUD_TOKEN}`,
        // Tells the test's own writes apart from the controller's in the request log.
        "x-client-id": "e2e-test",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) {
      throw new CloudCallError(
        `cannot ${method} ${path}: HTTP ${res.status}: ${await res.text()}`,
        res.status,
      );
    }
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
}

/** The request-log entries that wrote to the shape `id` (PATCH, PUT, DELETE of /v1/shapes/<id>). */
export function writesTo(entries: readonly RequestLogEntry[], id: string): RequestLogEntry[] {
  return entries.filter((e) => e.path === `/v1/shapes/${encodeURIComponent(id)}`);
}
