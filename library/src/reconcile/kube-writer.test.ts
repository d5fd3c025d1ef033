/**
 * The live reads an uninstall check makes (reconcile/uninstall.ts), against a TLS stub of the API server:
 * the resource's own CRD by its name `<plural>.<group>` (a plain GET: a consistent read), and an intent
 * record with the time the API server created it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTlsApiStub, type TlsApiStub } from "@shapes/envtest";
import { aWidget, widgetPlugin, FakeItemApi, type Widget } from "../testing/fake-plugin.ts";
import { KubeHttp } from "../kube/kube-http.ts";
import { kubeConnectionOf } from "../kube/kubeconfig.ts";
import { KubeResourceWriter } from "./kube-writer.ts";

let api: TlsApiStub;
const seen: string[] = [];
/** What the stub answers, by request path: status and body; anything else is a 404. */
const answers = new Map<string, { status: number; body: unknown }>();

beforeAll(async () => {
  api = await startTlsApiStub((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const answer = answers.get(req.url ?? "") ?? {
      status: 404,
      body: { kind: "Status", reason: "NotFound", message: "not found" },
    };
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  });
});
afterAll(() => api.close());

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.example.com";

function writer(): { kube: KubeResourceWriter<Widget>; http: KubeHttp } {
  const http = new KubeHttp(kubeConnectionOf(api.kubeConfig()));
  return { kube: new KubeResourceWriter<Widget>(http, widgetPlugin(new FakeItemApi()).resource), http };
}

describe("KubeResourceWriter: the reads of an uninstall check", () => {
  it.each([
    {
      reason: "a CRD being deleted: its name, uid, creation and deletion times",
      answer: {
        status: 200,
        body: {
          kind: "CustomResourceDefinition",
          metadata: {
            name: "widgets.test.example.com",
            uid: "crd-1",
            creationTimestamp: "2026-01-01T00:00:00Z",
            deletionTimestamp: "2026-02-01T00:00:00Z",
          },
        },
      },
      expected: {
        name: "widgets.test.example.com",
        uid: "crd-1",
        createdAt: "2026-01-01T00:00:00Z",
        deletingSince: "2026-02-01T00:00:00Z",
      },
    },
    {
      reason: "a CRD not being deleted: no deletingSince",
      answer: {
        status: 200,
        body: { metadata: { uid: "crd-1", creationTimestamp: "2026-01-01T00:00:00Z" } },
      },
      expected: { name: "widgets.test.example.com", uid: "crd-1", createdAt: "2026-01-01T00:00:00Z" },
    },
    { reason: "a CRD that is gone (404): undefined", answer: undefined, expected: undefined },
  ])("readDefinition: $reason", async ({ answer, expected }) => {
    const { kube, http } = writer();
    seen.length = 0;
    answers.clear();
    if (answer) answers.set(CRD_PATH, answer);
    try {
      expect(await kube.readDefinition()).toEqual(expected);
      // One plain GET by the CRD's name (no resourceVersion: a consistent read, never the watch cache).
      expect(seen).toEqual([`GET ${CRD_PATH}`]);
    } finally {
      await http.close();
    }
  });

  it("readDefinition: a refusal (403) is thrown with its status, never read as absent", async () => {
    const { kube, http } = writer();
    answers.clear();
    answers.set(CRD_PATH, { status: 403, body: { kind: "Status", reason: "Forbidden", message: "no" } });
    try {
      await expect(kube.readDefinition()).rejects.toMatchObject({ code: 403 });
    } finally {
      await http.close();
    }
  });

  it("readIntent: the record as the plugin reads it, with the API server's creation time", async () => {
    const { kube, http } = writer();
    answers.clear();
    const widget = aWidget();
    answers.set("/apis/test.example.com/v1/widgetrefs/default.foo", {
      status: 200,
      body: {
        metadata: { name: "default.foo", uid: "ref-1", creationTimestamp: "2026-01-15T00:00:00Z" },
        spec: {
          widget: { namespace: "default", name: "foo", uid: widget.metadata.uid },
          itemName: "default.foo",
          deletionPolicy: "Delete",
        },
      },
    });
    try {
      expect(await kube.readIntent("default.foo")).toMatchObject({
        name: "default.foo",
        uid: "ref-1",
        deletionPolicy: "Delete",
        createdAt: "2026-01-15T00:00:00Z",
      });
    } finally {
      await http.close();
    }
  });
});
