/**
 * Types of draw.js (browser JavaScript, served as is). The drawing is documented in draw.js. The repo's
 * TypeScript has no DOM library (it is Node code), so the DOM appears here only as the little it uses.
 */

/** The fill of each color of the cloud's palette. */
export const PALETTE: Readonly<Record<string, string>>;

/** The types draw.js has an outline for (any other type is drawn as a dashed "?"). */
export const DRAWN_TYPES: readonly string[];

/** An element of the document (a DOM `Element`). */
export interface DrawnElement {
  setAttribute(name: string, value: string): void;
  append(...nodes: DrawnElement[]): void;
  textContent: string | null;
}

/** The document to draw in (a DOM `Document`). */
export interface DrawingDocument {
  createElementNS(namespace: string, tag: string): DrawnElement;
}

/** An `<svg>` element of the shape, built in `doc`. */
export function drawShape(
  doc: DrawingDocument,
  shape: { name: string; type: string; color: string },
): DrawnElement;
