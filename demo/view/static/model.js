/**
 * The two worlds side by side, as rows: what the page shows, computed from what the demo streams
 * (wire.ts). Pure functions and one small class, no DOM: the page (view.js) renders them, the tests run
 * them in Node.
 *
 * A row is one cloud name, `<namespace>.<name>`: the deterministic name that ties a Shape to its ShapeRef
 * and its cloud shape (controller/src/shapes/api.ts, cloudNameOf). The row's verdict says what links
 * them, or what breaks the link, the way the controller sees it:
 *
 *   linked      Shape ↔ ShapeRef ↔ cloud shape, ours, with this Shape's uid
 *   pending     the Shape waits for its cloud shape (the controller is creating it, or is down)
 *   unrecorded  the cloud shape is this Shape's (our owner tag, its uid), but the Shape's status does not
 *               name its id yet: the moment after a create, or a crash in it; the controller adopts it
 *   failing     the Shape says Synced=False (an outage, throttling, a validation error…)
 *   paused      the Shape is paused: the controller neither looks nor writes
 *   observed    the Shape observes only (`managementPolicies` without Create, e.g. `["Observe"]`): it reports the cloud shape of
 *               its name, whoever owns it, and never writes to it
 *   adopting    the Shape asks to adopt (`adoption-policy` annotation) a cloud shape with no owner tag: the
 *               controller retags it as ours, then brings it to the spec
 *   deleting    the Shape is being deleted: its finalizer holds it until the cloud side is done
 *   conflict    the name is taken in the cloud by a shape that is not this Shape's (NameConflict), or
 *               adoption is asked of another owner's shape (never adopted)
 *   dangling    the Shape is gone, its ShapeRef is left: waiting for the controller's cleanup
 *   renamed     a cloud shape of ours renamed behind our back: a live Shape claims it by its uid tag, whatever its
 *               name; the controller renames it back (or, without Update, leaves it and says Renamed), never deletes it
 *   leak        a cloud shape of ours that no live Shape claims: the controller deletes it (or, as its ShapeRef
 *               says, lets it go)
 *   other-owner a cloud shape of another owner (another cluster's controller): left alone
 *   foreign     a cloud shape with no owner tag (someone else's): left alone
 */

/**
 * @typedef {import("../wire.ts").ViewShape} ViewShape
 * @typedef {import("../wire.ts").ViewShapeRef} ViewShapeRef
 * @typedef {import("../wire.ts").ViewCloudShape} ViewCloudShape
 * @typedef {import("../wire.ts").Snapshot} Snapshot
 * @typedef {import("../wire.ts").Changes} Changes
 * @typedef {"linked" | "pending" | "unrecorded" | "failing" | "paused" | "observed" | "adopting" | "deleting"
 *   | "conflict" | "dangling" | "renamed" | "leak" | "other-owner" | "foreign"} Verdict
 * @typedef {{ key: string, shape: ViewShape | undefined, shapeRef: ViewShapeRef | undefined,
 *   cloud: ViewCloudShape | undefined, verdict: Verdict, why: string }} Row
 */

/** Every verdict, in the order the page lists them, with its label and whether it is a problem. */
export const VERDICTS = Object.freeze(
  /** @type {const} */ ([
    { verdict: "linked", label: "linked", problem: false },
    { verdict: "pending", label: "pending", problem: false },
    { verdict: "unrecorded", label: "not recorded", problem: false },
    { verdict: "failing", label: "failing", problem: true },
    { verdict: "paused", label: "paused", problem: false },
    { verdict: "observed", label: "observed only", problem: false },
    { verdict: "adopting", label: "adopting", problem: false },
    { verdict: "deleting", label: "being deleted", problem: false },
    { verdict: "conflict", label: "name conflict", problem: true },
    { verdict: "dangling", label: "dangling ShapeRef", problem: true },
    { verdict: "renamed", label: "renamed", problem: true },
    { verdict: "leak", label: "leak", problem: true },
    { verdict: "other-owner", label: "another owner's", problem: false },
    { verdict: "foreign", label: "foreign", problem: false },
  ]),
);

/** The owner tag and the uid tag the controller puts on its cloud shapes (controller/src/shapes/api.ts). */
const TAG_OWNER = "owner";
const TAG_UID = "k8s-uid";

/**
 * The cloud name of a Shape (controller/src/shapes/api.ts, cloudNameOf).
 *
 * @param {string} namespace
 * @param {string} name
 */
export function cloudNameOf(namespace, name) {
  return `${namespace}.${name}`;
}

/**
 * Who a cloud shape belongs to, seen from this cluster: `ours` (its owner tag is our owner id), `other`
 * (another owner's), or `foreign` (no owner tag).
 *
 * @param {ViewCloudShape} cloud
 * @param {string} ownerId
 * @returns {"ours" | "other" | "foreign"}
 */
export function ownerOf(cloud, ownerId) {
  const owner = cloud.tags[TAG_OWNER];
  if (owner === undefined) return "foreign";
  return owner === ownerId ? "ours" : "other";
}

/**
 * The page's copy of both worlds: a snapshot, then changes, applied in place. Rows are recomputed on
 * demand (`rows()`), cached until the next change.
 */
export class Worlds {
  /** @type {Map<string, ViewShape>} by `namespace/name` */
  shapes = new Map();
  /** @type {Map<string, ViewShapeRef>} by name */
  shapeRefs = new Map();
  /** @type {Map<string, ViewCloudShape>} by id */
  cloud = new Map();
  ownerId = "";
  /** @type {Row[] | undefined} */
  #rows;

  /**
   * Replaces everything with a snapshot.
   *
   * @param {Snapshot} snapshot
   */
  reset(snapshot) {
    this.ownerId = snapshot.ownerId;
    this.shapes = new Map(snapshot.shapes.map((s) => [`${s.namespace}/${s.name}`, s]));
    this.shapeRefs = new Map(snapshot.shapeRefs.map((r) => [r.name, r]));
    this.cloud = new Map(snapshot.cloud.map((c) => [c.id, c]));
    this.#rows = undefined;
  }

  /**
   * Applies a batch of changes.
   *
   * @param {Changes} changes
   */
  apply(changes) {
    for (const s of changes.shapes) this.shapes.set(`${s.namespace}/${s.name}`, s);
    for (const key of changes.shapesGone) this.shapes.delete(key);
    for (const r of changes.shapeRefs) this.shapeRefs.set(r.name, r);
    for (const name of changes.shapeRefsGone) this.shapeRefs.delete(name);
    for (const c of changes.cloud) this.cloud.set(c.id, c);
    for (const id of changes.cloudGone) this.cloud.delete(id);
    this.#rows = undefined;
  }

  /** Every row, sorted by cloud name. */
  rows() {
    this.#rows ??= rowsOf(this);
    return this.#rows;
  }
}

/**
 * The rows of both worlds: one per cloud name that a Shape, a ShapeRef or a cloud shape uses.
 *
 * @param {{ shapes: Map<string, ViewShape>, shapeRefs: Map<string, ViewShapeRef>,
 *   cloud: Map<string, ViewCloudShape>, ownerId: string }} worlds
 * @returns {Row[]}
 */
export function rowsOf(worlds) {
  /** @type {Map<string, ViewCloudShape>} */
  const cloudByName = new Map();
  for (const c of worlds.cloud.values()) cloudByName.set(c.name, c);
  /** @type {Map<string, { shape?: ViewShape, shapeRef?: ViewShapeRef, cloud?: ViewCloudShape }>} */
  const byKey = new Map();
  const entry = (/** @type {string} */ key) => {
    let e = byKey.get(key);
    if (!e) byKey.set(key, (e = {}));
    return e;
  };
  /** @type {Map<string, ViewShape>} the live Shapes by uid: a renamed cloud shape's uid tag names its own */
  const shapeByUid = new Map();
  for (const s of worlds.shapes.values()) {
    entry(cloudNameOf(s.namespace, s.name)).shape = s;
    shapeByUid.set(s.uid, s);
  }
  for (const r of worlds.shapeRefs.values()) entry(r.cloudName).shapeRef = r;
  /** @type {Map<string, ViewCloudShape>} our cloud shapes by their uid tag */
  const oursByUid = new Map();
  for (const c of worlds.cloud.values()) {
    entry(c.name).cloud = c;
    const uid = c.tags[TAG_UID];
    if (uid !== undefined && ownerOf(c, worlds.ownerId) === "ours") oursByUid.set(uid, c);
  }

  /** @type {Row[]} */
  const rows = [];
  for (const [key, e] of byKey) {
    const claimant = e.cloud && shapeByUid.get(e.cloud.tags[TAG_UID] ?? "");
    const renamedAway = e.shape && !e.cloud ? oursByUid.get(e.shape.uid) : undefined;
    const { verdict, why } = verdictOf(e.shape, e.shapeRef, e.cloud, worlds.ownerId, {
      claimant,
      renamedAway,
    });
    rows.push({ key, shape: e.shape, shapeRef: e.shapeRef, cloud: e.cloud, verdict, why });
  }
  return rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The values of the adoption-policy annotation that ask for adoption (controller/src/shapes/api.ts). */
const ADOPTION_POLICIES = new Set(["adopt", "adopt-or-create"]);

/**
 * True when the Shape observes only: its `managementPolicies` leave out Create (and are not `*`), so the
 * controller never writes its cloud shape (library/src/reconcile/policies.ts).
 *
 * @param {ViewShape} shape
 */
export function isObserveOnly(shape) {
  const policies = shape.managementPolicies;
  return !policies.includes("*") && !policies.includes("Create");
}

/**
 * Whose a cloud shape is, in words.
 *
 * @param {ViewCloudShape} cloud
 * @param {"ours" | "other" | "foreign" | undefined} owner
 */
function ownerWords(cloud, owner) {
  if (owner === "ours") return "ours";
  return owner === "other" ? `owned by ${cloud.tags[TAG_OWNER]}` : "no owner tag";
}

/**
 * What links a Shape, its ShapeRef and its cloud shape (any may be missing), or what breaks the link, with
 * a sentence saying why.
 *
 * @param {ViewShape | undefined} shape
 * @param {ViewShapeRef | undefined} shapeRef
 * @param {ViewCloudShape | undefined} cloud
 * @param {string} ownerId
 * @param {{ claimant?: ViewShape | undefined, renamedAway?: ViewCloudShape | undefined }} [renames] for a
 *   cloud shape of ours with no Shape of its name, the live Shape its uid tag names (`claimant`); for a Shape
 *   with no cloud shape of its name, ours that carries its uid under another name (`renamedAway`)
 * @returns {{ verdict: Verdict, why: string }}
 */
export function verdictOf(shape, shapeRef, cloud, ownerId, { claimant, renamedAway } = {}) {
  const owner = cloud ? ownerOf(cloud, ownerId) : undefined;
  if (shape) {
    if (shape.deletionTimestamp) {
      return {
        verdict: "deleting",
        why:
          shape.finalizers.length > 0
            ? "Deleted: the finalizer holds the Shape until its cloud shape and ShapeRef are gone."
            : "Deleted: it goes as soon as the API server removes it.",
      };
    }
    if (isObserveOnly(shape)) {
      return {
        verdict: "observed",
        why: cloud
          ? `Observe only: the Shape reports this cloud shape (${ownerWords(cloud, owner)}) in its status and never writes to it; deleting the Shape ${owner === "ours" && shape.finalizers.length > 0 ? "releases it (our owner tags stripped: the Shape was switched to Observe), deleting nothing" : "leaves it"}.`
          : "Observe only: no cloud shape of this name; the Shape says so (Ready=False) and creates nothing.",
      };
    }
    if (cloud && owner !== "ours" && ADOPTION_POLICIES.has(shape.adoptionPolicy ?? "")) {
      return owner === "foreign"
        ? {
            verdict: "adopting",
            why: `The Shape asks to adopt it (adoption-policy: ${shape.adoptionPolicy}) and it has no owner tag: the controller retags it as ours in one write, then brings it to the spec.`,
          }
        : {
            verdict: "conflict",
            why: `Adoption refused: ${cloud.name} is held by another owner (${cloud.tags[TAG_OWNER]}); a shape of another controller is never adopted.`,
          };
    }
    if (cloud && owner !== "ours") {
      return {
        verdict: "conflict",
        why: `The name ${cloud.name} is taken by ${owner === "other" ? `another owner's shape (${cloud.tags[TAG_OWNER]})` : "a foreign shape"}: the controller leaves it alone (NameConflict).`,
      };
    }
    if (cloud && cloud.tags[TAG_UID] !== shape.uid) {
      return {
        verdict: "conflict",
        why: "The cloud shape is ours but carries another Shape's uid (an earlier Shape of this name): not this Shape's.",
      };
    }
    if (shape.paused)
      return { verdict: "paused", why: "Paused: the controller neither looks at the cloud nor writes." };
    if (shape.synced?.status === "False") {
      return { verdict: "failing", why: `Synced=False, ${shape.synced.reason}: ${shape.synced.message}` };
    }
    if (!cloud && renamedAway) {
      return {
        verdict: "renamed",
        why: `Its cloud shape ${renamedAway.id} was renamed behind our back to ${renamedAway.name}: still this Shape's (its uid tag). The controller renames it back, or, when managementPolicies leave out Update, leaves it there and says Renamed; it creates no second one.`,
      };
    }
    if (!cloud) {
      return {
        verdict: "pending",
        why: "No cloud shape yet: the controller creates it (unless it is down).",
      };
    }
    // The Shape's status is where the controller records the cloud id (a ShapeRef holds one only from an
    // older controller): a shape of ours the status does not name is not recorded yet.
    if (shape.cloudId !== cloud.id) {
      return {
        verdict: "unrecorded",
        why: "Ours, with this Shape's uid, but the Shape's status does not name its id yet: the moment after a create, or a crash in it. The controller adopts it when it next looks.",
      };
    }
    return {
      verdict: "linked",
      why: shapeRef
        ? "Shape ↔ ShapeRef ↔ cloud shape: ours, with this Shape's uid; the Shape's status names its id."
        : "Shape ↔ cloud shape: ours, with this Shape's uid (its ShapeRef is not there yet).",
    };
  }
  if (cloud && owner === "ours" && claimant && !shapeRef) {
    const home = cloudNameOf(claimant.namespace, claimant.name);
    return {
      verdict: "renamed",
      why: `Ours, renamed behind our back from ${home}: Shape ${claimant.namespace}/${claimant.name} claims it by its uid tag, whatever its name. The controller renames it back (or, when the Shape's managementPolicies leave out Update, leaves it and says Renamed); it is never deleted as a leak.`,
    };
  }
  if (shapeRef) {
    if (cloud && owner === "ours") {
      return {
        verdict: "leak",
        why: "The Shape is gone but its cloud shape is not (a missed deletion): the ShapeRef leads the controller to it, and it deletes it (or lets it go, when the ShapeRef says Orphan).",
      };
    }
    return {
      verdict: "dangling",
      why: "The Shape is gone; its ShapeRef waits for the controller's cleanup.",
    };
  }
  if (owner === "ours") {
    return {
      verdict: "leak",
      why: "Ours by owner tag, but no Shape or ShapeRef claims it: the controller's sweep deletes it after its grace period.",
    };
  }
  if (owner === "other") {
    return {
      verdict: "other-owner",
      why: `Owned by ${cloud?.tags[TAG_OWNER] ?? "?"}: another cluster's controller. Left alone.`,
    };
  }
  return { verdict: "foreign", why: "No owner tag: someone else's shape. Left alone." };
}

/**
 * A ShapeRef in a few words, for its row. The controller writes a ShapeRef once, before the cloud create, and
 * never again: it has no status and says only that a cloud shape of its Shape may exist (the intent; the
 * Shape's status holds the id). From an older controller, its status also says a phase and the cloud id.
 *
 * @param {ViewShapeRef} shapeRef
 */
export function shapeRefLabel(shapeRef) {
  if (shapeRef.phase === undefined && shapeRef.cloudId === undefined) return "ShapeRef · intent recorded";
  return `ShapeRef ${shapeRef.phase ?? "Pending"} · ${shapeRef.cloudId ?? "no id"}`;
}

/**
 * The rows a person asked to see: `text` is found in the cloud name, `<namespace>.<name>` (case-blind);
 * `verdicts`, when not empty, keeps only those verdicts.
 *
 * @param {readonly Row[]} rows
 * @param {{ text: string, verdicts: ReadonlySet<string> }} filter
 * @returns {Row[]}
 */
export function filterRows(rows, filter) {
  const text = filter.text.trim().toLowerCase();
  return rows.filter(
    (row) =>
      (filter.verdicts.size === 0 || filter.verdicts.has(row.verdict)) &&
      (text === "" || row.key.toLowerCase().includes(text)),
  );
}

/**
 * How many rows have each verdict.
 *
 * @param {readonly Row[]} rows
 * @returns {Record<string, number>}
 */
export function countVerdicts(rows) {
  /** @type {Record<string, number>} */
  const counts = Object.fromEntries(VERDICTS.map((v) => [v.verdict, 0]));
  for (const row of rows) counts[row.verdict] = (counts[row.verdict] ?? 0) + 1;
  return counts;
}

/**
 * The rows a tour moment is about: its Shapes (by name in its namespace) and its cloud names.
 *
 * @param {readonly Row[]} rows
 * @param {{ namespace: string, shapes: readonly string[], cloudNames: readonly string[] } | null} moment
 * @returns {Set<string>} row keys
 */
export function highlightedKeys(rows, moment) {
  if (!moment) return new Set();
  const keys = new Set([
    ...moment.shapes.map((name) => cloudNameOf(moment.namespace, name)),
    ...moment.cloudNames,
  ]);
  return new Set(rows.filter((row) => keys.has(row.key)).map((row) => row.key));
}

/**
 * Whether an Event or a history entry is about a row: its Shape (namespace/name) or its ShapeRef (name).
 *
 * @param {Row} row
 * @param {{ kind: string, namespace: string, name: string }} about
 */
export function isAbout(row, about) {
  if (about.kind === "ShapeRef") return about.name === row.key;
  const [namespace, ...rest] = row.key.split(".");
  return about.namespace === namespace && about.name === rest.join(".");
}
