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
import {
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  cloudNameOf,
  shapeRefNameOf,
} from "../../../controller/src/shapes/api.ts";
import {
  METRIC,
  usesExistingCluster,
  type CloudGate,
  type CloudShape,
  type ControllerProcess,
  type MetricsSnapshot,
  type Shape,
  type ShapeSpec,
  type Stack,
} from "../../../stack/index.ts";
import { startStack } from "../../support/stack.ts";
import type { ExternalView, ResourceView, Subject, Variant } from "../subject.ts";

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
/** How long `crashAfterCreate` waits for the controller's create to reach the cloud. */
const CREATE_DEADLINE_MS = 60_000;
/** The cloud's write paths: a create, and a write to one shape. */
const CLOUD_WRITE_PATH = /^\/v1\/shapes(\/|$)/;

/** The Shapes controller over a fresh stack ("conformance-shapes"). */
export function shapesSubject(): Subject {
  let stack: Stack | undefined;
  let gate: CloudGate | undefined;
  let controller: ControllerProcess | undefined;
  /** The counters of the controller's earlier runs (each run's /metrics starts at zero). */
  const earlierRuns = { kubeWrites: 0, reconciles: 0 };
  /** The seq of every controller write seen in the cloud's request log (which keeps the latest 1000). */
  const writesSeen = new Set<number>();

  const the = (): Stack => {
    if (!stack) throw new Error("the shapes subject is not set up (call setUp first)");
    return stack;
  };
  const counters = (m: MetricsSnapshot) => ({
    kubeWrites: m.sum(METRIC.kubeWrites),
    reconciles: m.sum(METRIC.reconciles, { controller: SHAPE_CONTROLLER }),
  });
  /** The counters of the running controller's current run (zero when none runs). */
  const currentRun = async () =>
    controller?.running ? counters(await controller.metrics()) : { kubeWrites: 0, reconciles: 0 };
  /** Before a run ends: its counters so far become the earlier runs'. */
  const closeRun = async () => {
    if (!controller?.running) return;
    try {
      const last = await currentRun();
      earlierRuns.kubeWrites += last.kubeWrites;
      earlierRuns.reconciles += last.reconciles;
    } catch {
      // Its /metrics did not answer: the run's counts are lost, which only the no-churn window (one run)
      // could notice, and it never ends a run.
    }
  };
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
      await closeRun();
      await controller?.stop();
    },
    async crashAfterCreate(namespace, name) {
      if (!gate || !controller?.running) throw new Error("crashAfterCreate needs the controller running");
      const held = gate.hold({ method: "POST", path: "/v1/shapes" });
      await this.apply(namespace, name, "first");
      const answer = await withDeadline(
        held,
        CREATE_DEADLINE_MS,
        `the controller to create ${namespace}/${name}`,
      );
      if (answer.status !== 201 || !answer.clientWaiting) {
        throw new Error(
          `crashAfterCreate missed its moment: the cloud answered ${answer.status} (${answer.body}), ` +
            `the controller ${answer.clientWaiting ? "still waits" : "is gone"}`,
        );
      }
      await closeRun();
      await controller.kill();
      gate.releaseAll(); // its client is dead: nothing is delivered
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
      return earlierRuns.kubeWrites + (await currentRun()).kubeWrites;
    },
    async reconciles() {
      return earlierRuns.reconciles + (await currentRun()).reconciles;
    },

    async restartApiServer() {
      const controlPlane = the().controlPlane;
      if (!controlPlane) throw new Error("cannot restart the API server of an existing cluster");
      await controlPlane.restartApiServer();
    },
  };
}

/** What the suite sees of a Shape. */
function resourceView(shape: Shape): ResourceView {
  const conditions: ResourceView["conditions"] = {};
  for (const c of shape.status?.conditions ?? []) {
    conditions[c.type] = { status: c.status, reason: c.reason, message: c.message };
  }
  return {
    uid: shape.metadata.uid,
    generation: shape.metadata.generation ?? 0,
    finalizers: shape.metadata.finalizers ?? [],
    deleting: shape.metadata.deletionTimestamp !== undefined,
    conditions,
    observedGeneration: shape.status?.observedGeneration,
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

/** `promise`, or a rejection naming `what` once `ms` passed without it settling. */
async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${Math.round(ms / 1000)} s waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
