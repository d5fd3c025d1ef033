/**
 * Types of live.js (browser JavaScript, served as is; its tests run in Node). The loop is documented in
 * live.js.
 */
import type { WatchEvent } from "../../schemas.ts";
import type { CloudClient } from "./api.js";
import type { ShapeStore } from "./store.js";

/** The state of the connection to the cloud. */
export type SyncStatus =
  | { readonly state: "listing" }
  | { readonly state: "live"; readonly revision: number }
  | { readonly state: "retrying"; readonly detail: string; readonly delayMs: number }
  | { readonly state: "relisting"; readonly detail: string }
  | { readonly state: "unauthorized"; readonly detail: string };

/** What keepInSync works with. */
export interface SyncOptions {
  readonly client: CloudClient;
  readonly store: ShapeStore;
  /** Stops the loop. */
  readonly signal: AbortSignal;
  /** The store changed. */
  readonly onChange: () => void;
  /** The connection changed state. */
  readonly onStatus?: (status: SyncStatus) => void;
  /** First retry delay (doubles per consecutive failure). Default 500 ms. */
  readonly firstDelayMs?: number;
  /** Longest retry delay. Default 10 s. */
  readonly maxDelayMs?: number;
}

/** List, then watch from the listing's revision; relist on 410, retry other failures; stop on 401 or abort. */
export function keepInSync(options: SyncOptions): Promise<void>;

/** Reads a change feed response to its end, in order. */
export function readEvents(res: Response, onEvent: (event: WatchEvent) => void): Promise<void>;
