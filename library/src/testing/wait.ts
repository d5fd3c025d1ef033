/**
 * Waiting on conditions, never on the clock. `waitFor` polls a check until it passes and, when the deadline
 * comes first, fails with WHAT did not happen and what the check last saw, e.g.
 *
 *   timed out after 60 s waiting for "the cloud shape e2e-1a2b.foo to turn blue";
 *   last observed: expected 'red' to be 'blue'
 *
 * The conformance scenarios (reconcile-kit/conformance) wait with it; so can a plugin's own tests and the
 * subject it runs them with.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** How long to keep trying. Default 60 s: generous, because 2 shared cores can be slow. */
  timeoutMs?: number;
  /** Pause between two checks. Default 100 ms. */
  intervalMs?: number;
}

/** The default deadline of {@link waitFor}. */
export const DEFAULT_WAIT_MS = 60_000;

/**
 * Calls `check` until it returns without throwing, and returns what it returned. A check says "not yet" by
 * throwing, with a message that carries the observed value (Vitest's `expect` in a test, a plain `Error`
 * elsewhere). It runs at least once, and never twice at the same time: the next call starts `intervalMs`
 * after the previous one ended. After `timeoutMs`, throws `timed out ... waiting for <what>; last observed:
 * <the last failure's message>`.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  { timeoutMs = DEFAULT_WAIT_MS, intervalMs = 100 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) {
        throw new Error(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${JSON.stringify(what)}; ` +
            `last observed: ${describe(error)}`,
          { cause: error },
        );
      }
    }
    await sleep(intervalMs);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
