/**
 * The DNS example, for the tests that run it: the Record API's names and types, the zone API and its client,
 * and its `why` command.
 * The controller itself is main.ts, built on reconcile-kit.
 */
export {
  ADOPTION_POLICY_ANNOTATION,
  type DnsRecord,
  fqdnOf,
  GROUP,
  PAUSED_ANNOTATION,
  type RecordRef,
  RECORDREFS,
  RECORDS,
  type RecordSpec,
  REFRESH_ANNOTATION,
  VERSION,
} from "./api.ts";
export { ZoneClient, type ZoneRecord } from "./client.ts";
export { DNS_WHY } from "./why.ts";
export { MIN_TTL_SECONDS, ZoneApi } from "./zone-api.ts";
