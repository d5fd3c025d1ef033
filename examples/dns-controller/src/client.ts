/**
 * The zone API client: one HTTP request per call (never retried here: the library's queue retries), every
 * failure a {@link ZoneError} that carries what the controller decides on — the status, the server's
 * Retry-After, and on a 409 which record holds the name. `listWatch` adapts the listing and the long-poll
 * change feed to the core's list-watch cache, filtered by the API itself to the records we own.
 */
import { context, propagation } from "@opentelemetry/api";
import {
  type ExternalWatchEvent,
  GoneError,
  type HttpAnswer,
  KeepAliveHttp,
  type ListWatchClient,
} from "reconcile-kit";
import type { RecordType } from "./api.ts";

/** A record as the zone returns it. `revision` is the zone revision of its last change. */
export interface ZoneRecord {
  readonly id: string;
  readonly name: string;
  readonly type: RecordType;
  readonly value: string;
  readonly ttl?: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly revision: number;
}

/** The body of a create. */
export type NewZoneRecord = Omit<ZoneRecord, "id" | "revision" | "labels"> & {
  labels: Record<string, string>;
};

/** A JSON merge patch of a record: `null` removes the ttl or a label. */
export interface ZoneRecordPatch {
  /** A new name (a rename): 409 when another record holds it. */
  name?: string;
  type?: RecordType;
  value?: string;
  ttl?: number | null;
  labels?: Record<string, string | null>;
}

/** One page of `GET /records`; `revision` is the zone revision the page is consistent with. */
export interface ZonePage {
  items: ZoneRecord[];
  nextPageToken?: string;
  revision: number;
}

/** One answer of the change feed: the changes after `since`, and the zone revision to ask from next. */
export interface ZoneChanges {
  events: { type: "ADDED" | "MODIFIED" | "DELETED"; record: ZoneRecord; revision: number }[];
  revision: number;
}

/** A failed zone call. `status` is 0 when no HTTP answer came. */
export class ZoneError extends Error {
  readonly status: number;
  /** The server's Retry-After (429, 503), in ms. */
  readonly retryAfterMs: number | undefined;
  /** On a 409: the id of the record that holds the name. */
  readonly holderId: string | undefined;

  constructor(message: string, status: number, retryAfterMs?: number, holderId?: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ZoneError";
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.holderId = holderId;
  }
}

/** Options of {@link ZoneClient}. */
export interface ZoneClientOptions {
  /** e.g. http://127.0.0.1:8053 */
  baseUrl: string;
  /** Sent as `X-Client-Id` (the zone counts writes by it). */
  clientId?: string;
  /** Per-request timeout (the long poll gets its own wait on top). Default 10 s. */
  timeoutMs?: number;
  /** Called after every request with its verb and HTTP status (0: no answer), for metrics. */
  onCall?: (verb: string, status: number) => void;
}

/** How long one long poll of the change feed waits for a change. */
const POLL_MS = 30_000;

/** The zone API's calls. */
export class ZoneClient {
  readonly #http: KeepAliveHttp;
  readonly #timeoutMs: number;
  readonly #onCall: (verb: string, status: number) => void;

  constructor(options: ZoneClientOptions) {
    // node:http over one keep-alive pool (the library's KeepAliveHttp), not fetch: it says why.
    this.#http = new KeepAliveHttp({
      baseUrl: options.baseUrl,
      headers: options.clientId ? { "x-client-id": options.clientId } : {},
    });
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#onCall = options.onCall ?? (() => {});
  }

  /** The record named `name`, whoever owns it; undefined when none. A consistent read. */
  async getByName(name: string, signal?: AbortSignal): Promise<ZoneRecord | undefined> {
    try {
      return await this.#call<ZoneRecord>("get", "GET", `/records/by-name/${encodeURIComponent(name)}`, {
        signal,
      });
    } catch (err) {
      if (err instanceof ZoneError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Creates a record; 409 (`holderId`) when the name is taken. */
  create(input: NewZoneRecord, signal?: AbortSignal): Promise<ZoneRecord> {
    return this.#call("create", "POST", "/records", { body: input, signal });
  }

  /** Merge-patches a record, only if still at `ifMatch` when given (412 otherwise; 404 when gone). */
  patch(id: string, patch: ZoneRecordPatch, ifMatch?: number, signal?: AbortSignal): Promise<ZoneRecord> {
    return this.#call("patch", "PATCH", `/records/${encodeURIComponent(id)}`, {
      body: patch,
      ifMatch,
      signal,
    });
  }

  /** Deletes a record, only if still at `ifMatch` when given (412 otherwise; 404 when gone). */
  async delete(id: string, ifMatch?: number, signal?: AbortSignal): Promise<void> {
    await this.#call("delete", "DELETE", `/records/${encodeURIComponent(id)}`, { ifMatch, signal });
  }

  /** One page of the records whose labels include every one of `labels`. */
  list(
    query: { labels?: Record<string, string>; limit?: number; pageToken?: string },
    signal?: AbortSignal,
  ): Promise<ZonePage> {
    const params = labelParams(query.labels);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.pageToken !== undefined) params.set("pageToken", query.pageToken);
    return this.#call("list", "GET", `/records?${params.toString()}`, { signal });
  }

  /**
   * One long poll of the change feed: the changes after `since` to the records with `labels` (a record that
   * loses them comes as DELETED), as soon as there are any, or none after `timeoutMs`. 410 when `since` is
   * older than the zone's history.
   */
  changes(
    query: { since: number; labels?: Record<string, string>; timeoutMs?: number },
    signal?: AbortSignal,
  ): Promise<ZoneChanges> {
    const timeoutMs = query.timeoutMs ?? POLL_MS;
    const params = labelParams(query.labels);
    params.set("since", String(query.since));
    params.set("timeoutMs", String(timeoutMs));
    return this.#call("watch", "GET", `/records/changes?${params.toString()}`, {
      signal,
      timeoutMs: this.#timeoutMs + timeoutMs,
    });
  }

  /** The list-watch of the records with `labels` (ours: the owner label), for the core's cache. */
  listWatch(labels: Record<string, string>, pageSize = 500): ListWatchClient<ZoneRecord> {
    return {
      list: (pageToken, signal) =>
        this.list({ labels, limit: pageSize, ...(pageToken === undefined ? {} : { pageToken }) }, signal),
      // Long polls, one after another, until aborted; each resumes where the last one ended.
      watch: async (
        since,
        onEvent: (event: ExternalWatchEvent<ZoneRecord>) => void,
        signal,
        onProgress?: (bookmark?: number) => void,
      ) => {
        let from = Number(since);
        while (!signal.aborted) {
          let answer: ZoneChanges;
          try {
            answer = await this.changes({ since: from, labels }, signal);
          } catch (err) {
            if (signal.aborted) return;
            if (err instanceof ZoneError && err.status === 410) throw new GoneError(err.message);
            throw err;
          }
          for (const e of answer.events) onEvent({ type: e.type, object: e.record, revision: e.revision });
          from = answer.revision;
          // Each answer, empty or not, shows the feed alive, and its revision is a bookmark: every change
          // up to it was sent.
          onProgress?.(from);
        }
      },
    };
  }

  async #call<T>(
    verb: string,
    method: string,
    path: string,
    opts: {
      body?: unknown;
      ifMatch?: number | undefined;
      signal?: AbortSignal | undefined;
      timeoutMs?: number;
    },
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.body !== undefined)
      headers["content-type"] = method === "PATCH" ? "application/merge-patch+json" : "application/json";
    if (opts.ifMatch !== undefined) headers["if-match"] = String(opts.ifMatch);
    propagation.inject(context.active(), headers); // W3C traceparent: the zone API can continue our trace
    let res: HttpAnswer;
    try {
      res = await this.#http.request(method, path, {
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal,
        timeoutMs: opts.timeoutMs ?? this.#timeoutMs,
      });
    } catch (err) {
      this.#onCall(verb, 0);
      const why = err instanceof Error ? err.message : String(err);
      throw new ZoneError(`cannot ${verb} zone records: ${why}`, 0, undefined, undefined, err);
    }
    this.#onCall(verb, res.status);
    if (res.status >= 200 && res.status < 300) {
      return (res.status === 204 || res.text === "" ? undefined : JSON.parse(res.text)) as T;
    }
    let problem: { detail?: string; holderId?: string } = {};
    try {
      problem = JSON.parse(res.text) as typeof problem;
    } catch {
      // Not a problem body: the status says what failed.
    }
    const retryAfter = res.headers["retry-after"];
    const seconds = Number(typeof retryAfter === "string" ? retryAfter : Number.NaN);
    throw new ZoneError(
      `cannot ${verb} zone records: HTTP ${res.status}${problem.detail ? `: ${problem.detail}` : ""}`,
      res.status,
      Number.isFinite(seconds) ? seconds * 1000 : undefined,
      problem.holderId,
    );
  }

  /** Closes the idle connections to the zone; call once at shutdown. */
  close(): void {
    this.#http.close();
  }
}

/** `label=key=value` query parameters. */
function labelParams(labels: Record<string, string> = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(labels)) params.append("label", `${key}=${value}`);
  return params;
}
