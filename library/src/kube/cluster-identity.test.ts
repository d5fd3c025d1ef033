/**
 * The cluster identity (the kube-system namespace's uid) and the owner id derived from it: read over
 * client-node's CoreV1Api and over the lean client (the same table for both), and retried until known.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { ownerIdOf, readClusterId, waitForClusterId } from "./cluster-identity.ts";
import { KubeHttp } from "./kube-http.ts";
import { kubeConnectionOf } from "./kubeconfig.ts";

const UID = "3f6c2a1e-7d4b-4c8e-9a51-0b2d6e8f4a17";

describe("ownerIdOf", () => {
  const cases: { reason: string; clusterId: string; expected: string | RegExp }[] = [
    { reason: "a uid, with the readable prefix", clusterId: UID, expected: `k8s-${UID}` },
    {
      reason: "upper case folded (tag values compare exactly)",
      clusterId: UID.toUpperCase(),
      expected: `k8s-${UID}`,
    },
    {
      reason: "characters no tag value should carry are dropped",
      clusterId: "a b/c:d",
      expected: "k8s-abcd",
    },
    {
      reason: "nothing usable: refused, never an empty id",
      clusterId: " /:",
      expected: /cannot derive an owner id/,
    },
    { reason: "too long for a tag value: refused", clusterId: "a".repeat(60), expected: /cannot derive/ },
  ];
  it.each(cases)("$reason", ({ clusterId, expected }) => {
    if (typeof expected === "string") expect(ownerIdOf(clusterId)).toBe(expected);
    else expect(() => ownerIdOf(clusterId)).toThrow(expected);
  });

  it("gives two clusters two ids, and one cluster always the same", () => {
    expect(ownerIdOf(UID)).toBe(ownerIdOf(UID));
    expect(ownerIdOf(UID)).not.toBe(ownerIdOf("9b1d0c55-2e4f-4a6b-8c7d-1e2f3a4b5c6d"));
  });
});

describe.each([{ reason: "the library's client (KubeHttp)" }])(
  "readClusterId over $reason, against an HTTP server that answers as kube-apiserver would",
  () => {
    let server: Server | undefined;
    const https: KubeHttp[] = [];
    /** What readClusterId is given: the library's client on the KubeConfig. */
    const through = (kc: KubeConfig): KubeHttp => {
      const http = new KubeHttp(kubeConnectionOf(kc));
      https.push(http);
      return http;
    };
    afterEach(async () => {
      await Promise.all(https.splice(0).map((http) => http.close()));
      server?.closeAllConnections();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    });

    /** A server answering GET /api/v1/namespaces/kube-system with `status` and `body`. */
    async function kubeConfigFor(
      status: number,
      body: unknown,
    ): Promise<{ kc: KubeConfig; paths: string[] }> {
      const paths: string[] = [];
      server = createServer((req, res) => {
        paths.push(`${req.method} ${req.url}`);
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      });
      await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
      const { port } = server.address() as AddressInfo;
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: "u" }],
        contexts: [{ name: "c", cluster: "c", user: "u" }],
        currentContext: "c",
      });
      return { kc, paths };
    }

    const status = (code: number, reason: string) => ({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      code,
      reason,
    });
    const cases: { reason: string; status: number; body: unknown; expected: string | RegExp }[] = [
      {
        reason: "the kube-system namespace's uid",
        status: 200,
        body: { kind: "Namespace", apiVersion: "v1", metadata: { name: "kube-system", uid: UID } },
        expected: UID,
      },
      {
        reason: "403: says which grant is missing, and the way out",
        status: 403,
        body: status(403, "Forbidden"),
        expected: /cannot read the cluster identity: .*403.*"get" on namespaces\/kube-system.*--owner-id/,
      },
      {
        reason: "404: no kube-system namespace (not a usual cluster)",
        status: 404,
        body: status(404, "NotFound"),
        expected: /cannot read the cluster identity: namespace kube-system does not exist.*--owner-id/,
      },
      {
        reason: "an answer without a uid is no identity",
        status: 200,
        body: { kind: "Namespace", metadata: { name: "kube-system" } },
        expected: /cannot read the cluster identity: namespace kube-system has no uid/,
      },
      {
        reason: "a server error says its code",
        status: 500,
        body: status(500, "InternalError"),
        expected: /cannot read the cluster identity: HTTP 500/,
      },
    ];
    it.each(cases)("$reason", async ({ status: code, body, expected }) => {
      const { kc, paths } = await kubeConfigFor(code, body);
      const read = readClusterId(through(kc));
      if (typeof expected === "string") await expect(read).resolves.toBe(expected);
      else await expect(read).rejects.toThrow(expected);
      expect(paths).toEqual(["GET /api/v1/namespaces/kube-system"]);
    });

    it("no API server at all: a 'cannot' error, never a guess", async () => {
      const { kc } = await kubeConfigFor(200, {});
      server?.closeAllConnections();
      await new Promise<void>((resolve) => server?.close(() => resolve()));
      server = undefined;
      await expect(readClusterId(through(kc))).rejects.toThrow(/^cannot read the cluster identity: /);
    });
  },
);

describe("waitForClusterId", () => {
  it("retries with a doubling delay until the identity can be read, reporting each failure", async () => {
    const answers = [new Error("cannot read the cluster identity: 403"), new Error("still 403"), UID];
    const errors: [string, number][] = [];
    const id = await waitForClusterId(
      () => {
        const next = answers.shift();
        return next instanceof Error ? Promise.reject(next) : Promise.resolve(next ?? "");
      },
      {
        signal: new AbortController().signal,
        onError: (err, retryInMs) => errors.push([err.message, retryInMs]),
        baseDelayMs: 1,
        maxDelayMs: 2,
      },
    );
    expect(id).toBe(UID);
    expect(errors).toEqual([
      ["cannot read the cluster identity: 403", 1],
      ["still 403", 2],
    ]);
  });

  it("gives up only when stopped, with no identity (the caller then writes nothing)", async () => {
    const stop = new AbortController();
    let tries = 0;
    const id = await waitForClusterId(
      () => {
        tries += 1;
        if (tries === 3) stop.abort();
        return Promise.reject(new Error("cannot read the cluster identity: down"));
      },
      { signal: stop.signal, onError: () => {}, baseDelayMs: 1, maxDelayMs: 1 },
    );
    expect(id).toBeUndefined();
    expect(tries).toBe(3);
  });
});
