import { describe, expect, it } from "vitest";
import { diffManaged, mergePatchFor, type Json } from "./diff.ts";

describe("diffManaged and mergePatchFor", () => {
  const cases: { reason: string; desired: Json; observed: Json; drift: string[]; patch: Json | undefined }[] =
    [
      {
        reason: "identical managed fields are converged",
        desired: { color: "red", tags: { owner: "k8s" } },
        observed: { color: "red", tags: { owner: "k8s" }, id: "s-1", revision: 7 },
        drift: [],
        patch: undefined,
      },
      {
        reason: "a changed scalar is drift, repaired by setting it",
        desired: { color: "red", type: "square" },
        observed: { color: "blue", type: "square" },
        drift: ["color"],
        patch: { color: "red" },
      },
      {
        reason: "a tag someone else added is not ours to remove",
        desired: { tags: { owner: "k8s" } },
        observed: { tags: { owner: "k8s", team: "blue" } },
        drift: [],
        patch: undefined,
      },
      {
        reason: "a missing owner tag is repaired without touching the other tags",
        desired: { tags: { owner: "k8s", "k8s-uid": "u1" } },
        observed: { tags: { "k8s-uid": "u1", team: "blue" } },
        drift: ["tags.owner"],
        patch: { tags: { owner: "k8s" } },
      },
      {
        reason: "null desired means absent: an absent observed value is converged",
        desired: { size: null },
        observed: { color: "red" },
        drift: [],
        patch: undefined,
      },
      {
        reason:
          "null desired means absent: a present observed value is drift, removed by a null in the patch",
        desired: { size: null },
        observed: { size: 5 },
        drift: ["size"],
        patch: { size: null },
      },
      {
        reason: "a whole missing object is drift on each of its managed keys",
        desired: { tags: { owner: "k8s", "k8s-uid": "u1" } },
        observed: {},
        drift: ["tags.owner", "tags.k8s-uid"],
        patch: { tags: { owner: "k8s", "k8s-uid": "u1" } },
      },
      {
        reason: "arrays compare whole, in order",
        desired: { list: [1, 2] },
        observed: { list: [2, 1] },
        drift: ["list"],
        patch: { list: [1, 2] },
      },
      {
        reason: "an object where a scalar is expected is drift",
        desired: { size: 3 },
        observed: { size: { value: 3 } },
        drift: ["size"],
        patch: { size: 3 },
      },
    ];

  it.each(cases)("$reason", ({ desired, observed, drift, patch }) => {
    expect(diffManaged(desired, observed).map((d) => d.path)).toEqual(drift);
    expect(mergePatchFor(desired, observed)).toEqual(patch);
  });
});
