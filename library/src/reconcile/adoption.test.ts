/**
 * The adoption-policy annotation as the reconciler reads it (adoption.ts): absent, one of the two policies,
 * or anything else (invalid, with a message naming the value); and what a requested adoption does with a
 * holder that is not ours: adopt one with no owner mark, refuse one with another's (naming it). Then which
 * desired fields carry the owner marks: all an adoption writes when the management policies leave out Update.
 */
import { describe, expect, it } from "vitest";
import { FakeItemApi, aWidget, widgetPlugin, type Widget } from "../testing/fake-plugin.ts";
import type { Desired, ResourceKind } from "./contract.ts";
import { adoptionAnnotation, adoptionRequestOf, adoptionDecisionFor, markFieldsOf } from "./adoption.ts";

const plugin = widgetPlugin(new FakeItemApi([]));
const annotation = "test.example.com/adoption-policy";

describe("adoptionRequestOf", () => {
  const rows: { reason: string; value: string | undefined; want: string }[] = [
    { reason: "no annotation: no adoption, as always", value: undefined, want: "none" },
    { reason: "adopt", value: "adopt", want: "policy adopt" },
    { reason: "adopt-or-create", value: "adopt-or-create", want: "policy adopt-or-create" },
    { reason: "any other value is invalid", value: "Adopt", want: "invalid Adopt" },
    { reason: "an empty value is invalid too", value: "", want: "invalid " },
  ];
  it.each(rows)("$reason", ({ value, want }) => {
    const widget = aWidget(value === undefined ? {} : { annotations: { [annotation]: value } });
    const got = adoptionRequestOf(plugin.resource, widget);
    const summary =
      got.kind === "none" ? "none" : got.kind === "policy" ? `policy ${got.policy}` : `invalid ${got.value}`;
    expect(summary).toBe(want);
    if (got.kind === "invalid") expect(got.message).toContain(`${annotation} is ${JSON.stringify(value)}`);
  });

  it("the annotation is built from the kind's API group", () => {
    expect(adoptionAnnotation(plugin.resource)).toBe(annotation);
  });
});

describe("adoptionDecisionFor", () => {
  const item = (tags: { owner?: string; uid?: string }) => ({
    id: "f1",
    name: "default.foo",
    size: 1,
    revision: 1,
    tags,
  });
  const rows = [
    { reason: "no owner mark at all: adopted", tags: {}, want: { act: "adopt" } },
    {
      reason: "a uid mark but no owner mark: still no owner's, adopted",
      tags: { uid: "x" },
      want: { act: "adopt" },
    },
    {
      reason: "another owner id: refused, naming it",
      tags: { owner: "cluster-b" },
      want: { act: "refuse", owner: "cluster-b" },
    },
  ];
  it.each(rows)("$reason", ({ tags, want }) => {
    expect(adoptionDecisionFor(plugin.external, item(tags))).toEqual(want);
  });
});

describe("markFieldsOf", () => {
  const marks = { owner: "k8s", uid: "uid-foo", resourceKey: "default/foo" };
  /** A kind whose desired state is `fields(marks)`. */
  const kindOf = (fields: (m: typeof marks) => Desired["fields"]): Pick<ResourceKind<Widget>, "desired"> => ({
    desired: (_widget, m) => ({ name: "default.foo", fields: fields(m) }),
  });
  const rows: { reason: string; fields: (m: typeof marks) => Desired["fields"]; want: Desired["fields"] }[] =
    [
      {
        reason: "the owner and uid tags, not the spec's size",
        fields: (m) => ({ size: 1, tags: { owner: m.owner, uid: m.uid } }),
        want: { tags: { owner: "k8s", uid: "uid-foo" } },
      },
      {
        reason: "a mark for people made of the resource key is a mark; a fixed tag beside them is not",
        fields: (m) => ({
          color: "red",
          labels: { owner: m.owner, uid: m.uid, name: m.resourceKey, team: "blue" },
        }),
        want: { labels: { owner: "k8s", uid: "uid-foo", name: "default/foo" } },
      },
      {
        reason: "a field that mixes a mark with the spec is taken whole",
        fields: (m) => ({ size: 1, note: `size 1, owned by ${m.owner}`, tags: { uid: m.uid } }),
        want: { note: "size 1, owned by k8s", tags: { uid: "uid-foo" } },
      },
      {
        reason: "a list of marks is taken whole",
        fields: (m) => ({ size: 1, tags: [`owner=${m.owner}`, `uid=${m.uid}`, "team=blue"] }),
        want: { tags: ["owner=k8s", "uid=uid-foo", "team=blue"] },
      },
    ];
  it.each(rows)("$reason", ({ fields, want }) => {
    expect(markFieldsOf(kindOf(fields), aWidget(), marks)).toEqual(want);
  });

  it("the fake plugin's marks are its owner and uid tags", () => {
    expect(markFieldsOf(plugin.resource, aWidget(), marks)).toEqual({
      tags: { owner: "k8s", uid: "uid-foo" },
    });
  });
});
