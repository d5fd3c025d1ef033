/**
 * The tour's scenarios, one per step, in the order of the story (README, "The story, scenario by
 * scenario"). Each step stands alone: it makes its own Shape in the tour's namespace, does what a person
 * or another system would do, waits for the controller's reaction, and prints the evidence. So
 * `npm run tour -- --step 4` works on its own.
 *
 * Nothing here talks to the controller's code: the tour sees what anyone could see — Kubernetes objects
 * and Events, the cloud's shapes and request log, the controller's log and /metrics. What it does to the
 * controller process (stop, start, a crash at an exact moment) it asks `npm start` for, through its control
 * socket. At its key moments each step also says what to look at (`ctx.show`), for the demo's two-worlds page.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CoreV1Event, KubeConfig } from "@kubernetes/client-node";
import { readClusterId } from "reconcile-kit/parts";
import { ADOPTION_POLICY_ANNOTATION, type Shape, type ShapeRef, type ShapeSpec } from "@shapes/controller";
import {
  checkEqual,
  checkFields,
  checkShapeRef,
  conditionOf,
  type KubeApi,
  METRIC,
  MetricsSnapshot,
} from "@shapes/stack";
import { withKubeHttp } from "reconcile-kit/harness";
import type { CloudClient, CloudShape, ShapeCreate } from "./cloud-client.ts";
import type { ControlClient, DemoStatus } from "./control.ts";
import type { Narrator } from "./narrator.ts";
import { demoPaths, display } from "./paths.ts";
import { startSecondCluster, type SecondCluster } from "./second-cluster.ts";

/** The owner tag of the shapes the tour creates as "someone else". */
export const FOREIGN_OWNER = "billing-team";
/** The --identity of the second cluster's controller: its name in the cloud's request log. */
export const SECOND_CONTROLLER_IDENTITY = "tour-cluster-b";

/** Everything a step uses. */
export interface TourContext {
  kube: KubeApi;
  /** The demo cluster's admin KubeConfig (what `kube` uses). */
  kubeConfig: KubeConfig;
  cloud: CloudClient;
  control: ControlClient;
  /** The demo's status when the tour began. */
  status: DemoStatus;
  /** The tour's own namespace. */
  namespace: string;
  n: Narrator;
  /** The deadline of each wait. */
  timeoutMs: number;
  /** Aborted by Ctrl-C. */
  signal: AbortSignal;
  /** Ids of the cloud shapes the tour created as "someone else": the cleanup deletes them. */
  foreignIds: Set<string>;
  /**
   * Says what to look at now: a moment of the current step (its number and title come from the runner), for
   * the demo's two-worlds page, which highlights the Shapes (names in the tour's namespace) and the cloud
   * shapes (cloud names) in `focus`. Awaited, so a script may take a screenshot before the step goes on; in
   * `npm run tour` it never fails the step.
   */
  show(caption: string, focus?: MomentFocus): Promise<void>;
}

/** What a moment of a step is about (see TourMoment in control.ts). */
export interface MomentFocus {
  /** Shapes in the tour's namespace, by name. */
  shapes?: string[];
  /** Cloud shapes, by name. */
  cloudNames?: string[];
  /** The step's key moment: the one its docs screenshot shows. One per step. */
  key?: boolean;
}

/** One scenario. */
export interface TourStep {
  title: string;
  /** What happens, and what a naive controller would get wrong: printed before the step runs. */
  story: string;
  run(ctx: TourContext): Promise<void>;
}

export const STEPS: readonly TourStep[] = [
  {
    title: "Create a Shape",
    story:
      "You declare a Shape in Kubernetes. Before anything exists in the cloud, the controller puts its " +
      "finalizer on the Shape (so no deletion can slip by unseen) and writes a ShapeRef, its durable " +
      "record of intent. Only then does it create the cloud shape, under the deterministic name " +
      "<namespace>.<name> and with owner tags that prove the shape is ours. The cloud id goes into the " +
      "Shape's status; the ShapeRef is not written again: it says that a cloud shape may exist for this " +
      "Shape, and that is all it needs to say.",
    async run(ctx) {
      const focus = { shapes: ["red-square"], cloudNames: [cloudName(ctx, "red-square")] };
      await ctx.show(
        "A Shape is applied: first the finalizer and the ShapeRef, then the cloud shape under <namespace>.<name>",
        focus,
      );
      const shape = await createShape(ctx, "red-square", { type: "square", color: "red" });
      const ref = await ctx.kube.getShapeRef(cloudName(ctx, "red-square"));
      const cloud = await ctx.cloud.byName(cloudName(ctx, "red-square"));
      await ctx.show(
        "Created: the Shape is Ready with its cloud id, the ShapeRef records the intent, the cloud shape carries our owner tags",
        { ...focus, key: true },
      );
      ctx.n.section("Evidence");
      ctx.n.evidence(
        "Shape",
        `finalizers ${JSON.stringify(shape.metadata.finalizers ?? [])}; ${conditions(shape)}`,
      );
      ctx.n.evidence("ShapeRef", ref ? describeRef(ref) : "(none)");
      ctx.n.evidence("Cloud", cloud ? describeCloud(cloud) : "(none)");
      await showEvents(ctx, "red-square", ["CreatedCloudShape"]);
      tryIt(ctx, `describe shape -n ${ctx.namespace} red-square`);
    },
  },
  {
    title: "Drift is repaired",
    story:
      "Someone recolors our shape in the cloud console. The cloud's change feed tells the controller at " +
      "once (the periodic resync is minutes away); it compares the whole desired state with what the " +
      "cloud holds and patches the difference back, guarded by If-Match so it never overwrites a change " +
      "it has not seen. It counts the repair in status.driftRepairs.",
    async run(ctx) {
      const focus = { shapes: ["drifting-circle"], cloudNames: [cloudName(ctx, "drifting-circle")] };
      await ctx.show("A blue circle is applied; then someone will recolor it in the cloud", focus);
      const before = await createShape(ctx, "drifting-circle", { type: "circle", color: "blue" });
      const original = await mustFindCloud(ctx, "drifting-circle");
      await ctx.show(
        "Someone recolors the circle yellow in the cloud: watch the controller paint it blue again",
        focus,
      );
      ctx.n.act(`recolor the cloud shape ${original.name} to yellow, as a person in the console would`);
      const recolored = await ctx.cloud.patch(original.id, { color: "yellow" });
      const repaired = await ctx.n.wait(
        "the controller to paint it blue again",
        async () => {
          const now = await mustFindCloud(ctx, "drifting-circle");
          if (now.color !== "blue") throw new Error(`the cloud shape is ${now.color}`);
          return now;
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      const shape = await ctx.n.wait(
        "status.driftRepairs to count it",
        async () => {
          const s = await ctx.kube.shape(ctx.namespace, "drifting-circle");
          const count = s.status?.driftRepairs ?? 0;
          if (count <= (before.status?.driftRepairs ?? 0)) throw new Error(`driftRepairs is ${count}`);
          return s;
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      await ctx.show(
        "Repaired: the same cloud shape is blue again, and status.driftRepairs counts the repair",
        { ...focus, key: true },
      );
      ctx.n.section("Evidence");
      ctx.n.evidence(
        "Cloud",
        `same id ${repaired.id}; revision ${recolored.revision} (the recolor) → ${repaired.revision} (the repair)`,
      );
      ctx.n.evidence("Shape", `status.driftRepairs ${shape.status?.driftRepairs ?? 0}; ${conditions(shape)}`);
      await showEvents(ctx, "drifting-circle", ["RepairedCloudShapeDrift"]);
      tryIt(ctx, `get shape -n ${ctx.namespace} drifting-circle -o jsonpath='{.status.driftRepairs}'`);
    },
  },
  {
    title: "Deleted in the cloud, created again",
    story:
      "Someone deletes our shape in the cloud. The change feed reports the deletion; the Shape still " +
      "says the shape should exist, so the controller creates it again (a new cloud id) and records the " +
      "new id in the Shape's status. The ShapeRef stays as it was: it never held an id, only the intent.",
    async run(ctx) {
      const focus = { shapes: ["phoenix-triangle"], cloudNames: [cloudName(ctx, "phoenix-triangle")] };
      await ctx.show("A green triangle is applied; then someone will delete it in the cloud", focus);
      await createShape(ctx, "phoenix-triangle", { type: "triangle", color: "green" });
      const original = await mustFindCloud(ctx, "phoenix-triangle");
      await ctx.show(
        "Someone deletes the triangle in the cloud: watch it come back, with a new cloud id",
        focus,
      );
      ctx.n.act(`delete the cloud shape ${original.name} (${original.id}), as a person in the console would`);
      await ctx.cloud.delete(original.id);
      const reborn = await ctx.n.wait(
        "a new cloud shape with the same name",
        async () => {
          const now = await mustFindCloud(ctx, "phoenix-triangle");
          if (now.id === original.id) throw new Error(`still ${original.id}`);
          return now;
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      const shape = await ctx.n.wait(
        "the Shape's status to name the new id",
        async () => {
          const s = await ctx.kube.shape(ctx.namespace, "phoenix-triangle");
          if (s.status?.cloudId !== reborn.id) throw new Error(`status.cloudId is ${s.status?.cloudId}`);
          return s;
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      const ref = await ctx.kube.getShapeRef(cloudName(ctx, "phoenix-triangle"));
      await ctx.show(
        "Created again: the new cloud id is in the Shape's status; the same ShapeRef still stands",
        {
          ...focus,
          key: true,
        },
      );
      ctx.n.section("Evidence");
      ctx.n.evidence("Cloud", `${original.id} is gone; ${describeCloud(reborn)}`);
      ctx.n.evidence("Shape", `status.cloudId ${shape.status?.cloudId ?? "-"}; ${conditions(shape)}`);
      ctx.n.evidence("ShapeRef", ref ? describeRef(ref) : "(none)");
      await showEvents(ctx, "phoenix-triangle", ["CreatedCloudShape"]);
    },
  },
  {
    title: "A foreign shape is left alone, even under our name",
    story:
      "The cloud is shared: other teams have shapes there too. Ownership is only what the tags say, so " +
      "the controller never modifies or deletes a shape without our owner tag and this Shape's uid — " +
      "not even one that holds the very name our Shape wants. Then it reports a NameConflict instead of " +
      "taking the name over. (A naive controller that matches by name would recolor or delete it.)",
    async run(ctx) {
      const foreign = [cloudName(ctx, "billing-hexagon"), cloudName(ctx, "contested-square")];
      await ctx.show(
        "The billing team creates two shapes in the cloud, one under the name a Shape of ours will want",
        { cloudNames: foreign },
      );
      ctx.n.act(
        `create ${cloudName(ctx, "billing-hexagon")} in the cloud as the billing team (owner=${FOREIGN_OWNER})`,
      );
      const bystander = await createForeign(ctx, "billing-hexagon", { type: "hexagon", color: "orange" });
      ctx.n.act(
        `create ${cloudName(ctx, "contested-square")} in the cloud as the billing team: the name a Shape will want`,
      );
      const squatter = await createForeign(ctx, "contested-square", { type: "square", color: "gray" });
      const metricsBefore = await metrics(ctx.status);
      ctx.n.act(`apply Shape ${ctx.namespace}/contested-square (square, pink): its cloud name is taken`);
      await ctx.kube.applyShape(ctx.namespace, "contested-square", { type: "square", color: "pink" });
      const shape = await waitNameConflict(ctx, ctx.kube, "contested-square", "the Shape");
      await ctx.show(
        "NameConflict: the Shape reports the taken name, and both foreign shapes stay exactly as they were",
        { shapes: ["contested-square"], cloudNames: foreign, key: true },
      );
      ctx.n.section("Evidence");
      ctx.n.evidence("Shape", conditions(shape));
      await showEvents(ctx, "contested-square", ["NameConflict"]);
      await showUntouched(ctx, [bystander, squatter]);
      const metricsAfter = await metrics(ctx.status);
      if (metricsBefore && metricsAfter) {
        const seen =
          metricsAfter.sum(METRIC.foreignObjectsSeen) - metricsBefore.sum(METRIC.foreignObjectsSeen);
        ctx.n.evidence("Metrics", `${METRIC.foreignObjectsSeen} went up by ${seen}`);
      }

      ctx.n.act(`delete Shape ${ctx.namespace}/contested-square: the shape under its name was never ours`);
      await ctx.kube.deleteShape(ctx.namespace, "contested-square");
      await waitShapeGone(ctx, "contested-square");
      await ctx.show("The Shape is gone; the foreign shape under its name is still untouched", {
        shapes: ["contested-square"],
        cloudNames: [squatter.name],
      });
      ctx.n.section("Evidence");
      await showUntouched(ctx, [squatter]);
    },
  },
  {
    title: "Delete through the finalizer",
    story:
      "You delete a Shape. Kubernetes only marks it (deletionTimestamp) while our finalizer is on it. " +
      "The controller deletes the cloud shape, then the ShapeRef, and only then removes its finalizer, " +
      "which lets Kubernetes delete the Shape. (With deletionPolicy: Orphan it would leave the cloud " +
      "shape in place, stripped of our tags.)",
    async run(ctx) {
      const focus = { shapes: ["goodbye-circle"], cloudNames: [cloudName(ctx, "goodbye-circle")] };
      await ctx.show("A purple circle is applied; then it will be deleted in Kubernetes", focus);
      await createShape(ctx, "goodbye-circle", { type: "circle", color: "purple" });
      const cloud = await mustFindCloud(ctx, "goodbye-circle");
      await ctx.show(
        "kubectl delete: the finalizer holds the Shape while the controller deletes the cloud shape, then the ShapeRef",
        { ...focus, key: true },
      );
      ctx.n.act(`delete Shape ${ctx.namespace}/goodbye-circle (kubectl delete shape goodbye-circle)`);
      await ctx.kube.deleteShape(ctx.namespace, "goodbye-circle");
      await waitShapeGone(ctx, "goodbye-circle");
      const ref = await ctx.kube.getShapeRef(cloudName(ctx, "goodbye-circle"));
      const left = await ctx.cloud.get(cloud.id);
      await ctx.show("Gone on both sides: the cloud shape, the ShapeRef, and then the Shape", focus);
      ctx.n.section("Evidence");
      ctx.n.evidence(
        "Cloud",
        left ? `still there: ${describeCloud(left)}` : `${cloud.name} (${cloud.id}) is gone`,
      );
      ctx.n.evidence(
        "ShapeRef",
        ref ? `still there: ${describeRef(ref)}` : `${cloudName(ctx, "goodbye-circle")} is gone`,
      );
      await showEvents(ctx, "goodbye-circle", ["DeletedCloudShape"]);
    },
  },
  {
    title: "A missed deletion is caught by the ShapeRef",
    story:
      "The worst case: the controller is down, and someone deletes a Shape and, impatient, strips the " +
      "finalizer by hand. The Shape is gone without the controller ever seeing it go, and its cloud " +
      "shape is left behind. But the ShapeRef, written before the cloud create, is still there; when the " +
      "controller comes back, its startup resync finds that ShapeRef dangling and deletes the leak. " +
      "The tour asks `npm start` (through its control socket) to stop its controller and, later, to " +
      "start it again.",
    async run(ctx) {
      const refName = cloudName(ctx, "leaky-hexagon");
      const focus = { shapes: ["leaky-hexagon"], cloudNames: [refName] };
      await ctx.show("A red hexagon is applied; then the controller goes down", focus);
      await createShape(ctx, "leaky-hexagon", { type: "hexagon", color: "red" });
      const cloud = await mustFindCloud(ctx, "leaky-hexagon");

      await ctx.show(
        "The controller is down: someone deletes the hexagon and strips its finalizer by hand",
        focus,
      );
      ctx.n.act("ask npm start to stop the controller");
      const stopped = await ctx.control.stopController();
      ctx.n.note(`the controller is ${stopped.controller.state}: nothing reconciles now`);
      let restarted = false;
      try {
        ctx.n.act(`delete Shape ${ctx.namespace}/leaky-hexagon`);
        await ctx.kube.deleteShape(ctx.namespace, "leaky-hexagon");
        const stuck = await ctx.n.wait(
          "Kubernetes to mark it deleted (it stays: our finalizer holds it, and nobody runs it)",
          async () => {
            const s = await ctx.kube.shape(ctx.namespace, "leaky-hexagon");
            if (!s.metadata.deletionTimestamp) throw new Error("no deletionTimestamp yet");
            return s;
          },
          ctx.timeoutMs,
          ctx.signal,
        );
        ctx.n.evidence(
          "Shape",
          `deletionTimestamp ${stuck.metadata.deletionTimestamp?.toString() ?? ""}; finalizers ${JSON.stringify(stuck.metadata.finalizers ?? [])}`,
        );
        ctx.n.act(
          `strip the finalizer by hand, as an impatient person would (kubectl patch ... finalizers: null)`,
        );
        await ctx.kube.stripFinalizer(ctx.namespace, "leaky-hexagon");
        await waitShapeGone(ctx, "leaky-hexagon");
        const leaked = await ctx.cloud.get(cloud.id);
        const dangling = await ctx.kube.getShapeRef(refName);
        await ctx.show("The dangling ShapeRef and the leaked cloud shape, while the controller is down", {
          ...focus,
          key: true,
        });
        ctx.n.section("Evidence of the leak");
        ctx.n.evidence("Cloud", leaked ? `still there: ${describeCloud(leaked)}` : "(gone already?)");
        ctx.n.evidence(
          "ShapeRef",
          dangling
            ? `${describeRef(dangling)} — dangling: no Shape with that uid exists any more`
            : "(gone already?)",
        );

        ctx.n.act("ask npm start to start the controller again (its startup resync runs before it is ready)");
        const running = await ctx.control.startController();
        restarted = true;
        ctx.n.note(
          `the controller is ${running.controller.state} again (pid ${running.controller.pid ?? "?"})`,
        );
        ctx.status = running;
      } finally {
        if (!restarted) await ensureControllerRunning(ctx);
      }
      await ctx.n.wait(
        "the leaked cloud shape and the dangling ShapeRef to be gone",
        async () => {
          const [c, r] = await Promise.all([ctx.cloud.get(cloud.id), ctx.kube.getShapeRef(refName)]);
          if (c || r)
            throw new Error(
              `${c ? `cloud shape ${c.id} exists` : ""} ${r ? `ShapeRef ${refName} exists` : ""}`,
            );
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      await ctx.show(
        "After the restart: the leaked cloud shape and the dangling ShapeRef are both gone",
        focus,
      );
      ctx.n.section("Evidence");
      ctx.n.evidence("Cloud", `${cloud.name} (${cloud.id}) is gone`);
      ctx.n.evidence("ShapeRef", `${refName} is gone`);
      const line = await findLogLine(ctx.status.controller.logFile, (l) => l.shapeRef === refName);
      if (line) ctx.n.evidence("Log", `${String(line.msg)} (shapeRef=${refName})`);
      const leaksAfter = (await metrics(ctx.status))?.sum(METRIC.leaksRemoved);
      if (leaksAfter !== undefined) {
        ctx.n.evidence(
          "Metrics",
          `${METRIC.leaksRemoved} is ${leaksAfter} since the controller started again`,
        );
      }
    },
  },
  {
    title: "A crash right after the create",
    story:
      "The worst moment for a crash: the controller asked the cloud to create a shape, the cloud did, and " +
      "the controller died before it heard back. Nothing in Kubernetes records the new id. A naive " +
      "controller creates again after the restart: a duplicate, or a name conflict forever. This one wrote " +
      "the ShapeRef before the create, under a deterministic name, and the create itself carries our owner " +
      "tag and the Shape's uid: restarted, it finds the shape and adopts it. The tour makes the moment " +
      "exact: `npm start` restarts its controller behind a gate in front of the cloud that holds the answer " +
      "to the create, and kills the controller (SIGKILL) as soon as the cloud has answered.",
    async run(ctx) {
      const name = "unheard-square";
      const focus = { shapes: [name], cloudNames: [cloudName(ctx, name)] };
      await ctx.show(
        "The controller now talks to the cloud through a gate: it will be killed the moment the cloud has created the square",
        focus,
      );
      ctx.n.act(
        `ask npm start to restart the controller behind a gate in front of the cloud, and to kill it (SIGKILL) ` +
          `the moment the cloud has created ${cloudName(ctx, name)}`,
      );
      let restarted = false;
      let created: CloudShape;
      let written: ShapeRef;
      try {
        // Armed longer than the wait below: the demo calls the crash off by itself only if the tour is gone.
        const armed = await ctx.control.crashAfterCreate({
          cloudName: cloudName(ctx, name),
          timeoutMs: ctx.timeoutMs + 60_000,
        });
        ctx.status = armed;
        const owner = await ownerIdOf(armed);
        ctx.n.note(
          `the controller (pid ${armed.controller.pid ?? "?"}) is ready, its cloud URL is the gate ` +
            `${armed.controller.crashArmed?.gateUrl ?? "?"}; everything passes through, except the answer to ` +
            "that create",
        );
        ctx.n.act(`apply Shape ${ctx.namespace}/${name} (square, orange)`);
        await ctx.kube.applyShape(ctx.namespace, name, { type: "square", color: "orange" });
        await ctx.n.wait(
          "npm start to kill the controller once the cloud has created the shape",
          async () => {
            const { controller } = await ctx.control.status();
            if (controller.state !== "crashed" || controller.crashArmed) {
              throw new Error(
                `the controller is ${controller.state}${controller.crashArmed ? ", armed" : ""}`,
              );
            }
          },
          ctx.timeoutMs,
          ctx.signal,
        );

        // The window: the cloud has the shape, and nothing in Kubernetes knows its id.
        const [shape, ref, cloud] = await Promise.all([
          ctx.kube.shape(ctx.namespace, name),
          ctx.kube.getShapeRef(cloudName(ctx, name)),
          mustFindCloud(ctx, name),
        ]);
        created = cloud;
        checkFields(`the cloud shape's tags`, cloud.tags, { owner, "k8s-uid": shape.metadata.uid });
        // The ShapeRef written before the create: for this Shape, saying only that a cloud shape may exist.
        checkShapeRef(ref, shape, cloud);
        checkEqual("the Shape's status.cloudId", shape.status?.cloudId, undefined);
        written = ref as ShapeRef;
        await ctx.show(
          "The crash window: the cloud has the shape, with our owner tag and the Shape's uid; the ShapeRef says only that a cloud shape may exist; the Shape has no cloud id",
          { ...focus, key: true },
        );
        ctx.n.section("Evidence of the window");
        ctx.n.evidence("Cloud", `${describeCloud(cloud)} — ours by its tags, the Shape's uid included`);
        ctx.n.evidence("ShapeRef", ref ? `${describeRef(ref)} — written before the create` : "(none)");
        ctx.n.evidence(
          "Shape",
          `status.cloudId -; finalizers ${JSON.stringify(shape.metadata.finalizers ?? [])}`,
        );
        ctx.n.evidence(
          "Controller",
          "killed with SIGKILL before it heard the cloud's 201 (see npm start's terminal)",
        );

        ctx.n.act("ask npm start to start the controller again, against the cloud itself");
        ctx.status = await ctx.control.startController();
        restarted = true;
      } finally {
        if (!restarted) await ensureControllerRunning(ctx);
      }
      const adopted = await ctx.n.wait(
        "the Shape to be Ready with the id of the shape created before the crash",
        async () => {
          const shape = await ctx.kube.shape(ctx.namespace, name);
          const ready = conditionOf(shape, "Ready");
          checkEqual("status.cloudId", shape.status?.cloudId, created.id);
          checkEqual("Ready", ready?.status, "True");
          const ref = await ctx.kube.getShapeRef(cloudName(ctx, name));
          checkShapeRef(ref, shape, created);
          checkEqual("the ShapeRef (its uid)", ref?.metadata.uid, written.metadata.uid);
          const named = (await ctx.cloud.list()).filter((s) => s.name === created.name);
          checkEqual(
            `the ids of the cloud shapes named ${created.name}`,
            named.map((s) => s.id),
            [created.id],
          );
          return { shape, ref: ref as ShapeRef };
        },
        ctx.timeoutMs,
        ctx.signal,
      );
      await ctx.show(
        "Adopted after the restart: still one cloud shape, the same id, now in the Ready Shape's status; the ShapeRef is the one written before the create",
        focus,
      );
      ctx.n.section("Evidence");
      ctx.n.evidence(
        "Cloud",
        `exactly one shape named ${created.name}: ${created.id}, the one made before the crash`,
      );
      ctx.n.evidence("ShapeRef", `${describeRef(adopted.ref)} — the same record, never written again`);
      ctx.n.evidence(
        "Shape",
        `status.cloudId ${adopted.shape.status?.cloudId ?? "-"}; ${conditions(adopted.shape)}`,
      );
      tryIt(ctx, `get shaperefs ${created.name}`);
    },
  },
  {
    title: "Down for a while: the startup resync catches up",
    story:
      "The controller is down (a rollout, a node drain) while the world moves on both sides: in Kubernetes " +
      "a Shape is created, one is changed, one is deleted; in the cloud one of our shapes is recolored and " +
      "another deleted. None of it will arrive as an event after the restart: the caches simply list the " +
      "new state. So before the controller says it is ready (/readyz 200), it reconciles every Shape and " +
      "every ShapeRef once. The tour looks once, the moment the controller says it is ready, without " +
      "waiting: everything must already be converged.",
    async run(ctx) {
      const names = ["painted-square", "lost-circle", "changed-triangle", "retired-hexagon", "late-square"];
      const all = { shapes: names, cloudNames: names.map((n) => cloudName(ctx, n)) };
      await ctx.show(
        "Four Shapes are applied; then the controller goes down, and the world moves on both sides",
        all,
      );
      const paintedBefore = await createShape(ctx, "painted-square", { type: "square", color: "red" });
      await createShape(ctx, "lost-circle", { type: "circle", color: "blue", size: 3 });
      await createShape(ctx, "changed-triangle", { type: "triangle", color: "green" });
      await createShape(ctx, "retired-hexagon", { type: "hexagon", color: "pink" });
      const painted = await mustFindCloud(ctx, "painted-square");
      const lost = await mustFindCloud(ctx, "lost-circle");
      const changed = await mustFindCloud(ctx, "changed-triangle");
      const retired = await mustFindCloud(ctx, "retired-hexagon");

      ctx.n.act("ask npm start to stop the controller");
      const stopped = await ctx.control.stopController();
      ctx.n.note(`the controller is ${stopped.controller.state}: nothing reconciles now`);
      let restarted = false;
      let askedAt: number;
      let readyAt: number;
      try {
        ctx.n.act(`apply a new Shape ${ctx.namespace}/late-square (square, white)`);
        await ctx.kube.applyShape(ctx.namespace, "late-square", { type: "square", color: "white" });
        ctx.n.act(`change Shape ${ctx.namespace}/changed-triangle: color green → black, size 9`);
        await ctx.kube.patchShape(ctx.namespace, "changed-triangle", { spec: { color: "black", size: 9 } });
        ctx.n.act(
          `delete Shape ${ctx.namespace}/retired-hexagon (our finalizer holds it until the controller is back)`,
        );
        await ctx.kube.deleteShape(ctx.namespace, "retired-hexagon");
        ctx.n.act(`recolor the cloud shape ${painted.name} to yellow, as a person in the console would`);
        await ctx.cloud.patch(painted.id, { color: "yellow" });
        ctx.n.act(`delete the cloud shape ${lost.name} (${lost.id}), as a person in the console would`);
        await ctx.cloud.delete(lost.id);
        const waiting = await ctx.kube.shape(ctx.namespace, "retired-hexagon");
        ctx.n.evidence(
          "Shape",
          `retired-hexagon: deletionTimestamp ${waiting.metadata.deletionTimestamp?.toString() ?? "-"}; ` +
            `finalizers ${JSON.stringify(waiting.metadata.finalizers ?? [])}`,
        );
        await ctx.show(
          "While the controller is down: a new Shape, a changed one, one being deleted; in the cloud one recolored, one deleted",
          all,
        );

        ctx.n.act("ask npm start to start the controller again: it answers once /readyz says 200");
        askedAt = Date.now();
        ctx.status = await ctx.control.startController();
        readyAt = Date.now();
        restarted = true;
        ctx.n.note(
          `the controller is ${ctx.status.controller.state} again (pid ${ctx.status.controller.pid ?? "?"}), ` +
            `ready ${((readyAt - askedAt) / 1000).toFixed(1)} s after it was asked to start`,
        );
      } finally {
        if (!restarted) await ensureControllerRunning(ctx);
      }

      // One look, right now: no waiting, no retries. Whatever is not converged yet fails the step.
      const owner = await ownerIdOf(ctx.status);
      const [late, repaired, recreated, updated, gone] = await Promise.all([
        convergedNow(ctx, "late-square", owner),
        convergedNow(ctx, "painted-square", owner),
        convergedNow(ctx, "lost-circle", owner),
        convergedNow(ctx, "changed-triangle", owner),
        Promise.all([
          ctx.kube.getShape(ctx.namespace, "retired-hexagon"),
          ctx.kube.getShapeRef(retired.name),
          ctx.cloud.get(retired.id),
        ]),
      ]);
      const lookedAt = Date.now();
      checkEqual("painted-square's cloud id (repaired in place)", repaired.cloud.id, painted.id);
      checkEqual(
        "painted-square's status.driftRepairs",
        repaired.shape.status?.driftRepairs,
        (paintedBefore.status?.driftRepairs ?? 0) + 1,
      );
      if (recreated.cloud.id === lost.id) throw new Error(`lost-circle still has the deleted id ${lost.id}`);
      checkEqual("changed-triangle's cloud id (updated in place)", updated.cloud.id, changed.id);
      checkEqual("retired-hexagon's Shape, ShapeRef and cloud shape", gone, [
        undefined,
        undefined,
        undefined,
      ]);
      await ctx.show("The moment it said ready, everything was converged: looked at once, without waiting", {
        ...all,
        key: true,
      });
      ctx.n.section(`Evidence, looked at once ${lookedAt - readyAt} ms after /readyz said 200`);
      ctx.n.evidence("Created", describeCloud(late.cloud));
      ctx.n.evidence(
        "Repaired",
        `${describeCloud(repaired.cloud)}; status.driftRepairs ${repaired.shape.status?.driftRepairs ?? 0}`,
      );
      ctx.n.evidence("Recreated", `${lost.id} was deleted; ${describeCloud(recreated.cloud)}`);
      ctx.n.evidence("Updated", describeCloud(updated.cloud));
      ctx.n.evidence(
        "Deleted",
        `Shape retired-hexagon, its ShapeRef and its cloud shape ${retired.id} are gone (the finalizer ran)`,
      );
      const line = await findLogLine(
        ctx.status.controller.logFile,
        (l) => String(l.msg).startsWith("startup resync done") && Number(l.time) >= askedAt,
      );
      if (!line) throw new Error(`cannot find "startup resync done" in ${ctx.status.controller.logFile}`);
      ctx.n.evidence("Log", `${String(line.msg)} (${new Date(Number(line.time)).toISOString()})`);
      tryIt(ctx, `get shapes -n ${ctx.namespace}`);
    },
  },
  {
    title: "Two clusters, one cloud",
    story:
      "Staging and production often share one cloud account, each cluster with its own controller. Ownership " +
      "is a tag, so the owner id must differ per cluster: by default it is k8s-<uid of the cluster's " +
      "kube-system namespace>, the same for every replica and restart. (With one constant id for all, each " +
      "cluster's leak sweep took the other's shapes for its own leaks and deleted them, forever.) The tour " +
      "starts a second cluster, a local control plane in a temp folder, and a controller for it with default " +
      "settings, against the demo's cloud. The same Shape in both clusters: the first keeps the name; the " +
      "second reports a NameConflict, never writes the first's shape, and takes the name within seconds " +
      "once it is freed.",
    async run(ctx) {
      const paths = demoPaths(ctx.status.stateDir);
      const logFile = join(paths.logsDir, "cluster-b-controller.log");
      await ctx.show(
        "Cluster B starts: a second control plane, and its own controller against this same cloud",
      );
      ctx.n.act(
        "start cluster B: a second local control plane (etcd + kube-apiserver in a temp folder) with the CRDs " +
          "and RBAC, and its own controller against the demo's cloud, with default ownership settings",
      );
      const b = await startSecondCluster({
        cloudUrl: ctx.status.cloud.url,
        cloudTokenFile: paths.tokenFile,
        identity: SECOND_CONTROLLER_IDENTITY,
        logFile,
        log: (line) => ctx.n.note(`cluster B: ${line}`),
        readyTimeoutMs: Math.max(ctx.timeoutMs, 120_000),
        signal: ctx.signal,
      });
      try {
        ctx.n.note(
          `cluster B runs at ${b.controlPlane.server}; its controller (pid ${b.controller.status().pid ?? "?"}, ` +
            `--identity=${SECOND_CONTROLLER_IDENTITY}) is ready; its log: ${display(logFile)}`,
        );
        await sameShapeInTwoClusters(ctx, b);
      } finally {
        await cleanUpSecondCluster(ctx, b);
      }
    },
  },
  {
    title: "Bring an existing shape in: observe it, or adopt it",
    story:
      "The cloud had shapes before the controller came. A Shape with managementPolicies [Observe] only " +
      "looks: it reports the cloud shape of its name in its status, whoever owns it, and never writes to " +
      "it, not even when the Shape is deleted. A Shape with the annotation shapes.example.com/adoption-policy: " +
      "adopt takes over a shape that has no owner tag at all: one write sets our owner tags and the spec " +
      "together, and from then on it is ours. A shape of another owner is never adopted: the Shape says who " +
      "holds it. (A naive controller either never adopts, or adopts whatever holds the name.)",
    async run(ctx) {
      await observeExisting(ctx);
      await adoptExisting(ctx);
    },
  },
];

/** `<namespace>.<name>`: the cloud name the controller gives a Shape. */
export function cloudName(ctx: Pick<TourContext, "namespace">, name: string): string {
  return `${ctx.namespace}.${name}`;
}

/**
 * Applies a Shape and waits until it is Ready with its cloud shape. In the demo's cluster, or in `other` (the
 * second cluster of the two-clusters step, named in the narration).
 */
async function createShape(
  ctx: TourContext,
  name: string,
  spec: ShapeSpec,
  other?: { kube: KubeApi; label: string },
): Promise<Shape> {
  const kube = other?.kube ?? ctx.kube;
  const where = other ? ` in ${other.label}` : "";
  ctx.n.act(`apply Shape ${ctx.namespace}/${name}${where} (${spec.type}, ${spec.color})`);
  await kube.applyShape(ctx.namespace, name, spec);
  return ctx.n.wait(
    `Shape ${name}${where} to be Ready (its cloud shape exists and matches)`,
    async () => {
      const shape = await kube.shape(ctx.namespace, name);
      const ready = conditionOf(shape, "Ready");
      if (ready?.status !== "True" || !shape.status?.cloudId) {
        throw new Error(
          `Ready is ${ready ? `${ready.status} (${ready.reason}: ${ready.message})` : "not reported yet"}`,
        );
      }
      return shape;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
}

/**
 * The two-clusters step with cluster B running: the same Shape in both clusters, the two owner ids, the name
 * conflict, and the name taken once cluster A frees it.
 */
async function sameShapeInTwoClusters(ctx: TourContext, b: SecondCluster): Promise<void> {
  const ns = ctx.namespace;
  const inB = { kube: b.kube, label: "cluster B" };
  await b.createNamespace(ns);
  await createShape(ctx, "twin-square", { type: "square", color: "red" });
  const first = await mustFindCloud(ctx, "twin-square");
  ctx.n.act(
    `apply Shape ${ns}/twin-square in cluster B (square, blue): the same namespace and name, so the same ` +
      `cloud name ${first.name}`,
  );
  await b.kube.applyShape(ns, "twin-square", { type: "square", color: "blue" });
  const conflicted = await waitNameConflict(ctx, b.kube, "twin-square", "cluster B's Shape");
  await ctx.show(
    "The same Shape in both clusters: this cluster keeps the cloud name, cluster B's reports NameConflict",
    { shapes: ["twin-square"], cloudNames: [first.name], key: true },
  );
  await createShape(ctx, "cluster-b-circle", { type: "circle", color: "green" }, inB);
  const theirs = await mustFindCloud(ctx, "cluster-b-circle");
  await ctx.show("Each cluster tags its cloud shapes with its own owner id", {
    shapes: ["twin-square"],
    cloudNames: [first.name, theirs.name],
  });

  // Each cluster's owner id is its own kube-system namespace's uid, and they differ.
  const [uidA, uidB] = await Promise.all([
    withKubeHttp(ctx.kubeConfig, readClusterId),
    withKubeHttp(b.kubeConfig, readClusterId),
  ]);
  const [ownerA, ownerB] = [first.tags.owner, theirs.tags.owner];
  if (ownerA !== `k8s-${uidA}` || ownerB !== `k8s-${uidB}` || ownerA === ownerB) {
    throw new Error(
      `the owner ids are not one per cluster: cluster A's shape has owner ${ownerA ?? "(none)"} (kube-system ` +
        `uid ${uidA}), cluster B's ${ownerB ?? "(none)"} (kube-system uid ${uidB})`,
    );
  }
  ctx.n.section("Evidence");
  ctx.n.evidence("Cluster A", `kube-system uid ${uidA} → owner id ${ownerA}`);
  ctx.n.evidence("Cluster B", `kube-system uid ${uidB} → owner id ${ownerB}`);
  ctx.n.evidence("Cloud", `${describeCloud(first)} — cluster A's`);
  ctx.n.evidence("Cloud", `${describeCloud(theirs)} — cluster B's`);
  ctx.n.evidence("Shape in B", conditions(conflicted));
  await showEvents(ctx, "twin-square", ["NameConflict"], b.kube);
  for (const [label, kube] of [
    ["ShapeRef A", ctx.kube],
    ["ShapeRef B", b.kube],
  ] as const) {
    const ref = await kube.getShapeRef(first.name);
    // The OWNER column of `kubectl get shaperefs` is spec.owner.
    ctx.n.evidence(label, ref ? `${describeRef(ref)}; OWNER ${ref.spec.owner ?? "-"}` : "(none)");
  }
  const [infoA, infoB] = await Promise.all([
    ownerInfo(ctx.status.controller.metricsUrl),
    ownerInfo(b.controller.status().metricsUrl),
  ]);
  ctx.n.evidence(
    "Metrics",
    `${METRIC.ownerInfo}{owner_id="${infoA ?? "?"}"} from cluster A's controller, {owner_id="${infoB ?? "?"}"} from cluster B's`,
  );
  const now = await ctx.cloud.get(first.id);
  const writesByB = (await ctx.cloud.requests()).filter(
    (e) =>
      e.path === `/v1/shapes/${encodeURIComponent(first.id)}` && e.clientId === SECOND_CONTROLLER_IDENTITY,
  );
  if (now?.revision !== first.revision || writesByB.length > 0) {
    throw new Error(
      `cluster B's controller changed cluster A's shape ${first.id}: revision ${first.revision} → ` +
        `${now?.revision ?? "gone"}, ${writesByB.length} write(s) by ${SECOND_CONTROLLER_IDENTITY}`,
    );
  }
  ctx.n.evidence(
    "Cloud",
    `${first.name} (${first.id}) untouched by cluster B: still revision ${first.revision}, and the cloud's ` +
      `request log shows no write by ${SECOND_CONTROLLER_IDENTITY} to it`,
  );

  await ctx.show("This cluster deletes its Shape: watch cluster B take the freed name", {
    shapes: ["twin-square"],
    cloudNames: [first.name],
  });
  ctx.n.act(`delete Shape ${ns}/twin-square in cluster A: its cloud shape goes, and the name is free`);
  await ctx.kube.deleteShape(ns, "twin-square");
  await waitShapeGone(ctx, "twin-square");
  const taken = await ctx.n.wait(
    "cluster B's Shape to take the freed name (it reads the name again every 5 s)",
    async () => {
      const s = await b.kube.shape(ns, "twin-square");
      const ready = conditionOf(s, "Ready");
      if (ready?.status !== "True" || !s.status?.cloudId) {
        throw new Error(`Ready is ${ready ? `${ready.status} (${ready.reason})` : "not reported yet"}`);
      }
      return s;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
  const second = await mustFindCloud(ctx, "twin-square");
  ctx.n.section("Evidence");
  ctx.n.evidence("Cloud", `${first.id} is gone; ${describeCloud(second)} — cluster B's now`);
  ctx.n.evidence("Shape in B", `status.cloudId ${taken.status?.cloudId ?? "-"}; ${conditions(taken)}`);
  await showEvents(ctx, "twin-square", ["NameConflict", "CreatedCloudShape"], b.kube);
  tryIt(ctx, "get shaperefs   (the OWNER column: the demo cluster's owner id)");
}

/**
 * Leaves no trace of cluster B: its Shapes deleted through its controller (so their cloud shapes in the demo's
 * cloud go too), then its controller and its control plane stopped. Runs after Ctrl-C too, with a fresh
 * deadline; problems are reported, never thrown (they must not hide why the step stopped).
 */
async function cleanUpSecondCluster(ctx: TourContext, b: SecondCluster): Promise<void> {
  const problem = (what: string, error: unknown) =>
    ctx.n.note(`! cannot ${what}: ${error instanceof Error ? error.message : String(error)}`);
  ctx.n.act(
    "clean up cluster B: its Shapes (through its controller, so their cloud shapes go too), its controller, " +
      "its control plane",
  );
  try {
    const shapes = await b.kube.listShapes(ctx.namespace);
    for (const shape of shapes) await b.kube.deleteShape(ctx.namespace, shape.metadata.name);
    await ctx.n.wait(
      "cluster B's Shapes to be deleted through its controller",
      async () => {
        const left = await b.kube.listShapes(ctx.namespace);
        if (left.length > 0) throw new Error(`${left.map((s) => s.metadata.name).join(", ")} still there`);
      },
      Math.max(ctx.timeoutMs, 30_000),
    );
  } catch (error) {
    if (ctx.signal.aborted) ctx.n.note("cluster B's control plane went down with the Ctrl-C");
    else problem("delete cluster B's Shapes", error);
  }
  try {
    await b.stop();
  } catch (error) {
    problem("stop cluster B", error);
  }
  // No shape of cluster B may stay in the demo's cloud. After a Ctrl-C its control plane is gone (the
  // terminal's SIGINT reaches it too), so its controller could not delete them: the tour does, by owner tag.
  const ownerB = b.ownerId;
  try {
    const left = (await ctx.cloud.list()).filter((s) => s.tags.owner === ownerB);
    for (const shape of left) await ctx.cloud.delete(shape.id);
    if (left.length > 0) {
      ctx.n.note(
        `deleted cluster B's cloud shapes its controller could not: ${left.map((s) => s.name).join(", ")}`,
      );
    }
    ctx.n.note("cluster B is gone: its Shapes and their cloud shapes, its controller, its control plane");
  } catch (error) {
    problem(`delete cluster B's cloud shapes (owner ${ownerB})`, error);
  }
}

/** Step 10, first half: a hand-made shape observed by a Shape that only looks; nothing is written to it. */
async function observeExisting(ctx: TourContext): Promise<void> {
  const name = "handmade-hexagon";
  const focus = { shapes: [name], cloudNames: [cloudName(ctx, name)] };
  ctx.n.act(`create ${cloudName(ctx, name)} in the cloud by hand: no owner tag, as before any controller`);
  const handmade = await ctx.cloud.create({ name: cloudName(ctx, name), type: "hexagon", color: "purple" });
  ctx.foreignIds.add(handmade.id);
  ctx.n.act(`apply Shape ${ctx.namespace}/${name} with managementPolicies [Observe] and no type or color`);
  await ctx.kube.applyShape(ctx.namespace, name, { managementPolicies: ["Observe"] });
  const shape = await ctx.n.wait(
    "the Shape to report the cloud shape it observes",
    async () => {
      const s = await ctx.kube.shape(ctx.namespace, name);
      const seen = s.status?.atProvider;
      if (seen?.id !== handmade.id) throw new Error(`status.atProvider is ${JSON.stringify(seen ?? null)}`);
      if (conditionOf(s, "Ready")?.status !== "True") throw new Error(conditions(s));
      return s;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
  await ctx.show(
    "Observe only: the Shape reports the hand-made hexagon in its status and never writes to it",
    { ...focus, key: true },
  );
  ctx.n.section("Evidence");
  ctx.n.evidence(
    "Shape",
    `status.atProvider ${JSON.stringify(shape.status?.atProvider)}; finalizers ${JSON.stringify(shape.metadata.finalizers ?? [])}; ${conditions(shape)}`,
  );
  tryIt(ctx, `get shape -n ${ctx.namespace} ${name} -o jsonpath='{.status.atProvider}'`);

  ctx.n.act(`delete Shape ${ctx.namespace}/${name}: an observer deletes nothing`);
  await ctx.kube.deleteShape(ctx.namespace, name);
  await waitShapeGone(ctx, name);
  await ctx.show("The observing Shape is gone; the hexagon is exactly as it was", focus);
  ctx.n.section("Evidence");
  await showUntouched(ctx, [handmade]);
}

/** Step 10, second half: an untagged shape adopted on request; another owner's shape refused. */
async function adoptExisting(ctx: TourContext): Promise<void> {
  const name = "handmade-circle";
  const focus = { shapes: [name], cloudNames: [cloudName(ctx, name)] };
  ctx.n.act(`create ${cloudName(ctx, name)} in the cloud by hand: a gray circle, no owner tag`);
  // Not one of ctx.foreignIds: adopted, it is ours, and deleting its Shape deletes it.
  const handmade = await ctx.cloud.create({ name: cloudName(ctx, name), type: "circle", color: "gray" });
  ctx.n.act(`apply Shape ${ctx.namespace}/${name} (circle, green) with ${ADOPTION_POLICY_ANNOTATION}: adopt`);
  await ctx.kube.applyShape(
    ctx.namespace,
    name,
    { type: "circle", color: "green" },
    { [ADOPTION_POLICY_ANNOTATION]: "adopt" },
  );
  const owner = await ownerIdOf(ctx.status);
  const { shape, cloud } = await ctx.n.wait(
    "the cloud shape to carry our owner tags and the spec's color",
    () => convergedNow(ctx, name, owner),
    ctx.timeoutMs,
    ctx.signal,
  );
  await ctx.show("Adopted: the hand-made circle now carries our owner tags and follows the spec", focus);
  ctx.n.section("Evidence");
  ctx.n.evidence(
    "Cloud",
    `${describeCloud(cloud)} — the same shape (id ${handmade.id === cloud.id ? "unchanged" : `${handmade.id} → ${cloud.id}`}), retagged as ours`,
  );
  ctx.n.evidence("Shape", conditions(shape));
  await showEvents(ctx, name, ["AdoptedCloudShape"]);
  const writes = (await ctx.cloud.requests()).filter(
    (e) => e.path === `/v1/shapes/${encodeURIComponent(handmade.id)}` && e.method !== "GET",
  );
  ctx.n.evidence(
    "Cloud",
    `writes to it in the request log: ${writes.map((w) => `${w.method} ${w.status}`).join(", ") || "none"}`,
  );

  const held = "billing-square";
  ctx.n.act(
    `create ${cloudName(ctx, held)} in the cloud as the billing team (owner=${FOREIGN_OWNER}), then a Shape of its name asking to adopt it`,
  );
  const theirs = await createForeign(ctx, held, { type: "square", color: "orange" });
  await ctx.kube.applyShape(
    ctx.namespace,
    held,
    { type: "square", color: "blue" },
    { [ADOPTION_POLICY_ANNOTATION]: "adopt" },
  );
  const refused = await ctx.n.wait(
    "the Shape to report that another owner holds the name",
    async () => {
      const s = await ctx.kube.shape(ctx.namespace, held);
      const synced = conditionOf(s, "Synced");
      if (synced?.reason !== "OwnedByAnother")
        throw new Error(`Synced is ${synced?.status} (${synced?.reason})`);
      return s;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
  await ctx.show("Refused: another owner's shape is never adopted, and the Shape names the holder", {
    shapes: [held],
    cloudNames: [theirs.name],
  });
  ctx.n.section("Evidence");
  ctx.n.evidence("Shape", conditions(refused));
  await showUntouched(ctx, [theirs]);
}

/** The uid of the cluster's kube-system namespace: the cluster identity the default owner id is made of. */
/** Waits until the Shape `name` of the tour's namespace (in the cluster of `kube`) reports NameConflict. */
function waitNameConflict(ctx: TourContext, kube: KubeApi, name: string, who: string): Promise<Shape> {
  return ctx.n.wait(
    `${who} to report a NameConflict`,
    async () => {
      const s = await kube.shape(ctx.namespace, name);
      const synced = conditionOf(s, "Synced");
      if (synced?.reason !== "NameConflict")
        throw new Error(`Synced is ${synced?.status} (${synced?.reason})`);
      return s;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
}

/**
 * One look, no waiting: the Shape `name` is converged right now — exactly one cloud shape under its name, as
 * its spec says, with our owner tags; Ready and Synced for its generation, with the cloud id; its ShapeRef
 * there for its uid, with no status. Throws what differs (the same checks as stack/converged.ts's
 * waitConverged).
 */
async function convergedNow(
  ctx: TourContext,
  name: string,
  owner: string,
): Promise<{ shape: Shape; cloud: CloudShape; ref: ShapeRef }> {
  const [shape, listed, ref] = await Promise.all([
    ctx.kube.shape(ctx.namespace, name),
    ctx.cloud.list(),
    ctx.kube.getShapeRef(cloudName(ctx, name)),
  ]);
  const named = listed.filter((s) => s.name === cloudName(ctx, name));
  const [cloud] = named;
  if (!cloud || named.length > 1) {
    throw new Error(
      `${name} is not converged: ${named.length} cloud shapes are named ${cloudName(ctx, name)}`,
    );
  }
  const { spec, metadata } = shape;
  checkEqual(
    `${name}: the cloud shape vs the spec`,
    { type: cloud.type, color: cloud.color, size: cloud.size },
    { type: spec.type, color: spec.color, size: spec.size },
  );
  checkFields(`${name}: the cloud shape's tags`, cloud.tags, {
    owner,
    "k8s-uid": metadata.uid,
    "k8s-name": `${ctx.namespace}/${name}`,
  });
  for (const type of ["Ready", "Synced"] as const) {
    checkFields(`${name}: ${type}`, conditionOf(shape, type), {
      status: "True",
      observedGeneration: metadata.generation,
    });
  }
  checkEqual(`${name}: status.cloudId`, shape.status?.cloudId, cloud.id);
  checkShapeRef(ref, shape, cloud);
  return { shape, cloud, ref: ref as ShapeRef };
}

/** Our owner id, as the demo's controller reports it on /metrics (`owner_info{owner_id}`). */
async function ownerIdOf(status: DemoStatus): Promise<string> {
  const owner = await ownerInfo(status.controller.metricsUrl);
  if (!owner) {
    throw new Error(
      `cannot read our owner id from the controller's ${status.controller.metricsUrl ?? "(no metrics URL)"}/metrics`,
    );
  }
  return owner;
}

/** The owner id a controller reports on /metrics (`owner_info{owner_id}`), or undefined. */
async function ownerInfo(metricsUrl: string | undefined): Promise<string | undefined> {
  const snapshot = await metricsAt(metricsUrl);
  return snapshot?.samples.find((s) => s.name === METRIC.ownerInfo)?.labels.owner_id;
}

async function waitShapeGone(ctx: TourContext, name: string): Promise<void> {
  await ctx.n.wait(
    `Shape ${name} to be gone from Kubernetes`,
    async () => {
      const shape = await ctx.kube.getShape(ctx.namespace, name);
      if (shape) throw new Error(`it exists (finalizers ${JSON.stringify(shape.metadata.finalizers ?? [])})`);
    },
    ctx.timeoutMs,
    ctx.signal,
  );
}

async function mustFindCloud(ctx: TourContext, name: string): Promise<CloudShape> {
  const shape = await ctx.cloud.byName(cloudName(ctx, name));
  if (!shape) throw new Error(`no cloud shape named ${cloudName(ctx, name)}`);
  return shape;
}

async function createForeign(
  ctx: TourContext,
  name: string,
  spec: Pick<ShapeCreate, "type" | "color">,
): Promise<CloudShape> {
  const shape = await ctx.cloud.create({
    name: cloudName(ctx, name),
    ...spec,
    tags: { owner: FOREIGN_OWNER },
  });
  ctx.foreignIds.add(shape.id);
  return shape;
}

/** Shows that each shape is as the tour made it, and that nobody but the tour ever wrote to it. */
async function showUntouched(ctx: TourContext, shapes: readonly CloudShape[]): Promise<void> {
  const log = await ctx.cloud.requests();
  for (const created of shapes) {
    const now = await ctx.cloud.get(created.id);
    const writes = log.filter((e) => e.path === `/v1/shapes/${encodeURIComponent(created.id)}`);
    if (!now) {
      throw new Error(`cannot find the foreign shape ${created.name} (${created.id}): someone deleted it`);
    }
    if (now.revision !== created.revision || writes.length > 0) {
      throw new Error(
        `the foreign shape ${created.name} was changed: revision ${created.revision} → ${now.revision}, ` +
          `writes ${writes.map((w) => `${w.method} by ${w.clientId ?? w.userAgent ?? "?"}`).join(", ")}`,
      );
    }
    ctx.n.evidence(
      "Cloud",
      `${describeCloud(now)} — untouched: still revision ${created.revision}, and the cloud's request log ` +
        "shows no write to it since it was created",
    );
  }
}

async function showEvents(
  ctx: TourContext,
  name: string,
  reasons: readonly string[],
  kube: KubeApi = ctx.kube,
): Promise<void> {
  const events = await ctx.n.wait(
    `the controller's Event${reasons.length > 1 ? "s" : ""} ${reasons.join(", ")}`,
    async () => {
      const all = await kube.eventsFor(ctx.namespace, name);
      const wanted = all.filter((e) => reasons.includes(e.reason ?? ""));
      if (wanted.length === 0) throw new Error(`Events: ${all.map((e) => e.reason).join(", ") || "none"}`);
      return all;
    },
    ctx.timeoutMs,
    ctx.signal,
  );
  for (const event of events.sort(byTime)) {
    ctx.n.evidence("Event", `${event.type ?? ""} ${event.reason ?? ""}: ${event.message ?? ""}`);
  }
}

function byTime(a: CoreV1Event, b: CoreV1Event): number {
  const t = (e: CoreV1Event) =>
    new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? 0).getTime();
  return t(a) - t(b);
}

function tryIt(ctx: TourContext, kubectlArgs: string): void {
  ctx.n.note(`See it yourself: npm run kubectl -- ${kubectlArgs}`);
}

/** `Ready=True (Available) · Synced=True (ReconcileSuccess): message` */
export function conditions(shape: Shape): string {
  return (["Ready", "Synced"] as const)
    .map((type) => {
      const c = conditionOf(shape, type);
      return c ? `${type}=${c.status} (${c.reason})` : `${type}=?`;
    })
    .join(", ")
    .concat(
      conditionOf(shape, "Synced")?.status === "False"
        ? `: ${conditionOf(shape, "Synced")?.message ?? ""}`
        : "",
    );
}

/** `tour-1.red-square: square red, id shp_..., revision 12, tags owner=k8s-5f0c... ...` */
export function describeCloud(shape: CloudShape): string {
  const tags = Object.entries(shape.tags)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return `${shape.name}: ${shape.type} ${shape.color}${shape.size === undefined ? "" : ` size ${shape.size}`}, id ${shape.id}, revision ${shape.revision}, tags ${tags || "(none)"}`;
}

/**
 * `tour-1.red-square: for Shape tour-1/red-square (uid ...); no status: a cloud shape may exist` — a ShapeRef
 * as the controller leaves it (no status: only its spec is written, first before the create). With a status (from an
 * older controller): `...; phase Created, cloudId shp_...`.
 */
export function describeRef(ref: ShapeRef): string {
  const { shape } = ref.spec;
  const what = ref.status
    ? `phase ${ref.status.phase ?? "Pending"}, cloudId ${ref.status.cloudId ?? "-"}`
    : "no status: a cloud shape may exist";
  return `${ref.metadata?.name ?? "?"}: for Shape ${shape.namespace}/${shape.name} (uid ${shape.uid}); ${what}`;
}

async function metrics(status: DemoStatus): Promise<MetricsSnapshot | undefined> {
  return metricsAt(status.controller.metricsUrl);
}

/** A snapshot of a controller's /metrics at `metricsUrl`, or undefined when there is none to read. */
async function metricsAt(metricsUrl: string | undefined): Promise<MetricsSnapshot | undefined> {
  if (!metricsUrl) return undefined;
  try {
    const res = await fetch(`${metricsUrl}/metrics`);
    return res.ok ? MetricsSnapshot.parse(await res.text()) : undefined;
  } catch {
    return undefined;
  }
}

async function findLogLine(
  file: string,
  match: (line: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return undefined;
  }
  for (const raw of text.split("\n").reverse()) {
    if (!raw.startsWith("{")) continue;
    try {
      const line = JSON.parse(raw) as Record<string, unknown>;
      if (match(line)) return line;
    } catch {
      // a partial line
    }
  }
  return undefined;
}

/**
 * Starts the demo's controller, against the real cloud, if the tour left it otherwise: stopped, killed, or
 * still behind the crash gate (a failed or interrupted step 6, 7 or 8). Keeps `ctx.status` current (its
 * metrics URL may change with a restart).
 */
export async function ensureControllerRunning(
  ctx: Pick<TourContext, "control" | "n" | "status">,
): Promise<void> {
  const status = await ctx.control.status();
  if (status.controller.state === "running" && !status.controller.crashArmed) return;
  ctx.n.act(
    status.controller.crashArmed
      ? "ask npm start to take the controller from behind the crash gate and start it normally"
      : "ask npm start to start the controller again (the tour had stopped it)",
  );
  ctx.status = await ctx.control.startController();
}
