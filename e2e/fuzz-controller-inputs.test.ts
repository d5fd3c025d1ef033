/**
 * Fuzzing the controller's inputs against a real stack: everything a person or another system can put in
 * front of it, good and bad.
 *
 * - Shape specs at the edge of the schema and odd names (random, from a fixed fast-check seed), including a
 *   63-character namespace with a 189-character name, whose cloud name `<ns>.<name>` is exactly 253 long;
 *   and specs past the edge, which the API server refuses with a message naming the field.
 * - Annotations with garbage values: only `paused: "true"` pauses; huge and hostile `refresh` values are
 *   just a nudge.
 * - ShapeRefs created or edited by hand: a wrong uid, missing fields, a wrong name, a ShapeRef pointing at
 *   a foreign shape.
 * - Cloud shapes with malformed or hostile owner tags: our owner tag with a bogus uid or on another name
 *   (ours by tag, so removed as a leak or replaced, as designed), owners that only look like ours and
 *   markup or SQL in tags (foreign: never touched).
 *
 * Throughout: the controller never crashes (the process lives, nothing but JSON log lines, no 403), every
 * refusal is a clear message (the API server's, or an Event and a condition), every valid Shape converges,
 * and no foreign shape is modified or deleted (same revision at the end).
 */
import fc from "fast-check";
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { apiMessage } from "@shapes/envtest";
import { GROUP, SHAPEREFS, type ShapeSpec, VERSION } from "@shapes/controller";
import { COLORS, maxSizeOf, SHAPE_TYPES } from "@shapes/mock-cloud";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  describeLogLine,
  forbiddenLines,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/** The fast-check seed of the random specs and names: the same inputs on every run. */
const SEED = 20_261_122;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

describe("fuzzing the controller's inputs", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  /** Every foreign shape, as created: none may be modified or deleted. */
  const foreign: CloudShape[] = [];

  beforeAll(async () => {
    stack = await startStack("fuzz-controller-inputs");
    ns = await stack.kube.createNamespace("fuzz");
    controller = await stack.startController();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Creates a foreign shape (not ours) and remembers it as it was. */
  async function foreignShape(name: string, tags: Record<string, string>): Promise<CloudShape> {
    const shape = await stack.cloud.create({ name, type: "hexagon", color: "brown", tags });
    foreign.push(shape);
    return shape;
  }

  test("specs at the edge of the schema and odd names, random and extreme, all converge", async () => {
    // The longest namespace (a DNS label, 63) with the longest name (189): a 253-character cloud name.
    const longNs = `fz-${ns.slice(-6)}-`.padEnd(62, "n") + "9";
    await stack.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: longNs } } });
    const longName = `${"a".repeat(62)}.${"b".repeat(62)}.${"c".repeat(63)}`;
    expect(`${longNs}.${longName}`).toHaveLength(253);

    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?$/);
    const names = fc.sample(
      fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join(".")),
      { seed: SEED, numRuns: 10 },
    );
    const specs = fc.sample(specArbitrary, { seed: SEED, numRuns: 14 });
    const wanted: { namespace: string; name: string; spec: ShapeSpec }[] = [
      { namespace: longNs, name: longName, spec: { type: "square", color: "red", size: 1000 } },
      { namespace: ns, name: "x", spec: { type: "circle", color: "gray", size: 1 } },
      { namespace: ns, name: "0", spec: { type: "triangle", color: "white" } },
      {
        namespace: ns,
        name: "a--b.c-d.e",
        spec: { type: "hexagon", color: "black", deletionPolicy: "Orphan" },
      },
      ...[...new Set(names)].map((name, i) => ({
        namespace: ns,
        name: `r.${name}`,
        spec: specs[i] as ShapeSpec,
      })),
    ];
    for (const { namespace, name, spec } of wanted) await stack.kube.applyShape(namespace, name, spec);
    for (const { namespace, name } of wanted)
      await waitConverged(stack, namespace, name, { timeoutMs: 120_000 });
  });

  test.each([
    { spec: { type: "square", color: "red", size: 0 }, field: /spec\.size/, reason: "size below 1" },
    { spec: { type: "square", color: "red", size: 1001 }, field: /spec\.size/, reason: "size above 1000" },
    { spec: { type: "square", color: "red", size: 2.5 }, field: /spec\.size/, reason: "a fractional size" },
    { spec: { type: "square", color: "Red" }, field: /spec\.color/, reason: "a color outside the palette" },
    { spec: { type: "octagon", color: "red" }, field: /spec\.type/, reason: "an unknown type" },
    { spec: { type: "square" }, field: /spec\.color/, reason: "no color" },
    {
      spec: { type: "square", color: "red", deletionPolicy: "Keep" },
      field: /spec\.deletionPolicy/,
      reason: "an unknown deletion policy",
    },
  ])("a spec with $reason is refused by the API server, naming the field", async ({ spec, field }) => {
    const error = await stack.kube.applyShape(ns, "refused", spec as ShapeSpec).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, "the API server refused it").toBeDefined();
    expect(apiMessage(error)).toMatch(field);
    expect(await stack.kube.getShape(ns, "refused")).toBeUndefined();
  });

  test("a name longer than 189 characters is refused with the reason (the cloud name would not fit)", async () => {
    const error = await stack.kube.applyShape(ns, "n".repeat(190), { type: "square", color: "red" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(apiMessage(error)).toMatch(/at most 189 characters.*cloud name/);
  });

  test('garbage annotations: only paused "true" pauses, huge and hostile refresh values are a nudge', async () => {
    const notPaused = ["yes", "TRUE", "", "1", "true ", "null"];
    for (const [i, value] of notPaused.entries()) {
      await stack.kube.applyShape(
        ns,
        `ann-${i}`,
        { type: "square", color: "blue" },
        {
          "shapes.example.com/paused": value,
        },
      );
    }
    const refreshes = [
      "x".repeat(200_000),
      "<script>alert(1)</script>",
      "'; DROP TABLE shapes; --",
      "🔥\u2028",
    ];
    for (const [i, value] of refreshes.entries()) {
      await stack.kube.applyShape(
        ns,
        `refresh-${i}`,
        { type: "circle", color: "pink" },
        {
          "shapes.example.com/refresh": value,
        },
      );
    }
    await stack.kube.applyShape(
      ns,
      "paused",
      { type: "square", color: "green" },
      {
        "shapes.example.com/paused": "true",
      },
    );
    for (let i = 0; i < notPaused.length; i++) await waitConverged(stack, ns, `ann-${i}`);
    for (let i = 0; i < refreshes.length; i++) await waitConverged(stack, ns, `refresh-${i}`);

    // The paused one says so, and nothing of it reaches the cloud; unpaused, it converges.
    await waitFor("the paused Shape to say it is paused", async () => {
      const shape = await stack.kube.shape(ns, "paused");
      expect(conditionOf(shape, "Synced")).toMatchObject({ status: "False", reason: "ReconcilePaused" });
    });
    expect(await stack.cloud.byName(`${ns}.paused`)).toBeUndefined();
    await stack.kube.annotateShape(ns, "paused", { "shapes.example.com/paused": null });
    await waitConverged(stack, ns, "paused");
  });

  test("hand-made ShapeRefs with a wrong uid, missing fields or a wrong name", async () => {
    const refs = new HandMadeShapeRefs(stack.kubeConfig);
    // A ShapeRef for a Shape that does not exist yet, with a uid no Shape has: when the Shape comes, the
    // stale record is cleaned up and the Shape converges.
    await refs.create(ns, "hand-a", "00000000-bogus-uid");
    await stack.kube.applyShape(ns, "hand-a", { type: "square", color: "orange" });
    const converged = await waitConverged(stack, ns, "hand-a");
    expect(converged.ref.spec.shape.uid).toBe(converged.shape.metadata.uid);

    // Missing fields and a name that does not match its Shape: refused by the API server, with the field.
    const missing = await refs.createRaw({
      metadata: { name: `${ns}.hand-b` },
      spec: { shape: { namespace: ns, name: "hand-b" } },
    });
    expect(missing).toMatch(/spec\.shape\.uid|spec\.cloudName/);
    const misnamed = await refs.createRaw({
      metadata: { name: `${ns}.other` },
      spec: { shape: { namespace: ns, name: "hand-b", uid: "u" }, cloudName: `${ns}.other` },
    });
    expect(misnamed).toMatch(/must be <spec\.shape\.namespace>\.<spec\.shape\.name>/);
  });

  test("a hand-made ShapeRef pointing at a foreign shape never gets it deleted", async () => {
    const refs = new HandMadeShapeRefs(stack.kubeConfig);
    // Made while the controller is down: a dangling ShapeRef is cleaned up within milliseconds, so a running
    // controller could delete one between its create and its status write — before it pointed anywhere.
    await controller.stop();
    // A plain foreign shape at the ShapeRef's cloud name, recorded as its cloud id.
    const plain = await foreignShape(`${ns}.hand-c`, { owner: "someone-else" });
    await refs.create(ns, "hand-c", "uid-of-no-shape", plain.id);
    // A hostile one: not ours (another owner), but it carries the ShapeRef's uid in a k8s-uid tag.
    const lookalike = await foreignShape(`${ns}.hand-d`, { owner: "someone-else", "k8s-uid": "uid-d" });
    await refs.create(ns, "hand-d", "uid-d", lookalike.id);
    await controller.start();

    // Both ShapeRefs dangle (no Shape): the controller cleans them up...
    await waitFor("the dangling hand-made ShapeRefs to be cleaned up", async () => {
      expect(await stack.kube.getShapeRef(`${ns}.hand-c`)).toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.hand-d`)).toBeUndefined();
    });
    // ...and never deletes what is not ours.
    expect(await stack.cloud.get(plain.id)).toEqual(plain);
    expect(await stack.cloud.get(lookalike.id), "a foreign shape with a copied k8s-uid tag").toEqual(
      lookalike,
    );
  });

  test("a ShapeRef edited by hand to point at the foreign shape that holds its Shape's name: deleting the Shape leaves it", async () => {
    const refs = new HandMadeShapeRefs(stack.kubeConfig);
    const holder = await foreignShape(`${ns}.hand-e`, { owner: "someone-else" });
    await stack.kube.applyShape(ns, "hand-e", { type: "square", color: "red" });
    await waitFor("hand-e to report the name conflict", async () => {
      const shape = await stack.kube.shape(ns, "hand-e");
      expect(conditionOf(shape, "Ready")).toMatchObject({ status: "False", reason: "NameConflict" });
    });
    // Someone "helps" by recording the holder as this Shape's cloud shape.
    await refs.setStatus(`${ns}.hand-e`, { phase: "Created", cloudId: holder.id });
    await stack.kube.deleteShape(ns, "hand-e");
    await waitFor("hand-e to be gone", async () =>
      expect(await stack.kube.getShape(ns, "hand-e")).toBeUndefined(),
    );
    expect(await stack.cloud.get(holder.id), "the foreign shape holding the name").toEqual(holder);
  });

  test("cloud shapes with hostile owner tags: foreign ones untouched, ours by tag cleaned up or adopted", async () => {
    // Foreign: owners that only look like ours, markup and SQL in tags, at names Shapes want.
    const script = await foreignShape(`${ns}.host-1`, {
      owner: "<script>alert('k8s')</script>",
      "k8s-uid": "'; DROP TABLE shapes; --",
      "k8s-name": `${ns}/host-1`,
    });
    await foreignShape(`${ns}.host-2`, { owner: `${stack.ownerId} ` });
    await foreignShape(`${ns}.host-3`, { owner: "", "k8s-name": "<img src=x onerror=alert(1)>" });
    // Ours by tag, but with a uid no Shape has: at a name a Shape wants, and at a name no Shape can have.
    const bogus = await stack.cloud.create({
      name: `${ns}.host-4`,
      type: "square",
      color: "red",
      tags: { owner: stack.ownerId, "k8s-uid": "bogus", "k8s-name": "kube-system/x" },
    });
    const stray = await stack.cloud.create({
      name: "hostile-no-namespace",
      type: "square",
      color: "red",
      tags: { owner: stack.ownerId, "k8s-uid": "bogus-2" },
    });
    for (const i of [1, 2, 3, 4])
      await stack.kube.applyShape(ns, `host-${i}`, { type: "circle", color: "yellow" });

    // The foreign holders: NameConflict, with a message that says whose the name is (markup kept as text).
    for (const i of [1, 2, 3]) {
      await waitFor(`host-${i} to report the name conflict`, async () => {
        const ready = conditionOf(await stack.kube.shape(ns, `host-${i}`), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "NameConflict" });
        expect(ready?.message).toMatch(/^cannot create cloud shape .* which is not ours/);
      });
    }
    const events = await stack.kube.eventsFor(ns, "host-1");
    expect(events.map((e) => e.message)).toContainEqual(
      expect.stringContaining(JSON.stringify(script.tags.owner)),
    );

    // Ours by tag with a bogus uid: removed as a leak; host-4 then gets a cloud shape of its own.
    const host4 = await waitConverged(stack, ns, "host-4", { timeoutMs: 90_000 });
    expect(host4.cloud.id).not.toBe(bogus.id);
    await waitFor("the stray shape carrying our owner tag to be removed as a leak", async () =>
      expect(await stack.cloud.get(stray.id)).toBeUndefined(),
    );

    // Ours by tag AND uid, made before the controller could: adopted, its drift (color, k8s-name) repaired.
    const shape = await stack.kube.applyShape(
      ns,
      "host-5",
      { type: "square", color: "purple" },
      {
        "shapes.example.com/paused": "true",
      },
    );
    const made = await stack.cloud.create({
      name: `${ns}.host-5`,
      type: "square",
      color: "red",
      tags: {
        owner: stack.ownerId,
        "k8s-uid": shape.metadata.uid,
        "k8s-name": "<b>not/this</b>",
        extra: "\u0000",
      },
    });
    await stack.kube.annotateShape(ns, "host-5", { "shapes.example.com/paused": null });
    const adopted = await waitConverged(stack, ns, "host-5");
    expect(adopted.cloud.id).toBe(made.id);
    expect(adopted.cloud.tags.extra).toBe("\u0000");
  });

  test("no foreign shape was modified or deleted, and the controller never crashed", async () => {
    for (const before of foreign) {
      expect(await stack.cloud.get(before.id), `foreign shape ${before.name}`).toEqual(before);
    }
    expect(controller.running, "the controller process is alive").toBe(true);
    // Warnings are expected here (refused writes, conflicts); crashes, stray output and 403s are not.
    expect(await controller.problems({ allow: [/./] }), "lines that are not JSON log lines").toEqual([]);
    const forbidden = forbiddenLines(await controller.logs({ allRuns: true })).map(describeLogLine);
    expect(forbidden, "403s: an RBAC gap").toEqual([]);
  });
});

/** Specs the cloud accepts: a size above its limit for the type (a triangle's 500) asks for the limit instead. */
const specArbitrary: fc.Arbitrary<ShapeSpec> = fc
  .record(
    {
      type: fc.constantFrom(...SHAPE_TYPES),
      color: fc.constantFrom(...COLORS),
      size: fc.oneof(fc.constantFrom(1, 1000), fc.integer({ min: 1, max: 1000 })),
      deletionPolicy: fc.constantFrom("Delete" as const, "Orphan" as const),
    },
    { requiredKeys: ["type", "color"] },
  )
  .map((spec) =>
    spec.size !== undefined && spec.size > maxSizeOf(spec.type)
      ? { ...spec, size: maxSizeOf(spec.type) }
      : spec,
  );

/** ShapeRefs written by hand, as the cluster admin (people should not, but can). */
class HandMadeShapeRefs {
  readonly #api: CustomObjectsApi;

  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
  }

  /**
   * Creates the ShapeRef of `namespace/name` with `uid`, and, given `cloudId`, a Created status pointing at
   * it (the controller writes no such status; an older one always did).
   */
  async create(namespace: string, name: string, uid: string, cloudId?: string): Promise<void> {
    const refName = `${namespace}.${name}`;
    await this.#api.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPEREFS,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "ShapeRef",
        metadata: { name: refName },
        spec: { shape: { namespace, name, uid }, cloudName: refName },
      },
    });
    if (cloudId) await this.setStatus(refName, { phase: "Created", cloudId });
  }

  /** Tries to create a ShapeRef from a raw body; resolves with the API server's refusal message. */
  async createRaw(body: object): Promise<string> {
    try {
      await this.#api.createClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPEREFS,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: "ShapeRef", ...body },
      });
    } catch (error) {
      return apiMessage(error);
    }
    throw new Error(`the API server accepted the ShapeRef ${JSON.stringify(body)}`);
  }

  /** Writes a ShapeRef's status (the status subresource). */
  async setStatus(name: string, status: { phase: string; cloudId: string }): Promise<void> {
    await this.#api.patchClusterCustomObjectStatus(
      { group: GROUP, version: VERSION, plural: SHAPEREFS, name, body: { status } },
      mergePatch,
    );
  }
}
