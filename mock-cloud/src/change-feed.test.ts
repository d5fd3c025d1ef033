import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ChangeFeed, eventForWatcher, formatEvent } from "./change-feed.ts";
import { ShapeRepository, type Change } from "./db/repository.ts";
import type { Shape } from "./schemas.ts";
import { shapeFields } from "./test-support.ts";

const shape = (tags: Record<string, string>, revision = 2): Shape => ({
  id: "shp_1",
  name: "n",
  type: "square",
  color: "red",
  tags,
  revision,
  createdAt: "2030-01-01T00:00:00.000Z",
  updatedAt: "2030-01-01T00:00:00.000Z",
});
const mine = { owner: "k8s" };
const other = { owner: "someone" };

describe("eventForWatcher", () => {
  const filter = [["owner", "k8s"]] as const;
  const cases: {
    reason: string;
    change: Change;
    filter: readonly (readonly [string, string])[];
    want: string | undefined;
  }[] = [
    {
      reason: "unfiltered: every change as is",
      change: { revision: 2, type: "MODIFIED", shape: shape(other), previous: shape(other, 1) },
      filter: [],
      want: "MODIFIED",
    },
    {
      reason: "created matching: ADDED",
      change: { revision: 2, type: "ADDED", shape: shape(mine), previous: undefined },
      filter,
      want: "ADDED",
    },
    {
      reason: "created not matching: unseen",
      change: { revision: 2, type: "ADDED", shape: shape(other), previous: undefined },
      filter,
      want: undefined,
    },
    {
      reason: "modified, matching before and after: MODIFIED",
      change: { revision: 2, type: "MODIFIED", shape: shape(mine), previous: shape(mine, 1) },
      filter,
      want: "MODIFIED",
    },
    {
      reason: "modified into the filter: ADDED",
      change: { revision: 2, type: "MODIFIED", shape: shape(mine), previous: shape(other, 1) },
      filter,
      want: "ADDED",
    },
    {
      reason: "modified out of the filter: DELETED",
      change: { revision: 2, type: "MODIFIED", shape: shape(other), previous: shape(mine, 1) },
      filter,
      want: "DELETED",
    },
    {
      reason: "modified outside the filter: unseen",
      change: { revision: 2, type: "MODIFIED", shape: shape(other), previous: shape({}, 1) },
      filter,
      want: undefined,
    },
    {
      reason: "deleted while matching: DELETED",
      change: { revision: 2, type: "DELETED", shape: shape(mine, 1), previous: shape(mine, 1) },
      filter,
      want: "DELETED",
    },
    {
      reason: "deleted while not matching: unseen",
      change: { revision: 2, type: "DELETED", shape: shape(other, 1), previous: shape(other, 1) },
      filter,
      want: undefined,
    },
  ];
  it.each(cases)("$reason", ({ change, filter: f, want }) => {
    const event = eventForWatcher(change, f);
    expect(event?.type).toBe(want);
    if (event) expect(event).toEqual({ type: want, shape: change.shape, revision: change.revision });
  });

  it("does not match a tag inherited from Object.prototype", () => {
    const change: Change = { revision: 2, type: "ADDED", shape: shape({}), previous: undefined };
    expect(eventForWatcher(change, [["constructor", "function Object() { [native code] }"]])).toBeUndefined();
  });
});

describe("formatEvent", () => {
  it("writes the revision as the SSE id and the event as one data line, even with newlines in tags", () => {
    const event = { type: "ADDED" as const, shape: shape({ note: "a\nb\r\nc" }), revision: 2 };
    const text = formatEvent(event);
    expect(text.endsWith("\n\n")).toBe(true);
    const lines = text.slice(0, -2).split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe("id: 2");
    expect(JSON.parse(lines[1]!.slice("data: ".length))).toEqual(event);
  });
});

/** A response that takes every write at once and keeps what was written. */
class RecordingResponse extends EventEmitter {
  text = "";
  writableEnded = false;
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
  /** The revisions of the events written so far. */
  get ids(): number[] {
    return [...this.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  }
}

describe("ChangeFeed", () => {
  const cleanup: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanup.splice(0)) c();
  });
  function feedWithOneWatch(): { repo: ShapeRepository; res: RecordingResponse } {
    const repo = ShapeRepository.open({ path: ":memory:", historyLimit: 100 });
    const feed = new ChangeFeed(repo, { heartbeatMs: 60_000 });
    const res = new RecordingResponse();
    feed.open(res as unknown as ServerResponse, { since: 0, filter: [], lagMs: () => 0 });
    cleanup.push(() => {
      feed.closeAll();
      repo.close();
    });
    return { repo, res };
  }

  const settled = () => new Promise((resolve) => setImmediate(resolve));

  it.each([
    {
      reason: "a commit in the same tick as the watch opened (the opening pump has not settled yet)",
      commit: (repo: ShapeRepository) => void repo.create(shapeFields("a")),
      want: [1],
    },
    {
      reason: "a commit in a microtask right after another commit's pump",
      commit: async (repo: ShapeRepository) => {
        await settled(); // the opening pump is over
        repo.create(shapeFields("a"));
        queueMicrotask(() => repo.create(shapeFields("b")));
      },
      want: [1, 2],
    },
  ])("sends every change, even $reason", async ({ commit, want }) => {
    const { repo, res } = feedWithOneWatch();
    await commit(repo);
    await settled();
    expect(res.ids).toEqual(want);
  });
});
