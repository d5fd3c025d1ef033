/**
 * Keeps a ShapeStore in step with the cloud, the way the cloud's contract says (mock-cloud/README.md, "the
 * consistency contract"): list every page, then watch the change feed from the listing's revision and apply
 * each event. The loop never gives up on its own:
 *
 * - 410 Gone (the history no longer reaches back to our revision, or the cloud's data was reset): list
 *   again, and watch from the new listing's revision;
 * - any other failure (outage, throttling, the cloud restarting, the stream ended by the server): wait,
 *   longer after each consecutive failure and at least the cloud's `Retry-After`, then resume the watch
 *   from the last revision seen, which misses nothing and repeats nothing;
 * - 401: stop, the token is wrong and waiting will not fix it.
 *
 * It reads the feed with fetch() and a streaming body because EventSource cannot send a token.
 */
import { createSseParser } from "./sse.js";

/**
 * @typedef {import("./store.js").ShapeStore} ShapeStore
 * @typedef {import("./store.js").WatchEvent} WatchEvent
 * @typedef {import("./api.js").CloudClient} CloudClient
 * @typedef {{ state: "listing" } | { state: "live", revision: number }
 *   | { state: "retrying", detail: string, delayMs: number } | { state: "relisting", detail: string }
 *   | { state: "unauthorized", detail: string }} SyncStatus
 * @typedef {{ client: CloudClient, store: ShapeStore, signal: AbortSignal, onChange: () => void,
 *   onStatus?: (status: SyncStatus) => void, firstDelayMs?: number, maxDelayMs?: number }} SyncOptions
 */

/**
 * Runs until `signal` aborts (then resolves) or the cloud refuses the token (then resolves after an
 * "unauthorized" status). `onChange` is called after the store changed (a listing, or an event that changed
 * something); `onStatus` whenever the state of the connection changes.
 *
 * @param {SyncOptions} options
 * @returns {Promise<void>}
 */
export async function keepInSync({
  client,
  store,
  signal,
  onChange,
  onStatus = () => {},
  firstDelayMs = 500,
  maxDelayMs = 10_000,
}) {
  let needsList = true;
  let failures = 0;
  while (!signal.aborted) {
    try {
      if (needsList) {
        onStatus({ state: "listing" });
        const { items, revision } = await client.listAll(signal);
        store.reset(items, revision);
        needsList = false;
        onChange();
      }
      const res = await client.watch(store.revision, signal);
      failures = 0;
      onStatus({ state: "live", revision: store.revision });
      await readEvents(res, (event) => {
        if (store.apply(event)) onChange();
        onStatus({ state: "live", revision: store.revision });
      });
      throw new Error("the cloud ended the change feed");
    } catch (error) {
      if (signal.aborted) return;
      const status = typeof error?.status === "number" ? error.status : undefined;
      const detail = error instanceof Error ? error.message : String(error);
      if (status === 401) {
        onStatus({ state: "unauthorized", detail });
        return;
      }
      failures++;
      if (status === 410) {
        needsList = true;
        onStatus({ state: "relisting", detail });
        if (failures === 1) continue; // the normal case: relist at once
      }
      const backoff = Math.min(maxDelayMs, firstDelayMs * 2 ** (failures - 1));
      const delayMs = Math.max(backoff, (error?.retryAfterSeconds ?? 0) * 1000);
      onStatus({ state: "retrying", detail, delayMs });
      await sleep(delayMs, signal);
    }
  }
}

/**
 * Reads a change feed response to its end, calling `onEvent` with each parsed event in order.
 *
 * @param {Response} res
 * @param {(event: WatchEvent) => void} onEvent
 * @returns {Promise<void>}
 */
export async function readEvents(res, onEvent) {
  if (!res.body) throw new Error("cannot read the change feed: the response has no body");
  const parser = createSseParser((message) => onEvent(JSON.parse(message.data)));
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } catch (error) {
    await reader.cancel().catch(() => {}); // e.g. a malformed event: close the connection, do not leak it
    throw new Error(
      `cannot read the change feed: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Waits `ms`, or less when `signal` aborts.
 *
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
