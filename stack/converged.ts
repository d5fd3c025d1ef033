/**
 * "Converged", checked from the outside: what a person would look at to believe a Shape is in sync.
 * Used by almost every scenario, so it lives here once.
 */
import { expect } from "vitest";
import { cloudNameOf, shapeRefNameOf } from "../../controller/src/shapes/api.ts";
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
      expect(conditionOf(shape, "Synced"), "Synced").toMatchObject({
        status: "False",
        reason: "NameConflict",
        observedGeneration: shape.metadata.generation,
      });
      expect(conditionOf(shape, "Ready"), "Ready").toMatchObject({ status: "False", reason: "NameConflict" });
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
 * - its ShapeRef says Created with the same cloud id.
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
      expect(matches, `cloud shapes named ${cloudName}`).toHaveLength(1);
      const cloud = matches[0] as CloudShape;
      expect(
        { type: cloud.type, color: cloud.color, size: cloud.size },
        `cloud shape ${cloudName} vs spec`,
      ).toEqual({ type: shape.spec.type, color: shape.spec.color, size: shape.spec.size });
      expect(cloud.tags, `owner tags of ${cloudName}`).toMatchObject({
        owner: ownerId,
        "k8s-uid": shape.metadata.uid,
        "k8s-name": `${namespace}/${name}`,
      });
      expect(conditionOf(shape, "Ready"), "Ready").toMatchObject({
        status: "True",
        observedGeneration: shape.metadata.generation,
      });
      expect(conditionOf(shape, "Synced"), "Synced").toMatchObject({
        status: "True",
        observedGeneration: shape.metadata.generation,
      });
      expect(shape.status?.observedGeneration, "status.observedGeneration").toBe(shape.metadata.generation);
      expect(shape.status?.cloudId, "status.cloudId").toBe(cloud.id);
      const ref = await stack.kube.getShapeRef(shapeRefNameOf(namespace, name));
      expect(ref?.status, `ShapeRef ${cloudName} status`).toMatchObject({
        phase: "Created",
        cloudId: cloud.id,
      });
      return { shape, cloud, ref: ref as ShapeRef };
    },
    options,
  );
}
