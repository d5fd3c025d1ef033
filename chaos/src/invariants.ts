/**
 * The invariants a trial must end in, checked on one snapshot of the world (every Shape, every ShapeRef,
 * every cloud shape) against what the harness knows it did (the foreign shapes it seeded, the Orphan
 * deletions it asked for). Pure: no I/O, so each rule has a table test (invariants.test.ts).
 *
 * The rules, from issue 7:
 * - `shape-ready`: every live Shape is Ready, with exactly its cloud shape (name, uid and name tags, spec);
 *   or, when a foreign shape holds its cloud name, it says NameConflict.
 * - `one-cloud-shape`: no two cloud shapes claim the same Shape (its uid).
 * - `no-leak`: no cloud shape carries our owner tag without a live Shape or a ShapeRef of its uid.
 * - `foreign-untouched`: every foreign shape seeded before the trial is still there at the same revision.
 * - `no-stuck-deletion`: no Shape is left deleting.
 * - `shaperef-justified`: no ShapeRef without its live Shape (same uid).
 * - `orphan-kept`: a Shape deleted with deletionPolicy Orphan left its cloud shape, without our tags.
 * - `renamed-kept`: a cloud shape a person renamed is still there while its Shape lives: ownership follows
 *   the uid tag, not the name, so neither the sweep nor a second create may take its place.
 * With several clusters sharing the cloud, each cluster is checked with its own owner id
 * ({@link checkClusters}): another cluster's shapes are foreign to it.
 * The checks that need more than a snapshot live elsewhere: `single-writer` and `no-foreign-write` (the
 * request log, writers.ts) and `controller-healthy` (the trial reads the processes and their logs).
 */
import { cloudNameOf, type Shape, type ShapeRef, TAG_NAME, TAG_OWNER, TAG_UID } from "@shapes/controller";
import type { Shape as CloudShape } from "@shapes/mock-cloud";

export type { CloudShape };

/** The names of every invariant, in report order. */
export const INVARIANTS = [
  "shape-ready",
  "one-cloud-shape",
  "no-leak",
  "foreign-untouched",
  "no-stuck-deletion",
  "shaperef-justified",
  "orphan-kept",
  "renamed-kept",
  "single-writer",
  "no-foreign-write",
  "controller-healthy",
] as const;

/** An invariant's name. */
export type Invariant = (typeof INVARIANTS)[number];

/** One broken invariant: which, about what (a Shape, a cloud shape, a replica), and what was seen. */
export interface Violation {
  invariant: Invariant;
  /** What it is about, e.g. `Shape chaos-t1/s3` or `cloud shape shp_12 (chaos-t1.s3)`. */
  subject: string;
  detail: string;
}

/** Everything there is, at one moment. */
export interface World {
  shapes: readonly Shape[];
  shapeRefs: readonly ShapeRef[];
  cloud: readonly CloudShape[];
}

/** A cloud shape an Orphan deletion must have left in place. */
export interface OrphanExpectation {
  /** The cloud shape's id. */
  id: string;
  /** `namespace/name` of the deleted Shape. */
  shape: string;
}

/** A cloud shape of ours a person renamed: while the Shape of its uid lives, it must stay. */
export interface RenamedExpectation {
  /** The cloud shape's id. */
  id: string;
  /** Its k8s-uid tag when it was renamed: the Shape it belongs to. */
  uid: string;
  /** The name the person gave it. */
  name: string;
}

/** What the harness knows it did, and so what the world must show. */
export interface Expectations {
  /** Our owner tag value (the controller's --owner-id). */
  ownerId: string;
  /** The foreign shapes seeded before the trial, as they were. */
  foreign: readonly CloudShape[];
  orphans: readonly OrphanExpectation[];
  /** Shapes of ours a person renamed (and did not delete or disown after). */
  renamed: readonly RenamedExpectation[];
}

/** Every violation the snapshot shows (empty when the world is as it must be). */
export function checkWorld(world: World, expect: Expectations): Violation[] {
  const violations: Violation[] = [];
  const add = (invariant: Invariant, subject: string, detail: string) =>
    violations.push({ invariant, subject, detail });
  const cloudByName = new Map(world.cloud.map((c) => [c.name, c]));
  const cloudById = new Map(world.cloud.map((c) => [c.id, c]));
  const owned = world.cloud.filter((c) => c.tags[TAG_OWNER] === expect.ownerId);
  const shapesByUid = new Map(world.shapes.map((s) => [s.metadata.uid, s]));
  const refsByUid = new Map(world.shapeRefs.map((r) => [r.spec.shape.uid, r]));
  const ownedByUid = new Map<string, CloudShape[]>();
  for (const c of owned) {
    const uid = c.tags[TAG_UID];
    if (uid !== undefined) ownedByUid.set(uid, [...(ownedByUid.get(uid) ?? []), c]);
  }

  for (const shape of world.shapes) {
    const key = `${shape.metadata.namespace}/${shape.metadata.name}`;
    if (shape.metadata.deletionTimestamp) {
      const since = new Date(shape.metadata.deletionTimestamp).toISOString();
      add("no-stuck-deletion", `Shape ${key}`, `deleting since ${since}`);
      continue;
    }
    const problem = readinessProblem(shape, cloudByName, ownedByUid, expect.ownerId);
    if (problem) add("shape-ready", `Shape ${key}`, problem);
  }

  for (const c of owned) {
    const uid = c.tags[TAG_UID];
    const shape = uid === undefined ? undefined : shapesByUid.get(uid);
    const ownerName = shape && cloudNameOf(shape.metadata.namespace, shape.metadata.name);
    if ((shape && ownerName === c.name) || (uid !== undefined && refsByUid.has(uid))) continue;
    add(
      "no-leak",
      `cloud shape ${c.id} (${c.name})`,
      uid === undefined
        ? "carries our owner tag but no k8s-uid"
        : `carries our owner tag for uid ${uid}, which no live Shape named ${c.name} and no ShapeRef has`,
    );
  }
  for (const [uid, shapes] of ownedByUid) {
    if (shapes.length > 1) {
      add(
        "one-cloud-shape",
        `uid ${uid}`,
        `${shapes.length} cloud shapes claim it: ${shapes.map((s) => `${s.id} (${s.name})`).join(", ")}`,
      );
    }
  }

  for (const before of expect.foreign) {
    const now = cloudById.get(before.id);
    const subject = `foreign shape ${before.id} (${before.name})`;
    if (!now) add("foreign-untouched", subject, "was deleted");
    else if (now.revision !== before.revision) {
      add(
        "foreign-untouched",
        subject,
        `was modified: revision ${before.revision} → ${now.revision}; now ${describe(now)}, was ${describe(before)}`,
      );
    }
  }

  for (const ref of world.shapeRefs) {
    const { namespace, name, uid } = ref.spec.shape;
    const shape = shapesByUid.get(uid);
    if (!shape || shape.metadata.namespace !== namespace || shape.metadata.name !== name) {
      add(
        "shaperef-justified",
        `ShapeRef ${ref.metadata.name}`,
        `its Shape ${namespace}/${name} (uid ${uid}) is gone (phase ${ref.status?.phase ?? "Pending"})`,
      );
    }
  }

  for (const orphan of expect.orphans) {
    const now = cloudById.get(orphan.id);
    const subject = `cloud shape ${orphan.id} of Shape ${orphan.shape}`;
    if (!now) add("orphan-kept", subject, "was deleted, but the Shape's deletionPolicy was Orphan");
    else if ([TAG_OWNER, TAG_UID, TAG_NAME].some((t) => now.tags[t] !== undefined)) {
      add("orphan-kept", subject, `still carries our owner tags after the Orphan deletion: ${describe(now)}`);
    }
  }

  for (const renamed of expect.renamed) {
    const shape = shapesByUid.get(renamed.uid);
    // Its Shape is gone or going: the deletion acts on it (orphan-kept, no-leak say what must be left).
    if (!shape || shape.metadata.deletionTimestamp) continue;
    if (cloudById.has(renamed.id)) continue;
    add(
      "renamed-kept",
      `cloud shape ${renamed.id} of Shape ${shape.metadata.namespace}/${shape.metadata.name}`,
      `was deleted while its Shape lives (a person had renamed it to ${renamed.name})`,
    );
  }
  return violations;
}

/** Why a live Shape is not as it must be, or undefined when it is. */
function readinessProblem(
  shape: Shape,
  cloudByName: ReadonlyMap<string, CloudShape>,
  ownedByUid: ReadonlyMap<string, readonly CloudShape[]>,
  ownerId: string,
): string | undefined {
  const { namespace, name, uid, generation } = shape.metadata;
  const cloudName = cloudNameOf(namespace, name);
  const cloud = cloudByName.get(cloudName);
  const ready = shape.status?.conditions?.find((c) => c.type === "Ready");
  const readyText = ready
    ? `Ready=${ready.status} (${ready.reason}: ${ready.message})`
    : "no Ready condition";
  if (!cloud) {
    const elsewhere = ownedByUid.get(uid)?.[0];
    const where = elsewhere ? ` (its cloud shape ${elsewhere.id} is named ${elsewhere.name})` : "";
    return `no cloud shape named ${cloudName}${where}; ${readyText}`;
  }
  if (cloud.tags[TAG_OWNER] !== ownerId) {
    // A foreign shape holds the name: the only right answer is to say so and leave it alone.
    if (ready?.status === "False" && ready.reason === "NameConflict") return undefined;
    // Ours was renamed, and the name was taken before it could be renamed back: it stays where the person
    // put it, and the Shape says so, naming where.
    const elsewhere = ownedByUid.get(uid)?.[0];
    if (
      elsewhere &&
      ready?.status === "False" &&
      ready.reason === "Renamed" &&
      ready.message.includes(elsewhere.name)
    )
      return undefined;
    return `cloud name ${cloudName} is held by foreign shape ${cloud.id}, but ${readyText}`;
  }
  if (cloud.tags[TAG_UID] !== uid) {
    return `cloud shape ${cloud.id} (${cloudName}) carries uid ${cloud.tags[TAG_UID] ?? "(none)"}, not ${uid}`;
  }
  const mismatches: string[] = [];
  if (cloud.type !== shape.spec.type) mismatches.push(`type ${cloud.type} ≠ ${shape.spec.type}`);
  if (cloud.color !== shape.spec.color) mismatches.push(`color ${cloud.color} ≠ ${shape.spec.color}`);
  if (cloud.size !== shape.spec.size) mismatches.push(`size ${cloud.size} ≠ ${shape.spec.size}`);
  if (cloud.tags[TAG_NAME] !== `${namespace}/${name}`) {
    mismatches.push(`k8s-name tag ${JSON.stringify(cloud.tags[TAG_NAME])} ≠ "${namespace}/${name}"`);
  }
  if (mismatches.length > 0) return `cloud shape ${cloud.id} differs from the spec: ${mismatches.join(", ")}`;
  if (ready?.status !== "True") return readyText;
  if (ready.observedGeneration !== generation) {
    return `Ready speaks of generation ${ready.observedGeneration}, the spec is at ${generation}`;
  }
  if (shape.status?.cloudId !== cloud.id) {
    return `status.cloudId is ${shape.status?.cloudId ?? "(none)"}, the cloud shape is ${cloud.id}`;
  }
  return undefined;
}

function describe(c: CloudShape): string {
  return JSON.stringify({ type: c.type, color: c.color, size: c.size, tags: c.tags });
}

/** One cluster's view for {@link checkClusters}: its name, its Shapes and ShapeRefs, what it must show. */
export interface ClusterView {
  name: string;
  /** Its Shapes and ShapeRefs, and the one cloud every cluster shares. */
  world: World;
  /** Its owner id, its Orphan deletions, and the foreign shapes (the same for every cluster). */
  expect: Expectations;
}

/**
 * The snapshot invariants of clusters sharing one cloud: each cluster's under its own owner id, so the
 * shapes of the others are foreign to it (a name another cluster holds is a NameConflict, the others'
 * shapes are never its leaks). With several clusters, every subject names its cluster (`west: Shape
 * ns/s1`), except a foreign shape's, which is everyone's and reported once.
 */
export function checkClusters(clusters: readonly ClusterView[]): Violation[] {
  const violations = new Map<string, Violation>();
  for (const { name, world, expect } of clusters) {
    for (const v of checkWorld(world, expect)) {
      const shared = clusters.length === 1 || v.invariant === "foreign-untouched";
      const named = shared ? v : { ...v, subject: `${name}: ${v.subject}` };
      violations.set(violationKey(named), named);
    }
  }
  return [...violations.values()];
}

/** The same violation twice (same invariant and subject) is reported once. */
export function violationKey(v: Violation): string {
  return `${v.invariant} ${v.subject}`;
}
