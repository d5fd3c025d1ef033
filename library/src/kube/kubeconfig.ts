/**
 * The lean kubeconfig loader: what a deployed controller (in-cluster) and a laptop (kubeconfig files) need to
 * reach an API server, read without `@kubernetes/client-node` — whose `config` module imports the whole
 * generated API (70-86 MB of an idle controller's RSS: docs/benchmarks.md). Nothing of client-node is imported here at
 * run time (`import type` only); `kubeconfig.test.ts` proves it by loading this file in a fresh `node`.
 *
 * Where the kubeconfig comes from, first that applies (controller-runtime's order, `GetConfig`):
 *  1. an explicit path (`--kubeconfig`): that file, which must exist;
 *  2. `KUBECONFIG`: its files (joined with the path delimiter, `:`), merged by client-go's rules — a map
 *     entry (cluster, user, context) comes from the first file that names it, `current-context` from the
 *     first file that sets it; a listed file that does not exist is skipped (none existing is an error);
 *  3. in-cluster: `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` set and the service account's
 *     token file present — `https://host:port`, its `ca.crt`, its token (re-read every minute: it rotates,
 *     as client-go's cached file token source) and its `namespace`;
 *  4. `~/.kube/config` when it exists;
 *  otherwise a {@link KubeconfigError} saying all four were looked at.
 * Differences from client-node's `loadFromDefault` (what the controller used before): client-node tries
 * `~/.kube/config` BEFORE in-cluster, merges `KUBECONFIG` files by throwing on a name two files share and
 * takes `current-context` from the LAST file that sets it, fails on a listed file that does not exist,
 * reads `token-file` (not client-go's `tokenFile`) once and never again and keeps its trailing newline,
 * resolves no relative `tokenFile`, uses http for in-cluster ports 80/8080/8001, and falls back to
 * http://localhost:8080 when it finds nothing. Here: client-go's behaviour for each of those (both token
 * field names are read).
 *
 * Paths inside a file (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`, an exec
 * plugin's command with a `/`) are relative to that file's folder. A field and its `-data` twin both set
 * is an error (kubectl's validation says the same), as is a client certificate without its key.
 *
 * A current user with an `exec` credential plugin or an `auth-provider` needs what only client-node does:
 * {@link loadKubeconfig} says so (a `needs-client-node` answer) and {@link connectWithClientNode} imports
 * client-node lazily, says why in one log line, and builds the connection on its KubeConfig. A `proxy-url`
 * is refused: the controller's client (kube-http.ts) connects directly.
 *
 * A file in JSON (a kubeconfig may be: YAML's JSON subset) is read with `JSON.parse`; only a YAML one loads
 * the `yaml` package, at that moment ({@link parseKubeconfigText}). In-cluster reads no kubeconfig file at all,
 * so a deployed controller never loads it (72 modules, a few MB of an idle controller).
 */
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import path from "node:path";
import type { RequestOptions } from "node:https";
import { isIPv6 } from "node:net";
import type { KubeConfig } from "@kubernetes/client-node";
import type * as Yaml from "yaml";
import type { Logger } from "../observability/logger.ts";

/** Where the service account's files are mounted in a pod. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How long a token read from a file is used before the file is read again (client-go: one minute). */
const TOKEN_FILE_TTL_MS = 60_000;

/** A kubeconfig that cannot be used: one line naming the file and the field. Never has a stack worth showing. */
export class KubeconfigError extends Error {
  /** The file (or "in-cluster", or the list of places looked at) the problem is in. */
  readonly file: string;

  constructor(file: string, problem: string) {
    super(`kubeconfig ${file}: ${problem}`);
    this.name = "KubeconfigError";
    this.file = file;
  }
}

/** A bearer token that may change: a fixed one, or a file read again once its time-to-live passed. */
export interface TokenSource {
  /** The file it is read from; undefined for a token written in the kubeconfig. */
  readonly file: string | undefined;
  /** The token now. A file that cannot be read again keeps the last token read (client-go does the same). */
  token(): Promise<string>;
}

/** What one request needs now: TLS material and headers (Authorization, impersonation). */
export interface KubeCredentials {
  /** Authorization (bearer or basic) and impersonation headers. */
  headers: Record<string, string | string[]>;
  /** The CA bundle the server's certificate is checked against (PEM); undefined: Node's default CAs. */
  ca?: Buffer;
  /** The client certificate (PEM). */
  cert?: Buffer;
  /** The client certificate's private key (PEM). */
  key?: Buffer;
  /** False with `insecure-skip-tls-verify`; undefined: Node's default (verify). */
  rejectUnauthorized?: boolean;
  /** `tls-server-name`: the name the server's certificate is checked against, when not the URL's host. */
  servername?: string;
}

/** How to reach an API server: what `KubeHttp` (kube-http.ts) takes. */
export interface KubeConnection {
  /** The API server URL, without a trailing slash (a path prefix, as behind a proxy, is kept). */
  readonly server: string;
  /** The current context's namespace (in-cluster: the service account's); undefined when none is set. */
  readonly namespace: string | undefined;
  /** The current context's name (in-cluster: `inClusterContext`, as client-node names it). */
  readonly contextName: string;
  /** The context's cluster entry's name (in-cluster: `inCluster`). */
  readonly clusterName: string;
  /** The user entry's name; undefined for a context without a user (anonymous). */
  readonly userName: string | undefined;
  /** Where it was read from, for messages: `--kubeconfig <file>`, `KUBECONFIG <files>`, `in-cluster`, `<home>/.kube/config`. */
  readonly source: string;
  /** The credentials for a request now: read again by the caller from time to time (tokens rotate). */
  credentials(): Promise<KubeCredentials>;
}

/** Options of {@link loadKubeconfig}. Every field has a default, for tests to replace. */
export interface LoadKubeconfigOptions {
  /** An explicit kubeconfig file (`--kubeconfig`): wins over everything else. */
  path?: string;
  /** Where KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT and HOME are read. Default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The service account's folder. Default {@link SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
  /** How long a token file's token is used before it is read again. Default one minute. */
  tokenFileTtlMs?: number;
  /** The clock of the token files' time-to-live. Default Date.now. */
  now?: () => number;
}

/** A kubeconfig whose current user needs client-node's loader: pass it to {@link connectWithClientNode}. */
export interface NeedsClientNode {
  /** Which answer this is. */
  kind: "needs-client-node";
  /** What only client-node does, e.g. `an exec credential plugin (aws)`. */
  why: string;
  /** Where it was read from, as {@link KubeConnection.source}. */
  source: string;
  /** The merged kubeconfig (paths made absolute), for client-node to load. */
  config: Record<string, unknown>;
  /** The current context's name. */
  contextName: string;
  /** The current user's name: the one with the plugin or provider. */
  userName: string;
}

/** What {@link loadKubeconfig} found. */
export type LoadedKubeconfig =
  | { kind: "lean"; connection: KubeConnection }
  | NeedsClientNode
  | { kind: "invalid"; error: KubeconfigError };

type Entry = Record<string, unknown>;

/** One named entry of a file (a cluster, user or context), with the file it came from. */
interface Named {
  file: string;
  body: Entry;
}

interface Merged {
  source: string;
  files: string[];
  clusters: Map<string, Named>;
  users: Map<string, Named>;
  contexts: Map<string, Named>;
  currentContext: string | undefined;
  /** The file that set current-context (or the first file). */
  currentContextFile: string;
}

/**
 * Finds the kubeconfig by the order in this file's header and reads its current context. Never throws: a
 * problem is an `invalid` answer with a one-line {@link KubeconfigError}.
 */
export function loadKubeconfig(options: LoadKubeconfigOptions = {}): LoadedKubeconfig {
  try {
    return { kind: "lean", connection: loadOrThrow(options) };
  } catch (err) {
    if (err instanceof NeedsClientNodeSignal) return err.verdict;
    if (err instanceof KubeconfigError) return { kind: "invalid", error: err };
    throw err;
  }
}

/**
 * The connection of the kubeconfig {@link loadKubeconfig} finds, through client-node when it must (with one
 * log line saying why). Rejects with a {@link KubeconfigError} for a kubeconfig it cannot use.
 */
export async function connectKubeconfig(
  options: LoadKubeconfigOptions & { log?: Pick<Logger, "info"> } = {},
): Promise<KubeConnection> {
  const verdict = loadKubeconfig(options);
  switch (verdict.kind) {
    case "lean":
      return verdict.connection;
    case "needs-client-node":
      return connectWithClientNode(verdict, options.log);
    case "invalid":
      throw verdict.error;
  }
}

/**
 * Imports `@kubernetes/client-node` (only now: it is heavy) and builds the connection on its KubeConfig,
 * which runs exec plugins and auth providers on each {@link KubeConnection.credentials} call. Logs one line
 * saying why. Rejects with a {@link KubeconfigError} when client-node cannot load it either.
 */
export async function connectWithClientNode(
  verdict: NeedsClientNode,
  log?: Pick<Logger, "info">,
): Promise<KubeConnection> {
  log?.info(
    { kubeconfig: verdict.source, user: verdict.userName },
    `kubeconfig: user "${verdict.userName}" uses ${verdict.why}, which only @kubernetes/client-node's loader runs: loading it`,
  );
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromString(JSON.stringify(verdict.config));
    kubeConfig.setCurrentContext(verdict.contextName);
  } catch (err) {
    throw new KubeconfigError(verdict.source, `client-node cannot load it: ${firstLine(err)}`);
  }
  return kubeConnectionOf(kubeConfig, verdict.source);
}

/**
 * A client-node KubeConfig's current context as a {@link KubeConnection}: credentials from its
 * `applyToHTTPSOptions` (which refreshes tokens and runs exec plugins), read again at every call.
 */
export function kubeConnectionOf(
  kubeConfig: KubeConfig,
  source = "(a client-node KubeConfig)",
): KubeConnection {
  const context = kubeConfig.getContextObject(kubeConfig.getCurrentContext());
  const cluster = kubeConfig.getCurrentCluster();
  if (!context || !cluster) {
    throw new KubeconfigError(source, "has no current context with a cluster");
  }
  return {
    server: cluster.server.replace(/\/$/, ""),
    namespace: context.namespace,
    contextName: context.name,
    clusterName: cluster.name,
    userName: kubeConfig.getCurrentUser()?.name,
    source,
    async credentials() {
      const opts: RequestOptions = {};
      await kubeConfig.applyToHTTPSOptions(opts);
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(opts.headers ?? {})) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.map(String) : String(value);
      }
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString("base64")}`;
      return {
        headers,
        ...(opts.ca ? { ca: Buffer.from(opts.ca as Buffer) } : {}),
        ...(opts.cert ? { cert: Buffer.from(opts.cert as Buffer) } : {}),
        ...(opts.key ? { key: Buffer.from(opts.key as Buffer) } : {}),
        ...(opts.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: opts.rejectUnauthorized }),
        ...(opts.servername === undefined ? {} : { servername: opts.servername }),
      };
    },
  };
}

/** Thrown inside the loader to leave with a needs-client-node verdict. */
class NeedsClientNodeSignal extends Error {
  readonly verdict: NeedsClientNode;

  constructor(verdict: NeedsClientNode) {
    super(verdict.why);
    this.verdict = verdict;
  }
}

function loadOrThrow(options: LoadKubeconfigOptions): KubeConnection {
  const env = options.env ?? process.env;
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const clock = { ttlMs: options.tokenFileTtlMs ?? TOKEN_FILE_TTL_MS, now: options.now ?? Date.now };
  if (options.path) return fromFiles(`--kubeconfig ${options.path}`, [options.path], clock);
  const list = (env.KUBECONFIG ?? "").split(path.delimiter).filter((f) => f !== "");
  if (list.length > 0) {
    const present = list.filter((f) => existsSync(f));
    if (present.length === 0) {
      throw new KubeconfigError(`KUBECONFIG ${list.join(path.delimiter)}`, "none of its files exists");
    }
    return fromFiles(`KUBECONFIG ${list.join(path.delimiter)}`, present, clock);
  }
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host && port && existsSync(path.join(saDir, "token"))) return inCluster(host, port, saDir, clock);
  const home = env.HOME || homedir();
  const defaultFile = path.join(home, ".kube", "config");
  if (existsSync(defaultFile)) return fromFiles(defaultFile, [defaultFile], clock);
  throw new KubeconfigError(
    "not found",
    `no --kubeconfig, KUBECONFIG not set, not in a cluster (KUBERNETES_SERVICE_HOST/PORT and ${path.join(saDir, "token")}), no ${defaultFile}`,
  );
}

interface Clock {
  ttlMs: number;
  now: () => number;
}

function inCluster(host: string, port: string, saDir: string, clock: Clock): KubeConnection {
  const source = "in-cluster";
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  checkServer(source, "KUBERNETES_SERVICE_HOST/PORT", server);
  const ca = readPart(source, "ca.crt", path.join(saDir, "ca.crt"));
  const token = fileTokenSource(source, "token", path.join(saDir, "token"), clock);
  const nsFile = path.join(saDir, "namespace");
  const namespace = existsSync(nsFile) ? readPart(source, "namespace", nsFile).toString("utf8").trim() : "";
  return connection({
    server,
    namespace: namespace || undefined,
    contextName: "inClusterContext",
    clusterName: "inCluster",
    userName: "inClusterUser",
    source,
    tls: { ca },
    headers: {},
    token,
  });
}

function fromFiles(source: string, files: string[], clock: Clock): KubeConnection {
  const merged = mergeFiles(source, files);
  const where = merged.currentContextFile;
  if (!merged.currentContext) throw new KubeconfigError(where, "current-context is not set");
  const context = merged.contexts.get(merged.currentContext);
  if (!context) {
    throw new KubeconfigError(where, `current-context "${merged.currentContext}" names no entry of contexts`);
  }
  const clusterName = optionalString(context, "cluster", `contexts "${merged.currentContext}"`);
  const userName = optionalString(context, "user", `contexts "${merged.currentContext}"`);
  const namespace = optionalString(context, "namespace", `contexts "${merged.currentContext}"`);
  if (!clusterName) {
    throw new KubeconfigError(
      context.file,
      `contexts "${merged.currentContext}": context.cluster is not set`,
    );
  }
  const cluster = merged.clusters.get(clusterName);
  if (!cluster) {
    throw new KubeconfigError(
      context.file,
      `contexts "${merged.currentContext}": context.cluster "${clusterName}" names no entry of clusters`,
    );
  }
  const user = userName ? merged.users.get(userName) : undefined;
  if (userName && !user) {
    throw new KubeconfigError(
      context.file,
      `contexts "${merged.currentContext}": context.user "${userName}" names no entry of users`,
    );
  }

  const c = (field: string) => `clusters "${clusterName}": cluster.${field}`;
  const server = optionalString(cluster, "server", `clusters "${clusterName}": cluster`);
  if (!server) throw new KubeconfigError(cluster.file, `${c("server")} is not set`);
  checkServer(cluster.file, c("server"), server);
  if (cluster.body["proxy-url"] !== undefined) {
    throw new KubeconfigError(
      cluster.file,
      `${c("proxy-url")} is set: a proxy is not supported (requests go directly)`,
    );
  }
  const tls: TlsParts = {};
  const ca = fileOrData(cluster, `clusters "${clusterName}": cluster`, "certificate-authority");
  if (ca) tls.ca = ca;
  const insecure = cluster.body["insecure-skip-tls-verify"];
  if (insecure !== undefined && typeof insecure !== "boolean") {
    throw new KubeconfigError(cluster.file, `${c("insecure-skip-tls-verify")} is not true or false`);
  }
  if (insecure === true) tls.rejectUnauthorized = false;
  const serverName = optionalString(cluster, "tls-server-name", `clusters "${clusterName}": cluster`);
  if (serverName) tls.servername = serverName;

  const headers: Record<string, string | string[]> = {};
  let token: TokenSource | undefined;
  if (user && userName) {
    const u = `users "${userName}": user`;
    const needs = user.body.exec
      ? `an exec credential plugin (${describeExec(user.body.exec)})`
      : user.body["auth-provider"]
        ? `an auth provider (${describeProvider(user.body["auth-provider"])})`
        : undefined;
    if (needs) {
      throw new NeedsClientNodeSignal({
        kind: "needs-client-node",
        why: needs,
        source,
        config: plainConfig(merged),
        contextName: merged.currentContext,
        userName,
      });
    }
    const cert = fileOrData(user, u, "client-certificate");
    const key = fileOrData(user, u, "client-key");
    if (cert && !key)
      throw new KubeconfigError(user.file, `${u}.client-certificate is set without client-key`);
    if (key && !cert)
      throw new KubeconfigError(user.file, `${u}.client-key is set without client-certificate`);
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
    const fixed = optionalString(user, "token", u);
    const tokenFile =
      optionalString(user, "tokenFile", u) ?? optionalString(user, "token-file", u) ?? undefined;
    if (fixed) token = { file: undefined, token: () => Promise.resolve(fixed) };
    else if (tokenFile) token = fileTokenSource(user.file, `${u}.tokenFile`, tokenFile, clock);
    const username = optionalString(user, "username", u);
    if (username) {
      const password = optionalString(user, "password", u) ?? "";
      headers.Authorization = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
    }
    const as = optionalString(user, "as", u);
    if (as) headers["Impersonate-User"] = as;
    const asUid = optionalString(user, "as-uid", u);
    if (asUid) headers["Impersonate-Uid"] = asUid;
    const groups = user.body["as-groups"];
    if (groups !== undefined) {
      if (!Array.isArray(groups) || !groups.every((g) => typeof g === "string")) {
        throw new KubeconfigError(user.file, `${u}.as-groups is not a list of strings`);
      }
      if (groups.length > 0) headers["Impersonate-Group"] = groups;
    }
  }
  return connection({
    server: server.replace(/\/$/, ""),
    namespace: namespace || undefined,
    contextName: merged.currentContext,
    clusterName,
    userName,
    source,
    tls,
    headers,
    token,
  });
}

interface TlsParts {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

function connection(parts: {
  server: string;
  namespace: string | undefined;
  contextName: string;
  clusterName: string;
  userName: string | undefined;
  source: string;
  tls: TlsParts;
  headers: Record<string, string | string[]>;
  token: TokenSource | undefined;
}): KubeConnection {
  const { tls, headers, token } = parts;
  return {
    server: parts.server,
    namespace: parts.namespace,
    contextName: parts.contextName,
    clusterName: parts.clusterName,
    userName: parts.userName,
    source: parts.source,
    async credentials() {
      const now: Record<string, string | string[]> = { ...headers };
      if (token) now.Authorization = `Bearer ${await token.token()}`;
      return { ...tls, headers: now };
    },
  };
}

/** Reads the files and merges them by client-go's rules (first wins); relative paths made absolute. */
function mergeFiles(source: string, files: string[]): Merged {
  const merged: Merged = {
    source,
    files,
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
    currentContextFile: files[0] ?? source,
  };
  for (const file of files) {
    const doc = readYaml(file);
    for (const [list, inner, map] of [
      ["clusters", "cluster", merged.clusters],
      ["users", "user", merged.users],
      ["contexts", "context", merged.contexts],
    ] as const) {
      const entries = doc[list];
      if (entries === undefined || entries === null) continue;
      if (!Array.isArray(entries)) throw new KubeconfigError(file, `${list} is not a list`);
      entries.forEach((entry: unknown, i) => {
        if (!isObject(entry) || typeof entry.name !== "string" || entry.name === "") {
          throw new KubeconfigError(file, `${list}[${i}].name is not set`);
        }
        const body = entry[inner] ?? {};
        if (!isObject(body))
          throw new KubeconfigError(file, `${list} "${entry.name}": ${inner} is not a map`);
        if (!map.has(entry.name)) map.set(entry.name, { file, body: absolutePaths(file, inner, body) });
      });
    }
    const current = doc["current-context"];
    if (current !== undefined && current !== null && typeof current !== "string") {
      throw new KubeconfigError(file, "current-context is not a string");
    }
    if (!merged.currentContext && current) {
      merged.currentContext = current;
      merged.currentContextFile = file;
    }
  }
  return merged;
}

function readYaml(file: string): Entry {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new KubeconfigError(file, `cannot read it: ${errnoText(err)}`);
  }
  let doc: unknown;
  try {
    doc = parseKubeconfigText(text);
  } catch (err) {
    throw new KubeconfigError(file, `is not YAML: ${firstLine(err)}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isObject(doc)) throw new KubeconfigError(file, "is not a YAML map (a kubeconfig is one)");
  return doc;
}

/**
 * A kubeconfig file's text as data: `JSON.parse` when it is a JSON object (what JSON kubeconfigs are, and
 * YAML would read the same), else the `yaml` package, required here, when first needed: a process that reads
 * only JSON kubeconfigs, or none (in-cluster), never loads it. Throws the parser's error.
 */
function parseKubeconfigText(text: string): unknown {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all (YAML's flow style: unquoted keys, comments): YAML says what is wrong.
    }
  }
  const { parse } = createRequire(import.meta.url)("yaml") as typeof Yaml;
  return parse(text);
}

const PATH_FIELDS: Record<string, readonly string[]> = {
  cluster: ["certificate-authority"],
  user: ["client-certificate", "client-key", "tokenFile", "token-file"],
  context: [],
};

function absolutePaths(file: string, kind: string, body: Entry): Entry {
  const dir = path.dirname(path.resolve(file));
  const out: Entry = { ...body };
  for (const field of PATH_FIELDS[kind] ?? []) {
    const value = out[field];
    if (typeof value === "string" && value !== "" && !path.isAbsolute(value))
      out[field] = path.join(dir, value);
  }
  // client-go: an exec plugin's command with a path separator is relative to the file.
  if (kind === "user" && isObject(out.exec)) {
    const command = out.exec.command;
    if (typeof command === "string" && command.includes("/") && !path.isAbsolute(command)) {
      out.exec = { ...out.exec, command: path.join(dir, command) };
    }
  }
  return out;
}

/** The merged kubeconfig as one plain document, for client-node's loadFromString. */
function plainConfig(merged: Merged): Record<string, unknown> {
  const list = (map: Map<string, Named>, inner: string) =>
    [...map].map(([name, { body }]) => ({ name, [inner]: body }));
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: list(merged.clusters, "cluster"),
    users: list(merged.users, "user"),
    contexts: list(merged.contexts, "context"),
    "current-context": merged.currentContext,
  };
}

/** `<field>` (a file) or `<field>-data` (base64), never both; undefined when neither is set. */
function fileOrData(entry: Named, where: string, field: string): Buffer | undefined {
  const file = optionalString(entry, field, where);
  const data = optionalString(entry, `${field}-data`, where);
  if (file && data) {
    throw new KubeconfigError(entry.file, `${where}.${field} and ${field}-data are both set: keep one`);
  }
  if (file) return readPart(entry.file, `${where}.${field}`, file);
  if (data) {
    const bytes = Buffer.from(data, "base64");
    if (bytes.length === 0) throw new KubeconfigError(entry.file, `${where}.${field}-data is not base64`);
    return bytes;
  }
  return undefined;
}

function readPart(source: string, field: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new KubeconfigError(source, `${field}: cannot read ${file}: ${errnoText(err)}`);
  }
}

/** A token read from `file` now (so a missing one is an error at load), and again once `ttlMs` passed. */
function fileTokenSource(source: string, field: string, file: string, clock: Clock): TokenSource {
  let token = readPart(source, field, file).toString("utf8").trim();
  if (token === "") throw new KubeconfigError(source, `${field}: ${file} is empty`);
  let readAt = clock.now();
  let reading: Promise<string> | undefined;
  return {
    file,
    token() {
      if (clock.now() - readAt < clock.ttlMs) return Promise.resolve(token);
      reading ??= readFile(file, "utf8")
        .then(
          (text) => {
            if (text.trim() !== "") token = text.trim();
          },
          () => {}, // keep the last token: the kubelet rewrites the file, a moment without it is not a new token
        )
        .then(() => {
          readAt = clock.now();
          reading = undefined;
          return token;
        });
      return reading;
    },
  };
}

function checkServer(file: string, field: string, server: string): void {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigError(file, `${field} "${server}" is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new KubeconfigError(file, `${field} "${server}" is not an http(s) URL`);
  }
}

function optionalString(entry: Named, field: string, where: string): string | undefined {
  const value = entry.body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new KubeconfigError(entry.file, `${where}.${field} is not a string`);
  return value;
}

function describeExec(exec: unknown): string {
  const command = isObject(exec) && typeof exec.command === "string" ? exec.command : "?";
  return path.basename(command);
}

function describeProvider(provider: unknown): string {
  return isObject(provider) && typeof provider.name === "string" ? provider.name : "?";
}

function isObject(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errnoText(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES") return "permission denied";
  if (code === "EISDIR") return "is a folder";
  return firstLine(err);
}

function firstLine(err: unknown): string {
  // The YAML parser's first line ends with a colon that introduces the source excerpt left out here.
  return ((err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "").replace(/:\s*$/, "");
}
