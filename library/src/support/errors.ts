/** Small helpers to read errors: client-node's ApiException (`code`) and plain errors. */

/** The HTTP status of a Kubernetes API error (client-node's `code`), if it has one. */
export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number")
    return err.code;
  return undefined;
}

/**
 * The HTTP status an error carries, whichever client threw it: `code` (client-node's ApiException) or
 * `status` (fetch-style clients, like the Shapes cloud client's CloudError). Undefined for anything else.
 */
export function httpStatusOf(err: unknown): number | undefined {
  const code = statusCodeOf(err);
  if (code !== undefined) return code;
  if (typeof err === "object" && err !== null && "status" in err && typeof err.status === "number")
    return err.status;
  return undefined;
}

/**
 * Thrown by a fenced call (leadership/fence.ts) while this process may not write: it does not lead, lost
 * leadership, or is stopping. Nothing was sent. A reconcile that meets it stops at once, writes nothing
 * more (every write would be refused the same way), and returns it as `failed`: a replica that leads again
 * retries.
 */
export class FencedError extends Error {
  constructor(reason: string) {
    super(`cannot write: ${reason}`);
    this.name = "FencedError";
  }
}

/** A one-line message for logs and conditions. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * `err` as an Error whose message says what we could not do ("cannot ..."). An Error that already says so
 * is returned as it is: wrapping it in one with the same message would print that message twice, because
 * the logger appends every cause's message.
 */
export function asError(err: unknown, what: string): Error {
  const msg = errorMessage(err);
  if (err instanceof Error && msg.startsWith("cannot")) return err;
  return new Error(msg.startsWith("cannot") ? msg : `${what}: ${msg}`, { cause: err });
}

/** A read that treats 404 as "absent": resolves undefined instead of rejecting. */
export async function orUndefined<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (statusCodeOf(err) === 404) return undefined;
    throw err;
  }
}
