/**
 * The mock cloud's command: `npm run cloud -- --port 8080 --db ./data/cloud.db --token T` (see --help).
 * Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 1 when it cannot start, 2 for a bad command line
 * (or a bad `OTEL_*` variable).
 *
 * Tracing is decided here, by the process, not by `startCloud` (tests and the local stack start clouds
 * in-process): `startCloudTracing` (tracing.ts) registers a tracer provider when an OTLP endpoint is
 * configured, before the server is loaded, and its `shutdown()` flushes the last spans after the server
 * closed.
 */
import { pino } from "pino";
import { helpText, parseCommandLine, UsageError } from "./cli-options.ts";
import { startCloudTracing } from "./tracing.ts";

async function main(): Promise<number> {
  let cmd;
  try {
    cmd = parseCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`mock-cloud: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (cmd.kind === "help") {
    process.stdout.write(helpText());
    return 0;
  }

  // The tracing SDK (only with an endpoint) and the server are loaded only now, so that --help and usage
  // errors answer without them.
  let tracing;
  try {
    tracing = await startCloudTracing();
  } catch (err) {
    process.stderr.write(`mock-cloud: ${(err as Error).message}\n`);
    return 2;
  }
  const logger = pino({ name: "mock-cloud", level: cmd.logLevel });
  if (tracing) logger.info({ traces: tracing.endpoint }, `tracing: spans go to ${tracing.endpoint}`);
  const { startCloud } = await import("./server.ts");
  let cloud;
  try {
    cloud = await startCloud({
      port: cmd.port,
      host: cmd.host,
      allowedHosts: cmd.allowedHosts,
      db: cmd.db,
      token: cmd.token,
      ...(cmd.adminToken === undefined ? {} : { adminToken: cmd.adminToken }),
      historyLimit: cmd.historyLimit,
      heartbeatMs: cmd.heartbeatMs,
      requestLogLimit: cmd.requestLogLimit,
      bodyLimitBytes: cmd.bodyLimitBytes,
      logger,
    });
  } catch (err) {
    process.stderr.write(`mock-cloud: cannot start: ${(err as Error).message}\n`);
    await tracing?.shutdown();
    return 1;
  }
  logger.info(
    {
      url: cloud.url,
      db: cmd.db,
      persistent: cmd.db !== ":memory:",
      historyLimit: cmd.historyLimit,
      admin: cmd.adminToken === undefined ? "closed: no admin token" : "the admin token",
    },
    `mock cloud listening on ${cloud.url}`,
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, "second signal: exiting now");
        resolve(1);
        return;
      }
      stopping = true;
      logger.info({ signal }, "shutting down");
      void (async () => {
        let code = 0;
        try {
          await cloud.close();
          logger.info("stopped (database closed)");
        } catch (err) {
          logger.error({ err }, "cannot shut down cleanly");
          code = 1;
        }
        // Every request, and so its span, has ended once the server closed: now flush the last spans.
        await tracing?.shutdown();
        resolve(code);
      })();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

process.exitCode = await main();
if (process.exitCode !== 0) process.exit();
