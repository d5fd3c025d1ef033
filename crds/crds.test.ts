/**
 * Static checks of crds/*.yaml: what the API server cannot tell us. (That the API server accepts them and
 * validates as intended is e2e/crds.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { COLORS, MAX_SIZE, MAX_SIZE_BY_TYPE, SHAPE_TYPES } from "@shapes/mock-cloud";
import { GROUP, SHAPEREFS, SHAPES, VERSION } from "@shapes/controller";
import { type CrdManifest, type CrdSchema, readCRDs } from "@shapes/envtest";

const crds = await readCRDs();
const byPlural = (plural: string): CrdManifest => {
  const crd = crds.find((c) => c.spec.names.plural === plural);
  if (!crd) throw new Error(`no CRD for ${plural}`);
  return crd;
};
const schemaOf = (crd: CrdManifest): CrdSchema => {
  const schema = crd.spec.versions[0]?.schema?.openAPIV3Schema;
  if (!schema) throw new Error("no schema");
  return schema;
};
const at = (schema: CrdSchema, path: string): CrdSchema =>
  path.split(".").reduce<CrdSchema>((s, key) => {
    const next = s.properties?.[key];
    if (!next) throw new Error(`no ${key} in ${path}`);
    return next;
  }, schema);

describe("the CRDs in crds/", () => {
  it("are exactly Shape and ShapeRef, in the group and version the controller uses", () => {
    expect(crds.map((c) => c.metadata.name).sort()).toEqual([`${SHAPEREFS}.${GROUP}`, `${SHAPES}.${GROUP}`]);
    for (const crd of crds) {
      expect(crd.spec.group).toBe(GROUP);
      expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage, v.subresources?.status])).toEqual([
        [VERSION, true, true, {}],
      ]);
    }
  });

  it("offer the cloud's exact types and palette, and sizes the cloud accepts", () => {
    const spec = at(schemaOf(byPlural(SHAPES)), "spec");
    expect(at(spec, "type").enum).toEqual([...SHAPE_TYPES]);
    expect(at(spec, "color").enum).toEqual([...COLORS]);
    expect(at(spec, "size")).toMatchObject({ type: "integer", minimum: 1, maximum: MAX_SIZE });
  });

  it("leave the cloud's size limit per type to the cloud: a Shape may ask for more, and learns it from a 422", () => {
    const spec = at(schemaOf(byPlural(SHAPES)), "spec");
    // Below MAX_SIZE (else the limit would be the CRD's own), and no rule of the CRD speaks of size and type
    // together: the cloud refuses (422), and the controller says so (Synced=False SpecRejected).
    const limits = Object.entries(MAX_SIZE_BY_TYPE);
    expect(limits.length).toBeGreaterThan(0);
    for (const [type, max] of limits) expect(max, type).toBeLessThan(MAX_SIZE);
    const rules = (spec["x-kubernetes-validations"] ?? []).map((r) => r.rule);
    expect(rules.filter((r) => r.includes("size"))).toEqual([]);
    expect(at(spec, "size")["x-kubernetes-validations"] ?? []).toEqual([]);
  });

  it("print the columns a person needs", () => {
    const columns = (plural: string) =>
      byPlural(plural)
        .spec.versions[0]?.additionalPrinterColumns?.filter((c) => !c.priority)
        .map((c) => c.name);
    expect(columns(SHAPES)).toEqual(["Type", "Color", "Ready", "Synced", "Cloud ID", "Age"]);
    expect(columns(SHAPEREFS)).toEqual(["Namespace", "Shape", "Phase", "Cloud ID", "Owner", "Age"]);
  });

  it("have short names and a shared category", () => {
    expect(byPlural(SHAPES).spec.names).toMatchObject({ shortNames: ["shp"], categories: ["shapes-demo"] });
    expect(byPlural(SHAPEREFS).spec.names).toMatchObject({
      shortNames: ["shpref"],
      categories: ["shapes-demo"],
    });
    expect(byPlural(SHAPES).spec.scope).toBe("Namespaced");
    expect(byPlural(SHAPEREFS).spec.scope).toBe("Cluster");
  });

  it("offer Crossplane's management policies, everything by default, type and color required unless observe only", () => {
    const spec = at(schemaOf(byPlural(SHAPES)), "spec");
    expect(at(spec, "managementPolicies")).toMatchObject({
      default: ["*"],
      minItems: 1,
      "x-kubernetes-list-type": "set",
      items: { enum: ["*", "Observe", "Create", "Update", "Delete", "LateInitialize"] },
    });
    // Not `required`: whether they are depends on the policies (CEL rules, e2e/crds.test.ts proves them).
    expect(spec.required ?? []).toEqual([]);
    const rules = (spec["x-kubernetes-validations"] ?? []).map((r) => r.rule);
    expect(
      rules.filter((r) => r.startsWith("has(self.type)") || r.startsWith("has(self.color)")),
    ).toHaveLength(2);
  });

  it("give every CEL rule a message a person can act on", () => {
    const rules: { rule: string; message?: string }[] = [];
    const walk = (s: CrdSchema) => {
      rules.push(...(s["x-kubernetes-validations"] ?? []));
      for (const child of Object.values(s.properties ?? {})) walk(child);
      if (s.items) walk(s.items);
    };
    crds.forEach((c) => walk(schemaOf(c)));
    expect(rules.length).toBeGreaterThanOrEqual(5);
    for (const { rule, message } of rules)
      expect({ rule, message: (message ?? "").length > 20 }).toEqual({ rule, message: true });
  });
});
