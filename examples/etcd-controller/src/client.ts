/**
 * The etcd client, over etcd v3's JSON gateway (the grpc-gateway every etcd serves on its client URL): one
 * HTTP request per call (never retried here: the library's queue retries), every failure an
 * {@link EtcdError} that already says what the controller decides on. Keys and values travel base64, every
 * call is a POST, and every write is a transaction (`/v3/kv/txn`) whose compare makes it conditional:
 * - a create only if the key does not exist (its create revision is 0),
 * - an update or a delete only if the key is still at the observed mod revision.
 * A transaction whose compare failed answers 200 with `succeeded` absent: its failure branch reads the key,
 * so the client tells "gone" (notFound) from "moved on" (stale) from "taken" (conflict) in the same request.
 *
 * The stored value is a JSON object of ours: `{"value": ..., "owner": ..., "uid": ..., "resource": ...}`.
 * etcd has no labels and cannot filter by value, so the owner marks live inside the value and
 * {@link EtcdClient.listWatch} filters by owner here, in the adapter, not in the server.
 */
import {
  type ExternalFailure,
  GoneError,
  type HttpAnswer,
  type HttpStream,
  KeepAliveHttp,
  type Json,
  type JsonObject,
  type ListWatchClient,
} from "reconcile-kit";
import { KEY_PREFIX, keyOfName, nameOfKey } from "./api.ts";

/** An etcd key under {@link KEY_PREFIX}, as the controller sees it. */
export interface EtcdEntry {
  /** The etcd key, e.g. `/config/team-a/db-url`. */
  readonly key: string;
  /** The external name (`<name>.<namespace>` for `/config/<namespace>/<name>`; the key for any other key). */
  readonly name: string;
  /** The key's create revision: the same while the key lives, a new one when it is deleted and created again. */
  readonly id: string;
  /** The key's mod revision: grows with every change; the writes are conditional on it. */
  readonly revision: number;
  /**
   * The stored value read as a JSON object: `value` and the marks (`owner`, `uid`, `resource`) when ours, or
   * anyone's; a value that is not a JSON object (written by hand) reads as `{ value: <the text> }`.
   */
  readonly fields: Readonly<JsonObject>;
}

/** The owner marks inside a stored value, by field name. */
export const MARK_OWNER = "owner";
export const MARK_UID = "uid";
export const MARK_RESOURCE = "resource";

/** What a key holds when written: a JSON object (`null` fields left out). */
export type StoredValue = JsonObject;

/** A failed etcd call: `failure` is what the library does next; `status` 0 when no HTTP answer came. */
export class EtcdError extends Error {
  readonly failure: ExternalFailure;
  readonly status: number;
  /** The gRPC code of etcd's error body (3 InvalidArgument, 11 OutOfRange, 14 Unavailable...), when given. */
  readonly code: number | undefined;

  constructor(message: string, failure: ExternalFailure, status: number, code?: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "EtcdError";
    this.failure = failure;
    this.status = status;
    this.code = code;
  }
}

/** Options of {@link EtcdClient}. */
export interface EtcdClientOptions {
  /** etcd's client URL, e.g. http://127.0.0.1:2379 */
  baseUrl: string;
  /** Per-request timeout. Default 10 s. */
  timeoutMs?: number;
  /** Called after every request with its verb and HTTP status (0: no answer), for metrics. */
  onCall?: (verb: string, status: number) => void;
}

/** A key-value as the gateway writes it: int64 as strings, bytes as base64, zero values left out. */
interface WireKv {
  key: string;
  value?: string;
  create_revision?: string;
  mod_revision?: string;
}
interface WireHeader {
  revision?: string;
}
interface RangeAnswer {
  header: WireHeader;
  kvs?: WireKv[];
  more?: boolean;
}
interface TxnAnswer {
  header: WireHeader;
  succeeded?: boolean;
  responses?: { response_range?: RangeAnswer }[];
}
interface WatchResult {
  header?: WireHeader;
  created?: boolean;
  canceled?: boolean;
  cancel_reason?: string;
  compact_revision?: string;
  events?: { type?: "PUT" | "DELETE"; kv: WireKv; prev_kv?: WireKv }[];
}

/**
 * The socket's idle bound of a watch: above etcd's default progress-notify interval (10 minutes), so a
 * quiet watch of an etcd left at its defaults is not cut here; the informer's `watchIdleMs` bounds it.
 */
const WATCH_SOCKET_IDLE_MS = 11 * 60_000;

/**
 * Whether a watch answer is a progress notification (etcd's `IsProgressNotify`): no events, neither the
 * watch's creation nor its cancel, no compaction, and a revision. etcd sends one only to a watch that has
 * caught up, with the store's revision: every event of the watch up to that revision was already sent.
 */
function isProgressNotify(result: WatchResult): boolean {
  return (
    (result.events ?? []).length === 0 &&
    result.created !== true &&
    result.canceled !== true &&
    Number(result.compact_revision ?? 0) === 0 &&
    Number(result.header?.revision ?? 0) > 0
  );
}

/** One page of {@link EtcdClient.list}. */
export interface EtcdPage {
  items: EtcdEntry[];
  nextPageToken?: string;
  /** The store revision the page is consistent with. */
  revision: number;
}

/** The key after every key that starts with `prefix`: a range's end. */
function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix);
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) + 1;
  return bytes.toString("base64");
}

const b64 = (text: string): string => Buffer.from(text).toString("base64");
const unb64 = (text: string | undefined): string => Buffer.from(text ?? "", "base64").toString("utf8");

/** The fields of a stored value: the JSON object, or the text as `value`. */
export function fieldsOfValue(text: string): JsonObject {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as JsonObject;
  } catch {
    // Not JSON: a value written by hand.
  }
  return { value: text };
}

/** An entry from the gateway's key-value. */
function entryOf(kv: WireKv): EtcdEntry {
  const key = unb64(kv.key);
  return {
    key,
    name: nameOfKey(key),
    id: kv.create_revision ?? "0",
    revision: Number(kv.mod_revision ?? 0),
    fields: fieldsOfValue(unb64(kv.value)),
  };
}

/** The stored text of `fields`: JSON, `null` fields left out. */
function storedText(fields: JsonObject): string {
  const kept: Record<string, Json> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) kept[k] = v;
  return JSON.stringify(kept);
}

/** The owner mark of an entry, when it carries one. */
export function ownerOf(entry: EtcdEntry): string | undefined {
  const owner = entry.fields[MARK_OWNER];
  return typeof owner === "string" ? owner : undefined;
}

/** etcd's calls, for the controller and for a person's tools. */
export class EtcdClient {
  readonly #http: KeepAliveHttp;
  readonly #timeoutMs: number;
  readonly #onCall: (verb: string, status: number) => void;

  constructor(options: EtcdClientOptions) {
    this.#http = new KeepAliveHttp({ baseUrl: options.baseUrl });
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#onCall = options.onCall ?? (() => {});
  }

  /** The entry of external name `name`, whoever owns it; undefined when none. A linearizable read. */
  async getByName(name: string, signal?: AbortSignal): Promise<EtcdEntry | undefined> {
    const key = keyOfName(name);
    if (key === undefined) return undefined;
    return this.get(key, signal);
  }

  /** The entry at `key`, whoever owns it; undefined when none. */
  async get(key: string, signal?: AbortSignal): Promise<EtcdEntry | undefined> {
    const answer = await this.#call<RangeAnswer>("range", "/v3/kv/range", { key: b64(key) }, signal);
    const kv = answer.kvs?.[0];
    return kv && entryOf(kv);
  }

  /** Creates `key` holding `fields`, only if no key of that name exists ("conflict" otherwise). */
  async create(key: string, fields: StoredValue, signal?: AbortSignal): Promise<EtcdEntry> {
    const k = b64(key);
    const answer = await this.#txn(
      "create",
      {
        compare: [{ key: k, target: "CREATE", result: "EQUAL", create_revision: "0" }],
        success: [{ request_put: { key: k, value: b64(storedText(fields)) } }],
        failure: [{ request_range: { key: k } }],
      },
      signal,
    );
    if (!answer.succeeded) throw new EtcdError(`cannot create ${key}: the key exists`, "conflict", 200);
    const revision = Number(answer.header.revision);
    return { key, name: nameOfKey(key), id: String(revision), revision, fields: withoutNulls(fields) };
  }

  /** Merges `patch` into the entry's fields (`null` removes one), only if it is still at its revision. */
  async update(entry: EtcdEntry, patch: JsonObject, signal?: AbortSignal): Promise<EtcdEntry> {
    const fields = withoutNulls({ ...entry.fields, ...patch });
    const k = b64(entry.key);
    const answer = await this.#txn(
      "update",
      {
        compare: [{ key: k, target: "MOD", result: "EQUAL", mod_revision: String(entry.revision) }],
        success: [{ request_put: { key: k, value: b64(storedText(fields)) } }],
        failure: [{ request_range: { key: k } }],
      },
      signal,
    );
    if (!answer.succeeded) throw movedOn("update", entry.key, answer);
    return { ...entry, revision: Number(answer.header.revision), fields };
  }

  /** Deletes the entry's key, only if it is still at its revision. */
  async delete(entry: EtcdEntry, signal?: AbortSignal): Promise<void> {
    const k = b64(entry.key);
    const answer = await this.#txn(
      "delete",
      {
        compare: [{ key: k, target: "MOD", result: "EQUAL", mod_revision: String(entry.revision) }],
        success: [{ request_delete_range: { key: k } }],
        failure: [{ request_range: { key: k } }],
      },
      signal,
    );
    if (!answer.succeeded) throw movedOn("delete", entry.key, answer);
  }

  /** Writes `key` unconditionally (a person's `etcdctl put`): `text` as is. */
  async put(key: string, text: string, signal?: AbortSignal): Promise<void> {
    await this.#call("put", "/v3/kv/put", { key: b64(key), value: b64(text) }, signal);
  }

  /** Deletes `key` unconditionally (a person's `etcdctl del`). */
  async deleteKey(key: string, signal?: AbortSignal): Promise<void> {
    await this.#call("delete", "/v3/kv/deleterange", { key: b64(key) }, signal);
  }

  /**
   * One page of the keys under {@link KEY_PREFIX}, whoever owns them, in key order. Later pages read at the
   * first page's revision (`pageToken` carries it), so the listing is one consistent snapshot.
   */
  async list(query: { limit?: number; pageToken?: string } = {}, signal?: AbortSignal): Promise<EtcdPage> {
    let from = b64(KEY_PREFIX);
    let atRevision: string | undefined;
    if (query.pageToken !== undefined) {
      const [revision, next] = query.pageToken.split(":");
      atRevision = revision;
      from = next ?? from;
    }
    const answer = await this.#call<RangeAnswer>(
      "list",
      "/v3/kv/range",
      {
        key: from,
        range_end: prefixEnd(KEY_PREFIX),
        limit: String(query.limit ?? 500),
        ...(atRevision === undefined ? {} : { revision: atRevision }),
      },
      signal,
    );
    const kvs = answer.kvs ?? [];
    const revision = Number(atRevision ?? answer.header.revision);
    const last = kvs[kvs.length - 1];
    // The next page starts right after the last key of this one: the key with a zero byte appended.
    const next =
      answer.more && last
        ? `${revision}:${Buffer.concat([Buffer.from(last.key, "base64"), Buffer.from([0])]).toString("base64")}`
        : undefined;
    return { items: kvs.map(entryOf), revision, ...(next === undefined ? {} : { nextPageToken: next }) };
  }

  /**
   * The list-watch of the keys whose value carries owner mark `ownerId`. etcd cannot filter by value, so
   * both filter here: the list keeps our entries, and the watch (over every key under the prefix, with the
   * previous value of each change) turns a change into what it is to us — ours after it: ADDED or
   * MODIFIED; ours before it and not after (deleted, or our mark removed): DELETED, carrying the entry as it
   * was while ours; never ours: nothing. A compacted `since` is a {@link GoneError}: relist.
   *
   * The watch asks for etcd's progress notifications (`progress_notify`): a quiet watch gets one every
   * `--watch-progress-notify-interval` (etcd's default: 10 minutes), and each is a bookmark for
   * `onProgress` (every change up to its revision was sent); so is the last change of every answer, ours
   * or not. The watch's creation is a sign of life only.
   */
  listWatch(ownerId: string, pageSize = 500): ListWatchClient<EtcdEntry> {
    const ours = (entry: EtcdEntry | undefined): entry is EtcdEntry =>
      entry !== undefined && ownerOf(entry) === ownerId;
    return {
      list: async (pageToken, signal) => {
        const page = await this.list(
          { limit: pageSize, ...(pageToken === undefined ? {} : { pageToken }) },
          signal,
        );
        return { ...page, items: page.items.filter(ours) };
      },
      watch: async (since, onEvent, signal, onProgress?: (bookmark?: number) => void) => {
        // The watch starts AT `since`, not after it, and drops the changes at `since` (already delivered):
        // etcd sends no progress notification while its store's revision is below a watch's start
        // revision, so a watch from `since + 1` of an etcd that nobody writes to would never get one.
        const body = {
          create_request: {
            key: b64(KEY_PREFIX),
            range_end: prefixEnd(KEY_PREFIX),
            start_revision: String(Math.max(Number(since), 1)),
            prev_kv: true,
            progress_notify: true,
          },
        };
        for await (const result of this.#watchStream(body, signal)) {
          if (result.canceled) {
            if (Number(result.compact_revision ?? 0) > 0) {
              throw new GoneError(
                `cannot watch from revision ${String(since)}: compacted up to ${result.compact_revision}`,
              );
            }
            throw new EtcdError(
              `the watch was canceled: ${result.cancel_reason ?? "no reason given"}`,
              "failed",
              200,
            );
          }
          if (isProgressNotify(result)) {
            onProgress?.(Number(result.header?.revision));
            continue;
          }
          // The watch's creation shows the stream alive, but its revision is the store's, not one the
          // watch has caught up to (the events since `since` may still be on their way): no bookmark.
          if ((result.events ?? []).length === 0) {
            onProgress?.();
            continue;
          }
          for (const event of result.events ?? []) {
            const revision = Number(event.kv.mod_revision ?? 0);
            if (revision <= Number(since)) continue;
            const before = event.prev_kv && entryOf(event.prev_kv);
            const after = event.type === "DELETE" ? undefined : entryOf(event.kv);
            if (ours(after)) onEvent({ type: ours(before) ? "MODIFIED" : "ADDED", object: after, revision });
            else if (ours(before)) onEvent({ type: "DELETED", object: before, revision });
          }
          // Every change up to the last one here was sent, ours or not: a bookmark, so a watch of nothing
          // but other owners' keys stays alive and resumes after them.
          const last = result.events?.at(-1);
          if (last) onProgress?.(Number(last.kv.mod_revision ?? 0));
        }
      },
    };
  }

  /**
   * The watch's results, one JSON object per line, until the server ends the stream or `signal` aborts. A
   * streaming POST of the create request over the client's own connections; the socket's idle bound is a
   * backstop above etcd's default progress interval (10 minutes), the informer's `watchIdleMs` the one
   * that counts.
   */
  async *#watchStream(body: unknown, signal: AbortSignal): AsyncGenerator<WatchResult> {
    let res: HttpStream;
    try {
      res = await this.#http.stream("/v3/watch", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
        signal,
        idleTimeoutMs: WATCH_SOCKET_IDLE_MS,
      });
    } catch (error) {
      this.#onCall("watch", 0);
      if (signal.aborted) return;
      throw new EtcdError(
        `cannot watch: ${error instanceof Error ? error.message : String(error)}`,
        "throttled",
        0,
        undefined,
        error,
      );
    }
    this.#onCall("watch", res.status);
    if (res.status !== 200) {
      let answer = "";
      try {
        for await (const chunk of res.body) answer += chunk;
      } catch {
        // The error body is a courtesy: the status says what failed.
      }
      throw errorOf("watch", { status: res.status, headers: res.headers, text: answer });
    }
    let buffered = "";
    try {
      for await (const chunk of res.body) {
        buffered += chunk;
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line === "") continue;
          const parsed = JSON.parse(line) as { result?: WatchResult; error?: { message?: string } };
          if (parsed.error)
            throw new EtcdError(`the watch failed: ${parsed.error.message ?? line}`, "failed", 200);
          if (parsed.result) yield parsed.result;
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
  }

  async #txn(verb: string, body: unknown, signal: AbortSignal | undefined): Promise<TxnAnswer> {
    return this.#call<TxnAnswer>(verb, "/v3/kv/txn", body, signal);
  }

  async #call<T>(verb: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<T> {
    let res: HttpAnswer;
    try {
      res = await this.#http.request("POST", path, {
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
        signal,
        timeoutMs: this.#timeoutMs,
      });
    } catch (err) {
      this.#onCall(verb, 0);
      if (signal?.aborted) throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new EtcdError(`cannot ${verb} etcd keys: ${why}`, "throttled", 0, undefined, err);
    }
    this.#onCall(verb, res.status);
    if (res.status === 200) return JSON.parse(res.text) as T;
    throw errorOf(verb, res);
  }

  /** Closes the idle connections to etcd; call once at shutdown. */
  close(): void {
    this.#http.close();
  }
}

/** The fields with their `null`s left out. */
function withoutNulls(fields: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null && v !== undefined));
}

/** A conditional write whose compare failed: the key is gone (notFound) or moved on (stale). */
function movedOn(verb: string, key: string, answer: TxnAnswer): EtcdError {
  const now = answer.responses?.[0]?.response_range?.kvs?.[0];
  return now === undefined
    ? new EtcdError(`cannot ${verb} ${key}: the key is gone`, "notFound", 200)
    : new EtcdError(
        `cannot ${verb} ${key}: the key moved on to revision ${now.mod_revision ?? "?"}`,
        "stale",
        200,
      );
}

/**
 * An error answer of the gateway, `{"code": <gRPC code>, "message": ...}`, read by its gRPC code: 3
 * InvalidArgument (a request etcd refuses for good: above its --max-request-bytes, too many operations)
 * rejected; 8 ResourceExhausted and 14 Unavailable (no leader, too many requests) throttled; anything else
 * failed.
 */
function errorOf(verb: string, res: HttpAnswer): EtcdError {
  let problem: { code?: number; message?: string } = {};
  try {
    problem = JSON.parse(res.text) as typeof problem;
  } catch {
    // Not etcd's error body: the status says what failed.
  }
  const failure: ExternalFailure =
    problem.code === 3
      ? "rejected"
      : problem.code === 8 || problem.code === 14 || res.status === 503 || res.status === 429
        ? "throttled"
        : "failed";
  const message = `cannot ${verb} etcd keys: HTTP ${res.status}${problem.message ? `: ${problem.message}` : ""}`;
  return new EtcdError(message, failure, res.status, problem.code);
}
