/**
 * A plugin that talks to no cloud hears no "cloud" from the library: the reasons of its Events and conditions
 * (the library's own and those built from its noun), the messages of a drift repair, and the names of the
 * core metrics it exports.
 */
import { describe, expect, it } from "vitest";
import { CoreMetrics } from "./observability/metrics.ts";
import { Reason, reasonsFor } from "./reconcile/status.ts";
import { ExternalResourceReconciler } from "./reconcile/reconciler.ts";
import { converged, settled } from "./reconcile/reconciler-rows.test-support.ts";
import { WidgetWorld, type Item, type Widget } from "./testing/fake-plugin.ts";

describe("the library's words for a non-cloud plugin (the fake Widget plugin, noun Item)", () => {
  it.each([
    { reason: "the library's own reasons", words: Object.values(Reason) },
    { reason: "the reasons built from the plugin's noun", words: Object.values(reasonsFor("Item")) },
  ])("$reason name no cloud", ({ words }) => {
    expect(words.filter((w) => /cloud/i.test(w))).toEqual([]);
  });

  it("a drift repair's Event names the plugin's noun, not the cloud, in its reason and message", async () => {
    const world = new WidgetWorld();
    const widget = converged(world, settled(), { size: 7 });
    world.resourceObjects.set("default/foo", widget);
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: (k) => (k === "default/foo" ? widget : undefined), list: () => [] },
    });
    await reconciler.reconcile("default/foo", new AbortController().signal);
    expect(world.events.map((e) => e.reason)).toEqual(["RepairedItemDrift"]);
    expect(world.events.filter((e) => /cloud/i.test(`${e.reason} ${e.message}`))).toEqual([]);
  });

  it("the core metrics' names name no cloud", async () => {
    const names = (await new CoreMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names).toContain("controller_external_requests_total");
    expect(names.filter((n) => /cloud/i.test(n))).toEqual([]);
  });
});
