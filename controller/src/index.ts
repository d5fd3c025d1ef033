/**
 * The Shapes controller, for the code around it (the stack, the demo, the tests, the bench): the Shapes API's
 * names and types, the plugin and the cloud client, the controller's configuration and node flags, and
 * `npm run why`. Its process is main.ts; test helpers are in `@shapes/controller/testing` (shapes/testing.ts).
 */
export { loadConfig, OPTIONS, parseDuration } from "./config.ts";
export { CONTROLLER_NODE_FLAGS } from "./node-flags.ts";
export {
  ADOPTION_POLICY_ANNOTATION,
  cloudNameOf,
  type Condition,
  type DeletionPolicy,
  FINALIZER,
  GROUP,
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  type Shape,
  type ShapeRef,
  shapeRefNameOf,
  SHAPEREFS,
  SHAPES,
  type ShapeSpec,
  type ShapeStatus,
  TAG_NAME,
  TAG_OWNER,
  TAG_UID,
  VERSION,
} from "./shapes/api.ts";
export { CloudClient, type CloudShape } from "./shapes/cloud/client.ts";
export { PAGE_SIZE, shapesListWatch, shapesPlugin } from "./shapes/plugin.ts";
export {
  AccessDeniedError,
  DEFAULT_METRICS_URL,
  fetchHistory,
  main,
  NothingRecordedError,
  parseHistory,
  renderStory,
  TOKEN_ENV,
} from "./why.ts";
