/**
 * The console's copy of the cloud: every shape by id, and the cloud revision it reflects. It is filled by
 * a listing (`reset`) and then kept current by the change feed (`apply`), following the cloud's
 * list-then-watch contract (mock-cloud/README.md): events may repeat what the listing already showed, so
 * applying them is idempotent, and an event never takes a shape back to an older state.
 */

/**
 * @typedef {{ id: string, name: string, type: string, color: string, size?: number,
 *   tags: Record<string, string>, revision: number, createdAt: string, updatedAt: string }} Shape
 * @typedef {{ type: "ADDED" | "MODIFIED" | "DELETED", shape: Shape, revision: number }} WatchEvent
 */

/** Every shape the console knows, by id. */
export class ShapeStore {
  /** @type {Map<string, Shape>} */
  #shapes = new Map();
  #revision = 0;

  /** The cloud revision this copy reflects: the listing's, then the last applied event's. */
  get revision() {
    return this.#revision;
  }

  /** How many shapes there are. */
  get size() {
    return this.#shapes.size;
  }

  /**
   * Replaces everything with a complete listing read at `revision`.
   *
   * @param {readonly Shape[]} shapes
   * @param {number} revision
   */
  reset(shapes, revision) {
    this.#shapes = new Map(shapes.map((s) => [s.id, s]));
    this.#revision = revision;
  }

  /**
   * Applies one change of the feed. Returns whether the visible state changed (false for an event the
   * listing already showed, or one older than what is stored).
   *
   * @param {WatchEvent} event
   * @returns {boolean}
   */
  apply(event) {
    this.#revision = Math.max(this.#revision, event.revision);
    const stored = this.#shapes.get(event.shape.id);
    if (event.type === "DELETED") return this.#shapes.delete(event.shape.id);
    if (stored && stored.revision >= event.shape.revision) return false;
    this.#shapes.set(event.shape.id, event.shape);
    return true;
  }

  /**
   * The shape with `id`, if any.
   *
   * @param {string} id
   * @returns {Shape | undefined}
   */
  get(id) {
    return this.#shapes.get(id);
  }

  /**
   * Every shape, sorted by name (names are unique in the cloud, so the order is stable).
   *
   * @returns {Shape[]}
   */
  sorted() {
    return [...this.#shapes.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

/**
 * Who a shape belongs to, from its tags alone (the cloud gives tags no meaning): a shape with an `owner`
 * tag is managed by that owner, for Kubernetes the Shape named by `k8s-name` (`<namespace>/<name>`);
 * any other shape is foreign.
 *
 * @param {Shape} shape
 * @returns {{ ours: true, owner: string, k8sName: string | undefined } | { ours: false }}
 */
export function ownershipOf(shape) {
  const owner = shape.tags.owner;
  if (owner === undefined) return { ours: false };
  return { ours: true, owner, k8sName: shape.tags["k8s-name"] };
}
