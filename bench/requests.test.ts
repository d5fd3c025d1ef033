import { describe, expect, test } from "vitest";
import {
  byNameReadsOf,
  cloudRequestCountsOf,
  diffCounts,
  requestCountsOf,
  resourceOf,
  subtractCounts,
  total,
  verbOf,
  WRITE_VERBS,
} from "./requests.ts";

// Lines as kube-apiserver v1.36 writes them (labels in alphabetical order), plus noise the parser must skip.
const APISERVER = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="shapes.example.com",resource="shaperefs",scope="resource",subresource="",verb="POST",version="v1alpha1"} 12
apiserver_request_total{code="409",component="apiserver",dry_run="",group="shapes.example.com",resource="shaperefs",scope="resource",subresource="",verb="POST",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="shapes.example.com",resource="shapes",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 40
apiserver_request_duration_seconds_bucket{le="0.005",resource="shapes",verb="PATCH"} 99
`;

const CLOUD = `# TYPE cloud_http_requests_total counter
cloud_http_requests_total{route="/v1/shapes",method="POST",status="201"} 10
cloud_http_requests_total{route="/v1/shapes",method="POST",status="409"} 2
cloud_http_requests_total{route="/v1/shapes/:id",method="PATCH",status="200"} 4
cloud_http_requests_total{route="/metrics",method="GET",status="200"} 9
cloud_http_requests_total{route="/admin/requests",method="GET",status="200"} 1
cloud_http_requests_total{route="unmatched",method="GET",status="404"} 1
`;

describe("requestCountsOf (kube-apiserver)", () => {
  test("sums every status code by verb and resource/subresource, skipping non-resource requests and other metrics", () => {
    expect(requestCountsOf(APISERVER)).toEqual({
      "POST shaperefs": 13,
      "PATCH shapes/status": 7,
      "PUT leases": 40,
    });
  });
});

describe("cloudRequestCountsOf", () => {
  test("sums by method and route for the API only (/metrics, /admin and unmatched are not API calls)", () => {
    expect(cloudRequestCountsOf(CLOUD)).toEqual({ "POST /v1/shapes": 12, "PATCH /v1/shapes/:id": 4 });
  });
});

describe("count arithmetic", () => {
  test("diffCounts keeps only what moved, including keys new in `after`", () => {
    expect(diffCounts({ "GET a": 1, "PUT b": 5 }, { "GET a": 1, "PUT b": 7, "POST c": 2 })).toEqual({
      "PUT b": 2,
      "POST c": 2,
    });
  });

  test("subtractCounts takes the bench's own requests out and drops zeroes", () => {
    expect(
      subtractCounts({ "POST shapes": 100, "PATCH shapes": 100 }, { "POST shapes": 100, "WATCH shapes": 1 }),
    ).toEqual({
      "PATCH shapes": 100,
      "WATCH shapes": -1,
    });
  });

  test("total sums the keys a filter keeps", () => {
    const counts = { "POST shaperefs": 3, "PATCH shapes/status": 2, "LIST shapes": 1 };
    expect(total(counts)).toBe(6);
    expect(total(counts, (k) => WRITE_VERBS.has(verbOf(k)))).toBe(5);
  });

  test.each([
    { reason: "a plain resource", key: "POST shaperefs", verb: "POST", resource: "shaperefs" },
    {
      reason: "a subresource belongs to its resource",
      key: "PATCH shapes/status",
      verb: "PATCH",
      resource: "shapes",
    },
    { reason: "a cloud route", key: "GET /v1/shapes", verb: "GET", resource: "" },
  ])("verbOf and resourceOf: $reason", ({ key, verb, resource }) => {
    expect(verbOf(key)).toBe(verb);
    expect(resourceOf(key)).toBe(resource);
  });
});

describe("byNameReadsOf", () => {
  test("counts the cloud's GETs by name, and those it answered 404, of no other route or method", () => {
    const text = [
      'cloud_http_requests_total{route="/v1/shapes/by-name/:name",method="GET",status="200"} 3',
      'cloud_http_requests_total{route="/v1/shapes/by-name/:name",method="GET",status="404"} 5',
      'cloud_http_requests_total{route="/v1/shapes/:id",method="GET",status="404"} 7',
      'cloud_http_requests_total{route="/v1/shapes/by-name/:name",method="HEAD",status="404"} 11',
    ].join("\n");
    expect(byNameReadsOf(text)).toEqual({ total: 8, notFound: 5 });
  });
});
