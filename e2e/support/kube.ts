/**
 * Small helpers for talking to the API server in e2e tests: unique namespaces, reading a client-node
 * error as the Status the API server sent, and waiting for a condition with a deadline.
 */
import { randomBytes } from "node:crypto";
import { ApiException, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";

/** A fresh namespace name, `<prefix>-<random>`, so tests never see each other's objects. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString("hex")}`;
}

/** Creates a namespace and returns its name. */
export async function createNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** The Status object the API server answered with (HTTP code, reason, message, causes). */
export interface KubeStatus {
  code: number;
  reason?: string;
  message: string;
  causes: { field?: string; message?: string; reason?: string }[];
}

/**
 * Runs `fn`, which must fail with an ApiException, and returns the API server's Status. Throws when `fn`
 * succeeds or fails some other way (so a test cannot pass by accident).
 */
export async function apiError(fn: () => Promise<unknown>): Promise<KubeStatus> {
  try {
    await fn();
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body: unknown = typeof error.body === "string" ? safeJson(error.body) : error.body;
    const status = (body ?? {}) as {
      reason?: string;
      message?: string;
      details?: { causes?: KubeStatus["causes"] };
    };
    return {
      code: error.code,
      ...(status.reason ? { reason: status.reason } : {}),
      message: status.message ?? String(error.body),
      causes: status.details?.causes ?? [],
    };
  }
  throw new Error("expected the API server to refuse the request, but it succeeded");
}

/** The HTTP status of a call: 2xx when it succeeds, else the ApiException's code. */
export async function statusOf(fn: () => Promise<unknown>): Promise<number> {
  try {
    await fn();
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Polls `check` until it returns a value other than undefined, and returns it; throws naming `what` after
 * `timeoutMs`. An error thrown by `check` ends the wait at once (retry only what the check expects).
 * For conditions that become true asynchronously (RBAC caches, deletion, a restarted server).
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  { timeoutMs = 30_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
