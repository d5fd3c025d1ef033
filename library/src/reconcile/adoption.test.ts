/**
 * The adoption-policy annotation as the reconciler reads it (adoption.ts): absent, one of the two policies,
 * or anything else (invalid, with a message naming the value); and what a requested adoption does with a
 * holder that is not ours: adopt one with no owner mark, refuse one with another's (naming it).
 */
import { describe, expect, it } from "vitest";
import { FakeItemApi, aWidget, widgetPlugin } from "../testing/fake-plugin.ts";
import { adoptionAnnotation, adoptionRequestOf, adoptionVerdictFor } from "./adoption.ts";

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

describe("adoptionVerdictFor", () => {
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
    expect(adoptionVerdictFor(plugin.external, item(tags))).toEqual(want);
  });
});
