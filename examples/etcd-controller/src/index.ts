/**
 * The etcd example, for the tests that run it: the ConfigEntry API's names and types, the etcd client, and
 * the etcd server the tests start. The controller itself is main.ts, built on reconcile-kit.
 */
export {
  ADOPTION_POLICY_ANNOTATION,
  CONFIG_ENTRIES,
  CONFIG_ENTRY_REFS,
  type ConfigEntry,
  type ConfigEntryRef,
  type ConfigEntrySpec,
  entryNameOf,
  GROUP,
  KEY_PREFIX,
  keyOfName,
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  VERSION,
} from "./api.ts";
export {
  EtcdClient,
  type EtcdEntry,
  EtcdError,
  fieldsOfValue,
  MARK_OWNER,
  MARK_UID,
  ownerOf,
} from "./client.ts";
export { EtcdServer, MAX_REQUEST_BYTES } from "./etcd-server.ts";
