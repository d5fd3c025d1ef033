/**
 * An OTLP/HTTP trace receiver inside this process: what a tracing backend (Jaeger, Tempo, an OpenTelemetry
 * Collector) would be to the controller and the mock cloud, small enough for a test or the bench. Give a
 * process `OTEL_EXPORTER_OTLP_ENDPOINT=<receiver.url>` (`receiver.env`) and its exporter
 * (`@opentelemetry/exporter-trace-otlp-http`) posts its spans here; the receiver decodes them and keeps them,
 * flattened, for the test to look at:
 *
 *   const receiver = await startOtlpReceiver();
 *   const controller = await stack.startController({ env: receiver.env });
 *   const [span] = await receiver.waitFor((s) => s.name === "reconcile", { what: "a reconcile" });
 *   const spans = receiver.trace(span.traceId);   // the whole trace, oldest first
 *   await receiver.close();
 *
 * It speaks OTLP/HTTP with JSON bodies (the OTLP/JSON encoding of ExportTraceServiceRequest, gzip or not) on
 * `POST /v1/traces`, and answers 200 `{}` (an empty ExportTraceServiceResponse). Protobuf bodies are refused
 * (415), anything that is not OTLP/JSON gets a 400 saying what is wrong, other paths 404, other methods 405.
 * Memory is bounded: it keeps the newest `maxSpans` spans and counts the ones it let go.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";

/** How long a wait for spans lasts by default: a minute, as the stack's waits (stack/wait.ts). */
const DEFAULT_WAIT_MS = 60_000;

/** Where OTLP/HTTP exporters post their spans, under the base URL. */
export const OTLP_TRACES_PATH = "/v1/traces";

/**
 * An attribute's value, decoded from OTLP's AnyValue: strings, booleans and doubles as they are, `intValue`
 * as a number (exact up to 2^53), `bytesValue` as bytes, arrays and key-value lists as arrays and objects,
 * and an empty AnyValue as null.
 */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | Uint8Array
  | readonly AttributeValue[]
  | { readonly [key: string]: AttributeValue };

/** Attributes by key. */
export type Attributes = Record<string, AttributeValue>;

/** One span as received, flattened out of its resource and scope. Times are exact nanoseconds (bigint). */
export interface ReceivedSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** The parent's span id; undefined for a root span (absent or empty in OTLP). */
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** The resource's `service.name` (the process that made the span), when it is a string. */
  service: string | undefined;
  /** The resource's attributes (shared by every span of one process's batch). */
  resource: Attributes;
  /** The instrumentation scope's name (the tracer's name). */
  scope: string | undefined;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  events: { name: string; timeUnixNano: bigint; attributes: Attributes }[];
  links: { traceId: string; spanId: string; attributes: Attributes }[];
  /** code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
}

/** Options of {@link startOtlpReceiver}. */
export interface OtlpReceiverOptions {
  /** Spans kept (the newest); older ones are dropped and counted. 0 keeps none: counting only. Default 200,000. */
  maxSpans?: number;
  /** The largest request body, after gunzip, in bytes. Default 32 MiB (413 beyond). */
  maxBodyBytes?: number;
}

/** Options of {@link OtlpReceiver.waitFor}. */
export interface WaitForSpansOptions {
  /** How long to wait. Default 60 s ({@link DEFAULT_WAIT_MS}). */
  timeoutMs?: number;
  /** Stops the wait (rejects) when aborted. */
  signal?: AbortSignal;
  /** How many matching spans to wait for. Default 1. */
  count?: number;
  /** What the predicate looks for, for the error message, e.g. "named reconcile". Default "matching the predicate". */
  what?: string;
}

/** Starts a receiver on 127.0.0.1, on a free port. */
export function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  return OtlpReceiver.start(options);
}

interface Waiter {
  predicate: (span: ReceivedSpan) => boolean;
  count: number;
  matches: ReceivedSpan[];
  resolve(spans: ReceivedSpan[]): void;
  fail(why: string, cause?: unknown): void;
}

/** A running receiver (see the top of this file). */
export class OtlpReceiver {
  readonly #server: Server;
  readonly #maxSpans: number;
  readonly #maxBodyBytes: number;
  #url = "";
  #closing: Promise<void> | undefined;
  #spans: ReceivedSpan[] = [];
  #waiters = new Set<Waiter>();
  #requests = 0;
  #received = 0;
  #dropped = 0;
  #rejected = 0;
  #lastRejection: string | undefined;
  #byService = new Map<string, number>();

  private constructor(options: OtlpReceiverOptions) {
    this.#maxSpans = options.maxSpans ?? 200_000;
    this.#maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        // #handle answers every error it expects; this is the last line against a crash.
        if (!res.headersSent) send(res, 500, `cannot handle the request: ${messageOf(error)}`);
        else res.destroy();
      });
    });
  }

  /** Starts a receiver; {@link startOtlpReceiver} says the same. */
  static async start(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver(options);
    await new Promise<void>((resolve, reject) => {
      receiver.#server.once("error", reject);
      receiver.#server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = receiver.#server.address() as AddressInfo;
    receiver.#url = `http://127.0.0.1:${port}`;
    return receiver;
  }

  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (exporters post to `<url>/v1/traces`). */
  get url(): string {
    return this.#url;
  }

  /** The environment that makes a process export its spans here: OTEL_EXPORTER_OTLP_ENDPOINT. */
  get env(): Record<string, string> {
    return { OTEL_EXPORTER_OTLP_ENDPOINT: this.#url };
  }

  /** Export requests accepted (answered 200). */
  get requests(): number {
    return this.#requests;
  }

  /** Spans accepted, kept or not. */
  get spansReceived(): number {
    return this.#received;
  }

  /** Spans received but no longer kept (beyond `maxSpans`, the oldest go first). */
  get spansDropped(): number {
    return this.#dropped;
  }

  /** Spans accepted, by the resource's service.name ("(no service.name)" when it has none). */
  get spansByService(): Record<string, number> {
    return Object.fromEntries(this.#byService);
  }

  /** Requests refused (answered 4xx or 5xx). */
  get requestsRejected(): number {
    return this.#rejected;
  }

  /** The message of the last refused request, if any. */
  get lastRejection(): string | undefined {
    return this.#lastRejection;
  }

  /** The spans kept, in the order received. */
  spans(): ReceivedSpan[] {
    return [...this.#spans];
  }

  /** The kept spans of one trace, by start time. */
  trace(traceId: string): ReceivedSpan[] {
    const id = traceId.toLowerCase();
    return this.#spans
      .filter((s) => s.traceId === id)
      .sort((a, b) =>
        a.startTimeUnixNano < b.startTimeUnixNano ? -1 : a.startTimeUnixNano > b.startTimeUnixNano ? 1 : 0,
      );
  }

  /**
   * Resolves with every span that matches `predicate` once there are `count` of them (default 1): at once
   * when the kept spans already hold them, else when a received batch brings the last one — no polling.
   * Rejects with `cannot receive ... within N ms` and a summary of what was received when the time is up,
   * or when `signal` aborts, the predicate throws, or the receiver closes.
   */
  waitFor(
    predicate: (span: ReceivedSpan) => boolean,
    {
      timeoutMs = DEFAULT_WAIT_MS,
      signal,
      count = 1,
      what = "matching the predicate",
    }: WaitForSpansOptions = {},
  ): Promise<ReceivedSpan[]> {
    const wanted = `${count === 1 ? "a span" : `${count} spans`} ${what}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const seen = `${waiter.matches.length} of ${count} matched`;
        waiter.fail(`cannot receive ${wanted} within ${timeoutMs} ms (${seen})`);
      }, timeoutMs);
      const onAbort = () => waiter.fail(`cannot receive ${wanted}: the wait was aborted`, signal?.reason);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#waiters.delete(waiter);
      };
      const waiter: Waiter = {
        predicate,
        count,
        matches: [],
        resolve: (spans) => {
          done();
          resolve(spans);
        },
        fail: (why, cause) => {
          done();
          reject(new Error(`${why}; received: ${this.summary()}`, cause === undefined ? {} : { cause }));
        },
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      if (this.#closing) {
        waiter.fail(`cannot receive ${wanted}: the receiver is closed`);
        return;
      }
      this.#waiters.add(waiter);
      if (!offer(waiter, this.#spans)) signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * What was received, in one line: requests, spans, drops and refusals, then the kept spans' names by
   * service, the most frequent first, e.g. `3 requests, 7 spans; shapes-controller: reconcile ×4, ...`.
   */
  summary(): string {
    if (this.#requests === 0 && this.#rejected === 0) return "nothing";
    const head = [
      `${this.#requests} request${this.#requests === 1 ? "" : "s"}, ${this.#received} span${this.#received === 1 ? "" : "s"}`,
      ...(this.#dropped > 0 ? [`${this.#dropped} no longer kept`] : []),
      ...(this.#rejected > 0 ? [`${this.#rejected} refused (last: ${this.#lastRejection ?? "?"})`] : []),
    ].join(", ");
    const names = new Map<string, Map<string, number>>();
    for (const s of this.#spans) {
      const byName = names.get(serviceKey(s.service)) ?? new Map<string, number>();
      names.set(serviceKey(s.service), byName.set(s.name, (byName.get(s.name) ?? 0) + 1));
    }
    const services = [...names].map(([service, byName]) => {
      const top = [...byName].sort((a, b) => b[1] - a[1]);
      const shown = top.slice(0, 10).map(([name, n]) => `${name} ×${n}`);
      return `${service}: ${shown.join(", ")}${top.length > 10 ? `, and ${top.length - 10} more names` : ""}`;
    });
    return [head, ...services].join("; ");
  }

  /** Forgets every kept span and resets the counts, as if just started; a pending waitFor counts from now. */
  clear(): void {
    this.#spans = [];
    this.#requests = this.#received = this.#dropped = this.#rejected = 0;
    this.#lastRejection = undefined;
    this.#byService.clear();
    for (const waiter of this.#waiters) waiter.matches = [];
  }

  /** Stops listening (open connections are cut) and rejects pending waits. Safe to call twice. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      for (const waiter of [...this.#waiters]) waiter.fail("cannot receive spans: the receiver was closed");
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const path = new URL(req.url ?? "/", "http://receiver").pathname;
      if (path !== OTLP_TRACES_PATH) {
        throw new HttpError(404, `cannot find ${path}: this receiver serves POST ${OTLP_TRACES_PATH}`);
      }
      if (req.method !== "POST") {
        res.setHeader("allow", "POST");
        throw new HttpError(405, `cannot ${req.method ?? "?"} ${OTLP_TRACES_PATH}: only POST`);
      }
      const type = req.headers["content-type"] ?? "";
      if (!/^application\/json\b/i.test(type)) {
        throw new HttpError(
          415,
          `cannot read a body of content-type ${JSON.stringify(type)}: this receiver takes OTLP/JSON (application/json), not protobuf`,
        );
      }
      const body = await this.#readBody(req);
      let json: unknown;
      try {
        json = JSON.parse(body.toString("utf8"));
      } catch (error) {
        throw new HttpError(400, `cannot read the OTLP request: the body is not JSON (${messageOf(error)})`);
      }
      this.#accept(decodeRequest(json));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    } catch (error) {
      const status = error instanceof HttpError ? error.status : 500;
      const message =
        error instanceof HttpError ? error.message : `cannot handle the request: ${messageOf(error)}`;
      this.#rejected += 1;
      this.#lastRejection = message;
      send(res, status, message);
    }
  }

  async #readBody(req: IncomingMessage): Promise<Buffer> {
    const tooLarge = `cannot take a body over ${this.#maxBodyBytes} bytes`;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > this.#maxBodyBytes) throw new HttpError(413, tooLarge);
      chunks.push(chunk as Buffer);
    }
    const raw = Buffer.concat(chunks);
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding === "identity") return raw;
    if (encoding !== "gzip") {
      throw new HttpError(415, `cannot decode content-encoding ${JSON.stringify(encoding)}: only gzip`);
    }
    try {
      return await gunzipAsync(raw, { maxOutputLength: this.#maxBodyBytes });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        throw new HttpError(413, tooLarge);
      throw new HttpError(400, `cannot gunzip the body: ${messageOf(error)}`);
    }
  }

  #accept(batch: ReceivedSpan[]): void {
    this.#requests += 1;
    this.#received += batch.length;
    for (const span of batch) {
      const key = serviceKey(span.service);
      this.#byService.set(key, (this.#byService.get(key) ?? 0) + 1);
      if (this.#maxSpans > 0) this.#spans.push(span);
    }
    const excess = this.#spans.length - this.#maxSpans;
    if (excess > 0) this.#spans.splice(0, excess);
    this.#dropped = this.#received - this.#spans.length;
    for (const waiter of [...this.#waiters]) offer(waiter, batch);
  }
}

/** Adds the spans that match to the waiter's, and resolves it once it has enough. True when it resolved. */
function offer(waiter: Waiter, spans: readonly ReceivedSpan[]): boolean {
  try {
    for (const span of spans) if (waiter.predicate(span)) waiter.matches.push(span);
  } catch (error) {
    waiter.fail(`cannot receive spans: the predicate threw (${messageOf(error)})`, error);
    return true;
  }
  if (waiter.matches.length < waiter.count) return false;
  waiter.resolve([...waiter.matches]);
  return true;
}

const gunzipAsync = promisify(gunzip);

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** google.rpc.Status codes for the answers' bodies, as OTLP/HTTP asks. */
const RPC_CODE: Record<number, number> = { 400: 3, 404: 5, 405: 12, 413: 8, 415: 3, 500: 13 };

function send(res: ServerResponse, status: number, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ code: RPC_CODE[status] ?? 2, message }));
}

function serviceKey(service: string | undefined): string {
  return service ?? "(no service.name)";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// --- decoding OTLP/JSON (proto3 JSON: a field at its default may be absent) ---

/** A request body that is not OTLP/JSON; its message names the field. */
function invalid(path: string, what: string): never {
  throw new HttpError(400, `cannot read the OTLP request: ${path} ${what}`);
}

/** The spans of an ExportTraceServiceRequest, flattened; throws HttpError 400 naming the first bad field. */
function decodeRequest(body: unknown): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const request = record(body, "the body");
  list(request.resourceSpans, "resourceSpans").forEach((rs, i) => {
    const rsPath = `resourceSpans[${i}]`;
    const resourceSpans = record(rs, rsPath);
    const resource = attributes(
      record(resourceSpans.resource, `${rsPath}.resource`).attributes,
      `${rsPath}.resource.attributes`,
    );
    const service = typeof resource["service.name"] === "string" ? resource["service.name"] : undefined;
    list(resourceSpans.scopeSpans, `${rsPath}.scopeSpans`).forEach((ss, j) => {
      const ssPath = `${rsPath}.scopeSpans[${j}]`;
      const scopeSpans = record(ss, ssPath);
      const scopeName = text(record(scopeSpans.scope, `${ssPath}.scope`).name, `${ssPath}.scope.name`);
      list(scopeSpans.spans, `${ssPath}.spans`).forEach((s, k) => {
        const path = `${ssPath}.spans[${k}]`;
        const span = record(s, path);
        const status = record(span.status, `${path}.status`);
        const statusMessage = text(status.message, `${path}.status.message`);
        spans.push({
          traceId: id(span.traceId, 16, `${path}.traceId`),
          spanId: id(span.spanId, 8, `${path}.spanId`),
          parentSpanId:
            span.parentSpanId === undefined || span.parentSpanId === ""
              ? undefined
              : id(span.parentSpanId, 8, `${path}.parentSpanId`),
          name: text(span.name, `${path}.name`),
          kind: integer(span.kind, `${path}.kind`),
          service,
          resource,
          scope: scopeName === "" ? undefined : scopeName,
          startTimeUnixNano: nanos(span.startTimeUnixNano, `${path}.startTimeUnixNano`),
          endTimeUnixNano: nanos(span.endTimeUnixNano, `${path}.endTimeUnixNano`),
          attributes: attributes(span.attributes, `${path}.attributes`),
          events: list(span.events, `${path}.events`).map((e, n) => {
            const event = record(e, `${path}.events[${n}]`);
            return {
              name: text(event.name, `${path}.events[${n}].name`),
              timeUnixNano: nanos(event.timeUnixNano, `${path}.events[${n}].timeUnixNano`),
              attributes: attributes(event.attributes, `${path}.events[${n}].attributes`),
            };
          }),
          links: list(span.links, `${path}.links`).map((l, n) => {
            const link = record(l, `${path}.links[${n}]`);
            return {
              traceId: id(link.traceId, 16, `${path}.links[${n}].traceId`),
              spanId: id(link.spanId, 8, `${path}.links[${n}].spanId`),
              attributes: attributes(link.attributes, `${path}.links[${n}].attributes`),
            };
          }),
          status: {
            code: integer(status.code, `${path}.status.code`),
            ...(statusMessage === "" ? {} : { message: statusMessage }),
          },
        });
      });
    });
  });
  return spans;
}

/** An object; absent (or null) reads as an empty one. */
function record(value: unknown, path: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) invalid(path, `is not an object: ${brief(value)}`);
  return value as Record<string, unknown>;
}

/** An array; absent (or null) reads as an empty one. */
function list(value: unknown, path: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(path, `is not an array: ${brief(value)}`);
  return value as unknown[];
}

function text(value: unknown, path: string): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") invalid(path, `is not a string: ${brief(value)}`);
  return value;
}

/** An int32/int64 field: a number, or (int64 in proto3 JSON) a decimal string. */
function integer(value: unknown, path: string): number {
  if (value === undefined || value === null) return 0;
  const n = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n)) invalid(path, `is not an integer: ${brief(value)}`);
  return n;
}

/** A fixed64 time: a decimal string (proto3 JSON) or a whole number, as an exact bigint. */
function nanos(value: unknown, path: string): bigint {
  if (value === undefined || value === null) return 0n;
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
  if (typeof value === "number" && Number.isInteger(value) && value >= 0) return BigInt(value);
  return invalid(path, `is not a time in nanoseconds: ${brief(value)}`);
}

/** A trace or span id of `bytes` bytes: hex (OTLP/JSON's encoding) or base64 (protobuf's JSON mapping). */
function id(value: unknown, bytes: number, path: string): string {
  if (typeof value === "string") {
    if (value.length === bytes * 2 && /^[0-9a-f]+$/i.test(value)) return value.toLowerCase();
    if (value.length === Math.ceil(bytes / 3) * 4 && /^[A-Za-z0-9+/]+=*$/.test(value)) {
      const decoded = Buffer.from(value, "base64");
      if (decoded.length === bytes) return decoded.toString("hex");
    }
  }
  return invalid(path, `is not an id of ${bytes} bytes (${bytes * 2} hex digits): ${brief(value)}`);
}

/** A list of KeyValue as an object. */
function attributes(value: unknown, path: string): Attributes {
  const out: Attributes = {};
  list(value, path).forEach((kv, i) => {
    const pair = record(kv, `${path}[${i}]`);
    if (typeof pair.key !== "string") invalid(`${path}[${i}].key`, `is not a string: ${brief(pair.key)}`);
    out[pair.key] = anyValue(pair.value, `${path}[${i}].value`);
  });
  return out;
}

/** An AnyValue, decoded (see AttributeValue). */
function anyValue(value: unknown, path: string): AttributeValue {
  const v = record(value, path);
  if (v.stringValue !== undefined) return text(v.stringValue, `${path}.stringValue`);
  if (v.boolValue !== undefined) {
    if (typeof v.boolValue !== "boolean")
      invalid(`${path}.boolValue`, `is not a boolean: ${brief(v.boolValue)}`);
    return v.boolValue;
  }
  if (v.intValue !== undefined) return integer(v.intValue, `${path}.intValue`);
  if (v.doubleValue !== undefined) {
    // proto3 JSON writes the non-finite doubles as strings.
    const d = typeof v.doubleValue === "string" ? Number(v.doubleValue) : v.doubleValue;
    if (typeof d !== "number" || (Number.isNaN(d) && v.doubleValue !== "NaN")) {
      invalid(`${path}.doubleValue`, `is not a number: ${brief(v.doubleValue)}`);
    }
    return d;
  }
  if (v.arrayValue !== undefined) {
    const values = list(record(v.arrayValue, `${path}.arrayValue`).values, `${path}.arrayValue.values`);
    return values.map((item, i) => anyValue(item, `${path}.arrayValue.values[${i}]`));
  }
  if (v.kvlistValue !== undefined) {
    return attributes(record(v.kvlistValue, `${path}.kvlistValue`).values, `${path}.kvlistValue.values`);
  }
  if (v.bytesValue !== undefined) {
    return new Uint8Array(Buffer.from(text(v.bytesValue, `${path}.bytesValue`), "base64"));
  }
  return null;
}

/** A value in an error message, cut short. */
function brief(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
