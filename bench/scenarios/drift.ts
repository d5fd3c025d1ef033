/**
 * Scenario 4: drift repair. While the controller is idle, the bench plays "someone in the cloud console":
 * M random owned shapes (distinct), each recolored (two in three) or deleted (one in three), one every
 * 50 ms. A repair is the controller's write that makes the shape match its Shape again (the color back, or
 * the shape created again).
 *
 * Timing: the bench follows the cloud's change feed itself, and a repair's latency is the distance between
 * the edit's event and the repair's event on that one stream — same clock, same path, both ends precise.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { cloudNameOf } from "@shapes/controller";
import { CloudFeed, type FeedEvent } from "../cloud-feed.ts";
import type { DriftResult } from "../results.ts";
import { percentiles } from "../stats.ts";
import { COLORS, pick, seededRandom } from "../workload.ts";
import { delta, snapshot, waitQuiet, type RunContext } from "./context.ts";

/** Time between two edits. */
const EDIT_INTERVAL_MS = 50;

/** One edit and what became of it. */
interface Edit {
  name: string;
  kind: "recolor" | "delete";
  /** The id of the cloud shape edited. */
  id: string;
  /** The Shape's color: what a repair restores. */
  desiredColor: string;
  /** The color the edit set (recolor). */
  editColor?: (typeof COLORS)[number];
  /** The edit's own event: when it arrived and its revision. */
  edited?: { atMs: number; revision: number };
  /** The repair's event arrival. */
  repairedAtMs?: number;
}

/** Runs the drift scenario. */
export async function drift(ctx: RunContext): Promise<DriftResult> {
  const random = seededRandom(6);
  const m = ctx.options.driftEdits;
  const cloudByName = new Map((await ctx.stack.cloud.api.list()).map((c) => [c.name, c]));
  // M distinct Shapes, chosen at random (a seeded partial shuffle).
  const pool = [...ctx.names];
  for (let i = 0; i < m; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j] as string, pool[i] as string];
  }
  const namespace = ctx.workload.namespace;
  const edits: Edit[] = pool.slice(0, m).map((name) => {
    const cloudName = cloudNameOf(namespace, name);
    const shape = cloudByName.get(cloudName);
    if (!shape) throw new Error(`cannot edit ${cloudName}: it is not in the cloud`);
    const desiredColor = ctx.specOf(name).color ?? "";
    const kind = random() < 1 / 3 ? "delete" : "recolor";
    const edit: Edit = { name: cloudName, kind, id: shape.id, desiredColor };
    if (kind === "recolor")
      edit.editColor = pick(
        COLORS.filter((c) => c !== desiredColor),
        random,
      );
    return edit;
  });
  const byName = new Map<string, Edit>();

  const health = (await (await fetch(`${ctx.stack.cloud.url}/healthz`)).json()) as { revision: number };
  const feed = await CloudFeed.open(ctx.stack.cloud.url, health.revision);
  feed.on((event) => observe(byName.get(event.shape.name), event));
  const before = await snapshot(ctx);
  const bar = ctx.progress.task(`${ctx.label}: drift`, m, "repaired");
  const repaired = () => edits.filter((e) => e.repairedAtMs !== undefined).length;
  try {
    for (const edit of edits) {
      byName.set(edit.name, edit); // before the write: its event may arrive before the answer
      if (edit.kind === "delete") await ctx.stack.cloud.api.delete(edit.id);
      else await ctx.stack.cloud.api.patch(edit.id, { color: edit.editColor });
      bar.update(repaired());
      await sleep(EDIT_INTERVAL_MS);
    }
    // Without the change feed a repair waits for the next relist: up to a resync period and its jitter.
    const deadline = performance.now() + 2 * ctx.options.resyncPeriodMs + 30_000;
    while (repaired() < m && performance.now() < deadline) {
      if (feed.failure) throw new Error(`cannot follow the cloud's change feed: ${feed.failure.message}`);
      bar.update(repaired());
      await sleep(100);
    }
  } finally {
    await feed.close();
  }
  await waitQuiet(ctx.controller);
  const after = await snapshot(ctx);
  const writes = delta(ctx, before, after).controller.cloudRequests;
  const latencies = edits.flatMap((e) =>
    e.edited && e.repairedAtMs !== undefined ? [e.repairedAtMs - e.edited.atMs] : [],
  );
  const result: DriftResult = {
    edits: m,
    recolors: edits.filter((e) => e.kind === "recolor").length,
    deletes: edits.filter((e) => e.kind === "delete").length,
    repaired: latencies.length,
    latencyMs: percentiles(latencies),
    cloudWrites: (writes.create ?? 0) + (writes.patch ?? 0) + (writes.update ?? 0) + (writes.delete ?? 0),
  };
  bar.update(result.repaired);
  bar.end(result.repaired === m ? "all repaired" : `${m - result.repaired} NOT repaired`);
  return result;
}

/** Matches one feed event to its edit: first the edit itself, then the write that undoes it. */
function observe(edit: Edit | undefined, event: FeedEvent): void {
  if (!edit || edit.repairedAtMs !== undefined) return;
  if (!edit.edited) {
    const isEdit =
      edit.kind === "delete"
        ? event.type === "DELETED" && event.shape.id === edit.id
        : event.type === "MODIFIED" && event.shape.id === edit.id && event.shape.color === edit.editColor;
    if (isEdit) edit.edited = { atMs: event.atMs, revision: event.revision };
    return;
  }
  if (
    event.revision > edit.edited.revision &&
    event.type !== "DELETED" &&
    event.shape.color === edit.desiredColor
  ) {
    edit.repairedAtMs = event.atMs;
  }
}
