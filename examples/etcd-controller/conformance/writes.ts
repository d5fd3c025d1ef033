/**
 * The etcd controller's writes as the crash explorer (reconcile-kit/crash-points) must read them: the JSON
 * gateway's bodies are base64 and every call is a POST (reads and the watch too), and a failed compare
 * answers 200, so the REST default (the trial's names as plain text, a create committed below 300) would
 * attribute nothing, or wrongly. The crash subject (subject.ts) gives these to the explorer.
 */
import {
  kubeWriteLabel,
  restWriteAttribution,
  type TappedWrite,
  type TrialScope,
  type WriteAttribution,
} from "reconcile-kit/crash-points";
import { CONFIG_ENTRIES, CONFIG_ENTRY_REFS, keyOfName, nameOfKey } from "../src/api.ts";

/** The gateway's paths that write. Every call is a POST, reads (range) and the watch too. */
export const WRITE_PATHS: ReadonlySet<string> = new Set(["/v3/kv/txn", "/v3/kv/put", "/v3/kv/deleterange"]);

/** A gateway request's body, decoded: the keys it names, and what its transaction does. */
export interface DecodedRequest {
  keys: string[];
  /** For a txn: "create" (compare create_revision = 0), "put" or "delete" (compare mod_revision). */
  op: "create" | "put" | "delete" | undefined;
}

/** Decodes the base64 keys of a gateway request (range, put, deleterange, txn, watch). */
export function decodeEtcdRequest(path: string, body: string): DecodedRequest {
  const unb64 = (text: unknown) =>
    typeof text === "string" ? Buffer.from(text, "base64").toString("utf8") : "";
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { keys: [], op: undefined };
  }
  if (path !== "/v3/kv/txn") return { keys: [unb64(parsed.key)].filter(Boolean), op: undefined };
  const txn = parsed as {
    compare?: { key?: string; target?: string }[];
    success?: { request_put?: { key?: string }; request_delete_range?: { key?: string } }[];
  };
  const keys = (txn.compare ?? []).map((c) => unb64(c.key));
  const first = txn.success?.[0];
  const op =
    txn.compare?.[0]?.target === "CREATE"
      ? "create"
      : first?.request_delete_range
        ? "delete"
        : first?.request_put
          ? "put"
          : undefined;
  return { keys, op };
}

/** "POST ConfigEntryRef", "PATCH ConfigEntry finalizers", "txn create etcd key", "txn delete etcd key". */
export function describeEtcdWrite(write: TappedWrite): { label: string; create: boolean } {
  if (write.side === "kube") {
    return {
      label: kubeWriteLabel(write, {
        [CONFIG_ENTRIES]: "ConfigEntry",
        [CONFIG_ENTRY_REFS]: "ConfigEntryRef",
      }),
      create: false,
    };
  }
  const path = write.path.split("?")[0] ?? write.path;
  if (path !== "/v3/kv/txn") return { label: `POST ${path}`, create: false };
  const { op } = decodeEtcdRequest(path, write.requestBody);
  return { label: `txn ${op ?? "other"} etcd key`, create: op === "create" };
}

/**
 * Which writes are the trial's, for etcd: a write (txn, put, deleterange) to the trial's key, read from the
 * base64 body; reads (range) and the watch are POSTs too, and never the trial's writes. A create committed
 * when etcd answered 200 with `succeeded` (a failed compare answers 200 without it). The object's id is the
 * key's create revision, the revision of the transaction that created it. The Kubernetes side is plain
 * text: the REST default.
 */
export function attributeEtcdWrite(write: TappedWrite, trial: TrialScope): WriteAttribution {
  if (write.side === "kube") return restWriteAttribution(write, trial, false);
  const path = write.path.split("?")[0] ?? write.path;
  const key = keyOfName(trial.externalName);
  const { keys, op } = decodeEtcdRequest(path, write.requestBody);
  const ours = WRITE_PATHS.has(path) && key !== undefined && keys.includes(key);
  let answer: { succeeded?: boolean; header?: { revision?: string } } = {};
  try {
    answer = write.responseBody ? (JSON.parse(write.responseBody) as typeof answer) : {};
  } catch {
    // No answer yet, or not etcd's.
  }
  const committedCreate = ours && op === "create" && write.status === 200 && answer.succeeded === true;
  // A read addresses nothing written, and a create's compare asks that the key not exist: it addresses no
  // existing entry. Any other write addresses the entries of its keys, by key and by name.
  const addresses = !WRITE_PATHS.has(path) || op === "create" ? [] : keys.flatMap((k) => [k, nameOfKey(k)]);
  return {
    ours,
    committedCreate,
    objectId: committedCreate ? answer.header?.revision : undefined,
    addresses,
  };
}
