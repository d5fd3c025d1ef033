/**
 * Labels for Kubernetes writes, for a {@link CrashSubject}'s `describeWrite`: the method and the kind (and
 * subresource) the path names, never the object's name, so that the same write of the next run has the
 * same label ("POST ShapeRef", "PATCH Shape status", "PATCH Shape finalizers", "POST Event").
 */
import type { TappedWrite } from "./subject.ts";

/** `/api/v1/...` or `/apis/<group>/<version>/...`, then `namespaces/<ns>/`, then `<plural>[/<name>[/<sub>]]`. */
const KUBE_PATH =
  /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)(?:\/namespaces\/[^/]+)?\/([^/]+)(?:\/[^/]+(?:\/([^/]+))?)?\/?$/;

/**
 * The label of a Kubernetes write: `kinds` maps a resource's plural to the kind to say ("shapes" →
 * "Shape"); `events` → "Event", `leases` → "Lease" are known. A merge patch of an object (not a
 * subresource) that sets `metadata.finalizers` says so ("finalizers"), since that is its whole point.
 */
export function kubeWriteLabel(write: TappedWrite, kinds: Readonly<Record<string, string>>): string {
  const match = KUBE_PATH.exec(write.path);
  if (!match) return `${write.method} ${write.path}`;
  const [, plural = "", sub] = match;
  const known: Record<string, string> = { events: "Event", leases: "Lease", ...kinds };
  const kind = known[plural] ?? plural;
  const what = sub ? `${kind} ${sub}` : kind;
  const finalizers = !sub && write.method === "PATCH" && /"finalizers"\s*:/.test(write.requestBody);
  return `${write.method} ${what}${finalizers ? " finalizers" : ""}`;
}
