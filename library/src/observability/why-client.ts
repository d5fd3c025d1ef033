/**
 * The client of a controller's `/why`: `npm run why -- <namespace>/<name>` for any plugin's resource.
 *
 * The manager keeps a bounded in-memory history of its recent decisions per object and serves it, read-only,
 * on its metrics port (`GET /why/<namespace>/<name>`, keyed by the object's key, whatever its kind). This
 * module fetches that history and tells it as a short story a person can scan: for each reconcile, what the
 * controller saw, what it decided and why, the calls it made, the Events it recorded and the result. A
 * plugin's command is {@link runWhy} with a {@link WhyCommand} that names its resource and defaults.
 *
 * A controller run with `--metrics-auth=kubernetes` (the default in a cluster) asks for a bearer token of a
 * user who may get the object: `--token-file`, `--token` or the command's token variable sends one, and its
 * 401 or 403 is told in one line (who, and what is missing).
 *
 * Exit codes: 0 told; 1 the controller could not be reached, refused, has nothing for that object, or
 * answered something unreadable; 2 bad command line.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { SubjectHistory } from "./history.ts";

/** One object, as `<namespace>/<name>`. */
export interface WhySubject {
  /** The object's namespace. */
  namespace: string;
  /** The object's name. */
  name: string;
}

/**
 * What a plugin's `why` command knows of its controller: the resource it reconciles, where its metrics port
 * listens by default, and the names it goes by. The history itself is generic: `/why/<namespace>/<name>`
 * is served the same way for every plugin.
 */
export interface WhyCommand {
  /** The command as a person types it, e.g. `npm run why`; starts every error line and example. */
  command: string;
  /** The plugin's custom resource: its kind (`Shape`), plural (`shapes`) and API group (`shapes.example.com`). */
  resource: { kind: string; plural: string; group: string };
  /** An object to show in examples, as `<namespace>/<name>`. */
  example: string;
  /** The controller's default metrics address (its `--metrics-address` default), e.g. `http://127.0.0.1:8081`. */
  defaultMetricsUrl: string;
  /** The environment variable that sets the metrics URL when `--metrics-url` is not given. */
  metricsUrlEnv: string;
  /** The environment variable that holds a token when neither `--token` nor `--token-file` is given. */
  tokenEnv: string;
  /** How to start a controller at the default address, told when none answers (e.g. `npm start runs one on 127.0.0.1:8081`). */
  startHint?: string;
  /** A command that lists the resource in a namespace, told when the controller keeps nothing for an object; `<namespace>` is replaced. */
  listCommand?: string;
  /** Said after "did you mean <namespace>/<name>?" when a dotted name is given (e.g. where such names come from). */
  dottedNameHint?: string;
  /** A log file to grep for a reconcile id, and whose log it is. */
  log?: { path: string; of: string };
  /** Further lines for the usage's examples. */
  moreExamples?: readonly string[];
}

/** What a `why` command was asked to do. */
export interface WhyOptions {
  /** The object whose story is asked for. */
  subject: WhySubject;
  /** The controller's metrics base URL (http or https). */
  metricsUrl: string;
  /** Print the controller's JSON instead of the story. */
  json: boolean;
  /** A bearer token for a controller that asks for one (`--metrics-auth=kubernetes`); absent: none sent. */
  token?: string;
}

/** A bad command line: the message starts with "cannot" and says what to give instead. Exit code 2. */
export class WhyUsageError extends Error {
  /** The error's name: `WhyUsageError`. */
  override name = "WhyUsageError";
}

/** The controller answered 404: it keeps nothing for the object. `message` is the controller's. */
export class WhyNothingRecordedError extends Error {
  /** The error's name: `WhyNothingRecordedError`. */
  override name = "WhyNothingRecordedError";
}

/** The controller refused: 401 (no token, or one the API server did not accept) or 403 (not allowed). */
export class WhyAccessDeniedError extends Error {
  /** The error's name: `WhyAccessDeniedError`. */
  override name = "WhyAccessDeniedError";
}

/** How long to wait for the controller's answer by default. */
export const WHY_TIMEOUT_MS = 10_000;

/** The `--help` text of `cmd`. */
export function whyUsage(cmd: WhyCommand): string {
  const { command, example, defaultMetricsUrl, metricsUrlEnv, tokenEnv, resource } = cmd;
  const where = cmd.startHint === undefined ? "" : ` (${cmd.startHint})`;
  const more = (cmd.moreExamples ?? []).map((line) => `  ${line}\n`).join("");
  return `Usage: ${command} -- <namespace>/<name> [options]

Tells why the controller did what it did to one ${resource.kind}: its recent reconciles, oldest first, each
with what it saw, what it decided and why, the calls it made, the Events it recorded, and the result.
The controller keeps this in memory (a bounded number of recent reconciles per object, dropped a while
after the object is gone) and serves it on its metrics port at /why/<namespace>/<name>.

Options:
  --metrics-url <url>  The controller's metrics address (default ${defaultMetricsUrl}${where};
                       env ${metricsUrlEnv}). host:port works too.
  --token-file <path>  A bearer token, for a controller that asks for one (--metrics-auth=kubernetes,
                       the default in a cluster): a token of a user who may get the ${resource.kind}, e.g.
                       kubectl create token <service account> -n <namespace> > token.
  --token <token>      The same, given inline (it shows in ps and in your shell's history; env
                       ${tokenEnv} is read when neither is given).
  --json               Print the history as the controller sent it (JSON), for scripts and jq.
  -h, --help           Show this help.

Times are in your local time zone (TZ=UTC ${command} -- ... for UTC).

Examples:
  ${command} -- ${example}
  ${command} -- ${example} --metrics-url 127.0.0.1:9091
  ${command} -- ${example} --json | jq '.entries[-1].decided'
${more}
Exit codes: 0 told; 1 the controller could not be reached or keeps nothing for the object; 2 bad command line.
`;
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/**
 * Reads the command line of `cmd` (and its metrics URL and token variables from `env`). Throws a {@link WhyUsageError}
 * ("cannot …", one line a person can act on) for anything it cannot use.
 */
export function parseWhyArgs(
  cmd: WhyCommand,
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
    throw new WhyUsageError(
      `cannot read the command line: ${(error as Error).message.split(". ")[0]} (see --help)`,
    );
  }
  if (values.help) return { help: true };
  if (positionals.length === 0) {
    throw new WhyUsageError(
      `cannot tell which object: give one <namespace>/<name>, e.g. ${cmd.command} -- ${cmd.example}`,
    );
  }
  if (positionals.length > 1) {
    const given = positionals.map((p) => JSON.stringify(p)).join(", ");
    throw new WhyUsageError(
      `cannot explain ${positionals.length} objects at once (${given}): give exactly one <namespace>/<name>`,
    );
  }
  const subject = parseSubject(cmd, positionals[0] ?? "");
  const fromEnv = env[cmd.metricsUrlEnv];
  const metricsUrl =
    values["metrics-url"] !== undefined
      ? parseMetricsUrl(cmd, values["metrics-url"], "--metrics-url")
      : fromEnv !== undefined && fromEnv !== ""
        ? parseMetricsUrl(cmd, fromEnv, cmd.metricsUrlEnv)
        : cmd.defaultMetricsUrl;
  const token = readToken(values.token, values["token-file"], env[cmd.tokenEnv], cmd.tokenEnv);
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
  tokenEnv: string,
): string | undefined {
  if (inline !== undefined && file !== undefined) {
    throw new WhyUsageError("cannot use --token and --token-file at once: give one of them");
  }
  let token = inline ?? fromEnv;
  let source = inline !== undefined ? "--token" : tokenEnv;
  if (file !== undefined) {
    source = `the token file ${file}`;
    try {
      token = readFileSync(file, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new WhyUsageError(`cannot read the token file ${JSON.stringify(file)}: ${code}`);
    }
  }
  if (token === undefined) return undefined;
  token = token.trim();
  if (token === "") {
    if (inline === undefined && file === undefined) return undefined; // an empty variable: none
    throw new WhyUsageError(`cannot use ${source}: it is empty`);
  }
  if (/\s/.test(token)) throw new WhyUsageError(`cannot use ${source}: a token has no spaces or line breaks`);
  return token;
}

/** Reads `<namespace>/<name>`; throws a {@link WhyUsageError} saying what is wrong with it. */
export function parseSubject(cmd: WhyCommand, text: string): WhySubject {
  const quoted = JSON.stringify(text);
  const parts = text.split("/");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") {
    const dot = text.indexOf(".");
    if (parts.length === 1 && dot > 0 && dot < text.length - 1) {
      const guess = `${text.slice(0, dot)}/${text.slice(dot + 1)}`;
      throw new WhyUsageError(
        `cannot read ${quoted}: give <namespace>/<name>; did you mean ${guess}?${cmd.dottedNameHint === undefined ? "" : ` (${cmd.dottedNameHint})`}`,
      );
    }
    throw new WhyUsageError(
      `cannot read ${quoted}: give <namespace>/<name>, e.g. ${cmd.command} -- ${cmd.example}`,
    );
  }
  const [namespace = "", name = ""] = parts;
  if (namespace.length > 63 || !NAMESPACE.test(namespace)) {
    throw new WhyUsageError(
      `cannot read ${quoted}: ${JSON.stringify(namespace)} is not a namespace (lowercase letters, digits and "-", at most 63)`,
    );
  }
  if (name.length > 253 || !NAME.test(name)) {
    throw new WhyUsageError(
      `cannot read ${quoted}: ${JSON.stringify(name)} is not an object name (lowercase letters, digits, "-" and ".", at most 253)`,
    );
  }
  return { namespace, name };
}

/** An http(s) URL from `text` (a bare `host:port` means http://host:port), or a {@link WhyUsageError}. */
function parseMetricsUrl(cmd: WhyCommand, text: string, source: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  const url = URL.canParse(withScheme) ? new URL(withScheme) : undefined;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    throw new WhyUsageError(
      `cannot use ${source} ${JSON.stringify(text)}: give the controller's metrics address as an http(s) URL, e.g. ${cmd.defaultMetricsUrl}`,
    );
  }
  return url.href.replace(/\/$/, "");
}

/** The URL of `subject`'s history under the metrics base URL (which may have a path of its own). */
export function historyUrl(metricsUrl: string, subject: WhySubject): string {
  const base = metricsUrl.endsWith("/") ? metricsUrl : `${metricsUrl}/`;
  const path = `why/${encodeURIComponent(subject.namespace)}/${encodeURIComponent(subject.name)}`;
  return new URL(path, base).href;
}

/**
 * Fetches `subject`'s history from the controller at `metricsUrl` and returns its JSON, unchecked (see
 * {@link parseHistory}); with `token`, as `Authorization: Bearer <token>`. Throws {@link WhyNothingRecordedError}
 * for the controller's 404, {@link WhyAccessDeniedError} for its 401 or 403 (one line: who, and what is
 * missing), and an Error ("cannot …") when the controller cannot be reached, does not answer in time, or
 * answers something else.
 */
export async function fetchHistory(
  cmd: WhyCommand,
  metricsUrl: string,
  subject: WhySubject,
  timeoutMs = WHY_TIMEOUT_MS,
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
      : `is it running?${cmd.startHint === undefined ? "" : ` (${cmd.startHint})`}`;
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
    if (message !== undefined) throw new WhyNothingRecordedError(message);
    throw new Error(
      `cannot read decisions from ${url}: it answered 404 without saying why — is that the controller's metrics address, and is the controller new enough to serve /why?`,
    );
  }
  if (response.status === 401 || response.status === 403) {
    throw accessDenied(cmd, response.status, errorField(json) ?? firstLine(body), metricsUrl, subject, token);
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
  cmd: WhyCommand,
  status: 401 | 403,
  said: string,
  metricsUrl: string,
  subject: WhySubject,
  token: string | undefined,
): WhyAccessDeniedError {
  const words = clean(said) || (status === 401 ? "unauthorized" : "forbidden");
  const { kind, plural } = cmd.resource;
  const grant = `get on ${plural} in the namespace ${subject.namespace}`;
  if (status === 403) {
    return new WhyAccessDeniedError(
      `the controller at ${metricsUrl} refused: ${words} — it tells a ${kind}'s story to whoever may get that ${kind}: use a token of a user with ${grant} (a Role and RoleBinding)`,
    );
  }
  if (token === undefined) {
    return new WhyAccessDeniedError(
      `the controller at ${metricsUrl} asks for a token (${words}) — give --token-file <file> or ${cmd.tokenEnv}: a token of a user with ${grant}, e.g. from kubectl create token <service account> -n <namespace>`,
    );
  }
  return new WhyAccessDeniedError(
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

/** What is wrong with a value of the controller's answer, and where (e.g. `entries[0].at`). */
class Invalid extends Error {
  readonly where: string;
  constructor(where: string, message: string) {
    super(message);
    this.where = where;
  }
}

type Check = (value: unknown, where: string) => void;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function expect(ok: boolean, where: string, message: string): void {
  if (!ok) throw new Invalid(where, message);
}

const str: Check = (v, where) => expect(typeof v === "string", where, `expected a string, got ${typeOf(v)}`);
const num: Check = (v, where) =>
  expect(typeof v === "number" && Number.isFinite(v), where, `expected a number, got ${typeOf(v)}`);
const time: Check = (v, where) => {
  str(v, where);
  expect(!Number.isNaN(Date.parse(v as string)), where, "expected an RFC 3339 time");
};
const optional =
  (check: Check): Check =>
  (v, where) => {
    if (v !== undefined) check(v, where);
  };
const array =
  (check: Check): Check =>
  (v, where) => {
    expect(Array.isArray(v), where, `expected an array, got ${typeOf(v)}`);
    (v as unknown[]).forEach((item, i) => check(item, `${where}[${i}]`));
  };
const object =
  (fields: Record<string, Check>): Check =>
  (v, where) => {
    expect(isObject(v), where, `expected an object, got ${typeOf(v)}`);
    for (const [name, check] of Object.entries(fields)) {
      check((v as Record<string, unknown>)[name], where === "" ? name : `${where}.${name}`);
    }
  };

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return value === undefined ? "nothing" : typeof value;
}

const checkHistory = object({
  subject: str,
  replica: optional(str),
  entries: array(
    object({
      at: time,
      lastAt: time,
      repeats: (v, where) => {
        num(v, where);
        expect(Number.isInteger(v) && (v as number) >= 1, where, "expected a whole number of at least 1");
      },
      reconcileId: str,
      traceId: optional(str),
      controller: str,
      key: str,
      subject: str,
      observed: array(str),
      decided: array(object({ branch: str, why: str })),
      calls: array(object({ call: str, target: optional(str), outcome: str, ms: num })),
      events: array(str),
      result: str,
      subjectState: optional((v, where) =>
        expect(v === "present" || v === "gone", where, 'expected "present" or "gone"'),
      ),
      ms: num,
    }),
  ),
  goneAt: optional(time),
});

/**
 * Checks that `json` is a {@link SubjectHistory}; throws "cannot read the controller's answer: <where>: <what>"
 * otherwise (e.g. a controller of another version).
 */
export function parseHistory(json: unknown): SubjectHistory {
  try {
    checkHistory(json, "");
  } catch (error) {
    if (!(error instanceof Invalid)) throw error;
    throw new Error(`cannot read the controller's answer: ${error.where || "the body"}: ${error.message}`, {
      cause: error,
    });
  }
  return json as SubjectHistory;
}

/** How {@link renderStory} shows times and lays out lines. */
export interface StoryOptions {
  /** The time now: when given, the story says how long ago the last reconcile was (and the object gone). */
  now?: Date | undefined;
  /** The IANA time zone times are shown in (default "UTC"). */
  timeZone?: string | undefined;
  /** Lines longer than this wrap between items (default 100). */
  width?: number | undefined;
  /** The command whose story this is: its resource's group names the Events' reconcile-id annotation, its log the file to grep. */
  command?: WhyCommand | undefined;
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
  const log = options.command?.log;
  const grep =
    last && log ? `, e.g. ${`grep ${clean(last)} ${log.path}`.replaceAll(" ", NBSP)} for ${log.of}` : "";
  const annotation =
    options.command === undefined
      ? "annotation <group>/reconcile-id"
      : `annotation ${options.command.resource.group}/reconcile-id`;
  const traces = history.entries.some((e) => e.traceId)
    ? "a trace id opens its reconcile in your tracing backend."
    : "with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT), each reconcile also has a trace id to open in your tracing backend.";
  const more =
    `More: a reconcile id is on the controller's log lines (reconcile_id) and on its Events ` +
    `(${annotation})${grep}; ${traces}`;
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
 * control characters (an escape sequence in an external API's error message, say) are shown escaped, never sent.
 */
function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\r\n\t]+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/** Where a `why` command writes and what it knows of the world; tests pass their own. */
export interface WhyIO {
  /** The environment variables (the metrics URL's and the token's). */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the story goes (stdout). */
  out: (text: string) => void;
  /** Where a one-line error goes (stderr). */
  err: (text: string) => void;
  /** The clock the story's "ago" is counted from. */
  now: () => Date;
  /** The time zone of the story (default: the machine's). */
  timeZone: string;
  /** The longest the fetch may take. Default {@link WHY_TIMEOUT_MS}. */
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
    timeoutMs: WHY_TIMEOUT_MS,
  };
}

/**
 * Runs `cmd` with `argv`: reads the command line, fetches the object's history from the controller, and
 * writes its story (or, with `--json`, the controller's JSON) to `io.out`, a one-line error to `io.err`.
 * Resolves with the exit code (0 told, 1 not told, 2 bad command line); never rejects for a person's mistake.
 */
export async function runWhy(
  cmd: WhyCommand,
  argv: readonly string[],
  io: Partial<WhyIO> = {},
): Promise<number> {
  const { env, out, err, now, timeZone, timeoutMs } = { ...defaultIO(), ...io };
  let options: WhyOptions;
  try {
    const parsed = parseWhyArgs(cmd, argv, env);
    if (parsed.help) {
      out(whyUsage(cmd));
      return 0;
    }
    options = parsed.options;
  } catch (error) {
    if (!(error instanceof WhyUsageError)) throw error;
    err(`${cmd.command}: ${error.message}\n`);
    return 2;
  }
  const { namespace, name } = options.subject;
  try {
    const json = await fetchHistory(cmd, options.metricsUrl, options.subject, timeoutMs, options.token);
    if (options.json) {
      out(`${JSON.stringify(json, null, 2)}\n`);
      return 0;
    }
    out(renderStory(parseHistory(json), { now: now(), timeZone, command: cmd }));
    return 0;
  } catch (error) {
    if (error instanceof WhyNothingRecordedError) {
      const list =
        cmd.listCommand === undefined ? "" : ` ${cmd.listCommand.replaceAll("<namespace>", namespace)}`;
      err(
        `${cmd.command}: ${clean(error.message)}\n` +
          `  The controller keeps the recent decisions of each object it reconciled, and drops them a while\n` +
          `  after the object is gone. Is ${namespace}/${name} the right name?${list}\n`,
      );
      return 1;
    }
    err(`${cmd.command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
