/**
 * A bounded, in-memory log of the write requests the API answered (POST, PUT, PATCH, DELETE under `/v1`),
 * readable at `GET /admin/requests`. A chaos harness uses it to check that two controller replicas never
 * wrote at the same time: every entry carries the `User-Agent`, the optional `X-Client-Id`, and when the
 * request arrived and finished.
 */
import type { RequestLogEntry } from "./schemas.ts";

/** The most recent `limit` writes, oldest first. */
export class RequestLog {
  readonly #limit: number;
  #entries: RequestLogEntry[] = [];
  #seq = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error("cannot create the request log: limit must be >= 1");
    this.#limit = limit;
  }

  /** How many entries are kept. */
  get limit(): number {
    return this.#limit;
  }

  /** Appends one finished request, dropping the oldest beyond the limit. Assigns its `seq`. */
  add(entry: Omit<RequestLogEntry, "seq">): void {
    this.#seq += 1;
    this.#entries.push({ seq: this.#seq, ...entry });
    if (this.#entries.length > this.#limit) this.#entries.splice(0, this.#entries.length - this.#limit);
  }

  /** A copy of the entries, oldest first. */
  entries(): RequestLogEntry[] {
    return [...this.#entries];
  }

  /** Forgets every entry (`seq` keeps counting). */
  clear(): void {
    this.#entries = [];
  }
}
