import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CoreMetrics } from "./metrics.ts";

describe("CoreMetrics", () => {
  it("exposes every core metric in Prometheus text, with its labels", async () => {
    const metrics = new CoreMetrics();
    metrics.reconciles.inc({ controller: "shape", result: "done" });
    metrics.reconcileDuration.observe({ controller: "shape" }, 0.2);
    metrics.queueDepth.set({ controller: "shape" }, 3);
    metrics.queueWait.observe({ controller: "shape" }, 0.05);
    metrics.externalRequests.inc({ verb: "list", status: "200" });
    metrics.externalRequests.inc({ verb: "create", status: "429" });
    metrics.kubeWrites.inc({ verb: "patch", resource: "shapes/status" });
    metrics.driftRepairs.inc();
    metrics.leaksRemoved.inc(2);
    metrics.foreignObjectsSeen.inc(4);
    metrics.informerRestarts.inc({ informer: "shapes" });
    metrics.leader.set(1);
    const limiter = metrics.rateLimiterHooks("cloud");
    limiter.onWait?.(0);
    limiter.onWait?.(1_500);
    limiter.onHold?.("retry-after", 2_000);
    limiter.onHold?.("outage", 250);

    const text = await metrics.text();
    for (const line of [
      "# TYPE controller_reconcile_total counter",
      'controller_reconcile_total{controller="shape",result="done"} 1',
      'controller_reconcile_duration_seconds_bucket{le="0.25",controller="shape"} 1',
      'controller_queue_depth{controller="shape"} 3',
      'controller_queue_wait_seconds_count{controller="shape"} 1',
      'controller_external_requests_total{verb="list",status="200"} 1',
      'controller_external_requests_total{verb="create",status="429"} 1',
      'controller_kube_writes_total{verb="patch",resource="shapes/status"} 1',
      "controller_drift_repairs_total 1",
      "controller_leaks_removed_total 2",
      "# TYPE controller_foreign_objects_seen_total counter",
      "controller_foreign_objects_seen_total 4",
      'controller_informer_restarts_total{informer="shapes"} 1',
      "controller_leader 1",
      'controller_rate_limiter_wait_seconds_bucket{le="0.001",limiter="cloud"} 1',
      'controller_rate_limiter_wait_seconds_count{limiter="cloud"} 2',
      'controller_rate_limiter_held_seconds_total{limiter="cloud",reason="retry-after"} 2',
      'controller_rate_limiter_held_seconds_total{limiter="cloud",reason="outage"} 0.25',
    ]) {
      expect(text).toContain(line);
    }
  });

  it("uses its own registry: two instances coexist and the global registry stays empty", async () => {
    const a = new CoreMetrics();
    const b = new CoreMetrics();
    a.driftRepairs.inc();
    expect(await a.text()).toContain("controller_drift_repairs_total 1");
    expect(await b.text()).toContain("controller_drift_repairs_total 0");
    expect(await globalRegistry.metrics()).not.toContain("controller_");
  });

  it.each([
    { reason: "a custom prefix names every metric", prefix: "shapes_", want: "shapes_leader 0" },
    { reason: "an empty prefix is allowed", prefix: "", want: "\nleader 0" },
  ])("$reason", async ({ prefix, want }) => {
    const text = await new CoreMetrics({ prefix }).text();
    expect(text).toContain(want);
    expect(text).not.toContain("controller_leader");
  });

  it("rejects a prefix Prometheus cannot parse", () => {
    expect(() => new CoreMetrics({ prefix: "my-controller" })).toThrow(/^cannot use metric prefix/);
  });

  it("adds process metrics only when asked", async () => {
    expect(await new CoreMetrics().text()).not.toContain("process_cpu");
    expect(await new CoreMetrics({ processMetrics: true }).text()).toContain(
      "controller_process_cpu_seconds_total",
    );
  });
});
