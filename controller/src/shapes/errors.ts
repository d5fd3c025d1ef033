/** Small helpers to read errors from client-node (ApiException) and the cloud client (CloudError). */
import { CloudError } from "./cloud/client.ts";

/** The HTTP status of a Kubernetes or cloud error, if it has one. */
export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof CloudError) return err.status;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number")
    return err.code;
  return undefined;
}

/** How long the server asked us to wait, when it said (`Retry-After`). */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof CloudError ? err.retryAfterMs : undefined;
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
