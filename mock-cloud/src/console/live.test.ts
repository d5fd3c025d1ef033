/**
 * The console's list-then-watch loop (static/live.js, browser code run here in Node) against a real cloud
 * over HTTP. The network between them is a fetch wrapper the test controls: it can cut the open change
 * feeds and refuse new ones, like a flaky connection. Whatever happens, the loop's copy must end equal
 * to the cloud's listing, and it must say what it is doing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually, shapeBody, startTestCloud, TOKEN, type TestCloud } from "../test-support.ts";
import type { CloudOptions } from "../options.ts";
import type { Shape } from "../schemas.ts";
import { CloudClient } from "./static/api.js";
import { keepInSync, type SyncStatus } from "./static/live.js";
import { ShapeStore } from "./static/store.js";

/** A fetch whose change feeds the test can cut and refuse. */
class FlakyNetwork {
  /** While true, opening a change feed fails like a network error. */
  refuseWatches = false;
  /** How many change feeds were opened. */
  watchesOpened = 0;
  readonly #open = new Set<AbortController>();

  readonly fetch: typeof fetch = (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.includes("/v1/watch")) return fetch(input, init);
    if (this.refuseWatches) return Promise.reject(new TypeError("network down (test)"));
    const cut = new AbortController();
    this.#open.add(cut);
    this.watchesOpened++;
    const signals = [cut.signal, ...(init?.signal ? [init.signal] : [])];
    return fetch(input, { ...init, signal: AbortSignal.any(signals) });
  };

  /** Breaks every open change feed. */
  cutWatches(): void {
    for (const c of this.#open) c.abort(new TypeError("connection reset (test)"));
    this.#open.clear();
  }
}

/** A running loop and what it reported. */
interface Sync {
  readonly store: ShapeStore;
  readonly statuses: SyncStatus[];
  readonly network: FlakyNetwork;
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

let t: TestCloud;
let running: Sync[] = [];

async function startCloud(options: Partial<CloudOptions> = {}) {
  t = await startTestCloud({ heartbeatMs: 200, ...options });
}
beforeEach(() => {
  running = [];
});
afterEach(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await t.close();
});

function sync(token = TOKEN): Sync {
  const network = new FlakyNetwork();
  const client = new CloudClient({ baseUrl: t.url, token, fetch: network.fetch });
  const store = new ShapeStore();
  const statuses: SyncStatus[] = [];
  const abort = new AbortController();
  const done = keepInSync({
    client,
    store,
    signal: abort.signal,
    onChange: () => {},
    onStatus: (s) => statuses.push(s),
    firstDelayMs: 20,
    maxDelayMs: 200,
  });
  const s: Sync = {
    store,
    statuses,
    network,
    done,
    async stop() {
      abort.abort();
      await done;
    },
  };
  running.push(s);
  return s;
}

/** Every shape of the cloud, as the API lists it now. */
async function cloudShapes(): Promise<Shape[]> {
  const page = await t.api("get", "/v1/shapes?limit=1000").expect(200);
  return (page.body.items as Shape[]).sort((a, b) => a.name.localeCompare(b.name));
}

/** Waits until the loop's copy equals the cloud (ids, names, colors and revisions). */
async function converged(s: Sync, what: string) {
  const summary = (shapes: Shape[]) =>
    JSON.stringify(shapes.map((x) => [x.id, x.name, x.color, x.revision]).sort());
  let want = "";
  await eventually(
    async () => {
      want = summary(await cloudShapes());
      return summary(s.store.sorted()) === want;
    },
    `${what}: the console's copy equals the cloud (want ${want}, have ${summary(s.store.sorted())})`,
  );
}

const states = (s: Sync) => s.statuses.map((x) => x.state);

describe("keepInSync", () => {
  it("lists, then follows every create, change and delete through the change feed", async () => {
    await startCloud();
    const kept = await t.create(shapeBody("live.kept"));
    const s = sync();
    await eventually(() => states(s).includes("live"), "the loop to go live");
    expect(s.store.get(kept.id)).toEqual(kept);

    const added = await t.create(shapeBody("live.added", { color: "blue" }));
    await t.api("patch", `/v1/shapes/${kept.id}`).send({ color: "green" }).expect(200);
    await t.api("delete", `/v1/shapes/${added.id}`).expect(204);
    await converged(s, "after a create, a change and a delete");
    expect(s.store.get(kept.id)?.color).toBe("green");
    expect(s.network.watchesOpened).toBe(1); // all through one feed: nothing was listed again
  });

  it("resumes from its last revision after the connection breaks, missing nothing", async () => {
    await startCloud();
    const s = sync();
    await eventually(() => states(s).includes("live"), "the loop to go live");
    s.network.refuseWatches = true;
    s.network.cutWatches();
    await eventually(
      () => states(s).filter((x) => x === "retrying").length >= 2,
      "the loop to report the break, then a refused reconnection",
    );

    // Changes while the console is disconnected.
    const missed = await t.create(shapeBody("live.missed"));
    await t.api("patch", `/v1/shapes/${missed.id}`).send({ color: "pink" }).expect(200);

    s.network.refuseWatches = false;
    await converged(s, "after the connection came back");
    expect(s.store.get(missed.id)?.color).toBe("pink");
    const retries = s.statuses.flatMap((x) => (x.state === "retrying" ? [x.detail] : []));
    expect(retries[0]).toBe("cannot read the change feed: connection reset (test)");
    expect(retries[1]).toBe(
      "cannot watch the cloud: the cloud does not answer (TypeError: network down (test))",
    );
    expect(states(s).filter((x) => x === "listing")).toHaveLength(1); // resumed, not listed again
  });

  it("lists again when the history no longer reaches its revision (410)", async () => {
    await startCloud({ historyLimit: 3 });
    await t.create(shapeBody("live.before"));
    const s = sync();
    await eventually(() => states(s).includes("live"), "the loop to go live");
    s.network.refuseWatches = true;
    s.network.cutWatches();
    await eventually(() => states(s).includes("retrying"), "the loop to notice the break");

    // More changes than the history keeps: resuming from the old revision is impossible.
    const created: Shape[] = [];
    for (let i = 0; i < 5; i++) created.push(await t.create(shapeBody(`live.flood-${i}`)));
    await t.api("delete", `/v1/shapes/${created[0]!.id}`).expect(204);

    s.network.refuseWatches = false;
    await eventually(() => states(s).includes("relisting"), "the loop to relist after a 410");
    await converged(s, "after relisting");
    expect(s.statuses.find((x) => x.state === "relisting")).toMatchObject({
      detail: expect.stringContaining("list again"),
    });
    expect(states(s).filter((x) => x === "listing")).toHaveLength(2);
  });

  it("waits out an outage of the change feed, then catches up", async () => {
    await startCloud();
    const s = sync();
    await eventually(() => states(s).includes("live"), "the loop to go live");
    await t.admin("put", "/admin/faults").send({ path: "/v1/watch", outage: true }).expect(200);
    s.network.cutWatches();
    await eventually(
      () => s.statuses.some((x) => x.state === "retrying" && /503|unavailable|outage/i.test(x.detail)),
      "the loop to report the outage",
    );
    const during = await t.create(shapeBody("live.during-outage"));
    await t.admin("delete", "/admin/faults").expect(204);
    await converged(s, "after the outage");
    expect(s.store.get(during.id)).toBeDefined();
  });

  it("stops, saying why, when the token is refused", async () => {
    await startCloud();
    const s = sync("not-the-token");
    await s.done; // ends by itself: retrying cannot fix a wrong token
    expect(s.statuses).toEqual([
      { state: "listing" },
      {
        state: "unauthorized",
        detail: "cannot list shapes: cannot authenticate: the bearer token is not valid",
      },
    ]);
  });
});
