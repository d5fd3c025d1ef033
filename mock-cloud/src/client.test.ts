import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloudCallError, CloudHttpClient } from "./client.ts";
import { ADMIN_TOKEN, TOKEN, startTestCloud, type TestCloud } from "./test-support.ts";

let cloud: TestCloud;
let client: CloudHttpClient;

beforeAll(async () => {
  cloud = await startTestCloud();
  client = new CloudHttpClient({
    baseUrl: `${cloud.url}/`,
    token: TOKEN,
    adminToken: ADMIN_TOKEN,
    clientId: "tester",
  });
});
afterAll(() => cloud.close());

describe("CloudHttpClient", () => {
  it("creates, reads, patches and deletes a shape; an absent one reads as undefined", async () => {
    const made = await client.create({ name: "client.a", type: "square", color: "red" });
    expect(await client.get(made.id)).toEqual(made);
    expect(await client.byName("client.a")).toEqual(made);
    expect(await client.getByName("client.a")).toEqual(made);
    expect(await client.patch(made.id, { color: "blue" })).toMatchObject({ id: made.id, color: "blue" });
    await client.delete(made.id);
    expect(await client.get(made.id)).toBeUndefined();
    expect(await client.getByName("client.a")).toBeUndefined();
  });

  it("lists every shape", async () => {
    for (let i = 0; i < 3; i++)
      await client.create({ name: `client.list-${i}`, type: "circle", color: "green" });
    const names = (await client.list()).map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["client.list-0", "client.list-1", "client.list-2"]));
  });

  it("signs its writes with its client id, read back from the request log with the admin token", async () => {
    await client.clearRequests();
    await client.create({ name: "client.signed", type: "hexagon", color: "pink" });
    expect((await client.requests()).map((r) => [r.method, r.path, r.clientId])).toEqual([
      ["POST", "/v1/shapes", "tester"],
    ]);
  });

  it.each([
    {
      reason: "a delete of an absent shape is a 404",
      call: (c: CloudHttpClient) => c.delete("shp_absent"),
      status: 404,
    },
    {
      reason: "admin calls with the API token only are refused",
      call: (c: CloudHttpClient) =>
        new CloudHttpClient({ baseUrl: c.baseUrl, token: TOKEN, clientId: "x" }).requests(),
      status: 401,
    },
    {
      reason: "a cloud that does not answer is status 0",
      call: () =>
        new CloudHttpClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN, clientId: "x" }).health(),
      status: 0,
    },
  ])("fails with a CloudCallError: $reason", async ({ call, status }) => {
    const error = await call(client).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CloudCallError);
    expect((error as CloudCallError).status).toBe(status);
    expect((error as CloudCallError).message).toMatch(/^cannot /);
  });
});
