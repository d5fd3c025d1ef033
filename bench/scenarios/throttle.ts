/**
 * Scenario 4b: a cloud-wide 429 storm. The cloud is shared, and when it throttles, it throttles everyone. While
 * the controller has work to do — M Shapes recolored, so M keys each need a cloud PATCH — every API call
 * (`/v1/shapes*`) is answered 429 with a Retry-After of 1 s, for 10 s (3 s with --smoke). The change feed is
 * left alone: it is one long request, which the controller's rate limiter does not gate.
 *
 * Measured: the controller's API calls per second during the storm, as the cloud's own /metrics count them —
 * the bench makes no API call meanwhile (it recolors through Kubernetes and follows the change feed) — reported
 * against the configuration's --cloud-qps; and, once the storm is switched off, the time until the last recolor
 * reached the cloud, on the bench's change feed.
 *
 * The recolors go through Kubernetes, not the cloud, because the bench's own cloud writes would be throttled
 * too; for the controller a spec change is the same work: one PATCH per key.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { cloudNameOf, OPTIONS } from "@shapes/controller";
import { CloudFeed } from "../cloud-feed.ts";
import { METRIC_PREFIX } from "../controller.ts";
import { cloudRequests, diffCounts, total, type RequestCounts } from "../requests.ts";
import type { ThrottleResult } from "../results.ts";
import { COLORS } from "../workload.ts";
import { waitQuiet, type RunContext } from "./context.ts";

/** The Retry-After of every 429 of the storm. */
export const RETRY_AFTER_SECONDS = 1;

/** How long the storm lasts: long enough for several Retry-After rounds. */
export function stormMsOf(smoke: boolean): number {
  return smoke ? 3_000 : 10_000;
}

/** The --cloud-qps a configuration runs the controller with: its own flag, else the controller's default. */
export function configuredCloudQps(flags: readonly string[]): number {
  let value = OPTIONS.find((o) => o.flag === "cloud-qps")?.default;
  flags.forEach((flag, i) => {
    if (flag.startsWith("--cloud-qps=")) value = flag.slice("--cloud-qps=".length);
    else if (flag === "--cloud-qps") value = flags[i + 1];
  });
  return Number(value);
}

/** The API calls among `counts` (`METHOD route`): everything but the change feed. */
export function apiCalls(counts: RequestCounts): number {
  return total(counts, (key) => !key.endsWith(" /v1/watch"));
}

/** A color other than `color`, always the same one: the next in the palette. */
export function otherColor(color: string): string {
  const i = (COLORS as readonly string[]).indexOf(color);
  return COLORS[(i + 1) % COLORS.length] as string;
}

/** Runs the throttle scenario against a controller started with `flags`. */
export async function throttle(ctx: RunContext, flags: readonly string[]): Promise<ThrottleResult> {
  const m = ctx.options.driftEdits;
  const stormMs = stormMsOf(ctx.options.smoke);
  const namespace = ctx.workload.namespace;
  const names = ctx.names.slice(0, m);
  // The color each recolored Shape asks for, by cloud name: what the controller must write.
  const wanted = new Map(
    names.map((name) => [
      cloudNameOf(namespace, name),
      otherColor(ctx.watch.get(name)?.spec.color ?? ctx.specOf(name).color ?? ""),
    ]),
  );
  const written = new Map<string, number>();

  await waitQuiet(ctx.controller);
  const feed = await CloudFeed.open(ctx.stack.cloud.url, (await ctx.stack.cloud.api.health()).revision);
  feed.on((event) => {
    const name = event.shape.name;
    if (event.type !== "DELETED" && wanted.get(name) === event.shape.color && !written.has(name)) {
      written.set(name, event.atMs);
    }
  });
  const bar = ctx.progress.task(`${ctx.label}: throttle`, m, "written");
  let stormOn = false;
  try {
    const heldBefore = await heldSeconds(ctx);
    const before = await cloudRequests(ctx.stack.cloud.url);
    await ctx.stack.cloud.api.setFaults([
      { path: "/v1/shapes*", throttleRate: 1, retryAfterSeconds: RETRY_AFTER_SECONDS },
    ]);
    stormOn = true;
    const stormStart = performance.now();
    await ctx.workload.patchSpecs(names, (name) => ({ color: wanted.get(cloudNameOf(namespace, name)) }));
    await sleep(Math.max(0, stormStart + stormMs - performance.now()));
    const during = await cloudRequests(ctx.stack.cloud.url);
    const windowMs = performance.now() - stormStart;
    const heldDuring = (await heldSeconds(ctx)) - heldBefore;

    const clearing = performance.now();
    await ctx.stack.cloud.api.clearFaults();
    stormOn = false;
    // After the storm a key may still wait out its own backoff, which grew with each 429 it met.
    const deadline = performance.now() + 2 * stormMs + 60_000;
    while (written.size < m && performance.now() < deadline) {
      if (feed.failure) throw new Error(`cannot follow the cloud's change feed: ${feed.failure.message}`);
      bar.update(written.size);
      await sleep(100);
    }
    await waitQuiet(ctx.controller);

    const calls = apiCalls(diffCounts(before, during));
    const result: ThrottleResult = {
      keys: m,
      stormMs: windowMs,
      retryAfterMs: RETRY_AFTER_SECONDS * 1000,
      cloudQps: configuredCloudQps(flags),
      calls,
      callsPerSecond: calls / (windowMs / 1000),
      heldMs: heldDuring * 1000,
      repaired: written.size,
      repairMs: written.size > 0 ? Math.max(0, Math.max(...written.values()) - clearing) : undefined,
    };
    bar.end(
      `${result.callsPerSecond.toFixed(1)} calls/s in the storm; ${written.size === m ? "all" : `${written.size} of ${m}`} written`,
    );
    return result;
  } finally {
    if (stormOn) await ctx.stack.cloud.api.clearFaults().catch(() => {});
    await feed.close();
  }
}

/** The controller's seconds of rate limiter holds so far (0 without a limiter). */
async function heldSeconds(ctx: RunContext): Promise<number> {
  return (await ctx.controller.metrics()).sum(`${METRIC_PREFIX}rate_limiter_held_seconds_total`);
}
