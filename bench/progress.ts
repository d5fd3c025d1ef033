/**
 * Progress on stderr for the long steps (creating and converging N Shapes, waiting out a steady-state
 * window, deleting everything): on a terminal, one bar redrawn in place with counts and rate; elsewhere (CI,
 * a pipe, a log file), a plain line every few seconds and one when the step ends.
 */

/** Where progress goes: stderr by default. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** One line of progress: `label [#####-----] 640/1000 shapes  212/s  3.0s`. */
export function renderProgress(
  label: string,
  done: number,
  total: number,
  elapsedMs: number,
  { unit = "", barWidth = 24 }: { unit?: string; barWidth?: number } = {},
): string {
  const share = total > 0 ? Math.min(1, Math.max(0, done / total)) : 1;
  const filled = Math.round(share * barWidth);
  const bar = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}]`;
  const seconds = elapsedMs / 1000;
  const rate = seconds > 0 ? `${(done / seconds).toFixed(done / seconds >= 100 ? 0 : 1)}/s` : "-/s";
  return `${label} ${bar} ${done}/${total}${unit ? ` ${unit}` : ""}  ${rate}  ${seconds.toFixed(1)}s`;
}

/** A step in progress. */
export interface ProgressTask {
  /** The count so far (redrawn at most 10 times a second on a terminal, every 5 s elsewhere). */
  update(done: number): void;
  /** The step ended: its last line stays, with `note` after it. */
  end(note?: string): void;
}

/** Progress lines and bars on one stream. */
export class Progress {
  readonly #stream: ProgressStream;
  readonly #tty: boolean;
  readonly #now: () => number;
  #barShown = false;

  constructor(stream: ProgressStream = process.stderr, options: { tty?: boolean; now?: () => number } = {}) {
    this.#stream = stream;
    this.#tty = options.tty ?? stream.isTTY === true;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A line of its own (a bar in progress is cleared first and redrawn by its next update). */
  log(line: string): void {
    this.#clearBar();
    this.#stream.write(`bench: ${line}\n`);
  }

  /** Starts a step counting up to `total`. */
  task(label: string, total: number, unit = ""): ProgressTask {
    const started = this.#now();
    let lastDraw = -Infinity;
    let lastDone = 0;
    const line = (done: number) =>
      renderProgress(`bench: ${label}`, done, total, this.#now() - started, { unit });
    return {
      update: (done) => {
        lastDone = done;
        const now = this.#now();
        if (now - lastDraw < (this.#tty ? 100 : 5_000)) return;
        lastDraw = now;
        if (this.#tty) {
          this.#stream.write(`\r\x1b[K${line(done)}`);
          this.#barShown = true;
        } else {
          this.#stream.write(`${line(done)}\n`);
        }
      },
      end: (note) => {
        this.#clearBar();
        this.#stream.write(`${line(lastDone)}${note ? `  ${note}` : ""}\n`);
      },
    };
  }

  #clearBar(): void {
    if (this.#barShown) this.#stream.write("\r\x1b[K");
    this.#barShown = false;
  }
}
