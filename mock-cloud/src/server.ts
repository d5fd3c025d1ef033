/**
 * Starts a mock cloud on a port: `startCloud(options)` resolves once it listens, with its URL and a
 * `close()` that ends the watch streams, closes every connection and the database (WAL checkpointed).
 */
import { mkdirSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import { buildCloud } from "./app.ts";
import { DEFAULTS, type CloudOptions } from "./options.ts";

/** A running mock cloud. */
export interface RunningCloud {
  /** Base URL, e.g. http://127.0.0.1:40123 */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  /** Stops listening, ends every connection and closes the database. Safe to call twice. */
  close(): Promise<void>;
}

/** Starts a mock cloud. Listens on a free port unless `options.port` says otherwise. */
export async function startCloud(options: CloudOptions): Promise<RunningCloud> {
  const db = options.db ?? DEFAULTS.db;
  if (db !== ":memory:") mkdirSync(dirname(db), { recursive: true });
  const cloud = buildCloud(options);
  const server = createServer(cloud.app);
  server.keepAliveTimeout = 5_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? DEFAULTS.port, options.host ?? DEFAULTS.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    cloud.dispose();
    throw err;
  }
  const { port, address, family } = server.address() as AddressInfo;
  const host = family === "IPv6" ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        cloud.deps.feed.closeAll();
        server.close(() => {
          cloud.dispose();
          resolve();
        });
        server.closeIdleConnections();
        // Requests in flight get a moment to finish; then the connections go.
        setTimeout(() => server.closeAllConnections(), 1000).unref();
      });
      return closing;
    },
  };
}
