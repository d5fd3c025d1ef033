/** Writing to stdout from a command whose reader may go away (`npm run tour | head`). */

let closed = false;
let watching = false;

/**
 * Writes `text` to stdout; once the reader has gone away (EPIPE), writes nothing more instead of
 * crashing, so the command still finishes what it does (the tour still cleans up after itself).
 */
export function writeStdout(text: string): void {
  if (!watching) {
    watching = true;
    process.stdout.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
      closed = true;
    });
  }
  if (!closed) process.stdout.write(text);
}
