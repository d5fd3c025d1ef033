/**
 * How the tour talks: a heading per step, the story in a few wrapped lines, each action ("→"), each wait
 * for the controller ("…" then "✓" with how long it took), and the evidence, indented and labelled.
 * Waits poll a check until it passes, never sleep for a fixed time, and end with a message that says
 * what did not happen and what was last seen.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** Where the narration goes (stdout in the tour, a buffer in tests). */
export type Write = (text: string) => void;

/** Thrown when a wait runs out of time: what was awaited, and what the check last saw. */
export class WaitTimeout extends Error {
  override name = "WaitTimeout";
}

/** The tour's voice. */
export class Narrator {
  readonly #write: Write;
  readonly #width: number;

  constructor(write: Write, width = 100) {
    this.#write = write;
    this.#width = width;
  }

  /** A step's heading. */
  heading(index: number, total: number, title: string): void {
    const text = `━━ Step ${index} of ${total}: ${title} `;
    this.#write(`\n${text.padEnd(this.#width, "━")}\n`);
  }

  /** A paragraph of story, wrapped. */
  say(paragraph: string): void {
    this.#write(`${wrap(paragraph, this.#width, "")}\n`);
  }

  /** Something the tour does (as a person or another system would). */
  act(text: string): void {
    this.#write(`  → ${text}\n`);
  }

  /** A plain line, indented like actions. */
  note(text: string): void {
    this.#write(`${wrap(text, this.#width, "    ")}\n`);
  }

  /** A labelled line of evidence. */
  evidence(label: string, text: string): void {
    const lines = wrap(text, this.#width - 16, "").split("\n");
    this.#write(
      `    ${label.padEnd(12)}${lines.map((l, i) => (i === 0 ? l : `${" ".repeat(16)}${l}`)).join("\n")}\n`,
    );
  }

  /** A section title inside a step ("Evidence"). */
  section(title: string): void {
    this.#write(`  ${title}\n`);
  }

  /**
   * Waits until `check` returns (it throws to say "not yet"), announcing `what` before and after. Throws
   * WaitTimeout after `timeoutMs`, or the signal's reason when it aborts.
   */
  async wait<T>(
    what: string,
    check: () => Promise<T> | T,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<T> {
    this.#write(`  … waiting for ${what}\n`);
    const started = Date.now();
    const result = await waitUntil(what, check, timeoutMs, signal);
    this.#write(`  ✓ ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    return result;
  }
}

/** Calls `check` every 200 ms until it returns; see {@link Narrator.wait}. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) {
        throw new WaitTimeout(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}; last seen: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    await sleep(200, undefined, signal ? { signal } : {}).catch(() => {});
  }
}

/** Wraps `text` at `width` columns (words are never cut), each line prefixed with `indent`. */
export function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(indent + line);
  return lines.join("\n");
}
