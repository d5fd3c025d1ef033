/**
 * Draws one shape as SVG, with createElementNS and attributes only: nothing here parses markup, so no
 * value from the cloud can become an element.
 *
 * The palette maps the cloud's color names to softer tones; a color or type the console does not know
 * (the cloud may learn new ones) is still drawn, as a dashed outline, never dropped.
 */

const SVG = "http://www.w3.org/2000/svg";

/** The fill of each color of the cloud's palette. */
export const PALETTE = Object.freeze({
  red: "#e5484d",
  orange: "#f76b15",
  yellow: "#ffc53d",
  green: "#30a46c",
  blue: "#0090ff",
  purple: "#8e4ec6",
  pink: "#d6409f",
  brown: "#ad7f58",
  black: "#1c2024",
  white: "#ffffff",
  gray: "#8b8d98",
});

/**
 * The outline of each known type, in a 100 x 100 box.
 *
 * @type {Record<string, () => { tag: string, attributes: Record<string, string | number> }>}
 */
const OUTLINES = {
  square: () => ({ tag: "rect", attributes: { x: 18, y: 18, width: 64, height: 64, rx: 4 } }),
  circle: () => ({ tag: "circle", attributes: { cx: 50, cy: 50, r: 35 } }),
  triangle: () => ({ tag: "polygon", attributes: { points: "50,14 88,82 12,82" } }),
  hexagon: () => ({ tag: "polygon", attributes: { points: regularPolygon(6, 37) } }),
};

/** The types the console knows how to draw. */
export const DRAWN_TYPES = Object.freeze(Object.keys(OUTLINES));

/**
 * An `<svg>` of the shape: its outline filled with its color, titled with its name, type and color.
 *
 * @param {Document} doc
 * @param {{ name: string, type: string, color: string }} shape
 * @returns {SVGSVGElement}
 */
export function drawShape(doc, shape) {
  const svg = element(doc, "svg", { viewBox: "0 0 100 100", role: "img", class: "drawing" });
  svg.setAttribute("aria-label", `${shape.color} ${shape.type}`);
  const title = element(doc, "title", {});
  title.textContent = `${shape.name}: ${shape.color} ${shape.type}`;
  svg.append(title);

  const known = Object.hasOwn(OUTLINES, shape.type);
  const outline = known
    ? OUTLINES[shape.type]()
    : { tag: "rect", attributes: { x: 18, y: 18, width: 64, height: 64, rx: 16, "stroke-dasharray": "6 4" } };
  const fill = Object.hasOwn(PALETTE, shape.color) ? PALETTE[shape.color] : "none";
  const body = element(doc, outline.tag, { ...outline.attributes, fill, class: "outline" });
  svg.append(body);
  if (!known) {
    const mark = element(doc, "text", { x: 50, y: 58, "text-anchor": "middle", class: "unknown" });
    mark.textContent = "?";
    svg.append(mark);
  }
  return svg;
}

/**
 * @param {Document} doc
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 */
function element(doc, tag, attributes) {
  const el = doc.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, String(value));
  return el;
}

/**
 * The points of a regular polygon with a flat top, centred in the 100 x 100 box.
 *
 * @param {number} sides
 * @param {number} radius
 */
function regularPolygon(sides, radius) {
  const points = [];
  for (let i = 0; i < sides; i++) {
    const angle = (Math.PI * 2 * i) / sides;
    points.push(
      `${(50 + radius * Math.cos(angle)).toFixed(1)},${(50 + radius * Math.sin(angle)).toFixed(1)}`,
    );
  }
  return points.join(" ");
}
