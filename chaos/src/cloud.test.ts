import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLOUD_TOKEN } from "@shapes/stack";
import { startChaosCloud, type ChaosCloud, type ChaosRequestLogEntry } from "./cloud.ts";

/** A write as a controller sends it (its user agent, its X-Client-Id). */
async function controllerWrite(
  cloud: ChaosCloud,
  method: string,
  path: string,
  { body, ifMatch, clientId = "t1-c1" }: { body?: unknown; ifMatch?: string; clientId?: string } = {},
): Promise<number> {
  const response = await fetch(`${cloud.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${CLOUD_TOKEN}`,
      "user-agent": "shapes-controller",
      "x-client-id": clientId,
      ...(body === undefined ? {} : { "content-type": "application/merge-patch+json" }),
      ...(ifMatch === undefined ? {} : { "if-match": ifMatch }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("the chaos cloud's request log", () => {
  let cloud: ChaosCloud;
  beforeAll(async () => {
    cloud = await startChaosCloud({ seedRandom: () => 0.5 });
  });
  afterAll(async () => {
    await cloud?.close();
  });

  it("carries, for each write by id the cloud carried out, the shape as it was just before", async () => {
    const a = await cloud.api.create({ name: "a", type: "circle", color: "red", tags: { owner: "east" } });
    const b = await cloud.api.create({ name: "b", type: "square", color: "red", tags: { owner: "west" } });
    const from = cloud.requests().length;
    // Latency on every request: the handlers run after an async gap, side by side.
    cloud.setFaults([{ path: "/v1/*", latencyMs: 150 }]);
    const statuses = await Promise.all([
      controllerWrite(cloud, "PATCH", `/v1/shapes/${a.id}`, { body: { tags: { owner: "west" } } }),
      controllerWrite(cloud, "PATCH", `/v1/shapes/${b.id}`, { body: { color: "blue" }, clientId: "t1-w1" }),
    ]);
    cloud.clearFaults();
    const stale = await controllerWrite(cloud, "PATCH", `/v1/shapes/${b.id}`, {
      body: { color: "green" },
      ifMatch: '"1"',
    });
    const deleted = await controllerWrite(cloud, "DELETE", `/v1/shapes/${b.id}`);
    const created = await controllerWrite(cloud, "POST", "/v1/shapes", {
      body: { name: "c", type: "circle", color: "red" },
    });
    expect([...statuses, stale, deleted, created]).toEqual([200, 200, 412, 204, 201]);

    const summary = (e: ChaosRequestLogEntry) => ({
      method: e.method,
      clientId: e.clientId,
      status: e.status,
      before: e.before && { id: e.before.id, owner: e.before.tags.owner, color: e.before.color },
    });
    const got = cloud.requests().slice(from).map(summary);
    expect(got).toEqual(
      expect.arrayContaining([
        // The owner tag the PATCH found, not the one it wrote.
        {
          method: "PATCH",
          clientId: "t1-c1",
          status: 200,
          before: { id: a.id, owner: "east", color: "red" },
        },
        {
          method: "PATCH",
          clientId: "t1-w1",
          status: 200,
          before: { id: b.id, owner: "west", color: "red" },
        },
        // Refused writes carried nothing out: no `before`.
        { method: "PATCH", clientId: "t1-c1", status: 412, before: undefined },
        { method: "POST", clientId: "t1-c1", status: 201, before: undefined },
        {
          method: "DELETE",
          clientId: "t1-c1",
          status: 204,
          before: { id: b.id, owner: "west", color: "blue" },
        },
      ]),
    );
    expect(got).toHaveLength(5);
  });
});
