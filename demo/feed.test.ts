import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CoreV1Event } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clock, FileFollower, formatEvent, formatLogLine } from "./feed.ts";

const at = new Date(2026, 0, 2, 15, 4, 5);

function event(overrides: Partial<CoreV1Event>): CoreV1Event {
  return {
    metadata: { name: "red-square.1", namespace: "default" },
    involvedObject: {
      apiVersion: "shapes.example.com/v1alpha1",
      kind: "Shape",
      namespace: "default",
      name: "red-square",
    },
    type: "Normal",
    reason: "CreatedCloudShape",
    message: "Created cloud shape default.red-square (shp_1)",
    lastTimestamp: at,
    ...overrides,
  };
}

describe("the feed's Event lines", () => {
  it("name the time, the object, the reason and the message", () => {
    expect(formatEvent(event({}))).toBe(
      "15:04:05  event  Shape default/red-square  CreatedCloudShape: Created cloud shape default.red-square (shp_1)",
    );
  });

  it("mark warnings", () => {
    expect(
      formatEvent(event({ type: "Warning", reason: "NameConflict", message: "cannot create" })),
    ).toContain("Shape default/red-square  Warning NameConflict: cannot create");
  });

  it.each([
    { involvedObject: { apiVersion: "v1", kind: "Pod", name: "web" }, reason: "a Pod's Event" },
    { involvedObject: { apiVersion: "apps/v1", kind: "Deployment", name: "x" }, reason: "another group" },
    { involvedObject: {}, reason: "no apiVersion at all" },
  ])("leave out $reason (a user's cluster has many)", ({ involvedObject }) => {
    expect(formatEvent(event({ involvedObject }))).toBeUndefined();
  });
});

describe("the feed's log lines", () => {
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({
      level: 30,
      time: at.getTime(),
      pid: 1,
      hostname: "h",
      name: "shapes-controller",
      ...fields,
    });

  it("show the message and the fields that are not pino's own", () => {
    expect(
      formatLogLine(
        line({ msg: "removed a leak left by a missed deletion", shapeRef: "default.x", uid: "u-1" }),
      ),
    ).toBe("15:04:05  log    info   removed a leak left by a missed deletion  shapeRef=default.x uid=u-1");
  });

  it.each([
    { raw: line({ level: 20, msg: "debug chatter" }), reason: "below info" },
    { raw: "    at Object.<anonymous> (file.ts:1:1)", reason: "not JSON (a stack trace node printed)" },
    { raw: '{"level":30,"msg":"cut sho', reason: "a line cut short" },
    { raw: line({ msg: undefined }), reason: "no message" },
  ])("leave out $reason", ({ raw }) => {
    expect(formatLogLine(raw)).toBeUndefined();
  });

  it("show a Kubernetes API error by its Status message, not client-node's multi-line dump", () => {
    const err = {
      type: "ApiException",
      message: 'HTTP-Code: 404\nMessage: Unknown API Status Code!\nBody: "{...}"',
      code: 404,
      body: JSON.stringify({ kind: "Status", message: 'shapes.shapes.example.com "x" not found', code: 404 }),
    };
    expect(formatLogLine(line({ level: 40, msg: "reconcile failed, retrying", key: "default/x", err }))).toBe(
      '15:04:05  log    warn   reconcile failed, retrying  key=default/x err="shapes.shapes.example.com \\"x\\" not found (HTTP 404)"',
    );
  });

  it("show only the first line of a multi-line message field, and cut very long lines", () => {
    expect(formatLogLine(line({ msg: "m", err: { message: "first\nsecond" } }))).toContain('err="first"');
    expect(formatLogLine(line({ msg: "m", detail: "two\nlines" }))).toContain("detail=two");
    const long = formatLogLine(line({ msg: "x".repeat(500) })) ?? "";
    expect(long).toHaveLength(300);
    expect(long.endsWith("…")).toBe(true);
  });

  it("clock() is HH:MM:SS", () => {
    expect(clock(at)).toBe("15:04:05");
  });
});

describe("FileFollower", () => {
  let dir: string;
  beforeAll(async () => (dir = await mkdtemp(join(tmpdir(), "demo-feed-test-"))));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("passes on complete lines appended after it started, whatever the write boundaries", async () => {
    const path = join(dir, "grows.log");
    await writeFile(path, "history 1\nhistory 2\n");
    const seen: string[] = [];
    const follower = new FileFollower(path, (l) => seen.push(l), 60_000); // reads only when flushed
    await follower.start();
    await follower.flush();
    expect(seen).toEqual([]); // what was there before is history

    await appendFile(path, "first\nsec");
    await follower.flush();
    expect(seen).toEqual(["first"]); // half a line waits for its end
    // A multi-byte character (→ is 3 bytes in UTF-8) split across two writes stays whole.
    const arrow = Buffer.from("ond → done\n");
    await appendFile(path, arrow.subarray(0, 5));
    await follower.flush();
    await appendFile(path, arrow.subarray(5));
    await follower.stop(); // stop() reads one last time
    expect(seen).toEqual(["first", "second → done"]);
  });

  it("waits for a file that does not exist yet, then reads all of it", async () => {
    const path = join(dir, "later.log");
    const seen: string[] = [];
    const follower = new FileFollower(path, (l) => seen.push(l), 60_000);
    await follower.start();
    await follower.flush();
    await writeFile(path, "hello\n");
    await follower.stop();
    expect(seen).toEqual(["hello"]);
  });

  it("starts over when the file is truncated", async () => {
    const path = join(dir, "truncated.log");
    await writeFile(path, "a long old history line\n");
    const seen: string[] = [];
    const follower = new FileFollower(path, (l) => seen.push(l), 60_000);
    await follower.start();
    await writeFile(path, "new\n");
    await follower.stop();
    expect(seen).toEqual(["new"]);
  });
});
