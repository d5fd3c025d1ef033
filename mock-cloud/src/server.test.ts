import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import request from "supertest";
import { afterEach, describe, expect, it } from "vitest";
import { startCloud } from "./server.ts";
import { openWatch, shapeBody, TOKEN } from "./test-support.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("startCloud", () => {
  it("listens on a free port by default and answers", async () => {
    const cloud = await startCloud({ token: TOKEN });
    try {
      expect(cloud.url).toBe(`http://127.0.0.1:${cloud.port}`);
      expect(cloud.port).toBeGreaterThan(0);
      expect((await request(cloud.url).get("/healthz")).body.status).toBe("ok");
    } finally {
      await cloud.close();
    }
  });

  it("refuses to start without a token", async () => {
    await expect(startCloud({ token: "" })).rejects.toThrow(
      /cannot start the mock cloud: a token is required/,
    );
  });

  it("keeps every shape and the revision counter across a restart on a file database", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mock-cloud-server-"));
    dirs.push(dir);
    const db = join(dir, "nested", "cloud.db"); // the directory is created
    const auth = { authorization: `Bearer ${TOKEN}` };

    const first = await startCloud({ token: TOKEN, db });
    const a = (
      await request(first.url)
        .post("/v1/shapes")
        .set(auth)
        .send(shapeBody("kept", { tags: { owner: "k8s" } }))
    ).body;
    const b = (await request(first.url).post("/v1/shapes").set(auth).send(shapeBody("removed"))).body;
    await request(first.url).delete(`/v1/shapes/${b.id}`).set(auth).expect(204);
    await first.close();
    await first.close(); // twice is fine
    // Closing checkpoints the WAL into the main file.
    expect(!existsSync(`${db}-wal`) || statSync(`${db}-wal`).size === 0).toBe(true);

    const second = await startCloud({ token: TOKEN, db });
    try {
      const list = (await request(second.url).get("/v1/shapes").set(auth)).body;
      expect(list.items).toEqual([a]);
      expect(list.revision).toBe(3);
      const c = (await request(second.url).post("/v1/shapes").set(auth).send(shapeBody("after"))).body;
      expect(c.revision).toBe(4);
      // The history survives too: a watch resumes across the restart.
      const w = await openWatch(second.url, "?since=1");
      try {
        await w.until(() => w.events.length === 3, "the changes after revision 1");
        expect(w.events.map((e) => [e.type, e.shape.name])).toEqual([
          ["ADDED", "removed"],
          ["DELETED", "removed"],
          ["ADDED", "after"],
        ]);
      } finally {
        w.close();
      }
    } finally {
      await second.close();
    }
  });

  it("ends open watches on close", async () => {
    const cloud = await startCloud({ token: TOKEN });
    const w = await openWatch(cloud.url, "?since=0");
    await cloud.close();
    await w.ended;
  });

  it("fails clearly when the port is taken", async () => {
    const first = await startCloud({ token: TOKEN });
    try {
      await expect(startCloud({ token: TOKEN, port: first.port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.close();
    }
  });
});
