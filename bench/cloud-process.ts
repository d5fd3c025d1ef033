/**
 * The mock cloud as its OWN process (`node mock-cloud/src/cli.ts`) on a temp-file database, so its CPU
 * time and its event loop are its own: the bench's watches and workload never slow the cloud down, and
 * /proc tells how much CPU the cloud used. Spoken to through the stack's CloudApi (a person's view).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Child, spawnChild } from "@shapes/envtest";
import { CLOUD_ADMIN_TOKEN, CLOUD_TOKEN, CloudApi, REPO_ROOT, waitFor } from "@shapes/stack";

/** The cloud's entry point. */
const CLOUD_MAIN = join(REPO_ROOT, "mock-cloud", "src", "cli.ts");

/** A running cloud process and a client for it. */
export interface CloudProcess {
  readonly url: string;
  readonly pid: number;
  /** A client as a person would use it (list, patch, delete, /admin). */
  readonly api: CloudApi;
  readonly logFile: string;
  /** SIGTERM (the WAL is checkpointed), SIGKILL after 10 s. Safe to call twice. */
  stop(): Promise<void>;
}

/** The API token of the bench's clouds (the harness's, so its CloudApi works unchanged). */
export const BENCH_CLOUD_TOKEN = CLOUD_TOKEN;

/** Options of {@link startCloudProcess}. */
export interface CloudProcessOptions {
  /** Names the log and database files: `<name>.log`, `<name>.db`. Default "cloud". */
  name?: string;
  /** Environment variables over the bench's own (e.g. OTEL_EXPORTER_OTLP_ENDPOINT). */
  env?: Readonly<Record<string, string>>;
}

/** Starts the cloud on a free port with its database in `dir`; resolves once it listens. */
export async function startCloudProcess(
  dir: string,
  { name = "cloud", env = {} }: CloudProcessOptions = {},
): Promise<CloudProcess> {
  const logFile = join(dir, `${name}.log`);
  const child: Child = await spawnChild({
    name: "mock-cloud",
    command: process.execPath,
    args: [
      CLOUD_MAIN,
      "--port=0",
      `--db=${join(dir, `${name}.db`)}`,
      `--token=${CLOUD_TOKEN}`,
      `--admin-token=${CLOUD_ADMIN_TOKEN}`,
      "--log-level=info",
    ],
    logFile,
    env: { ...env },
  });
  let url: string;
  try {
    url = await waitFor(
      "the mock cloud to log its URL",
      async () => {
        const status = child.exitStatus();
        if (status) throw new Error(`the mock cloud exited (code ${status.code}, signal ${status.signal})`);
        const line = (await readFile(logFile, "utf8"))
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { url?: unknown })
          .find((l) => typeof l.url === "string");
        if (typeof line?.url !== "string") throw new Error("no 'mock cloud listening' line yet");
        return line.url;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
  } catch (error) {
    const tail = await child.logTail(20);
    await child.stop(2_000);
    throw new Error(`cannot start the mock cloud: ${(error as Error).message}\n--- log tail ---\n${tail}`, {
      cause: error,
    });
  }
  let stopping: Promise<void> | undefined;
  return {
    url,
    pid: child.pid,
    api: new CloudApi(url),
    logFile,
    stop: () => (stopping ??= child.stop(10_000).then(() => undefined)),
  };
}
