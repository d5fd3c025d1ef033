/**
 * `npm run why -- <namespace>/<name>`: why did the controller do what it did to this object?
 *
 * The controller keeps a bounded in-memory history of its recent decisions per object and serves it,
 * read-only, on its metrics port (`GET /why/<namespace>/<name>`). This command fetches that history and
 * tells it as a short story a person can scan: for each reconcile, what the controller saw, what it decided
 * and why, the calls it made, the Events it recorded and the result.
 *
 * A controller run with `--metrics-auth=kubernetes` (the default in a cluster) asks for a bearer token of a
 * user who may get the object: `--token-file`, `--token` or `SHAPES_METRICS_TOKEN` sends one, and its 401 or
 * 403 is told in one line (who, and what is missing).
 *
 * Exit codes: 0 told; 1 the controller could not be reached, refused, has nothing for that object, or
 * answered something unreadable; 2 bad command line.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import type { HistoryEntry, SubjectHistory } from "reconcile-kit";

export type { HistoryEntry, SubjectHistory };

/** One object, as `<namespace>/<name>`. */
export interface Subject {
  namespace: string;
  name: string;
}

/** What `npm run why` was asked to do. */
export interface WhyOptions {
  subject: Subject;
  /** The controller's metrics base URL (http or https). */
  metricsUrl: string;
  /** Print the controller's JSON instead of the story. */
  json: boolean;
  /** A bearer token for a controller that asks for one (`--metrics-auth=kubernetes`); absent: none sent. */
  token?: string;
}

/** A bad command line: the message starts with "cannot" and says what to give instead. Exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The controller answered 404: it keeps nothing for the object. `message` is the controller's. */
export class NothingRecordedError extends Error {
  override name = "NothingRecordedError";
}

/** The controller refused: 401 (no token, or one the API server did not accept) or 403 (not allowed). */
export class AccessDeniedError extends Error {
  override name = "AccessDeniedError";
}

/** The controller's default metrics address (its `--metrics-address` default; what `npm start` uses). */
export const DEFAULT_METRICS_URL = "http://127.0.0.1:8081";
/** The environment variable that sets the metrics URL when `--metrics-url` is not given. */
export const METRICS_URL_ENV = "SHAPES_METRICS_URL";
/** The environment variable that holds a token when neither `--token` nor `--token-file` is given. */
export const TOKEN_ENV = "SHAPES_METRICS_TOKEN";
/** How long to wait for the controller's answer. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** `npm run why -- --help`. */
export const USAGE = `Usage: npm run why -- <namespace>/<name> [options]

Tells why the controller did what it did to one object: its recent reconciles, oldest first, each with
what it saw, what it decided and why, the calls it made, the Events it recorded, and the result.
The controller keeps this in memory (a bounded number of recent reconciles per object, dropped a while
after the object is gone) and serves it on its metrics port at /why/<namespace>/<name>.

Options:
  --metrics-url <url>  The controller's metrics address (default ${DEFAULT_METRICS_URL}, where
                       npm start runs it; env ${METRICS_URL_ENV}). host:port works too.
  --token-file <path>  A bearer token, for a controller that asks for one (--metrics-auth=kubernetes,
                       the default in a cluster): a token of a user who may get the Shape, e.g.
                       kubectl create token <service account> -n <namespace> > token.
  --token <token>      The same, given inline (it shows in ps and in your shell's history; env
                       ${TOKEN_ENV} is read when neither is given).
  --json               Print the history as the controller sent it (JSON), for scripts and jq.
  -h, --help           Show this help.

Times are in your local time zone (TZ=UTC npm run why -- ... for UTC).

Examples:
  npm run why -- default/red-square
  npm run why -- default/red-square --metrics-url 127.0.0.1:9091
  npm run why -- default/red-square --json | jq '.entries[-1].decided'
  kubectl -n shapes-system port-forward deploy/shapes-controller 8081:8081 &
  npm run why -- default/red-square --token-file ./token     # in a cluster (deploy/README.md)

Exit codes: 0 told; 1 the controller could not be reached or keeps nothing for the object; 2 bad command line.
`;

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const EXAMPLE = "e.g. npm run why -- default/red-square";

/**
 * Reads `npm run why`'s command line (and {@link METRICS_URL_ENV} from `env`). Throws a {@link UsageError}
 * ("cannot …", one line a person can act on) for anything it cannot use.
 */
export function parseWhyArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): { help: true } | { help: false; options: WhyOptions } {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        "metrics-url": { type: "string" },
        token: { type: "string" },
        "token-file": { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (error) {
    throw new UsageError(
      `cannot read the command line: ${(error as Error).message.split(". ")[0]} (see --help)`,
    );
  }
  if (values.help) return { help: true };
  if (positionals.length === 0) {
    throw new UsageError(`cannot tell which object: give one <namespace>/<name>, ${EXAMPLE}`);
  }
  if (positionals.length > 1) {
    const given = positionals.map((p) => JSON.stringify(p)).join(", ");
    throw new UsageError(
      `cannot explain ${positionals.length} objects at once (${given}): give exactly one <namespace>/<name>`,
    );
  }
  const subject = parseSubject(positionals[0] ?? "");
  const fromEnv = env[METRICS_URL_ENV];
  const metricsUrl =
    values["metrics-url"] !== undefined
      ? parseMetricsUrl(values["metrics-url"], "--metrics-url")
      : fromEnv !== undefined && fromEnv !== ""
        ? parseMetricsUrl(fromEnv, METRICS_URL_ENV)
        : DEFAULT_METRICS_URL;
  const token = readToken(values.token, values["token-file"], env[TOKEN_ENV]);
  return {
    help: false,
    options: { subject, metricsUrl, json: values.json, ...(token === undefined ? {} : { token }) },
  };
}

/** The token from `--token`, `--token-file` or the environment (in that order), trimmed; undefined for none. */
function readToken(
  inline: string | undefined,
  file: string | undefined,
  fromEnv: string | undefined,
): string | undefined {
  if (inline !== undefined && file !== undefined) {
    throw new UsageError("cannot use --token and --token-file at once: give one of them");
  }
  let token = inline ?? fromEnv;
  let source = inline !== undefined ? "--token" : TOKEN_ENV;
  if (file !== undefined) {
    source = `the token file ${file}`;
    try {
      token = readFileSync(file, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new UsageError(`cannot read the token file ${JSON.stringify(file)}: ${code}`);
    }
  }
  if (token === undefined) return undefined;
  token = token.trim();
  if (token === "") {
    if (inline === undefined && file === undefined) return undefined; // an empty variable: none
    throw new UsageError(`cannot use ${source}: it is empty`);
  }
  if (/\s/.test(token)) throw new UsageError(`cannot use ${source}: a token has no spaces or line breaks`);
  return token;
}

/** Reads `<namespace>/<name>`; throws a {@link UsageError} saying what is wrong with it. */
export function parseSubject(text: string): Subject {
  const quoted = JSON.stringify(text);
  const parts = text.split("/");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") {
    const dot = text.indexOf(".");
    if (parts.length === 1 && dot > 0 && dot < text.length - 1) {
      const guess = `${text.slice(0, dot)}/${text.slice(dot + 1)}`;
      throw new UsageError(
        `cannot read ${quoted}: give <namespace>/<name>; did you mean ${guess}? (the cloud names a Shape's shape <namespace>.<name>)`,
      );
    }
    throw new UsageError(`cannot read ${quoted}: give <namespace>/<name>, ${EXAMPLE}`);
  }
  const [namespace = "", name = ""] = parts;
  if (namespace.length > 63 || !NAMESPACE.test(namespace)) {
    throw new UsageError(
      `cannot read ${quoted}: ${JSON.stringify(namespace)} is not a namespace (lowercase letters, digits and "-", at most 63)`,
    );
  }
  if (name.length > 253 || !NAME.test(name)) {
    throw new UsageError(
      `cannot read ${quoted}: ${JSON.stringify(name)} is not an object name (lowercase letters, digits, "-" and ".", at most 253)`,
    );
  }
  return { namespace, name };
}

/** An http(s) URL from `text` (a bare `host:port` means http://host:port), or a {@link UsageError}. */
function parseMetricsUrl(text: string, source: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  const url = URL.canParse(withScheme) ? new URL(withScheme) : undefined;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    throw new UsageError(
      `cannot use ${source} ${JSON.stringify(text)}: give the controller's metrics address as an http(s) URL, e.g. ${DEFAULT_METRICS_URL}`,
    );
  }
  return url.href.replace(/\/$/, "");
}

/** The URL of `subject`'s history under the metrics base URL (which may have a path of its own). */
export function historyUrl(metricsUrl: string, subject: Subject): string {
  const base = metricsUrl.endsWith("/") ? metricsUrl : `${metricsUrl}/`;
  const path = `why/${encodeURIComponent(subject.namespace)}/${encodeURIComponent(subject.name)}`;
  return new URL(path, base).href;
}

/**
 * Fetches `subject`'s history from the controller at `metricsUrl` and returns its JSON, unchecked (see
 * {@link parseHistory}); with `token`, as `Authorization: Bearer <token>`. Throws {@link NothingRecordedError}
 * for the controller's 404, {@link AccessDeniedError} for its 401 or 403 (one line: who, and what is
 * missing), and an Error ("cannot …") when the controller cannot be reached, does not answer in time, or
 * answers something else.
 */
export async function fetchHistory(
  metricsUrl: string,
  subject: Subject,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  token?: string,
): Promise<unknown> {
  const url = historyUrl(metricsUrl, subject);
  let response: Response;
  let body: string;
  try {
    response = await fetch(url, {
      headers: {
        accept: "application/json",
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
    body = await response.text();
  } catch (error) {
    const failure = fetchFailure(error, timeoutMs);
    const hint = /ENOTFOUND|EAI_AGAIN/.test(failure)
      ? "is the address right?"
      : "is it running? (npm start runs one on 127.0.0.1:8081)";
    throw new Error(`cannot reach the controller at ${metricsUrl}: ${failure} — ${hint}`, { cause: error });
  }
  let json: unknown;
  let notJson: string | undefined;
  try {
    json = JSON.parse(body);
  } catch (error) {
    notJson = (error as Error).message;
  }
  if (response.status === 404) {
    const message = errorField(json);
    if (message !== undefined) throw new NothingRecordedError(message);
    throw new Error(
      `cannot read decisions from ${url}: it answered 404 without saying why — is that the controller's metrics address, and is the controller new enough to serve /why?`,
    );
  }
  if (response.status === 401 || response.status === 403) {
    throw accessDenied(response.status, errorField(json) ?? firstLine(body), metricsUrl, subject, token);
  }
  if (!response.ok) {
    const said = errorField(json) ?? firstLine(body);
    throw new Error(
      `cannot read decisions from ${url}: it answered ${response.status}${said ? `: ${said}` : ""}`,
    );
  }
  if (notJson !== undefined) {
    throw new Error(
      `cannot read the controller's answer from ${url}: it is not JSON (${notJson}) — is that the controller's metrics address?`,
    );
  }
  return json;
}

/** The one line that tells a 401 or 403: what the controller said, and what to do about it. */
function accessDenied(
  status: 401 | 403,
  said: string,
  metricsUrl: string,
  subject: Subject,
  token: string | undefined,
): AccessDeniedError {
  const words = clean(said) || (status === 401 ? "unauthorized" : "forbidden");
  const shape = `get on shapes in the namespace ${subject.namespace}`;
  if (status === 403) {
    return new AccessDeniedError(
      `the controller at ${metricsUrl} refused: ${words} — it tells a Shape's story to whoever may get that Shape: use a token of a user with ${shape} (a Role and RoleBinding)`,
    );
  }
  if (token === undefined) {
    return new AccessDeniedError(
      `the controller at ${metricsUrl} asks for a token (${words}) — give --token-file <file> or ${TOKEN_ENV}: a token of a user with ${shape}, e.g. from kubectl create token <service account> -n <namespace>`,
    );
  }
  return new AccessDeniedError(
    `the controller at ${metricsUrl} did not accept the token (${words}) — is it a token of that cluster, and not expired? (kubectl create token makes a fresh one)`,
  );
}

/** Why a fetch failed, in a few words: the socket error's code and message rather than "fetch failed". */
function fetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer within ${timeoutMs} ms`;
  }
  let cause: unknown = error;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (cause.message !== "") return cause.message;
    if (code !== undefined) return code;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The `error` string of a JSON error body, if it has one. */
function errorField(json: unknown): string | undefined {
  if (typeof json !== "object" || json === null || !("error" in json)) return undefined;
  return typeof json.error === "string" && json.error !== "" ? json.error : undefined;
}

function firstLine(text: string): string {
  return clean(text.trim().split("\n")[0] ?? "").slice(0, 200);
}

const time = z.string().refine((s) => !Number.isNaN(Date.parse(s)), "expected an RFC 3339 time");
const historySchema = z.object({
  subject: z.string(),
  replica: z.string().optional(),
  entries: z.array(
    z.object({
      at: time,
      lastAt: time,
      repeats: z.number().int().min(1),
      reconcileId: z.string(),
      traceId: z.string().optional(),
      controller: z.string(),
      key: z.string(),
      subject: z.string(),
      observed: z.array(z.string()),
      decided: z.array(z.object({ branch: z.string(), why: z.string() })),
      calls: z.array(
        z.object({ call: z.string(), target: z.string().optional(), outcome: z.string(), ms: z.number() }),
      ),
      events: z.array(z.string()),
      result: z.string(),
      subjectState: z.enum(["present", "gone"]).optional(),
      ms: z.number(),
    }),
  ),
  goneAt: time.optional(),
}) satisfies z.ZodType<SubjectHistory>;

/**
 * Checks that `json` is a {@link SubjectHistory}; throws "cannot read the controller's answer: <where>: <what>"
 * otherwise (e.g. a controller of another version).
 */
export function parseHistory(json: unknown): SubjectHistory {
  const parsed = historySchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = (issue?.path ?? [])
    .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`))
    .join("");
  throw new Error(
    `cannot read the controller's answer: ${where || "the body"}: ${issue?.message ?? "not a history"}`,
  );
}

/** How {@link renderStory} shows times and lays out lines. */
export interface StoryOptions {
  /** The time now: when given, the story says how long ago the last reconcile was (and the object gone). */
  now?: Date | undefined;
  /** The IANA time zone times are shown in (default "UTC"). */
  timeZone?: string | undefined;
  /** Lines longer than this wrap between items (default 100). */
  width?: number | undefined;
}

const NBSP = "\u00a0";
const LABEL = 9; // "  decided  " → the value column starts after 2 + 9 characters

/**
 * Tells `history` as a short story: a headline, then one block per entry (oldest first): when, which
 * controller, its reconcile id (and trace id, when there is one), what it saw, decided, did, told (Events)
 * and the result; then when the object was found gone, and where to find more. Pure: the same input gives
 * the same text.
 */
export function renderStory(history: SubjectHistory, options: StoryOptions = {}): string {
  const timeZone = options.timeZone ?? "UTC";
  const width = options.width ?? 100;
  const when = clockIn(timeZone);
  const subject = clean(history.subject);
  const lines: string[] = [];

  if (history.entries.length === 0) {
    lines.push(`${subject}: no reconciles kept`);
  } else {
    const reconciles = history.entries.reduce((sum, e) => sum + e.repeats, 0);
    const folded = reconciles === history.entries.length ? "" : ` in ${history.entries.length} entries`;
    const first = when(history.entries[0]?.at ?? "");
    const last = history.entries.at(-1);
    const ago = options.now && last ? `, the last ${since(last.lastAt, options.now)}` : "";
    const by = history.replica ? ` by replica ${clean(history.replica)}` : "";
    lines.push(
      `${subject}: ${plural(reconciles, "reconcile")}${by} kept${folded}, oldest first (times ${timeZone}, ${first.date}${ago})`,
    );
  }

  const controllerWidth = Math.max(0, ...history.entries.map((e) => clean(e.controller).length));
  let date = history.entries[0] ? when(history.entries[0].at).date : "";
  for (const entry of history.entries) {
    lines.push("");
    const start = when(entry.at);
    const head = [start.date === date ? start.time : `${start.date} ${start.time}`];
    date = start.date;
    head.push(clean(entry.controller).padEnd(controllerWidth));
    if (entry.repeats > 1) {
      const end = when(entry.lastAt);
      head.push(`×${entry.repeats} until ${end.date === date ? end.time : `${end.date} ${end.time}`}`);
      date = end.date;
    }
    head.push(`reconcile ${clean(entry.reconcileId)}`);
    if (entry.traceId) head.push(`trace ${clean(entry.traceId)}`);
    if (entry.key !== history.subject && entry.key !== "") head.push(`key ${clean(entry.key)}`);
    lines.push(head.join("  "));

    if (entry.observed.length > 0) lines.push(...field("saw", entry.observed.map(clean), "; ", width));
    for (const [i, d] of entry.decided.entries()) {
      const text = d.why === "" ? clean(d.branch) : `${clean(d.branch)}: ${clean(d.why)}`;
      lines.push(...field(i === 0 ? "decided" : "", [text], "", width));
    }
    const calls = entry.calls.map((c) => {
      const what = c.target ? `${clean(c.call)} ${clean(c.target)}` : clean(c.call);
      const outcome = c.outcome === "ok" ? "ok" : `FAILED ${clean(c.outcome)}`;
      return `${what} (${outcome}, ${Math.round(c.ms)} ms)`;
    });
    lines.push(...field("did", calls.length > 0 ? calls : ["nothing"], " · ", width));
    for (const [i, e] of entry.events.entries())
      lines.push(...field(i === 0 ? "told" : "", [clean(e)], "", width));
    const result = `${clean(entry.result)} (${Math.round(entry.ms)} ms)${entry.subjectState === "gone" ? "; found the object gone" : ""}`;
    lines.push(...field("result", [result], "", width));
  }

  if (history.goneAt !== undefined) {
    const gone = when(history.goneAt);
    const ago = options.now ? `, ${since(history.goneAt, options.now)}` : "";
    lines.push(
      "",
      `Gone: found gone at ${gone.date} ${gone.time}${ago}; this history is dropped a while later.`,
    );
  }

  // A command is never broken across lines (NBSP between its words until wrapped), so it can be copied.
  const last = history.entries.at(-1)?.reconcileId;
  const grep = last
    ? `, e.g. ${`grep ${clean(last)} .demo/logs/controller.log`.replaceAll(" ", NBSP)} for npm start's log`
    : "";
  const traces = history.entries.some((e) => e.traceId)
    ? "a trace id opens its reconcile in your tracing backend."
    : "with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT), each reconcile also has a trace id to open in your tracing backend.";
  const more =
    `More: a reconcile id is on the controller's log lines (reconcile_id) and on its Events (annotation ` +
    `shapes.example.com/reconcile-id)${grep}; ${traces}`;
  lines.push("", ...wrapWords(more, width, "      ").map((line) => line.replaceAll(NBSP, " ")));
  return `${lines.join("\n")}\n`;
}

/** `  label    a; b; c`, wrapped between items at `width`, continuation lines under the first item. */
function field(label: string, items: readonly string[], separator: string, width: number): string[] {
  const indent = " ".repeat(2 + LABEL);
  const lines: string[] = [];
  let line = `  ${label.padEnd(LABEL)}`;
  let empty = true;
  for (const item of items) {
    if (!empty && line.length + separator.length + item.length > width) {
      lines.push(line.trimEnd() + separator.trimEnd());
      line = indent;
      empty = true;
    }
    line += empty ? item : separator + item;
    empty = false;
  }
  lines.push(line);
  return lines;
}

/** `text` wrapped between words at `width`, continuation lines starting with `indent`. */
function wrapWords(text: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line.trim() !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent + word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines;
}

/** A formatter of RFC 3339 times into a date (YYYY-MM-DD) and a clock time (HH:MM:SS.mmm) in `timeZone`. */
function clockIn(timeZone: string): (at: string) => { date: string; time: string } {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      fractionalSecondDigits: 3,
      hourCycle: "h23",
    });
  } catch (error) {
    throw new Error(
      `cannot show times in time zone ${JSON.stringify(timeZone)}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return (at) => {
    const ms = Date.parse(at);
    if (Number.isNaN(ms)) return { date: "?", time: clean(at) };
    const p: Record<string, string> = {};
    for (const part of format.formatToParts(ms)) p[part.type] = part.value;
    return {
      date: `${p.year}-${p.month}-${p.day}`,
      time: `${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}`,
    };
  };
}

/** "12 s ago", "3 min ago", "2 h ago", "4 d ago". */
function since(at: string, now: Date): string {
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(at)) / 1000));
  if (Number.isNaN(s)) return "at an unknown time";
  if (s < 60) return `${s} s ago`;
  if (s < 7200) return `${Math.floor(s / 60)} min ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * A string from the controller made safe for a terminal: line breaks and tabs become spaces, and other
 * control characters (an escape sequence in a cloud error message, say) are shown escaped, never sent.
 */
function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\r\n\t]+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/** Where `npm run why` writes and what it knows of the world; tests pass their own. */
export interface WhyIO {
  env: Readonly<Record<string, string | undefined>>;
  out: (text: string) => void;
  err: (text: string) => void;
  now: () => Date;
  /** The time zone of the story (default: the machine's). */
  timeZone: string;
  timeoutMs: number;
}

function defaultIO(): WhyIO {
  return {
    env: process.env,
    out: (text) => {
      // A reader that went away (npm run why ... | head) is not an error.
      process.stdout.once("error", () => {});
      process.stdout.write(text);
    },
    err: (text) => process.stderr.write(text),
    now: () => new Date(),
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}

/** Runs `npm run why` with `argv`; resolves with the exit code (never rejects for a person's mistake). */
export async function main(argv: readonly string[], io: Partial<WhyIO> = {}): Promise<number> {
  const { env, out, err, now, timeZone, timeoutMs } = { ...defaultIO(), ...io };
  let options: WhyOptions;
  try {
    const parsed = parseWhyArgs(argv, env);
    if (parsed.help) {
      out(USAGE);
      return 0;
    }
    options = parsed.options;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err(`npm run why: ${error.message}\n`);
    return 2;
  }
  const { namespace, name } = options.subject;
  try {
    const json = await fetchHistory(options.metricsUrl, options.subject, timeoutMs, options.token);
    if (options.json) {
      out(`${JSON.stringify(json, null, 2)}\n`);
      return 0;
    }
    out(renderStory(parseHistory(json), { now: now(), timeZone }));
    return 0;
  } catch (error) {
    if (error instanceof NothingRecordedError) {
      err(
        `npm run why: ${clean(error.message)}\n` +
          `  The controller keeps the recent decisions of each object it reconciled, and drops them a while\n` +
          `  after the object is gone. Is ${namespace}/${name} the right name? npm run kubectl -- get shapes -n ${namespace}\n`,
      );
      return 1;
    }
    err(`npm run why: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

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
