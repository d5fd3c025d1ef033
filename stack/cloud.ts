/**
 * The cloud side of a stack: a real mock cloud (mock-cloud/) on a temp-file SQLite database, and the
 * outside-in client (mock-cloud/src/client.ts) that plays "a human (or another system) using the cloud":
 * list, create, recolor, delete shapes, switch faults on and off, read the request log.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CloudCallError,
  CloudHttpClient,
  type CloudShape,
  type FaultRule,
  type NewCloudShape,
  type RequestLogEntry,
  type RunningCloud,
  startCloud,
} from "@shapes/mock-cloud";

export type { CloudShape, FaultRule, NewCloudShape, RequestLogEntry };
export { CloudCallError };

/** The API token of the stack's clouds (and of the controllers talking to them; the value predates stack/). */
export const CLOUD_TOKEN = "e2e-cloud-token";
/** The admin token of the stack's clouds (faults, request log). */
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
export async function startTestCloud(options: { requestLogLimit?: number } = {}): Promise<TestCloud> {
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
      ...(options.requestLogLimit === undefined ? {} : { requestLogLimit: options.requestLogLimit }),
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

/**
 * The outside-in cloud client (mock-cloud/src/client.ts) with the stack's tokens and the tests' own client id
 * (`e2e-test`).
 */
export class CloudApi extends CloudHttpClient {
  constructor(baseUrl: string) {
    // The client id tells the test's own writes apart from the controller's in the request log.
    super({ baseUrl, token: CLOUD_TOKEN, adminToken: CLOUD_ADMIN_TOKEN, clientId: "e2e-test" });
  }
}

/** The request-log entries that wrote to the shape `id` (PATCH, PUT, DELETE of /v1/shapes/<id>). */
export function writesTo(entries: readonly RequestLogEntry[], id: string): RequestLogEntry[] {
  return entries.filter((e) => e.path === `/v1/shapes/${encodeURIComponent(id)}`);
}
