/**
 * Which recorded writes are a trial's, and what they did: the crash explorer asks the subject
 * ({@link CrashSubject.attributeWrite}), and {@link restWriteAttribution} answers for an API whose paths and
 * bodies are plain text (a REST API of JSON objects with an `id`, and Kubernetes).
 */
import type { TappedWrite } from "./subject.ts";

/** What the explorer knows of one trial when it attributes a write to it. */
export interface TrialScope {
  /** The trial's namespace: fresh for each trial, so no other trial's resource lives in it. */
  readonly namespace: string;
  /** The external name of the trial's resource ({@link CrashSubject.externalNameOf}). */
  readonly externalName: string;
  /**
   * The ids of the trial's external objects known so far: the ones the subject's answers named
   * ({@link WriteAttribution.objectId}) and the ones the explorer read by the trial's external name.
   */
  readonly ids: ReadonlySet<string>;
}

/** What one recorded write is to a trial. */
export interface WriteAttribution {
  /**
   * The write is the trial's: the explorer labels, counts and arms only these. Decided from the request
   * alone when the explorer arms a tap (the status and answer are not known yet), so it must not need them.
   */
  readonly ours: boolean;
  /**
   * The write created an external object and the external API committed it: the explorer counts these
   * against the lifecycle's creates ("no external object created twice"). False while unanswered.
   */
  readonly committedCreate: boolean;
  /**
   * The id of the external object the write's answer names (a create's new id above all), when it does:
   * the explorer adds it to {@link TrialScope.ids}, so that a later write naming only that id is the trial's.
   */
  readonly objectId: string | undefined;
  /**
   * The existing external objects the request addresses, by id or by name as the external API spells them
   * (a create asks for a new object and addresses none; `[]` for a Kubernetes write). Decided from the
   * request alone, for every recorded write, the trial's or not: the explorer fails a trial in which a write
   * addresses an object it listed as foreign before the steps ("wrote a foreign object"), even when the write
   * changed nothing the explorer can see afterwards.
   */
  readonly addresses: readonly string[];
}

/**
 * The attribution for a plain-text API, which the explorer uses when the subject gives no
 * {@link CrashSubject.attributeWrite}.
 *
 * # Guarantees
 * - `ours`: the request's path or body contains the trial's namespace or external name, or its path
 *   contains an id of {@link TrialScope.ids}.
 * - `committedCreate`: `create` (the subject's {@link CrashSubject.describeWrite} says the write asks for a
 *   new external object) and the server answered with a status below 300.
 * - `objectId`: for an external write of the trial, the string `id` field of its answer when that is a JSON
 *   object; undefined otherwise.
 * - `addresses`: for an external write, the segments of its path (URL-decoded), where a REST API names the
 *   object it writes (`PATCH /v1/shapes/{id}`); `[]` for a Kubernetes write.
 *
 * # Assumptions
 * The API's requests carry names and ids as plain text, and it answers a write that did not take effect
 * with a status of 300 or more. An API that encodes its bodies (etcd's base64 keys) or answers a failed
 * conditional write with 200 needs its own `attributeWrite`: with this one its writes are not the trial's,
 * and the explorer fails the lifecycle that recorded none.
 */
export function restWriteAttribution(
  write: TappedWrite,
  trial: TrialScope,
  create: boolean,
): WriteAttribution {
  const text = `${write.path}\n${write.requestBody}`;
  const ours =
    text.includes(trial.namespace) ||
    text.includes(trial.externalName) ||
    [...trial.ids].some((id) => write.path.includes(id));
  return {
    ours,
    committedCreate: ours && create && write.status !== undefined && write.status < 300,
    objectId: ours && write.side === "external" ? idOf(write.responseBody) : undefined,
    addresses: write.side === "external" ? pathSegments(write.path) : [],
  };
}

/** The non-empty segments of a request path without its query, URL-decoded (a segment that does not decode as is). */
function pathSegments(path: string): string[] {
  return (path.split("?")[0] ?? "")
    .split("/")
    .filter(Boolean)
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
}

/** The string `id` field of a JSON object answer. */
function idOf(body: string): string | undefined {
  if (!body) return undefined;
  try {
    const parsed = JSON.parse(body) as { id?: unknown } | null;
    return typeof parsed?.id === "string" ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}
