/**
 * Types of sse.js (browser JavaScript, served as is; its tests run in Node). The contract is documented
 * in sse.js.
 */

/** One dispatched Server-Sent Event. */
export interface SseMessage {
  /** The last event id seen (ids carry over to later events without one). */
  readonly id: string;
  /** The `event:` field, "message" when absent. */
  readonly event: string;
  /** The `data:` lines, joined with "\n". */
  readonly data: string;
}

/** A parser fed with the text of the stream as it arrives, in chunks that may end anywhere. */
export interface SseParser {
  /** Parses `text`, calling back for every event and comment it completes. */
  feed(text: string): void;
}

/** Creates a parser calling `onEvent` per complete event and `onComment` per comment line. */
export function createSseParser(
  onEvent: (message: SseMessage) => void,
  onComment?: (comment: string) => void,
): SseParser;
