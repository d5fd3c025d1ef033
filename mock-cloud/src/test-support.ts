/**
 * Helpers for the mock cloud's tests (not a test file itself): a real cloud on a random port, built from
 * `buildCloud` so the test can also reach its dependencies (the repository for `PRAGMA integrity_check`),
 * a supertest client with the token, a Server-Sent Events reader over real HTTP (fetch), and tracing that
 * keeps its spans in memory.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace";
import { createParser } from "eventsource-parser";
import request from "supertest";
import type { Test } from "supertest";
import { buildCloud, type Cloud } from "./app.ts";
import type { CloudOptions } from "./options.ts";
import type { Shape, ShapeFields, WatchEvent } from "./schemas.ts";
import { registerProvider } from "./tracing-sdk.ts";

/** The API token of test clouds. */
export const TOKEN = "test-token";
/** The admin token of test clouds. */
export const ADMIN_TOKEN = "test-admin-token";

/** A cloud listening on 127.0.0.1 for one test file or test. */
export interface TestCloud {
  readonly url: string;
  readonly cloud: Cloud;
  /** A request with the API token set. */
  api(method: "get" | "post" | "put" | "patch" | "delete" | "head" | "options", path: string): Test;
  /** A request with the admin token set. */
  admin(method: "get" | "put" | "delete", path: string): Test;
  /** Creates a shape (asserting 201) and returns it. */
  create(fields: Record<string, unknown>): Promise<Shape>;
  close(): Promise<void>;
}

/** Starts a cloud on a random port. */
export async function startTestCloud(options: Partial<CloudOptions> = {}): Promise<TestCloud> {
  const cloud = buildCloud({ token: TOKEN, adminToken: ADMIN_TOKEN, ...options });
  const server = createServer(cloud.app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const api: TestCloud["api"] = (method, path) =>
    request(url)[method](path).set("authorization", `Bearer ${TOKEN}`);
  return {
    url,
    cloud,
    api,
    admin: (method, path) => request(url)[method](path).set("authorization", `Bearer ${ADMIN_TOKEN}`),
    async create(fields) {
      const res = await api("post", "/v1/shapes").send(fields);
      if (res.status !== 201)
        throw new Error(`cannot create ${JSON.stringify(fields)}: ${res.status} ${res.text}`);
      return res.body as Shape;
    },
    async close() {
      cloud.deps.feed.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      cloud.dispose();
    },
  };
}

/** One parsed Server-Sent Event. */
export interface SseMessage {
  readonly id: string | undefined;
  readonly data: string;
}

/** An open watch stream, read over real HTTP. */
export interface WatchStream {
  readonly status: number;
  readonly headers: Headers;
  /** Every event so far, parsed as WatchEvent. */
  readonly events: WatchEvent[];
  /** Every raw event so far (with its SSE id). */
  readonly messages: SseMessage[];
  /** Every comment line so far (heartbeats). */
  readonly comments: string[];
  /** The body when the status is not 200. */
  readonly problem: unknown;
  /** Resolves when `predicate` holds (checked after each event/comment/end), or rejects after `timeoutMs`. */
  until(predicate: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ended the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens `GET /v1/watch` with `query` and extra headers. */
export async function openWatch(
  url: string,
  query: string,
  headers: Record<string, string> = {},
): Promise<WatchStream> {
  const abort = new AbortController();
  const res = await fetch(`${url}/v1/watch${query}`, {
    headers: { authorization: `Bearer ${TOKEN}`, accept: "text/event-stream", ...headers },
    signal: abort.signal,
  });
  const events: WatchEvent[] = [];
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const w of [...waiters]) w();
  };
  let problem: unknown;
  let ended: Promise<void>;
  if (res.status !== 200 || !res.body) {
    problem = await res.json().catch(() => undefined);
    ended = Promise.resolve();
  } else {
    const parser = createParser({
      onEvent: (m) => {
        messages.push({ id: m.id, data: m.data });
        events.push(JSON.parse(m.data) as WatchEvent);
        changed();
      },
      onComment: (c) => {
        comments.push(c);
        changed();
      },
    });
    const body = res.body;
    ended = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      } catch {
        // aborted by close()
      }
      changed();
    })();
  }
  let isEnded = false;
  void ended.then(() => {
    isEnded = true;
    changed();
  });
  return {
    status: res.status,
    headers: res.headers,
    events,
    messages,
    comments,
    problem,
    ended,
    until(predicate, what, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (predicate()) {
            finish();
            resolve();
          } else if (isEnded) {
            finish();
            reject(
              new Error(
                `the watch ended before: ${what} (events: ${JSON.stringify(events.map((e) => [e.type, e.revision]))})`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(
            new Error(
              `timed out waiting for: ${what} (events: ${JSON.stringify(events.map((e) => [e.type, e.revision]))})`,
            ),
          );
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => abort.abort(),
  };
}

/** Polls `condition` until it holds or `timeoutMs` passes (then throws, naming `what`). */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The `field` of every entry of a 400 problem's `errors` (empty when there are none). */
export function problemFields(body: unknown): string[] {
  const errors = (body as { errors?: { field: string }[] } | undefined)?.errors ?? [];
  return errors.map((e) => e.field);
}

/** The ids of a page's items. */
export function idsOf(page: unknown): string[] {
  return ((page as { items?: { id: string }[] } | undefined)?.items ?? []).map((s) => s.id);
}

/** A clock the test moves by hand (for `listLagMs`, which counts from the data's clock). */
export function manualClock(start = Date.parse("2030-01-01T00:00:00Z")) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** The fields of a valid red square named `name`, for the repository (`extra` overrides). */
export function shapeFields(name: string, extra: Partial<ShapeFields> = {}): ShapeFields {
  return { name, type: "square", color: "red", tags: {}, ...extra };
}

/** A valid shape body with a unique-enough name; `extra` may make it invalid, for the API's refusals. */
export function shapeBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...shapeFields(name), ...extra };
}

/** Tracing registered for the process whose finished spans stay in memory (see {@link startInMemoryTracing}). */
export interface InMemoryTracing {
  /** Every span finished so far, oldest first. */
  spans(): ReadableSpan[];
  /** Forgets the spans finished so far. */
  reset(): void;
  /** Unregisters it: later code sees tracing off again. */
  stop(): Promise<void>;
}

/**
 * Registers a real SDK provider for the whole process, as `startCloudTracing` registers one (the same
 * context manager and propagator), that keeps each span as it ends; call `stop()` in `afterAll`.
 */
export function startInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const stop = registerProvider(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  return { spans: () => exporter.getFinishedSpans(), reset: () => exporter.reset(), stop };
}
