/**
 * The mock Shapes cloud, for the code that runs it or talks to it: the server (`startCloud`, `buildCloud`),
 * its command line and tracing, an HTTP client of its API, and the API's schemas (zod: each a value and the type of
 * what it validates). Test helpers are in `@shapes/mock-cloud/testing` (test-support.ts).
 */
export { buildCloud, type Cloud } from "./app.ts";
export { helpText, parseCommandLine } from "./cli-options.ts";
export { type RunningCloud, startCloud } from "./server.ts";
export { CLOUD_SERVICE_NAME } from "./tracer.ts";
export {
  CLOUD_TRACING_ENV,
  CLOUD_TRACING_HELP,
  type CloudTracing,
  cloudTracesEndpoint,
  startCloudTracing,
} from "./tracing.ts";
export { CONSOLE_CSP, STATIC_DIR } from "./console/console-app.ts";
export { allowedHostNames, isAllowedHost } from "./http/host-check.ts";
export {
  CloudCallError,
  CloudHttpClient,
  type CloudShape,
  type NewCloudShape,
  type ShapeCreate,
} from "./client.ts";
export {
  COLORS,
  FaultConfig,
  FaultRule,
  MAX_SIZE,
  MAX_SIZE_BY_TYPE,
  maxSizeOf,
  Problem,
  RequestLogEntry,
  Shape,
  SHAPE_TYPES,
  ShapePage,
} from "./schemas.ts";
