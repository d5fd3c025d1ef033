/**
 * The terminal feed of `npm start`: a short, readable account of what the controller does, from the two
 * places it tells: the Kubernetes Events it records about Shapes (what `kubectl describe` shows) and its
 * own log (info and above, e.g. a leak it removed, which has no Shape left to hang an Event on).
 *
 * The Events come through the controller's own generic informer (library/src/source/informer.ts): the
 * demo is a tiny client of the same core, list-then-watch with recovery. Only Events that appear after the
 * first list are shown: old ones are history, not news.
 */
import { open, stat } from "node:fs/promises";
import type { CoreV1Event, KubeConfig } from "@kubernetes/client-node";
import { type Logger } from "reconcile-kit";
import { KubeHttp, SupervisedInformer } from "reconcile-kit/parts";
import { kubeConnectionOf } from "reconcile-kit/client-node";
import { GROUP } from "@shapes/controller";

/** pino's level numbers and names. */
const LEVELS: Record<number, string> = {
  10: "trace",
  20: "debug",
  30: "info",
  40: "warn",
  50: "error",
  60: "fatal",
};
/** Fields every pino line has: not worth repeating in the feed. */
const STANDARD_FIELDS = new Set(["level", "time", "pid", "hostname", "name", "msg", "v"]);

/** `HH:MM:SS` in local time. */
export function clock(at: Date): string {
  return at.toTimeString().slice(0, 8);
}

/**
 * One feed line for an Event about one of our custom resources (Shape, ShapeRef), or undefined for
 * any other Event (pods, nodes, ... of a user's cluster).
 */
export function formatEvent(event: CoreV1Event): string | undefined {
  const about = event.involvedObject;
  if (!about?.apiVersion?.startsWith(`${GROUP}/`)) return undefined;
  const when =
    event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata?.creationTimestamp;
  const object = `${about.kind ?? "?"} ${about.namespace ? `${about.namespace}/` : ""}${about.name ?? "?"}`;
  const type = event.type === "Warning" ? "Warning " : "";
  return `${clock(when ? new Date(when) : new Date())}  event  ${object}  ${type}${event.reason ?? ""}: ${event.message ?? ""}`;
}

/**
 * One feed line for a line of the controller's JSON log at `minLevel` or above, or undefined (below the
 * level, or not JSON: e.g. a stack trace printed by node itself, which stays in the log file).
 */
export function formatLogLine(raw: string, minLevel = 30): string | undefined {
  if (!raw.startsWith("{")) return undefined;
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const level = typeof line.level === "number" ? line.level : 0;
  if (level < minLevel || typeof line.msg !== "string") return undefined;
  const fields = Object.entries(line)
    .filter(([key, value]) => !STANDARD_FIELDS.has(key) && value !== undefined && value !== null)
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  const when = typeof line.time === "number" ? new Date(line.time) : new Date();
  const text = `${clock(when)}  log    ${(LEVELS[level] ?? String(level)).padEnd(5)}  ${line.msg}${fields.length ? `  ${fields.join(" ")}` : ""}`;
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

function fieldText(value: unknown): string {
  if (typeof value === "string") {
    const line = value.split("\n")[0] ?? "";
    return /\s/.test(line) ? JSON.stringify(line) : line;
  }
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "object" && value !== null) return JSON.stringify(errorText(value) ?? value);
  return JSON.stringify(value);
}

/**
 * What a person needs of an error pino serialized ({ type, message, stack, ... }): for a Kubernetes API
 * error (client-node's ApiException: code and a Status body), the Status message; else the message's
 * first line. Undefined for an object that is not an error.
 */
function errorText(value: object): string | undefined {
  const err = value as { message?: unknown; code?: unknown; body?: unknown };
  if (typeof err.message !== "string") return undefined;
  if (typeof err.code === "number" && typeof err.body === "string") {
    try {
      const status = JSON.parse(err.body) as { message?: unknown };
      if (typeof status.message === "string") return `${status.message} (HTTP ${err.code})`;
    } catch {
      // not a Status body
    }
  }
  return err.message.split("\n")[0];
}

/** Shows new Events about Shapes and ShapeRefs as they are recorded. */
export class EventFeed {
  readonly #informer: SupervisedInformer<CoreV1Event>;
  readonly #http: KubeHttp;

  /** `print` gets one formatted line per new Event. Nothing runs until `start()`. */
  constructor(kubeConfig: KubeConfig, print: (line: string) => void, logger: Logger) {
    this.#http = new KubeHttp(kubeConnectionOf(kubeConfig));
    this.#informer = new SupervisedInformer<CoreV1Event>({
      name: "demo-events",
      http: this.#http,
      path: "/api/v1/events",
      logger,
    });
    this.#informer.on("add", (event) => {
      if (!this.#informer.hasSynced()) return; // the first list: history
      const line = formatEvent(event);
      if (line) print(line);
    });
  }

  /** Starts listing and watching; resolves once the first list is in (or failed: it then retries). */
  async start(): Promise<void> {
    await this.#informer.start();
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    await this.#informer.stop();
    await this.#http.close();
  }
}

/**
 * Follows a growing text file (the controller's log) from its current end, calling `onLine` for every
 * complete line appended. Polls: simple, and works on every file system (fs.watch does not).
 */
export class FileFollower {
  readonly #path: string;
  readonly #onLine: (line: string) => void;
  readonly #intervalMs: number;
  #offset = 0;
  #partial: Buffer = Buffer.alloc(0);
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> = Promise.resolve();

  constructor(path: string, onLine: (line: string) => void, intervalMs = 250) {
    this.#path = path;
    this.#onLine = onLine;
    this.#intervalMs = intervalMs;
  }

  /** Starts following from the file's current end (everything already there is history). */
  async start(): Promise<void> {
    try {
      this.#offset = (await stat(this.#path)).size;
    } catch {
      this.#offset = 0; // not there yet: everything it will hold is new
    }
    this.#timer = setInterval(() => void this.flush(), this.#intervalMs);
  }

  /** Reads what was appended since the last read, now (reads never overlap). */
  flush(): Promise<void> {
    // A failed read (the file vanished mid-read) is retried by the next tick; it must not end the chain.
    this.#reading = this.#reading.then(() => this.#read()).catch(() => {});
    return this.#reading;
  }

  /** Stops following, after one last read so nothing written before the call is missed. */
  async stop(): Promise<void> {
    if (this.#timer === undefined) return; // never started
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  async #read(): Promise<void> {
    let file;
    try {
      file = await open(this.#path, "r");
    } catch {
      return; // not there (yet)
    }
    try {
      const { size } = await file.stat();
      if (size < this.#offset) {
        this.#offset = 0; // truncated (someone emptied the log): start over
        this.#partial = Buffer.alloc(0);
      }
      if (size === this.#offset) return;
      const buffer = Buffer.alloc(size - this.#offset);
      const { bytesRead } = await file.read(buffer, 0, buffer.length, this.#offset);
      this.#offset += bytesRead;
      // Split on the newline byte before decoding, so a character cut in two by a read stays whole.
      const pending = Buffer.concat([this.#partial, buffer.subarray(0, bytesRead)]);
      const end = pending.lastIndexOf(0x0a);
      this.#partial = end < 0 ? pending : pending.subarray(end + 1);
      if (end < 0) return;
      for (const line of pending.subarray(0, end).toString("utf8").split("\n")) this.#onLine(line);
    } finally {
      await file.close();
    }
  }
}
