/**
 * Free loopback ports. A port found free here can be taken by someone else before our child binds it
 * (another test run picks ports the same way): callers detect {@link isAddressInUse} in the child's log
 * and start again on fresh ports.
 */
import { createServer, type Server } from "node:net";

/** The loopback address every control-plane component listens on. */
export const LOOPBACK = "127.0.0.1";

/**
 * Returns `count` distinct ports that are free on 127.0.0.1 right now. All listeners stay open until
 * every port is chosen, so the kernel cannot hand out the same port twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, LOOPBACK, () => resolve());
      });
    }
    return servers.map((s) => {
      const address = s.address();
      if (address === null || typeof address === "string") throw new Error("cannot read a listener's port");
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** True when nothing listens on `port` at 127.0.0.1 (we can bind it ourselves). */
export async function isPortFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, LOOPBACK, () => server.close(() => resolve(true)));
  });
}

/** True when a child's log says it could not bind its port (Go: "bind: address already in use"). */
export function isAddressInUse(log: string): boolean {
  return /address already in use/i.test(log);
}
