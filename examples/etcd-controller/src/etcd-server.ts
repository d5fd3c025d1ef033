/**
 * A separate etcd for the example and its tests (not part of the controller): the `etcd` binary started on
 * two free ports of 127.0.0.1 and a data folder of its own, one member, plain http. `node
 * examples/etcd-controller/src/etcd-server.ts <path to etcd>` runs one in the foreground and prints its URL.
 *
 * It is started with `--max-request-bytes` small (8 KiB by default): a ConfigEntry whose value is larger is a
 * request etcd refuses for good (`etcdserver: request is too large`), the one refusal the example can show.
 * And with `--watch-progress-notify-interval` short (1 s by default, etcd's own is 10 minutes): a quiet watch
 * gets a progress notification, the sign of life the library's idle bound on a watch waits for, well
 * within that bound.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The default `--max-request-bytes`: a value above about this size is refused. */
export const MAX_REQUEST_BYTES = 8192;

/** The default `--watch-progress-notify-interval`, in ms: far below the library's watch idle bound (90 s). */
export const PROGRESS_NOTIFY_INTERVAL_MS = 1000;

/** Options of {@link EtcdServer.start}. */
export interface EtcdServerOptions {
  /** The etcd binary. */
  binary: string;
  /** etcd's `--max-request-bytes`. Default {@link MAX_REQUEST_BYTES}. */
  maxRequestBytes?: number;
  /** etcd's `--watch-progress-notify-interval`, in ms. Default {@link PROGRESS_NOTIFY_INTERVAL_MS}. */
  progressNotifyIntervalMs?: number;
  /** How long to wait for it to answer. Default 30 s. */
  readyTimeoutMs?: number;
  /** Where its output goes. Default: dropped. */
  onOutput?: (chunk: string) => void;
}

/** A running etcd. */
export class EtcdServer {
  readonly url: string;
  readonly #process: ChildProcess;
  readonly #dataDir: string;
  #exited: Promise<void>;

  private constructor(url: string, child: ChildProcess, dataDir: string) {
    this.url = url;
    this.#process = child;
    this.#dataDir = dataDir;
    this.#exited = new Promise((resolve) => child.once("exit", () => resolve()));
  }

  /** Starts etcd and resolves once it answers on its client URL; rejects (and cleans up) if it does not. */
  static async start(options: EtcdServerOptions): Promise<EtcdServer> {
    const dataDir = await mkdtemp(join(tmpdir(), "etcd-example-"));
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const url = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const child = spawn(
      options.binary,
      [
        "--name=example",
        `--data-dir=${join(dataDir, "data")}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=example=${peer}`,
        `--max-request-bytes=${options.maxRequestBytes ?? MAX_REQUEST_BYTES}`,
        `--watch-progress-notify-interval=${options.progressNotifyIntervalMs ?? PROGRESS_NOTIFY_INTERVAL_MS}ms`,
        "--log-level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = options.onOutput ?? (() => {});
    child.stdout?.setEncoding("utf8").on("data", output);
    child.stderr?.setEncoding("utf8").on("data", output);
    const server = new EtcdServer(url, child, dataDir);
    try {
      await server.#waitReady(options.readyTimeoutMs ?? 30_000);
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  /** Stops etcd (SIGTERM, then SIGKILL after 5 s) and removes its data. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#process.exitCode === null && this.#process.signalCode === null) {
      this.#process.kill("SIGTERM");
      const timer = setTimeout(() => this.#process.kill("SIGKILL"), 5_000);
      await this.#exited;
      clearTimeout(timer);
    }
    await rm(this.#dataDir, { recursive: true, force: true });
  }

  async #waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "no answer yet";
    while (Date.now() < deadline) {
      if (this.#process.exitCode !== null) throw new Error(`etcd exited with code ${this.#process.exitCode}`);
      try {
        const res = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(2_000) });
        if (res.ok) return;
        last = `HTTP ${res.status}`;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`etcd at ${this.url} did not answer in ${timeoutMs} ms (${last})`);
  }
}

/** A port of 127.0.0.1 free right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

if (import.meta.main) {
  const binary = process.argv[2];
  if (binary === undefined) {
    process.stderr.write(
      "usage: node examples/etcd-controller/src/etcd-server.ts <path to the etcd binary>\n",
    );
    process.exit(2);
  }
  const server = await EtcdServer.start({ binary, onOutput: (chunk) => process.stderr.write(chunk) });
  process.stdout.write(`${server.url}\n`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
