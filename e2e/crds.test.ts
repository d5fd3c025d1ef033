/**
 * The Shape and ShapeRef CRDs against a real API server: what they accept, and that everything they
 * refuse is refused with a message a person can act on (the message is what `kubectl apply` prints).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { type ControlPlane, CRDS_DIR, installCRDs } from "@shapes/envtest";
import { startControlPlane } from "./support/envtest.ts";
import { apiError, createNamespace } from "./support/kube.ts";
import { ShapesClient, shape, shapeRef } from "./support/shapes.ts";
import { COLORS, SHAPE_TYPES } from "@shapes/mock-cloud";

let cp: ControlPlane;
let client: ShapesClient;
let ns: string;

beforeAll(async () => {
  cp = await startControlPlane();
  await installCRDs(cp.kubeconfigPath);
  const kc = cp.kubeConfig();
  client = new ShapesClient(kc);
  ns = await createNamespace(kc, "crds");
});

afterAll(async () => {
  await cp?.stop();
});

describe("Shape: accepted", () => {
  const cases = [
    { reason: "the minimum: a type and a color", name: "red-square", spec: { type: "square", color: "red" } },
    { reason: "the smallest size", name: "tiny", spec: { type: "circle", color: "blue", size: 1 } },
    { reason: "the largest size", name: "huge", spec: { type: "triangle", color: "green", size: 1000 } },
    {
      reason: "observe only: type and color may be left out",
      name: "observer",
      spec: { managementPolicies: ["Observe"] },
    },
    {
      reason: "observe only, with LateInitialize (accepted, does nothing)",
      name: "observer-late",
      spec: { managementPolicies: ["Observe", "LateInitialize"] },
    },
    {
      reason: "created, then never updated (no Update)",
      name: "never-updated",
      spec: { type: "square", color: "red", managementPolicies: ["Observe", "Create", "Delete"] },
    },
    {
      reason: "never deleted (no Delete): like Orphan",
      name: "never-deleted",
      spec: { type: "square", color: "red", managementPolicies: ["Observe", "Create", "Update"] },
    },
    {
      reason: "orphan on delete",
      name: "keeper",
      spec: { type: "hexagon", color: "gray", deletionPolicy: "Orphan" },
    },
    {
      reason: "dots in the name (a DNS subdomain)",
      name: "team.a.logo",
      spec: { type: "square", color: "black" },
    },
    {
      reason: "a 189-character name: its cloud name fits in 253",
      name: "n".repeat(189),
      spec: { type: "square", color: "white" },
    },
  ];
  it.each(cases)("$reason", async ({ name, spec }) => {
    const created = await client.createShape(ns, shape(ns, name, spec));
    expect(created.spec).toMatchObject(spec);
  });

  it("accepts every example in crds/examples", async () => {
    const dir = join(CRDS_DIR, "examples");
    const files = (await readdir(dir)).filter((f) => f.endsWith(".yaml"));
    expect(files.length).toBeGreaterThanOrEqual(3);
    const examples = await createNamespace(cp.kubeConfig(), "examples"); // their names are taken in `ns`
    for (const file of files) {
      const example = parse(await readFile(join(dir, file), "utf8")) as { metadata: object };
      const body = { ...example, metadata: { ...example.metadata, namespace: examples } };
      await expect(
        client.createShape(examples, body, { dryRun: true, strict: true }),
        file,
      ).resolves.toBeDefined();
    }
  });

  it("defaults deletionPolicy to Delete, and managementPolicies to everything", async () => {
    const created = await client.createShape(ns, shape(ns, "defaults", { type: "square", color: "red" }));
    expect(created.spec.deletionPolicy).toBe("Delete");
    expect(created.spec.managementPolicies).toEqual(["*"]);
  });

  it("accepts every type and every color of the cloud's palette", async () => {
    for (const type of SHAPE_TYPES) {
      for (const color of COLORS) {
        await client.createShape(ns, shape(ns, `${type}-${color}`, { type, color }), { dryRun: true });
      }
    }
  });
});

describe("Shape: refused, with a readable message", () => {
  const cases: {
    reason: string;
    name?: string;
    spec?: unknown;
    strict?: boolean;
    field: string;
    message: RegExp;
  }[] = [
    { reason: "no spec at all", spec: undefined, field: "spec", message: /spec: Required value/ },
    {
      reason: "no type",
      spec: { color: "red" },
      field: "spec.type",
      message: /spec\.type: Invalid value: type is required: the Shape creates its cloud shape/,
    },
    {
      reason: "no color",
      spec: { type: "square" },
      field: "spec.color",
      message: /spec\.color: Invalid value: color is required: the Shape creates its cloud shape/,
    },
    {
      reason: "no color, without Update (it still creates)",
      spec: { type: "square", managementPolicies: ["Observe", "Create", "Delete"] },
      field: "spec.color",
      message: /color is required: the Shape creates its cloud shape \(only a Shape whose managementPolicies/,
    },
    {
      reason: "management policies: * mixed with others",
      spec: { type: "square", color: "red", managementPolicies: ["*", "Observe"] },
      field: "spec.managementPolicies",
      message: /spec\.managementPolicies: Invalid value: .*"\*" means every policy and stands alone/,
    },
    {
      reason: "management policies without Observe",
      spec: { type: "square", color: "red", managementPolicies: ["Create", "Delete"] },
      field: "spec.managementPolicies",
      message:
        /spec\.managementPolicies: Invalid value: .*must include Observe: nothing can be managed unseen/,
    },
    {
      reason: "management policies without Create, with Update or Delete",
      spec: { managementPolicies: ["Observe", "Delete"] },
      field: "spec.managementPolicies",
      message: /spec\.managementPolicies: Invalid value: .*without Create the Shape only observes/,
    },
    {
      reason: "management policies: a duplicate",
      spec: { managementPolicies: ["Observe", "Observe"] },
      field: "spec.managementPolicies[1]",
      message: /spec\.managementPolicies\[1\]: Duplicate value: "Observe"/,
    },
    {
      reason: "management policies: none at all",
      spec: { type: "square", color: "red", managementPolicies: [] },
      field: "spec.managementPolicies",
      message:
        /spec\.managementPolicies: Invalid value: 0: spec\.managementPolicies in body should have at least 1 items/,
    },
    {
      reason: "management policies: a value Crossplane does not have",
      spec: { type: "square", color: "red", managementPolicies: ["Observe", "Adopt"] },
      field: "spec.managementPolicies[1]",
      message: /spec\.managementPolicies\[1\]: Unsupported value: "Adopt"/,
    },
    {
      reason: "a type the cloud cannot draw",
      spec: { type: "star", color: "red" },
      field: "spec.type",
      message:
        /spec\.type: Unsupported value: "star": supported values: "square", "circle", "triangle", "hexagon"/,
    },
    {
      reason: "a color outside the palette",
      spec: { type: "square", color: "teal" },
      field: "spec.color",
      message: /spec\.color: Unsupported value: "teal": supported values: "red", "orange", .*"gray"/,
    },
    {
      reason: "a color in the wrong case",
      spec: { type: "square", color: "Red" },
      field: "spec.color",
      message: /spec\.color: Unsupported value: "Red"/,
    },
    {
      reason: "size zero",
      spec: { type: "square", color: "red", size: 0 },
      field: "spec.size",
      message: /spec\.size: Invalid value: 0: spec\.size in body should be greater than or equal to 1/,
    },
    {
      reason: "size above 1000",
      spec: { type: "square", color: "red", size: 1001 },
      field: "spec.size",
      message: /spec\.size: Invalid value: 1001: spec\.size in body should be less than or equal to 1000/,
    },
    {
      reason: "a fractional size",
      spec: { type: "square", color: "red", size: 2.5 },
      field: "spec.size",
      message: /spec\.size: Invalid value: "number": spec\.size in body must be of type integer/,
    },
    {
      reason: "a size written as text",
      spec: { type: "square", color: "red", size: "big" },
      field: "spec.size",
      message: /spec\.size: Invalid value: "string": spec\.size in body must be of type integer/,
    },
    {
      reason: "an unknown deletion policy",
      spec: { type: "square", color: "red", deletionPolicy: "Keep" },
      field: "spec.deletionPolicy",
      message: /spec\.deletionPolicy: Unsupported value: "Keep": supported values: "Delete", "Orphan"/,
    },
    {
      reason: "a name too long for its cloud name (<namespace>.<name> ≤ 253)",
      name: "n".repeat(190),
      spec: { type: "square", color: "red" },
      field: "metadata.name",
      message:
        /metadata\.name: Invalid value: .*must be at most 189 characters: the cloud name is <namespace>\.<name>/,
    },
    {
      reason: "a name that is not a lowercase DNS subdomain (Kubernetes' own rule)",
      name: "RedSquare",
      spec: { type: "square", color: "red" },
      field: "metadata.name",
      message: /metadata\.name: Invalid value: "RedSquare": a lowercase RFC 1123 subdomain/,
    },
    {
      reason: "a misspelled field, with strict field validation (kubectl's default)",
      spec: { type: "square", color: "red", colour: "blue" },
      strict: true,
      field: "",
      message: /unknown field "spec\.colour"/,
    },
  ];
  it.each(cases)("$reason", async ({ name, spec, strict, field, message }) => {
    const body = { ...shape(ns, name ?? "bad", {}), spec };
    const status = await apiError(() =>
      client.createShape(ns, body, { dryRun: true, ...(strict ? { strict } : {}) }),
    );
    expect(status.code).toBe(strict ? 400 : 422);
    expect(status.message).toMatch(message);
    if (field) expect(status.causes.map((c) => c.field)).toContain(field);
  });

  it("reports every problem of a Shape at once, not one per attempt", async () => {
    const status = await apiError(() =>
      client.createShape(ns, shape(ns, "many", { type: "star", color: "teal", size: 0 }), { dryRun: true }),
    );
    expect(status.causes.map((c) => c.field).sort()).toEqual(
      expect.arrayContaining(["spec.color", "spec.size", "spec.type"]),
    );
  });

  it("refuses the same rules on update", async () => {
    await client.createShape(ns, shape(ns, "later-bad", { type: "square", color: "red" }));
    const status = await apiError(() =>
      client.patchShape(ns, "later-bad", { spec: { color: "teal", size: -1 } }),
    );
    expect(status.code).toBe(422);
    expect(status.message).toMatch(/spec\.color: Unsupported value: "teal"/);
    expect(status.message).toMatch(/spec\.size: Invalid value: -1/);
  });
});

describe("ShapeRef", () => {
  const spec = (namespace: string, name: string, extra: Record<string, unknown> = {}) => ({
    shape: { namespace, name, uid: "8f4b1c2e-0000-4000-8000-000000000001" },
    cloudName: `${namespace}.${name}`,
    ...extra,
  });

  // The controller creates a ShapeRef and never writes its status: a phase and a cloud id come only from an
  // older controller. The CRD takes both.
  it("accepts a record named <namespace>.<name> after its Shape, and takes a phase and cloud id in status", async () => {
    const name = `${ns}.red-square`;
    const created = await client.createShapeRef(shapeRef(name, spec(ns, "red-square")));
    expect(created.status).toBeUndefined(); // no status: its phase reads as Pending
    const updated = await client.patchShapeRefStatus(name, {
      status: { phase: "Created", cloudId: "shp_123" },
    });
    expect(updated.status).toEqual({ phase: "Created", cloudId: "shp_123" });
  });

  it("shows no phase and no cloud id in `kubectl get shaperefs` for a record without status, both once a status says them", async () => {
    const name = `${ns}.columns`;
    await client.createShapeRef(shapeRef(name, spec(ns, "columns")));
    expect(await client.shapeRefColumns(name)).toMatchObject({
      Name: name,
      Namespace: ns,
      Shape: "columns",
      Phase: null,
      "Cloud ID": null,
    });
    await client.patchShapeRefStatus(name, { status: { phase: "Created", cloudId: "shp_456" } });
    expect(await client.shapeRefColumns(name)).toMatchObject({ Phase: "Created", "Cloud ID": "shp_456" });
  });

  const refused: { reason: string; name: string; spec: unknown; field: string; message: RegExp }[] = [
    {
      reason: "a name that is not <spec.shape.namespace>.<spec.shape.name>",
      name: "default.other",
      spec: spec("default", "red-square"),
      field: "metadata.name",
      message: /metadata\.name: Invalid value: .*must be <spec\.shape\.namespace>\.<spec\.shape\.name>/,
    },
    {
      reason: "a cloud name that differs from the record's name",
      name: "default.red-square",
      spec: { ...spec("default", "red-square"), cloudName: "default.blue-circle" },
      field: "spec.cloudName",
      message: /spec\.cloudName: Invalid value: .*must equal metadata\.name/,
    },
    {
      reason: "no uid: the record could not tell this Shape from a later one with the same name",
      name: "default.red-square",
      spec: { shape: { namespace: "default", name: "red-square" }, cloudName: "default.red-square" },
      field: "spec.shape.uid",
      message: /spec\.shape\.uid: Required value/,
    },
    {
      reason: "a namespace that cannot exist",
      name: "Default.red-square",
      spec: spec("Default", "red-square"),
      field: "spec.shape.namespace",
      message: /spec\.shape\.namespace in body should match/,
    },
  ];
  it.each(refused)("refuses $reason", async ({ name, spec: body, field, message }) => {
    const status = await apiError(() =>
      client.createShapeRef({ ...shapeRef(name, {}), spec: body }, { dryRun: true }),
    );
    expect(status.code).toBe(422);
    expect(status.message).toMatch(message);
    expect(status.causes.map((c) => c.field)).toContain(field);
  });

  it("refuses a phase it does not know", async () => {
    const name = `${ns}.phases`;
    await client.createShapeRef(shapeRef(name, spec(ns, "phases")));
    const status = await apiError(() => client.patchShapeRefStatus(name, { status: { phase: "Exploded" } }));
    expect(status.message).toMatch(
      /status\.phase: Unsupported value: "Exploded": supported values: "Pending", "Created"/,
    );
  });

  it("never lets the record change which Shape or cloud name it speaks for", async () => {
    const name = `${ns}.immutable`;
    await client.createShapeRef(shapeRef(name, spec(ns, "immutable")));
    const uid = await apiError(() => client.patchShapeRef(name, { spec: { shape: { uid: "another-uid" } } }));
    expect(uid.message).toMatch(
      /spec\.shape: Invalid value: .*field is immutable: a ShapeRef records one Shape/,
    );
    const cloudName = await apiError(() =>
      client.patchShapeRef(name, { spec: { cloudName: `${ns}.other` } }),
    );
    expect(cloudName.message).toMatch(/spec\.cloudName: Invalid value: .*field is immutable/);
  });
});
