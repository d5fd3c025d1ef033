/**
 * Types of api.js (browser JavaScript, served as is; its tests run in Node). The calls are documented in
 * api.js.
 */
import type { FaultConfig, Shape } from "../../schemas.ts";

/** A failed call: "cannot <what>: <detail>". */
export declare class CloudError extends Error {
  constructor(what: string, detail: string, status: number, retryAfterSeconds: number | undefined);
  /** The cloud's explanation (problem+json `detail`), or why it could not be reached. */
  readonly detail: string;
  /** HTTP status; 0 when the cloud could not be reached. */
  readonly status: number;
  /** The answer's Retry-After, if any. */
  readonly retryAfterSeconds: number | undefined;
}

/** The `X-Client-Id` of the console's requests. */
export const CLIENT_ID: string;

/** How to reach the cloud. */
export interface CloudClientOptions {
  /** "" (the default): the page's own origin. */
  baseUrl?: string;
  /** The API token. */
  token: string;
  /** The admin token (faults); default: the API token. */
  adminToken?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

/** The calls the console makes; each throws a CloudError when the cloud says no. */
export declare class CloudClient {
  constructor(options: CloudClientOptions);
  /** The trace id of the latest call's answer (its `traceresponse` header), if it had one. */
  readonly traceId: string | undefined;
  /** A client with the same settings and its own `traceId` (one per action). */
  session(): CloudClient;
  /** Every shape (all pages) and the listing's revision. */
  listAll(signal?: AbortSignal): Promise<{ items: Shape[]; revision: number }>;
  /** The open change feed after `since`. */
  watch(since: number, signal?: AbortSignal): Promise<Response>;
  /** A new shape without tags. */
  create(fields: { name: string; type: string; color: string }): Promise<Shape>;
  /** PATCH the color, If-Match the shape's revision. */
  recolor(shape: Shape, color: string): Promise<Shape>;
  /** DELETE, If-Match the shape's revision. */
  remove(shape: Shape): Promise<void>;
  /** The fault rules. */
  faults(): Promise<FaultConfig>;
  /** Replaces the fault rules. */
  setFaults(config: FaultConfig): Promise<FaultConfig>;
}

/** The `detail` of a problem+json answer, else "HTTP <status>". */
export function problemDetail(res: Response): Promise<string>;

/** The trace id of an answer's `traceresponse` header (W3C Trace Context Level 2), if well-formed. */
export function traceIdOf(res: Response): string | undefined;
