/**
 * "Converged", checked from the outside: what a person would look at to believe a Shape is in sync. Used by
 * almost every scenario (e2e, conformance), so it lives here once. Plain checks, no test framework: a check
 * that does not hold yet throws an Error naming what it expected and what it observed, which `waitFor`
 * reports when its deadline passes.
 */
import { isDeepStrictEqual } from "node:util";
import { cloudNameOf, shapeRefNameOf } from "@shapes/controller";
import type { CloudShape } from "./cloud.ts";
import { conditionOf, type Shape, type ShapeRef } from "./kube.ts";
import type { Stack } from "./stack.ts";
import { waitFor, type WaitOptions } from "./wait.ts";

/** What a converged Shape looks like on all three sides. */
export interface Converged {
  shape: Shape;
  cloud: CloudShape;
  ref: ShapeRef;
}

/**
 * Waits until the Shape `namespace/name` reports, for its current generation, that a shape which is not ours
 * holds its cloud name: Synced=False and Ready=False, reason NameConflict. Returns the Shape.
 */
export async function waitNameConflict(
  stack: Stack,
  namespace: string,
  name: string,
  options: WaitOptions = {},
): Promise<Shape> {
  return waitFor(
    `Shape ${namespace}/${name} to report NameConflict`,
    async () => {
      const shape = await stack.kube.shape(namespace, name);
      checkFields("Synced", conditionOf(shape, "Synced"), {
        status: "False",
        reason: "NameConflict",
        observedGeneration: shape.metadata.generation,
      });
      checkFields("Ready", conditionOf(shape, "Ready"), { status: "False", reason: "NameConflict" });
      return shape;
    },
    options,
  );
}

/**
 * Waits until the Shape `namespace/name` is converged:
 * - the cloud holds exactly one shape named `<namespace>.<name>`, with the Shape's type, color and size,
 *   and our owner tags (owner, k8s-uid = the Shape's uid, k8s-name = namespace/name);
 * - the Shape reports Ready=True and Synced=True for its current generation, and the cloud id;
 * - its ShapeRef, written before the create, speaks for this Shape (its uid) — see {@link checkShapeRef}.
 *
 * It is a snapshot of three reads (Shape, cloud, ShapeRef), not one atomic view: the controller writes the
 * cloud first and the status after, so a test that expects a status field to change (a counter, a
 * condition) puts that expectation inside its own `waitFor` around this call.
 */
export async function waitConverged(
  stack: Stack,
  namespace: string,
  name: string,
  { ownerId = stack.ownerId, ...options }: WaitOptions & { ownerId?: string } = {},
): Promise<Converged> {
  const cloudName = cloudNameOf(namespace, name);
  return waitFor(
    `Shape ${namespace}/${name} to converge`,
    async () => {
      const shape = await stack.kube.shape(namespace, name);
      const matches = (await stack.cloud.list()).filter((s) => s.name === cloudName);
      if (matches.length !== 1) {
        throw new Error(
          `cloud shapes named ${cloudName}: expected exactly 1, observed ${matches.length}: ${show(matches)}`,
        );
      }
      const cloud = matches[0] as CloudShape;
      checkEqual(
        `cloud shape ${cloudName} vs spec`,
        { type: cloud.type, color: cloud.color, size: cloud.size },
        { type: shape.spec.type, color: shape.spec.color, size: shape.spec.size },
      );
      checkFields(`owner tags of ${cloudName}`, cloud.tags, {
        owner: ownerId,
        "k8s-uid": shape.metadata.uid,
        "k8s-name": `${namespace}/${name}`,
      });
      checkFields("Ready", conditionOf(shape, "Ready"), {
        status: "True",
        observedGeneration: shape.metadata.generation,
      });
      checkFields("Synced", conditionOf(shape, "Synced"), {
        status: "True",
        observedGeneration: shape.metadata.generation,
      });
      checkEqual("status.observedGeneration", shape.status?.observedGeneration, shape.metadata.generation);
      checkEqual("status.cloudId", shape.status?.cloudId, cloud.id);
      const ref = await stack.kube.getShapeRef(shapeRefNameOf(namespace, name));
      checkShapeRef(ref, shape, cloud);
      return { shape, cloud, ref: ref as ShapeRef };
    },
    options,
  );
}

/**
 * Throws unless `ref` is the ShapeRef of a converged `shape`: it exists and speaks for this Shape (its
 * `spec.shape.uid`). The controller writes no status to it (its spec at the create, and again only if the
 * Shape's deletionPolicy or the owner id changes), so its phase reads as Pending: the cloud id is in the
 * Shape's status.
 */
export function checkShapeRef(
  ref: ShapeRef | undefined,
  shape: Shape,
  cloud: Pick<CloudShape, "name">,
): void {
  if (!ref) throw new Error(`ShapeRef ${cloud.name}: expected it, observed none`);
  checkEqual(`ShapeRef ${cloud.name} spec.shape.uid`, ref.spec.shape.uid, shape.metadata.uid);
  checkEqual(`ShapeRef ${cloud.name} status (the controller writes none)`, ref.status, undefined);
}

/**
 * Throws unless `actual` is an object holding every field of `expected` with a deep-equal value (other
 * fields may be there too). The message names `what`, the fields expected and the whole observed value.
 */
export function checkFields(
  what: string,
  actual: unknown,
  expected: Readonly<Record<string, unknown>>,
): void {
  const object =
    typeof actual === "object" && actual !== null ? (actual as Record<string, unknown>) : undefined;
  const wrong = Object.keys(expected).filter((key) => !isDeepStrictEqual(object?.[key], expected[key]));
  if (!object || wrong.length > 0) {
    throw new Error(`${what}: expected the fields ${show(expected)}, observed ${show(actual)}`);
  }
}

/** Throws unless `actual` deep-equals `expected`; the message names `what` and both values. */
export function checkEqual(what: string, actual: unknown, expected: unknown): void {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new Error(`${what}: expected ${show(expected)}, observed ${show(actual)}`);
  }
}

function show(value: unknown): string {
  return value === undefined ? "undefined" : JSON.stringify(value);
}
