/**
 * The Shapes controller (controller/src/shapes/) as a conformance {@link Subject}: a stack (stack/) with its
 * cluster, CRDs and least-privilege RBAC, the mock cloud, and the controller as a separate process. The
 * controller always talks to the cloud through an {@link AnswerGate} (reconcile-kit/harness), which passes
 * everything through until `crashAfterCreate` holds the answer to one create. The subject helpers (counters
 * summed over runs, the crash after a create, the uninstall) are reconcile-kit/harness's too.
 *
 * Variants: "first" is a red circle (no size), "second" a blue square of size 3. Drift recolors the cloud
 * shape yellow, which neither variant is; foreign shapes are green triangles. "rejected" is a purple triangle
 * of size 800: the CRD allows it (sizes up to 1000), the cloud refuses it for good (422: a triangle is at most
 * size 500, its own rule).
 *
 * Counters: `externalWrites` reads the cloud's request log (the controller's own X-Client-Id), `kubeWrites`
 * and `reconciles` the controller's /metrics, summed over its runs (a run's counters start at zero).
 */
import type { ExternalView, Subject, Variant } from "reconcile-kit/conformance";
import { type CrashSubject, kubeWriteLabel, type TappedWrite } from "reconcile-kit/crash-points";
import {
  ADOPTION_POLICY_ANNOTATION,
  cloudNameOf,
  PAUSED_ANNOTATION,
  REFRESH_ANNOTATION,
  shapeRefNameOf,
} from "@shapes/controller";
import { maxSizeOf } from "@shapes/mock-cloud";
import {
  type AnswerGate,
  crashAfterCreate,
  resourceView,
  RunCounters,
  uninstallAndReinstall,
  withExtras,
  WriteTapProxy,
} from "reconcile-kit/harness";
import { type CloudShape, type ControllerProcess, METRIC, type ShapeSpec, type Stack } from "@shapes/stack";
import { startStack } from "../../support/stack.ts";
import { installCRDs } from "@shapes/envtest";

/** The spec of each variant (managed fields only; the deletion policy is added by `apply`). */
export const SHAPE_VARIANTS: Readonly<Record<Variant, ShapeSpec>> = {
  first: { type: "circle", color: "red" },
  second: { type: "square", color: "blue", size: 3 },
};
/** The spec the cloud refuses for good: a triangle above its size limit (a rule the CRD does not know). */
export const SHAPE_REJECTED: Readonly<ShapeSpec> = { type: "triangle", color: "purple", size: 800 };
/** The Shape CRD, which `uninstall` deletes (`kubectl delete crd`). */
const SHAPES_CRD = "shapes.shapes.example.com";
/** The color `drift` paints: neither variant's. */
const DRIFT_COLOR = "yellow";
/** The controller's name, identity and X-Client-Id in the cloud's request log. */
const CONTROLLER = "controller";
/** The controller's resource reconciler, as its metrics label it. */
const SHAPE_CONTROLLER = "shape";
/** The cloud's write paths: a create, and a write to one shape. */
const CLOUD_WRITE_PATH = /^\/v1\/shapes(\/|$)/;

/** The owner id the crash subject's controller adopts from (`--adopt-owner-ids`): an "earlier version" of it. */
const EARLIER_OWNER = "shapes-earlier-version";

/** The Shapes controller over a fresh stack ("conformance-shapes"). */
export function shapesSubject(): Subject {
  return makeShapesSubject(undefined).subject;
}

/**
 * The Shapes controller for the crash explorer (reconcile-kit/crash-points), over a fresh stack
 * ("crash-points-shapes"): its Kubernetes connection goes through a tap in front of the API server, its cloud
 * connection through a tap in front of the gate, and it adopts shapes of the owner id {@link EARLIER_OWNER}.
 */
export function shapesCrashSubject(): CrashSubject {
  const taps: { kube?: WriteTapProxy; external?: WriteTapProxy; kubeconfigPath?: string } = {};
  const tapped = (side: "kube" | "external"): WriteTapProxy => {
    const tap = taps[side];
    if (!tap) throw new Error("the shapes crash subject is not set up (call setUp first)");
    return tap;
  };
  const subject = makeShapesSubject({
    suite: "crash-points-shapes",
    async connect(stack, gate) {
      const kube = await stack.openKubeTap();
      taps.kube = kube.tap;
      taps.kubeconfigPath = kube.kubeconfigPath;
      taps.external = await WriteTapProxy.start({ side: "external", target: gate.url });
      return { kubeconfigPath: kube.kubeconfigPath, cloudUrl: taps.external.url };
    },
    async disconnect() {
      await taps.kube?.close();
      await taps.external?.close();
    },
  });
  return withExtras(subject.subject, {
    taps: {
      get kube() {
        return tapped("kube");
      },
      get external() {
        return tapped("external");
      },
    },
    killController: () => subject.kill(),
    describeWrite: describeShapesWrite,
    earlierOwner: {
      ownerId: EARLIER_OWNER,
      async create(namespace: string, name: string) {
        const shape = await subject.stack().kube.getShape(namespace, name);
        if (!shape)
          throw new Error(`cannot create the earlier owner's cloud shape: no Shape ${namespace}/${name}`);
        await subject.stack().cloud.create({
          name: cloudNameOf(namespace, name),
          type: "circle",
          color: "red",
          tags: { owner: EARLIER_OWNER, "k8s-uid": shape.metadata.uid, "k8s-name": `${namespace}/${name}` },
        });
      },
    },
  });
}

/** "POST ShapeRef", "PATCH Shape finalizers", "POST cloud shape", "PATCH cloud shape tags". */
function describeShapesWrite(write: TappedWrite): { label: string; create: boolean } {
  if (write.side === "kube")
    return { label: kubeWriteLabel(write, { shapes: "Shape", shaperefs: "ShapeRef" }), create: false };
  const create = write.method === "POST" && /^\/v1\/shapes\/?$/.test(write.path);
  const tagsOnly =
    write.method === "PATCH" &&
    /^\{"tags":/.test(write.requestBody.trim()) &&
    !/"(type|color|size)"/.test(write.requestBody);
  return { label: `${write.method} cloud shape${tagsOnly ? " tags" : ""}`, create };
}

/** How the crash subject connects its controller: through taps, set up once the stack runs. */
interface Connector {
  suite: string;
  connect(stack: Stack, gate: AnswerGate): Promise<{ kubeconfigPath: string; cloudUrl: string }>;
  disconnect(): Promise<void>;
}

function makeShapesSubject(connector: Connector | undefined): {
  subject: Subject;
  stack(): Stack;
  kill(): Promise<void>;
} {
  let stack: Stack | undefined;
  let gate: AnswerGate | undefined;
  let controller: ControllerProcess | undefined;
  let connection: { kubeconfigPath: string; cloudUrl: string } | undefined;
  /** The seq of every controller write seen in the cloud's request log (which keeps the latest 1000). */
  const writesSeen = new Set<number>();
  /** How many shapes `renameExternal` renamed: each new name is `<name>-renamed-<n>`, never a Shape's. */
  let renames = 0;

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

  const subject: Subject = {
    name: "shapes",
    get ownerId() {
      return the().ownerId;
    },

    async setUp() {
      stack = await startStack(connector?.suite ?? "conformance-shapes");
      gate = await stack.openAnswerGate();
      connection = await connector?.connect(stack, gate);
    },
    async tearDown() {
      await stack?.stop();
      await connector?.disconnect();
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
      controller = await the().startController({
        name: CONTROLLER,
        cloudUrl: connection?.cloudUrl ?? gate.url,
        ...(connection ? { kubeconfigPath: connection.kubeconfigPath } : {}),
        extraArgs: [...(connector ? [`--adopt-owner-ids=${EARLIER_OWNER}`] : [])],
      });
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
        committed: (answer) => answer.status === 201,
        apply: () => this.apply(namespace, name, "first"),
        what: `${namespace}/${name}`,
      });
    },

    async newNamespace() {
      return the().kube.createNamespace("conformance");
    },
    async apply(namespace, name, variant, options = {}) {
      const spec: ShapeSpec = {
        ...(variant === "rejected" ? SHAPE_REJECTED : SHAPE_VARIANTS[variant]),
        ...(options.deletionPolicy ? { deletionPolicy: options.deletionPolicy } : {}),
        ...(options.managementPolicies ? { managementPolicies: options.managementPolicies } : {}),
      };
      await the().kube.applyShape(namespace, name, spec, options.annotations);
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
    annotations: {
      paused: PAUSED_ANNOTATION,
      refresh: REFRESH_ANNOTATION,
      adoptionPolicy: ADOPTION_POLICY_ANNOTATION,
    },
    rejectedMessage: `a triangle is at most size ${maxSizeOf("triangle")}`,

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
    async renameExternal(name) {
      const renamed = `${name}-renamed-${++renames}`;
      await the().cloud.patch((await requireExternal(name)).id, { name: renamed });
      return renamed;
    },
    async listExternal() {
      return (await the().cloud.list()).map(externalView);
    },
    async createForeign(name, owner) {
      const tags: Record<string, string> = owner === undefined ? {} : { owner };
      await the().cloud.create({ name, type: "triangle", color: "green", tags });
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

    // Never called on an existing cluster (the suite skips it): it would lose the project's CRD.
    async uninstall() {
      const { kubeConfig } = the();
      await uninstallAndReinstall(kubeConfig, SHAPES_CRD, () => installCRDs(kubeConfig));
    },
    async restartApiServer() {
      const controlPlane = the().controlPlane;
      if (!controlPlane) throw new Error("cannot restart the API server of an existing cluster");
      await controlPlane.restartApiServer();
    },
  };
  return {
    subject,
    stack: the,
    async kill() {
      await counters.closeRun();
      await controller?.kill();
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
