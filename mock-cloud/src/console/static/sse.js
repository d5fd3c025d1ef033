/**
 * A Server-Sent Events parser (the `text/event-stream` format of the HTML standard), fed with text as it
 * arrives. The console reads the change feed with fetch() and a streaming body, not EventSource, because
 * EventSource cannot send an `Authorization` header; so it parses the stream itself, here.
 *
 * Chunks may end anywhere: in the middle of a line, between a `\r` and its `\n`, or between two events.
 * Lines end with `\n`, `\r\n` or `\r`; an empty line dispatches the event; `:` starts a comment (the
 * cloud's heartbeats); `data` lines join with `\n`; `id` sets the last event id (and is remembered across
 * events, as the standard says); an event without data is not dispatched.
 */

/**
 * Creates a parser. `onEvent({ id, event, data })` is called once per complete event, `onComment(text)`
 * once per comment line (optional).
 *
 * @param {(message: { id: string, event: string, data: string }) => void} onEvent
 * @param {(comment: string) => void} [onComment]
 * @returns {{ feed(text: string): void }}
 */
export function createSseParser(onEvent, onComment = () => {}) {
  let pending = ""; // text after the last complete line
  let skipNewline = false; // the previous chunk ended with "\r": a "\n" at the start of the next one is its pair
  let lastEventId = "";
  let eventType = "";
  /** @type {string[]} */
  let data = [];

  /** @param {string} line */
  const processLine = (line) => {
    if (line === "") {
      if (data.length > 0) onEvent({ id: lastEventId, event: eventType || "message", data: data.join("\n") });
      data = [];
      eventType = "";
      return;
    }
    if (line.startsWith(":")) {
      onComment(line.slice(1).replace(/^ /, ""));
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") data.push(value);
    else if (field === "event") eventType = value;
    else if (field === "id" && !value.includes("\0")) lastEventId = value;
    // "retry" and unknown fields are ignored: the console decides its own reconnection delays.
  };

  return {
    feed(text) {
      let input = pending + text;
      pending = "";
      if (skipNewline && input.startsWith("\n")) input = input.slice(1);
      skipNewline = false;
      let start = 0;
      for (let i = 0; i < input.length; i++) {
        const c = input[i];
        if (c !== "\n" && c !== "\r") continue;
        processLine(input.slice(start, i));
        if (c === "\r") {
          if (i + 1 === input.length) skipNewline = true;
          else if (input[i + 1] === "\n") i++;
        }
        start = i + 1;
      }
      pending = input.slice(start);
    },
  };
}
