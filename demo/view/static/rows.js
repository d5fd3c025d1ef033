/* global requestAnimationFrame */
/**
 * The rows of both worlds on screen: a virtual list. Only the rows in view (and a few around them) exist
 * in the DOM, each a fixed height, so 1,000 or 10,000 Shapes cost the same to draw: about forty rows. The
 * list's height is set to hold every row, so the scroll bar tells the truth.
 *
 * Every value from either world reaches the DOM through textContent or setAttribute (draw.js for the
 * drawing), never through markup: a hostile name or tag is text.
 */
import { drawShape } from "./draw.js";
import { VERDICTS, isObserveOnly, ownerOf, shapeRefLabel } from "./model.js";

/** The height of a row, in CSS pixels (view.css gives .row the same). */
export const ROW_HEIGHT = 68;
/** Rows drawn above and below the visible ones, so a quick scroll shows no gap. */
const OVERSCAN = 8;

const LABELS = new Map(VERDICTS.map((v) => [v.verdict, v.label]));

/**
 * @typedef {import("./model.js").Row} Row
 */

/** A virtual list of rows in a scrolling element. */
export class RowList {
  /** @type {HTMLElement} */
  #viewport;
  /** @type {HTMLElement} */
  #space;
  /** @type {Row[]} */
  #rows = [];
  /** @type {string} */
  #ownerId = "";
  /** @type {string | undefined} */
  #selected;
  /** @type {Set<string>} */
  #highlighted = new Set();
  #scheduled = false;

  /**
   * @param {HTMLElement} viewport the scrolling element
   * @param {HTMLElement} space the element inside it that holds the rows
   */
  constructor(viewport, space) {
    this.#viewport = viewport;
    this.#space = space;
    viewport.addEventListener("scroll", () => this.#schedule(), { passive: true });
  }

  /**
   * Shows these rows (already filtered and sorted).
   *
   * @param {Row[]} rows
   * @param {{ ownerId: string, selected: string | undefined, highlighted: Set<string> }} state
   */
  show(rows, state) {
    this.#rows = rows;
    this.#ownerId = state.ownerId;
    this.#selected = state.selected;
    this.#highlighted = state.highlighted;
    this.#space.style.height = `${rows.length * ROW_HEIGHT}px`;
    this.#draw();
  }

  /** The index of the row with `key` among the shown rows, or -1. */
  indexOf(/** @type {string | undefined} */ key) {
    return key === undefined ? -1 : this.#rows.findIndex((r) => r.key === key);
  }

  /** The shown row at `index`, if any. */
  at(/** @type {number} */ index) {
    return this.#rows[index];
  }

  /** How many rows are shown. */
  get length() {
    return this.#rows.length;
  }

  /** Scrolls so that the row at `index` is in view (the least scrolling that does it). */
  reveal(/** @type {number} */ index) {
    const top = index * ROW_HEIGHT;
    const view = this.#viewport;
    if (top < view.scrollTop) view.scrollTop = top;
    else if (top + ROW_HEIGHT > view.scrollTop + view.clientHeight) {
      view.scrollTop = top + ROW_HEIGHT - view.clientHeight;
    }
    this.#draw();
  }

  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      this.#draw();
    });
  }

  #draw() {
    const doc = this.#space.ownerDocument;
    const first = Math.max(0, Math.floor(this.#viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const visible = Math.ceil((this.#viewport.clientHeight || 600) / ROW_HEIGHT);
    const last = Math.min(this.#rows.length, first + visible + 2 * OVERSCAN);
    const drawn = [];
    for (let i = first; i < last; i++) {
      const row = /** @type {Row} */ (this.#rows[i]);
      drawn.push(
        rowElement(doc, row, i, {
          ownerId: this.#ownerId,
          selected: row.key === this.#selected,
          highlighted: this.#highlighted.has(row.key),
        }),
      );
    }
    this.#space.replaceChildren(...drawn);
    const selected = this.indexOf(this.#selected);
    if (selected >= first && selected < last) {
      this.#viewport.setAttribute("aria-activedescendant", rowId(selected));
    } else this.#viewport.removeAttribute("aria-activedescendant");
  }
}

/** @param {number} index */
function rowId(index) {
  return `row-${index}`;
}

/**
 * One row: the Kubernetes side, the link, the cloud side.
 *
 * @param {Document} doc
 * @param {Row} row
 * @param {number} index
 * @param {{ ownerId: string, selected: boolean, highlighted: boolean }} state
 */
function rowElement(doc, row, index, state) {
  const el = doc.createElement("div");
  el.className = `row${state.selected ? " selected" : ""}${state.highlighted ? " tour" : ""}`;
  el.id = rowId(index);
  el.setAttribute("role", "option");
  el.setAttribute("aria-selected", String(state.selected));
  el.dataset.key = row.key;
  el.dataset.verdict = row.verdict;
  el.style.top = `${index * ROW_HEIGHT}px`;
  el.append(kubeCell(doc, row), linkCell(doc, row), cloudCell(doc, row, state.ownerId));
  return el;
}

/**
 * @param {Document} doc
 * @param {Row} row
 */
function kubeCell(doc, row) {
  const cell = div(doc, "k8s");
  const { shape, shapeRef } = row;
  const first = div(doc, "line");
  const second = div(doc, "line");
  if (shape) {
    first.append(
      span(doc, "name", `${shape.namespace}/${shape.name}`),
      span(doc, "spec", shape.type ? `${shape.color} ${shape.type}` : "no spec: it observes"),
    );
    second.append(condition(doc, "Ready", shape.ready), condition(doc, "Synced", shape.synced));
    const behind = shape.observedGeneration !== shape.generation;
    second.append(
      span(
        doc,
        `badge gen${behind ? " behind" : ""}`,
        `gen ${shape.generation}/${shape.observedGeneration ?? "–"}`,
      ),
    );
    if (shape.finalizers.length > 0) second.append(span(doc, "badge finalizer", "finalizer"));
    if (shape.deletionTimestamp) second.append(span(doc, "badge deleting", "deleting"));
    if (shape.paused) second.append(span(doc, "badge paused", "paused"));
    if (isObserveOnly(shape)) second.append(span(doc, "badge observe", "observe only"));
    if (shape.adoptionPolicy) second.append(span(doc, "badge adopt", shape.adoptionPolicy));
  } else {
    first.append(span(doc, "gone", shapeRef ? "no Shape (gone)" : "—"));
  }
  const third = div(doc, "line sub");
  if (shapeRef) third.append(span(doc, "ref", shapeRefLabel(shapeRef)));
  else if (shape) third.append(span(doc, "ref none", "no ShapeRef"));
  // The cloud id is recorded in the Shape's status (the ShapeRef holds one only from an older controller).
  if (shape) third.append(span(doc, "id", shape.cloudId ? `cloud id ${shape.cloudId}` : "no cloud id yet"));
  cell.append(first, second, third);
  return cell;
}

/**
 * @param {Document} doc
 * @param {Row} row
 */
function linkCell(doc, row) {
  const cell = div(doc, "link");
  cell.title = row.why;
  cell.append(span(doc, "verdict", LABELS.get(row.verdict) ?? row.verdict));
  return cell;
}

/**
 * @param {Document} doc
 * @param {Row} row
 * @param {string} ownerId
 */
function cloudCell(doc, row, ownerId) {
  const cell = div(doc, "cloud");
  const { cloud } = row;
  if (!cloud) {
    cell.append(span(doc, "gone", "—"));
    return cell;
  }
  cell.append(drawShape(doc, cloud));
  const text = div(doc, "text");
  const first = div(doc, "line");
  first.append(span(doc, "name", cloud.name));
  const owner = ownerOf(cloud, ownerId);
  const label = owner === "ours" ? "ours" : owner === "other" ? `owner ${cloud.tags.owner ?? ""}` : "foreign";
  first.append(span(doc, `badge owner ${owner}`, label));
  const second = div(doc, "line sub");
  second.append(span(doc, "id", `${cloud.id} · rev ${cloud.revision} · ${cloud.color} ${cloud.type}`));
  text.append(first, second);
  cell.append(text);
  return cell;
}

/**
 * @param {Document} doc
 * @param {string} type
 * @param {{ status: string, reason: string, message: string } | undefined} c
 */
function condition(doc, type, c) {
  const state = c?.status === "True" ? "true" : c?.status === "False" ? "false" : "unknown";
  const el = span(
    doc,
    `badge condition ${state}`,
    `${type}${c ? (c.status === "True" ? "" : ` ${c.reason}`) : " ?"}`,
  );
  el.title = c ? `${type}=${c.status} ${c.reason}: ${c.message}` : `${type}: not reported yet`;
  return el;
}

/**
 * @param {Document} doc
 * @param {string} className
 */
function div(doc, className) {
  const el = doc.createElement("div");
  el.className = className;
  return el;
}

/**
 * @param {Document} doc
 * @param {string} className
 * @param {string} text
 */
function span(doc, className, text) {
  const el = doc.createElement("span");
  el.className = className;
  el.textContent = text;
  return el;
}
