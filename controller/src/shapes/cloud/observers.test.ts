import { describe, expect, test } from "vitest";
import { aCloudShape, aShape } from "../testing.ts";
import type { CloudShape } from "./client.ts";
import { CloudError } from "./client.ts";
import { perObjectObserver } from "./observers.ts";

const ours = (name: string, uid: string, id = `id-${name}`): CloudShape =>
  aCloudShape({ name, id, tags: { owner: "k8s", "k8s-uid": uid, "k8s-name": name.replace(".", "/") } });

/** A cloud of `shapes` that answers get and tag-filtered list, and records each call. */
function fakeCloud(shapes: CloudShape[]) {
  const calls: string[] = [];
  return {
    calls,
    get(id: string) {
      calls.push(`get ${id}`);
      const found = shapes.find((s) => s.id === id);
      return found ? Promise.resolve(found) : Promise.reject(new CloudError("cannot find it", 404));
    },
    list(query: { tags?: Record<string, string> }) {
      calls.push(`list ${JSON.stringify(query.tags)}`);
      const items = shapes.filter((s) => Object.entries(query.tags ?? {}).every(([k, v]) => s.tags[k] === v));
      return Promise.resolve({ items, nextPageToken: undefined, revision: 1 });
    },
  };
}

describe("perObjectObserver", () => {
  const signal = new AbortController().signal;
  const cases: {
    reason: string;
    cloud: CloudShape[];
    cloudId?: string;
    expectedId: string | undefined;
    expectedCalls: string[];
  }[] = [
    {
      reason: "a known cloud id is read with ONE GET",
      cloud: [ours("default.foo", "uid-foo")],
      cloudId: "id-default.foo",
      expectedId: "id-default.foo",
      expectedCalls: ["get id-default.foo"],
    },
    {
      reason: "no id yet: one list filtered by our owner tag and the Shape's uid",
      cloud: [ours("default.foo", "uid-foo")],
      expectedId: "id-default.foo",
      expectedCalls: ['list {"owner":"k8s","k8s-uid":"uid-foo"}'],
    },
    {
      reason: "the remembered id is gone (deleted in the cloud): fall back to the list, which finds nothing",
      cloud: [],
      cloudId: "id-gone",
      expectedId: undefined,
      expectedCalls: ["get id-gone", 'list {"owner":"k8s","k8s-uid":"uid-foo"}'],
    },
    {
      reason: "the remembered id now holds a foreign shape: it is not ours, look again by tags",
      cloud: [aCloudShape({ name: "default.foo", id: "id-x", tags: { owner: "someone" } })],
      cloudId: "id-x",
      expectedId: undefined,
      expectedCalls: ["get id-x", 'list {"owner":"k8s","k8s-uid":"uid-foo"}'],
    },
  ];

  test.each(cases)("$reason", async ({ cloud, cloudId, expectedId, expectedCalls }) => {
    const fake = fakeCloud(cloud);
    const shape = aShape(cloudId ? { status: { cloudId } } : {});
    const observed = await perObjectObserver(fake, "k8s")(shape, "default.foo", signal);
    expect(observed?.id).toBe(expectedId);
    expect(fake.calls).toEqual(expectedCalls);
  });

  test("a cloud error other than 404 is thrown for the reconciler to report", async () => {
    const failing = {
      get: () => Promise.reject(new CloudError("cannot reach the cloud", 503)),
      list: () => Promise.reject(new Error("unreachable")),
    };
    const shape = aShape({ status: { cloudId: "id-1" } });
    await expect(perObjectObserver(failing, "k8s")(shape, "default.foo", signal)).rejects.toThrow(
      /cannot reach the cloud/,
    );
  });
});
