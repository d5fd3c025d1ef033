/**
 * The external client: a small typed HTTP client for the Shapes cloud API (mock-cloud/).
 *
 * Every call is one HTTP request; nothing is cached here (the list-watch cache lives in
 * library/src/source/external-informer.ts). Failures are thrown as `CloudError`, which carries the HTTP status, the
 * server's problem detail and any `Retry-After`, so the reconciler can decide between "retry later",
 * "back off as the server asked" and "stop: a person must act". With a limiter (library/src/queue/rate-limiter.ts), every
 * call but the watch first waits for its turn and reports its answer back: one client-side rate limit and one
 * hold for the whole process, so a throttling or failing cloud is left alone by every caller at once.
 */
import { context, propagation } from "@opentelemetry/api";
import { createParser } from "eventsource-parser";
import { STATUS_CODES, type IncomingHttpHeaders } from "node:http";
import { type HttpAnswer, type HttpStream, KeepAliveHttp, type RequestLimiter } from "reconcile-kit";

/**
 * The change feed sends a heartbeat every few seconds: a watch silent this long is dead, and is ended as
 * a failure (fetch's body timeout, which the client used before, was the same 300 s).
 */
const WATCH_IDLE_MS = 300_000;

/** A shape as the cloud returns it. */
export interface CloudShape {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly color: string;
  readonly size?: number;
  readonly tags: Readonly<Record<string, string>>;
  readonly revision: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The writable fields of a shape (POST body, PUT body). */
export interface CloudShapeInput {
  name: string;
  type: string;
  color: string;
  size?: number;
  tags: Record<string, string>;
}

/** A JSON Merge Patch (RFC 7396) of a shape: `null` removes a tag or the size. */
export interface CloudShapePatch {
  /** A new name (a rename): 409 when another shape holds it. */
  name?: string;
  type?: string;
  color?: string;
  size?: number | null;
  tags?: Record<string, string | null>;
}

/** One page of a listing. `revision` is the cloud revision the listing is consistent with (first page). */
export interface CloudShapePage {
  items: CloudShape[];
  nextPageToken?: string;
  revision: number;
}

/** One change from the cloud's change feed. */
export interface CloudWatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  shape: CloudShape;
  revision: number;
}

/** An RFC 7807 problem body, as the cloud answers every error. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  existingId?: string;
  [extra: string]: unknown;
}

/** A failed cloud call. `status` is 0 when no HTTP answer came (network error, timeout). */
export class CloudError extends Error {
  /** HTTP status, or 0 for a network failure. */
  readonly status: number;
  /** The server's problem body, when it sent one. */
  readonly problem: Problem | undefined;
  /** How long the server asked us to wait (429/503 `Retry-After`), in ms. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, status: number, problem?: Problem, retryAfterMs?: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "CloudError";
    this.status = status;
    this.problem = problem;
    this.retryAfterMs = retryAfterMs;
  }

  /** 404: the shape does not exist (any more). */
  get isNotFound(): boolean {
    return this.status === 404;
  }
  /** 409: the name is held by another shape (`problem.existingId` says which). */
  get isConflict(): boolean {
    return this.status === 409;
  }
  /** 412: the shape changed since we read it (If-Match failed). */
  get isPreconditionFailed(): boolean {
    return this.status === 412;
  }
  /** 410: the watch's `since` is older than the retained history; relist. */
  get isGone(): boolean {
    return this.status === 410;
  }
}

/** Options of `CloudClient`. */
export interface CloudClientOptions {
  /** Base URL of the cloud, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** Bearer token. */
  token: string;
  /** Sent as `X-Client-Id`: lets the cloud's request log tell replicas apart. */
  clientId?: string;
  /** Per-request timeout (not for the watch stream). Default 10 s. */
  timeoutMs?: number;
  /** Called after every request with the verb (list/get/create/patch/update/delete/watch) and status (0: network). */
  onCall?: (verb: string, status: number) => void;
  /**
   * Gates every request/response call (not the watch stream: one long request, whose reconnects have their own
   * backoff): a call first waits for it with the call's signal, and its answer is reported back (status and
   * Retry-After), so a 429 or an outage holds every call, whoever makes it. Absent: no client-side limit.
   */
  limiter?: RequestLimiter;
}

/** The calls the controller makes to the cloud. Each is a single HTTP request and never retries by itself. */
export class CloudClient {
  readonly #http: KeepAliveHttp;
  readonly #onCall: (verb: string, status: number) => void;
  readonly #limiter: RequestLimiter | undefined;

  constructor(options: CloudClientOptions) {
    // node:http over one keep-alive pool rather than fetch: the library's KeepAliveHttp says why.
    this.#http = new KeepAliveHttp({
      baseUrl: options.baseUrl,
      headers: {
        authorization: `Bearer ${options.token}`,
        "user-agent": "shapes-controller",
        ...(options.clientId ? { "x-client-id": options.clientId } : {}),
      },
      timeoutMs: options.timeoutMs ?? 10_000,
    });
    this.#onCall = options.onCall ?? (() => {});
    this.#limiter = options.limiter;
  }

  /** Lists one page of shapes whose tags match every `tags` entry. */
  async list(
    query: { tags?: Record<string, string>; limit?: number; pageToken?: string },
    signal?: AbortSignal,
  ): Promise<CloudShapePage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query.tags ?? {})) params.append("tag", `${k}=${v}`);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.pageToken !== undefined) params.set("pageToken", query.pageToken);
    const qs = params.toString();
    return this.#json<CloudShapePage>("list", "GET", `/v1/shapes${qs ? `?${qs}` : ""}`, { signal });
  }

  /** Reads one shape by id. Throws CloudError 404 when absent. */
  async get(id: string, signal?: AbortSignal): Promise<CloudShape> {
    return this.#json<CloudShape>("get", "GET", `/v1/shapes/${encodeURIComponent(id)}`, { signal });
  }

  /**
   * Reads the shape holding `name` (`GET /v1/shapes/by-name/{name}`): undefined when none does (404),
   * CloudError for any other failure. A consistent read: unlike the list-watch cache, it never trails a
   * create. Counted as verb "get".
   */
  async getByName(name: string, signal?: AbortSignal): Promise<CloudShape | undefined> {
    try {
      return await this.#json<CloudShape>("get", "GET", `/v1/shapes/by-name/${encodeURIComponent(name)}`, {
        signal,
      });
    } catch (err) {
      if (err instanceof CloudError && err.isNotFound) return undefined;
      throw err;
    }
  }

  /** Creates a shape. Throws CloudError 409 when the name is taken (`problem.existingId`). */
  async create(input: CloudShapeInput, signal?: AbortSignal): Promise<CloudShape> {
    return this.#json<CloudShape>("create", "POST", "/v1/shapes", { body: input, signal });
  }

  /** Merge-patches a shape, only if it is still at `ifMatchRevision` when given (else CloudError 412). */
  async patch(
    id: string,
    patch: CloudShapePatch,
    ifMatchRevision?: number,
    signal?: AbortSignal,
  ): Promise<CloudShape> {
    return this.#json<CloudShape>("patch", "PATCH", `/v1/shapes/${encodeURIComponent(id)}`, {
      body: patch,
      contentType: "application/merge-patch+json",
      ifMatch: ifMatchRevision,
      signal,
    });
  }

  /** Deletes a shape, only if it is still at `ifMatchRevision` when given. Throws CloudError 404 when absent. */
  async delete(id: string, ifMatchRevision?: number, signal?: AbortSignal): Promise<void> {
    await this.#json<undefined>("delete", "DELETE", `/v1/shapes/${encodeURIComponent(id)}`, {
      ifMatch: ifMatchRevision,
      signal,
    });
  }

  /**
   * Follows the change feed from `since` (exclusive), calling `onEvent` for each change in order. With
   * `tags`, only shapes carrying them are seen; a shape that stops carrying them arrives as DELETED.
   * Resolves when the server ends the stream or `signal` aborts; rejects with CloudError (410 when
   * `since` is too old: relist) or a network error. `onHeartbeat` is called for each comment the feed sends
   * (its heartbeat, every few seconds): the stream is alive though no shape changed.
   */
  async watch(
    since: number,
    onEvent: (event: CloudWatchEvent) => void,
    signal: AbortSignal,
    tags: Record<string, string> = {},
    onHeartbeat?: () => void,
  ): Promise<void> {
    const params = new URLSearchParams({ since: String(since) });
    for (const [k, v] of Object.entries(tags)) params.append("tag", `${k}=${v}`);
    let res: HttpStream;
    try {
      res = await this.#http.stream(`/v1/watch?${params.toString()}`, {
        headers: { accept: "text/event-stream" },
        signal,
        idleTimeoutMs: WATCH_IDLE_MS,
      });
    } catch (err) {
      this.#onCall("watch", 0);
      if (signal.aborted) return;
      throw new CloudError(`cannot watch the cloud: ${describe(err)}`, 0, undefined, undefined, err);
    }
    this.#onCall("watch", res.status);
    if (res.status < 200 || res.status >= 300) {
      let text = "";
      try {
        for await (const chunk of res.body) text += chunk;
      } catch {
        // The problem body is a courtesy: the status says what failed.
      }
      throw toCloudError("watch", { status: res.status, headers: res.headers, text });
    }

    let failure: Error | undefined;
    const parser = createParser({
      onEvent: (message) => {
        if (failure) return;
        try {
          onEvent(JSON.parse(message.data) as CloudWatchEvent);
        } catch (err) {
          failure = err instanceof Error ? err : new Error(String(err));
        }
      },
      onComment: () => {
        if (!failure) onHeartbeat?.();
      },
    });
    try {
      for await (const chunk of res.body) {
        parser.feed(chunk);
        if (failure) throw failure;
      }
    } catch (err) {
      if (signal.aborted) return;
      throw err instanceof CloudError || err === failure
        ? err
        : new CloudError(
            `cannot read the cloud's change feed: ${describe(err)}`,
            0,
            undefined,
            undefined,
            err,
          );
    }
  }

  async #json<T>(
    verb: string,
    method: string,
    path: string,
    opts: {
      body?: unknown;
      contentType?: string;
      ifMatch?: number | undefined;
      signal?: AbortSignal | undefined;
    },
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.body !== undefined) headers["content-type"] = opts.contentType ?? "application/json";
    if (opts.ifMatch !== undefined) headers["if-match"] = `"${opts.ifMatch}"`;
    // W3C `traceparent` from the active span (the reconcile's call): the cloud continues our trace.
    propagation.inject(context.active(), headers);
    if (this.#limiter) {
      try {
        await this.#limiter.acquire(opts.signal);
      } catch (err) {
        // Aborted while waiting for the limiter (leadership lost, shutdown): nothing was sent.
        throw new CloudError(`cannot ${verb} cloud shapes: ${describe(err)}`, 0, undefined, undefined, err);
      }
    }
    // The timeout starts once the request may go: time spent waiting for the limiter is not the server's.
    let res: HttpAnswer;
    try {
      res = await this.#http.request(method, path, {
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal,
      });
    } catch (err) {
      this.#onCall(verb, 0);
      // No answer says the service may be unwell — unless we cut the request ourselves.
      if (opts.signal?.aborted !== true) this.#limiter?.report(0);
      throw new CloudError(`cannot ${verb} cloud shapes: ${describe(err)}`, 0, undefined, undefined, err);
    }
    const ok = res.status >= 200 && res.status < 300;
    this.#onCall(verb, res.status);
    this.#limiter?.report(res.status, ok ? undefined : parseRetryAfter(header(res, "retry-after")));
    if (!ok) throw toCloudError(verb, res);
    if (res.status === 204 || res.text === "") return undefined as T;
    try {
      return JSON.parse(res.text) as T;
    } catch (err) {
      throw new CloudError(
        `cannot ${verb} cloud shapes: HTTP ${res.status} with a body that is not JSON: ${res.text.slice(0, 200)}`,
        res.status,
        undefined,
        undefined,
        err,
      );
    }
  }

  /** Closes the idle connections to the cloud; call once at shutdown. */
  close(): void {
    this.#http.close();
  }
}

/** Turns an error answer into a CloudError with the server's own words. */
function toCloudError(verb: string, res: HttpAnswer): CloudError {
  let problem: Problem | undefined;
  try {
    problem = res.text ? (JSON.parse(res.text) as Problem) : undefined;
  } catch {
    problem = undefined;
  }
  const detail = problem?.detail ?? problem?.title ?? STATUS_CODES[res.status];
  return new CloudError(
    `cannot ${verb} cloud shapes: HTTP ${res.status}${detail ? `: ${detail}` : ""}`,
    res.status,
    problem,
    parseRetryAfter(header(res, "retry-after")),
  );
}

/** A header's value as one string, or null when absent. */
function header(res: { headers: IncomingHttpHeaders }, name: string): string | null {
  const value = res.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/** Parses `Retry-After` (delta-seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? ` (${err.cause.message})` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
