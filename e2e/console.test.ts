/**
 * Scenario: the cloud console (mock-cloud/src/console/) in a real browser. Headless Chromium (Debian's,
 * driven by playwright-core) opens the console of a real stack's cloud while a real controller runs, and
 * a person's clicks are checked against the cloud and the cluster:
 *
 * - every shape is drawn, ours and foreign; hostile tags are shown as text and run nothing;
 * - the page follows changes made through the API, live (it lists once, then only the change feed);
 * - deleting one of OUR shapes with its button leads to a visible repair by the controller;
 * - the create form, the recolor menu and the fault switches do what they say, and errors are shown.
 *
 * A screenshot of the console is kept in e2e/artifacts/console/ (git-ignored).
 */
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { cloudNameOf } from "@shapes/controller";
import {
  CLOUD_ADMIN_TOKEN,
  CLOUD_TOKEN,
  type FaultRule,
  launchChromium,
  type Misbehaviour,
  requireChromium,
  type Stack,
  waitConverged,
  waitFor,
  watchMisbehaviour,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/** Opens a tab that records its misbehaviour, and every list request it sends. */
async function newTab(browser: Browser): Promise<{ page: Page; seen: Misbehaviour; lists: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const seen = watchMisbehaviour(page);
  const lists: string[] = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname === "/v1/shapes" && r.method() === "GET") lists.push(r.url());
  });
  // Init scripts run before the page's own, outside its CSP: a spy for violations (the page would report
  // one if it tried anything its policy forbids, injected code included).
  await page.addInitScript({ content: SPY_ON_VIOLATIONS });
  return { page, seen, lists };
}

/*
 * Code that runs IN the page is written as strings: this file is typechecked as Node code, without the DOM.
 */

/** Records the page's Content-Security-Policy violations in `window.__violations`. */
const SPY_ON_VIOLATIONS = `
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (e) =>
    window.__violations.push(e.violatedDirective + " " + e.blockedURI));
`;

/** What each card shows (see Card). */
const READ_CARDS = `[...document.querySelectorAll("#shapes > li.shape")].map((li) => ({
  id: li.dataset.id,
  name: li.querySelector(".name")?.textContent ?? "",
  type: li.dataset.type,
  color: li.dataset.color,
  revision: Number(li.dataset.revision),
  owner: li.dataset.owner,
  k8sName: li.querySelector(".k8s-name")?.textContent ?? null,
  drawn: [...li.querySelectorAll("svg > :not(title)")].map((n) => n.tagName.toLowerCase()),
  fill: li.querySelector("svg .outline")?.getAttribute("fill") ?? null,
}))`;

/** The console's tokens in the URL fragment (never sent to the server). */
const consoleUrl = (cloudUrl: string) =>
  `${cloudUrl}/#token=${encodeURIComponent(CLOUD_TOKEN)}&admin=${encodeURIComponent(CLOUD_ADMIN_TOKEN)}`;

/** Waits until the page's change feed is connected. */
async function waitLive(page: Page): Promise<void> {
  await page.locator('#connection[data-state="live"]').waitFor({ timeout: 60_000 });
}

/** What one card on the page shows. */
interface Card {
  id: string;
  name: string;
  type: string;
  color: string;
  revision: number;
  owner: string;
  k8sName: string | null;
  drawn: string[];
  fill: string | null;
}

/** Every card on the page, as the page shows it. */
function cards(page: Page): Promise<Card[]> {
  return page.evaluate<Card[]>(READ_CARDS);
}

/** The page's card of the cloud shape `name`, once it shows what `check` wants. */
function waitCard(page: Page, what: string, name: string, check: (card: Card) => void): Promise<Card> {
  return waitFor(what, async () => {
    const card = (await cards(page)).find((c) => c.name === name);
    expect(card, `a card for ${name}`).toBeDefined();
    check(card!);
    return card!;
  });
}

/** The activity lines, newest first. */
function activity(page: Page): Promise<string[]> {
  return page.locator("#activity > li").allTextContents();
}

/** Waits for an activity line matching `pattern` (a string: the end of the line), and returns it. */
function waitActivity(page: Page, what: string, pattern: RegExp | string): Promise<string> {
  const matches = (line: string) =>
    typeof pattern === "string" ? line.endsWith(pattern) : pattern.test(line);
  return waitFor(what, async () => {
    const lines = await activity(page);
    const line = lines.find(matches);
    expect(line, `an activity line matching ${String(pattern)} in ${JSON.stringify(lines)}`).toBeDefined();
    return line!;
  });
}

/** The cloud's fault rules, read with the admin token. */
async function faultRules(cloudUrl: string): Promise<FaultRule[]> {
  const res = await fetch(`${cloudUrl}/admin/faults`, {
    headers: { authorization: `Bearer ${CLOUD_ADMIN_TOKEN}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { rules: FaultRule[] }).rules;
}

/** The drawing each type must get. */
const OUTLINE_OF: Record<string, string> = {
  square: "rect",
  circle: "circle",
  triangle: "polygon",
  hexagon: "polygon",
};

describe("the cloud console in a browser", () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  let seen: Misbehaviour;
  let lists: string[];
  let ns: string;

  beforeAll(async () => {
    requireChromium("run the console's browser tests"); // before anything starts: a missing browser fails at once
    stack = await startStack("console");
    await stack.startController();
    ns = await stack.kube.createNamespace("console");
    browser = await launchChromium("run the console's browser tests");
    ({ page, seen, lists } = await newTab(browser));
    await page.goto(consoleUrl(stack.cloud.url));
    await waitLive(page);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  test("asks for the token, shows why a wrong one is refused, and keeps tokens out of the address bar", async () => {
    const tab = await newTab(browser);
    try {
      await tab.page.goto(`${stack.cloud.url}/`);
      await tab.page.locator("#login").waitFor();
      await tab.page.fill("#login-token", "not-the-token");
      await tab.page.click("#login button[type=submit]");
      await waitFor("the refusal to be shown", async () => {
        expect(await tab.page.textContent("#login-error")).toBe(
          "cannot list shapes: cannot authenticate: the bearer token is not valid",
        );
        expect(await tab.page.isVisible("#login")).toBe(true);
      });

      await tab.page.fill("#login-token", CLOUD_TOKEN);
      await tab.page.fill("#login-admin", CLOUD_ADMIN_TOKEN);
      await tab.page.click("#login button[type=submit]");
      await waitLive(tab.page);
      expect(await tab.page.isVisible("#login")).toBe(false);
      // The fault switches use the admin token: they show the rules, not a 401.
      await waitFor("the fault rules to be read", async () => {
        expect(await tab.page.textContent("#fault-rules")).toBe("No rules: a well-behaved cloud.");
      });

      expect(tab.seen.problems).toEqual([]);
      // The main tab was opened with the tokens in the URL fragment: the page took them out of it.
      expect(page.url()).toBe(`${stack.cloud.url}/`);
    } finally {
      await tab.page.close();
    }
  });

  test("draws every shape, ours and foreign; hostile tags are text, and no script runs", async () => {
    await stack.kube.applyShape(ns, "red-square", { type: "square", color: "red" });
    await stack.kube.applyShape(ns, "blue-circle", { type: "circle", color: "blue", size: 4 });
    await waitConverged(stack, ns, "red-square");
    await waitConverged(stack, ns, "blue-circle");
    await stack.cloud.create({ name: "other.triangle", type: "triangle", color: "green", tags: {} });
    await stack.cloud.create({ name: "other.white", type: "hexagon", color: "white", tags: {} });
    const hostileName = '<img src=x onerror="window.__pwned=1">';
    const hostileNote = '"><script>window.__pwned=2</script><b>bold</b>';
    await stack.cloud.create({
      name: "other.hostile",
      type: "hexagon",
      color: "pink",
      // another system's owner tag (not the controller's, so it leaves the shape alone)
      tags: { owner: "<b>someone-else</b>", "k8s-name": hostileName, note: hostileNote },
    });

    const cloud = await stack.cloud.list();
    const shown = await waitFor("the page to show every cloud shape", async () => {
      const now = await cards(page);
      expect(now.map((c) => [c.id, c.revision]).sort()).toEqual(cloud.map((s) => [s.id, s.revision]).sort());
      return now;
    });
    for (const s of cloud) {
      const card = shown.find((c) => c.id === s.id)!;
      expect(card, s.name).toMatchObject({
        name: s.name,
        type: s.type,
        color: s.color,
        owner: s.tags.owner === undefined ? "foreign" : "ours",
        k8sName: s.tags.owner === undefined ? null : (s.tags["k8s-name"] ?? "(no k8s-name tag)"),
        drawn: [OUTLINE_OF[s.type]],
      });
      expect(card.fill, `${s.name} is filled`).toMatch(/^#[0-9a-f]{6}$/);
    }
    expect(shown.find((c) => c.name === cloudNameOf(ns, "red-square"))?.k8sName).toBe(`${ns}/red-square`);
    expect(new Set(shown.map((c) => c.fill)).size).toBe(new Set(cloud.map((s) => s.color)).size);

    // The hostile tags are on the page as plain text...
    const hostile = page.locator('li.shape[data-name="other.hostile"]');
    expect(await hostile.locator(".k8s-name").textContent()).toBe(hostileName);
    expect(await hostile.locator(".owner-id").textContent()).toBe(" · owner <b>someone-else</b>");
    await hostile.locator("details.tags summary").click();
    expect(await hostile.locator("dd").allTextContents()).toContain(hostileNote);
    // ...and became no element, and ran nothing.
    expect(await page.locator("#shapes img, #shapes script, #shapes b").count()).toBe(0);
    expect(await page.evaluate<string>("typeof window.__pwned")).toBe("undefined");
    expect(await page.evaluate<string[]>("window.__violations")).toEqual([]);
    expect(seen.problems).toEqual([]);
  });

  test("follows creates, changes and deletes made through the API, live", async () => {
    const listsBefore = lists.length;
    // A card whose shape does not change must stay the very same element (not redrawn).
    const bystander = `document.querySelector('li.shape[data-name="other.triangle"]')`;
    expect(await page.evaluate<boolean>(`(window.__bystander = ${bystander}) !== null`)).toBe(true);
    const created = await stack.cloud.create({ name: "live.one", type: "square", color: "yellow", tags: {} });
    await waitCard(page, "the new shape to appear", "live.one", (c) => {
      expect(c).toMatchObject({ id: created.id, color: "yellow", owner: "foreign" });
    });

    const recolored = await stack.cloud.patch(created.id, { color: "purple" });
    await waitCard(page, "the shape to turn purple", "live.one", (c) => {
      expect(c).toMatchObject({ color: "purple", revision: recolored.revision });
    });

    await stack.cloud.delete(created.id);
    await waitFor("the shape to disappear", async () => {
      expect((await cards(page)).map((c) => c.name)).not.toContain("live.one");
    });
    expect(lists.length).toBe(listsBefore); // all of it came through the change feed, not a new listing
    expect(await page.evaluate<boolean>(`window.__bystander === ${bystander}`)).toBe(true);
    expect(seen.problems).toEqual([]);
  });

  test("the Delete button on one of OUR shapes: the controller creates it again, and the page shows it", async () => {
    await stack.kube.applyShape(ns, "phoenix", { type: "hexagon", color: "orange" });
    const before = await waitConverged(stack, ns, "phoenix");
    const name = cloudNameOf(ns, "phoenix");
    await waitCard(page, "our shape to be shown", name, (c) => expect(c.id).toBe(before.cloud.id));

    await page.click(`button[aria-label="Delete ${name}"]`);
    await waitActivity(page, "the delete to be reported", ` deleted ${name}`);

    const repaired = await waitCard(page, "the controller's new shape to be shown", name, (c) => {
      expect(c.id).not.toBe(before.cloud.id);
      expect(c).toMatchObject({ type: "hexagon", color: "orange", owner: "ours", k8sName: `${ns}/phoenix` });
    });
    const after = await waitConverged(stack, ns, "phoenix");
    expect(after.cloud.id).toBe(repaired.id);
    expect(await stack.cloud.get(before.cloud.id)).toBeUndefined();

    await page.screenshot({ path: join(stack.artifactsDir, "console.png"), fullPage: true });
    expect(seen.problems).toEqual([]);
  });

  test("recoloring one of OUR shapes in the page is repaired back by the controller", async () => {
    await stack.kube.applyShape(ns, "steady", { type: "triangle", color: "blue" });
    const before = await waitConverged(stack, ns, "steady");
    const name = cloudNameOf(ns, "steady");
    await waitCard(page, "our shape to be shown", name, (c) =>
      expect(c.revision).toBe(before.cloud.revision),
    );

    await page.selectOption(`select[aria-label="Recolor ${name}"]`, "yellow");
    await waitActivity(page, "the recolor to be reported", /recolored .* to yellow$/);
    // Two writes later (ours, then the controller's repair), the page shows the spec's color again.
    await waitCard(page, "the repaired color to be shown", name, (c) => {
      expect(c).toMatchObject({ color: "blue" });
      expect(c.revision).toBeGreaterThanOrEqual(before.cloud.revision + 2);
    });
    const repairs = (await stack.kube.eventsFor(ns, "steady")).filter(
      (e) => e.reason === "RepairedCloudShapeDrift",
    );
    expect(repairs.map((e) => e.message)).toEqual([expect.stringContaining('color: "yellow" → "blue"')]);
  });

  test("the create form makes a foreign shape, and shows the cloud's reason when it cannot", async () => {
    await page.fill("#create-name", "made.in-the-console");
    await page.selectOption("#create-type", "circle");
    await page.selectOption("#create-color", "green");
    await page.click("#create button[type=submit]");
    await waitCard(page, "the created shape to be shown", "made.in-the-console", (c) => {
      expect(c).toMatchObject({ type: "circle", color: "green", owner: "foreign" });
    });
    const created = await stack.cloud.byName("made.in-the-console");
    expect(created).toMatchObject({ type: "circle", color: "green", tags: {} });

    // The same name again: the cloud's 409 detail, on the page.
    await page.click("#create button[type=submit]");
    await waitActivity(
      page,
      "the conflict to be reported",
      /cannot create made\.in-the-console: cannot use name "made\.in-the-console": shape shp_\w+ already has it$/,
    );
    await page.fill("#create-name", "Not A Name");
    await page.click("#create button[type=submit]");
    await waitActivity(page, "the invalid name to be reported", /cannot create Not A Name: .*name/);
    expect(await page.locator("#activity li.error").count()).toBeGreaterThanOrEqual(2);
  });

  test("the fault switches set /admin/faults, keep other tools' rules, and errors show while they are on", async () => {
    const url = stack.cloud.url;
    const theirs: FaultRule = { method: "PUT", path: "/v1/shapes/:id", errorRate: 0.5 };
    await stack.cloud.setFaults([theirs]);
    try {
      await waitFor("the page to show the rules set by another tool", async () => {
        expect(await page.textContent("#fault-rules")).toContain('"errorRate":0.5');
      });

      await page.check("#fault-outage");
      await waitFor("an outage rule", async () =>
        expect(await faultRules(url)).toEqual([theirs, { outage: true }]),
      );
      await waitActivity(page, "the outage to be reported", /outage on/);
      // An action during the outage: the cloud's 503 detail is shown.
      const foreign = (await cards(page)).find((c) => c.owner === "foreign")!;
      await page.click(`button[aria-label="Delete ${foreign.name}"]`);
      await waitActivity(page, "the outage error to be shown", /cannot delete .*: .*outage/);
      await page.uncheck("#fault-outage");
      await waitFor("no outage rule", async () => expect(await faultRules(url)).toEqual([theirs]));

      await page.fill("#latency-ms", "250");
      await page.check("#fault-latency");
      await waitFor("a latency rule", async () =>
        expect(await faultRules(url)).toEqual([theirs, { latencyMs: 250 }]),
      );
      await page.fill("#throttle-rate", "0.25");
      await page.check("#fault-throttling");
      await waitFor("a throttling rule", async () =>
        expect(await faultRules(url)).toEqual([theirs, { latencyMs: 250 }, { throttleRate: 0.25 }]),
      );
      await waitActivity(
        page,
        "the throttling to be reported",
        /throttling on: 0\.25 of API calls answer 429/,
      );

      await page.uncheck("#fault-latency");
      await page.uncheck("#fault-throttling");
      await waitFor("only the other tool's rule left", async () =>
        expect(await faultRules(url)).toEqual([theirs]),
      );
      expect(await page.isChecked("#fault-outage")).toBe(false);
    } finally {
      await stack.cloud.clearFaults();
    }
    expect(seen.problems).toEqual([]);
  });
});
