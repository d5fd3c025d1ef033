/**
 * The Shapes controller (controller/src/shapes/) as a conformance {@link Subject}: a stack (stack/) with its
 * cluster, CRDs and least-privilege RBAC, the mock cloud, and the controller as a separate process. The
 * controller always talks to the cloud through a {@link CloudGate}, which passes everything through until
 * `crashAfterCreate` holds the answer to one create.
 *
 * Variants: "first" is a red circle (no size), "second" a blue square of size 3. Drift recolors the cloud
 * shape yellow, which neither variant is; foreign shapes are green triangles.
 *
 * Counters: `externalWrites` reads the cloud's request log (the controller's own X-Client-Id), `kubeWrites`
 * and `reconciles` the controller's /metrics, summed over its runs (a run's counters start at zero).
 */
import type { ExternalView, Subject, Variant } from "reconcile-kit/conformance";
import { cloudNameOf, PAUSED_ANNOTATION, REFRESH_ANNOTATION, shapeRefNameOf } from "@shapes/controller";
import {
  type CloudGate,
  type CloudShape,
  type ControllerProcess,
  METRIC,
  type ShapeSpec,
  type Stack,
  usesExistingCluster,
} from "@shapes/stack";
import { startStack } from "../../support/stack.ts";
import { RunCounters, crashAfterCreate, resourceView } from "./common.ts";

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const SHAPE_VARIANTS: Readonly<Record<Variant, ShapeSpec>> = {
  first: { type: "circle", color: "red" },
  second: { type: "square", color: "blue", size: 3 },
};
/** The color `drift` paints: neither variant's. */
const DRIFT_COLOR = "yellow";
/** The controller's name, identity and X-Client-Id in the cloud's request log. */
const CONTROLLER = "controller";
/** The controller's resource reconciler, as its metrics label it. */
const SHAPE_CONTROLLER = "shape";
/** The cloud's write paths: a create, and a write to one shape. */
const CLOUD_WRITE_PATH = /^\/v1\/shapes(\/|$)/;

/** The Shapes controller over a fresh stack ("conformance-shapes"). */
export function shapesSubject(): Subject {
  let stack: Stack | undefined;
  let gate: CloudGate | undefined;
  let controller: ControllerProcess | undefined;
  /** The seq of every controller write seen in the cloud's request log (which keeps the latest 1000). */
  const writesSeen = new Set<number>();

  const the = (): Stack => {
    if (!stack) throw new Error("the shapes subject is not set up (call setUp first)");
    return stack;
  };
  const counters = new RunCounters(() => controller, { ...METRIC, reconciler: SHAPE_CONTROLLER });
  const requireExternal = async (name: string): Promise<CloudShape> => {
    const shape = await the().cloud.getByName(name);
    if (!shape) throw new Error(`no cloud shape is named ${name}`);
    return shape;
  };

  return {
    name: "shapes",
    canRestartApiServer: !usesExistingCluster(),
    get ownerId() {
      return the().ownerId;
    },

    async setUp() {
      stack = await startStack("conformance-shapes");
      gate = await stack.openCloudGate();
    },
    async tearDown() {
      await stack?.stop();
    },
    async startController() {
      if (controller?.running) {
        await controller.waitReady();
        return;
      }
      if (controller) {
        await controller.start();
        return;
      }
      if (!gate) throw new Error("the shapes subject is not set up (call setUp first)");
      // The stack's short periods: leak grace 2 s; the resync period stays 5 min, so within a scenario only
      // an event (or the refresh annotation) explains a reconcile.
      controller = await the().startController({ name: CONTROLLER, cloudUrl: gate.url });
    },
    async stopController() {
      await counters.closeRun();
      await controller?.stop();
    },
    async crashAfterCreate(namespace, name) {
      if (!gate) throw new Error("the shapes subject is not set up (call setUp first)");
      await crashAfterCreate({
        gate,
        controller,
        counters,
        createPath: "/v1/shapes",
        apply: () => this.apply(namespace, name, "first"),
        what: `${namespace}/${name}`,
      });
    },

    async newNamespace() {
      return the().kube.createNamespace("conformance");
    },
    async apply(namespace, name, variant, options = {}) {
      const spec: ShapeSpec = {
        ...SHAPE_VARIANTS[variant],
        ...(options.deletionPolicy ? { deletionPolicy: options.deletionPolicy } : {}),
      };
      await the().kube.applyShape(namespace, name, spec);
    },
    async delete(namespace, name) {
      await the().kube.deleteShape(namespace, name);
    },
    async stripFinalizers(namespace, name) {
      await the().kube.patchShape(namespace, name, { metadata: { finalizers: null } });
    },
    async annotate(namespace, name, key, value) {
      await the().kube.annotateShape(namespace, name, { [key]: value });
    },
    async read(namespace, name) {
      const shape = await the().kube.getShape(namespace, name);
      return shape && resourceView(shape);
    },
    async intentExists(namespace, name) {
      return (await the().kube.getShapeRef(shapeRefNameOf(namespace, name))) !== undefined;
    },
    annotations: { paused: PAUSED_ANNOTATION, refresh: REFRESH_ANNOTATION },

    externalNameOf: cloudNameOf,
    async getExternal(name) {
      const shape = await the().cloud.getByName(name);
      return shape && externalView(shape);
    },
    async drift(name) {
      await the().cloud.patch((await requireExternal(name)).id, { color: DRIFT_COLOR });
    },
    async deleteExternal(name) {
      await the().cloud.delete((await requireExternal(name)).id);
    },
    async createForeign(name, owner) {
      await the().cloud.create({ name, type: "triangle", color: "green", tags: { owner } });
    },
    async externalWrites() {
      for (const entry of await the().cloud.requests()) {
        if (entry.clientId === CONTROLLER && CLOUD_WRITE_PATH.test(entry.path)) writesSeen.add(entry.seq);
      }
      return writesSeen.size;
    },
    async kubeWrites() {
      return (await counters.total()).kubeWrites;
    },
    async reconciles() {
      return (await counters.total()).reconciles;
    },

    async restartApiServer() {
      const controlPlane = the().controlPlane;
      if (!controlPlane) throw new Error("cannot restart the API server of an existing cluster");
      await controlPlane.restartApiServer();
    },
  };
}

/** What the suite sees of a cloud shape: its owner tags, and which variant its managed fields are. */
function externalView(shape: CloudShape): ExternalView {
  const fields = { type: shape.type, color: shape.color, size: shape.size };
  const matches = (Object.keys(SHAPE_VARIANTS) as Variant[]).find((variant) => {
    const want = SHAPE_VARIANTS[variant];
    return fields.type === want.type && fields.color === want.color && fields.size === want.size;
  });
  return {
    id: shape.id,
    name: shape.name,
    owner: shape.tags.owner,
    uid: shape.tags["k8s-uid"],
    matches: matches ?? "neither",
  };
}
