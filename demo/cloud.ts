/**
 * The demo's mock cloud: the real mock-cloud server (mock-cloud/src/server.ts), in the `npm start`
 * process itself, on a fixed port (8080 by default) with its database in the state folder, so shapes,
 * the revision counter and the change history survive a restart.
 */
import { pino } from "pino";
import { type RunningCloud, startCloud } from "@shapes/mock-cloud";
import { display, type DemoPaths } from "./paths.ts";

/** Options of {@link startDemoCloud}. */
export interface DemoCloudOptions {
  paths: DemoPaths;
  /** 0: any free port. */
  port: number;
  /** The API's token (the controller's). */
  token: string;
  /** The token of /admin (faults, request log), which the controller is not given. */
  adminToken: string;
}

/** Starts the cloud; a taken port is a clear "cannot ..." error that names the way out. */
export async function startDemoCloud({
  paths,
  port,
  token,
  adminToken,
}: DemoCloudOptions): Promise<RunningCloud> {
  const logger = pino(
    { name: "mock-cloud", level: "info" },
    pino.destination({ dest: paths.cloudLog, mkdir: true, sync: true }),
  );
  try {
    // Two tokens: the controller holds the API's only, so it cannot switch faults or read the request log.
    return await startCloud({ token, adminToken, db: paths.cloudDb, port, logger });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") {
      throw new Error(
        `cannot start the mock cloud on 127.0.0.1:${port}: the port is taken (another npm start? ` +
          `stop it, or choose another port: npm start -- --port 8090)`,
        { cause: error },
      );
    }
    if (code === "EACCES") {
      throw new Error(`cannot start the mock cloud on port ${port}: not permitted (use a port above 1023)`, {
        cause: error,
      });
    }
    throw new Error(
      `cannot start the mock cloud (database ${display(paths.cloudDb)}): ${(error as Error).message}`,
      { cause: error },
    );
  }
}
