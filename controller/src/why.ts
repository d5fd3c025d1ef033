/**
 * `npm run why -- <namespace>/<name>`: why did the Shapes controller do what it did to this Shape? The
 * client is the library's (reconcile-kit's `runWhy`, which reads any plugin's `/why`); this file gives it
 * the Shapes controller's names and defaults. `npm run why -- --help` says more.
 */
import { runWhy, type SubjectHistory, type WhyCommand, type WhyIO, type WhySubject } from "reconcile-kit";
import {
  fetchHistory as fetchHistoryOf,
  parseWhyArgs as parseArgsOf,
  renderStory as renderStoryOf,
  whyUsage,
  type StoryOptions,
} from "reconcile-kit/parts";

export type { HistoryEntry, SubjectHistory } from "reconcile-kit";
export {
  historyUrl,
  parseHistory,
  WhyAccessDeniedError as AccessDeniedError,
  WhyNothingRecordedError as NothingRecordedError,
} from "reconcile-kit/parts";

/** The controller's default metrics address (its `--metrics-address` default; what `npm start` uses). */
export const DEFAULT_METRICS_URL = "http://127.0.0.1:8081";

/** The environment variable that holds a token when neither `--token` nor `--token-file` is given. */
export const TOKEN_ENV = "SHAPES_METRICS_TOKEN";

/** `npm run why` for Shapes. */
export const SHAPES_WHY: WhyCommand = {
  command: "npm run why",
  resource: { kind: "Shape", plural: "shapes", group: "shapes.example.com" },
  example: "default/red-square",
  defaultMetricsUrl: DEFAULT_METRICS_URL,
  metricsUrlEnv: "SHAPES_METRICS_URL",
  tokenEnv: TOKEN_ENV,
  startHint: "npm start runs one on 127.0.0.1:8081",
  listCommand: "npm run kubectl -- get shapes -n <namespace>",
  dottedNameHint: "the cloud names a Shape's shape <namespace>.<name>",
  log: { path: ".demo/logs/controller.log", of: "npm start's log" },
  moreExamples: [
    "kubectl -n shapes-system port-forward deploy/shapes-controller 8081:8081 &",
    "npm run why -- default/red-square --token-file ./token     # in a cluster (deploy/README.md)",
  ],
};

/** `npm run why -- --help`. */
export const USAGE = whyUsage(SHAPES_WHY);

/** Reads `npm run why`'s command line (see the library's `parseWhyArgs`). */
export const parseWhyArgs = (
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
) => parseArgsOf(SHAPES_WHY, argv, env);

/** Tells a Shape's history as `npm run why` does (see the library's `renderStory`). */
export const renderStory = (history: SubjectHistory, options: StoryOptions = {}): string =>
  renderStoryOf(history, { command: SHAPES_WHY, ...options });

/** Fetches a Shape's history from the controller at `metricsUrl` (see the library's `fetchHistory`). */
export const fetchHistory = (
  metricsUrl: string,
  subject: WhySubject,
  timeoutMs?: number,
  token?: string,
): Promise<unknown> => fetchHistoryOf(SHAPES_WHY, metricsUrl, subject, timeoutMs, token);

/** Runs `npm run why` with `argv`; resolves with the exit code. */
export const main = (argv: readonly string[], io: Partial<WhyIO> = {}): Promise<number> =>
  runWhy(SHAPES_WHY, argv, io);

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`npm run why: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
