/**
 * The bench's own subscription to the cloud's change feed (`GET /v1/watch?since=R`, Server-Sent Events):
 * every change, in revision order, stamped with performance.now() on arrival. The drift scenario times a
 * repair as the distance between TWO events of this one stream — the bench's edit and the controller's
 * repair — so both ends are measured on the same clock through the same path.
 */
import { createParser } from "eventsource-parser";
import { CLOUD_TOKEN, type CloudShape } from "@shapes/stack";

/** One change, as the feed sent it, and when it arrived here. */
export interface FeedEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  shape: CloudShape;
  revision: number;
  /** performance.now() on arrival. */
  atMs: number;
}

/** An open change feed. */
export class CloudFeed {
  readonly #abort = new AbortController();
  readonly #listeners = new Set<(event: FeedEvent) => void>();
  #failure: Error | undefined;
  /** Settles when the stream ends (never rejects: see `failure`). */
  readonly ended: Promise<void>;

  private constructor(body: ReadableStream<Uint8Array>) {
    this.ended = this.#pump(body);
  }

  /** Opens the feed from `since` (exclusive); resolves once the cloud accepted the watch. */
  static async open(cloudUrl: string, since: number): Promise<CloudFeed> {
    const abort = new AbortController();
    const res = await fetch(`${cloudUrl}/v1/watch?since=${since}`, {
      headers: {
        authorization: `Bearer ${CLOUD_TOKEN}`,
        accept: "text/event-stream",
        "x-client-id": "bench",
      },
      signal: abort.signal,
    });
    if (!res.ok || !res.body)
      throw new Error(`cannot watch the cloud: HTTP ${res.status}: ${await res.text()}`);
    const feed = new CloudFeed(res.body);
    feed.#abort.signal.addEventListener("abort", () => abort.abort(), { once: true });
    return feed;
  }

  /** Calls `listener` for every event from now on; returns the unsubscribe function. */
  on(listener: (event: FeedEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Why the stream ended early, if it did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Closes the stream. */
  async close(): Promise<void> {
    this.#abort.abort();
    await this.ended;
  }

  async #pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const parser = createParser({
      onEvent: (message) => {
        const event = JSON.parse(message.data) as Omit<FeedEvent, "atMs">;
        const stamped = { ...event, atMs: performance.now() };
        for (const listener of this.#listeners) listener(stamped);
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (error) {
      if (!this.#abort.signal.aborted)
        this.#failure = error instanceof Error ? error : new Error(String(error));
    }
  }
}
