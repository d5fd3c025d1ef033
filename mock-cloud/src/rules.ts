/**
 * The cloud's own rules: what a request whose every field is valid (schemas.ts, a 400 otherwise) may still
 * not ask for. One so far: the largest size of each shape type, where it is below `MAX_SIZE`
 * (`MAX_SIZE_BY_TYPE` in schemas.ts) — a triangle is drawn at most size 500. A rule of this cloud, not of the payload's shape: a client that asks
 * otherwise learns it from the answer, a 422 `size-limit` problem naming the field, and the same request is
 * refused again however often it is sent. The Shape CRD allows sizes up to 1000 for every type (it does not
 * know this rule), which is how the controller meets a refusal that only a change of the spec can fix.
 */
import { HttpProblem } from "./errors.ts";
import { maxSizeOf, type ShapeFields } from "./schemas.ts";

/**
 * Returns `shape` when it keeps the cloud's rules; else throws the 422 problem, whose detail names the
 * request by `verb`: "cannot create shape default.foo: size 800 is too large: a triangle is at most size 500".
 */
export function keepingRules(shape: ShapeFields, verb: string): ShapeFields {
  const limit = maxSizeOf(shape.type);
  if (shape.size === undefined || shape.size <= limit) return shape;
  const message = `a ${shape.type} is at most size ${limit}`;
  return refuse(`cannot ${verb} shape ${shape.name}: size ${shape.size} is too large: ${message}`, [
    { field: "size", message: `must be at most ${limit} for a ${shape.type}` },
  ]);
}

/** 422: valid on its own, refused by a rule of the cloud; `errors` names each field. */
function refuse(detail: string, errors: { field: string; message: string }[]): never {
  throw new HttpProblem(422, "size-limit", "Size above the type's limit", detail, { errors });
}
