/**
 * The API server as the health server's reviewer, against a TLS stub of it: what a TokenReview and a
 * SubjectAccessReview send and how their answers are read; and when `--metrics-auth=auto` asks for tokens.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTlsApiStub, type TlsApiStub } from "@shapes/envtest";
import { isInClusterConfig, KubeAccessReviewer, metricsAuthEnabled } from "./access-review.ts";
import { kubeConnectionOf, loadKubeconfig } from "./kubeconfig.ts";

let api: TlsApiStub;
const seen: { url: string; body: unknown }[] = [];
/** The next answer. */
let answer: { status: number; body: unknown } = { status: 201, body: {} };

beforeAll(async () => {
  api = await startTlsApiStub((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ url: req.url ?? "", body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown });
      res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
    });
  });
});
afterAll(() => api.close());

async function review<T>(call: (reviewer: KubeAccessReviewer) => Promise<T>, reply: typeof answer) {
  seen.length = 0;
  answer = reply;
  const reviewer = new KubeAccessReviewer(kubeConnectionOf(api.kubeConfig()));
  try {
    return await call(reviewer);
  } finally {
    await reviewer.close();
  }
}

describe("KubeAccessReviewer", () => {
  it.each([
    {
      reason: "an authenticated token gives its user, groups, uid and extra",
      status: {
        authenticated: true,
        user: {
          username: "system:serviceaccount:team-a:viewer",
          uid: "u-1",
          groups: ["system:serviceaccounts"],
          extra: { "authentication.kubernetes.io/pod-name": ["p"] },
        },
      },
      want: {
        authenticated: true,
        user: {
          username: "system:serviceaccount:team-a:viewer",
          uid: "u-1",
          groups: ["system:serviceaccounts"],
          extra: { "authentication.kubernetes.io/pod-name": ["p"] },
        },
      },
    },
    {
      reason: "a refused token gives the API server's error",
      status: { authenticated: false, error: "token has expired" },
      want: { authenticated: false, error: "token has expired" },
    },
    {
      reason: "authenticated without a user name counts as refused",
      status: { authenticated: true, user: {} },
      want: { authenticated: false },
    },
    { reason: "an empty status is refused", status: undefined, want: { authenticated: false } },
  ])("reviews a token: $reason", async ({ status, want }) => {
    const got = await review((r) => r.reviewToken("t0ken"), { status: 201, body: { status } });
    expect(got).toEqual(want);
    expect(seen).toEqual([
      {
        url: "/apis/authentication.k8s.io/v1/tokenreviews",
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token: "t0ken" } },
      },
    ]);
  });

  it.each([
    { reason: "allowed", status: { allowed: true }, want: { allowed: true } },
    {
      reason: "denied, with the authorizer's reason",
      status: { allowed: false, reason: "no RBAC policy matched" },
      want: { allowed: false, reason: "no RBAC policy matched" },
    },
    {
      reason: "an evaluation error is a denial that says so",
      status: { allowed: false, evaluationError: "webhook down" },
      want: { allowed: false, reason: "webhook down" },
    },
  ])("reviews an access: $reason", async ({ status, want }) => {
    const user = { username: "viewer", uid: "u-1", groups: ["g"], extra: { k: ["v"] } };
    const attributes = {
      resourceAttributes: {
        verb: "get",
        group: "shapes.example.com",
        resource: "shapes",
        namespace: "a",
        name: "b",
      },
    };
    const got = await review((r) => r.reviewAccess(user, attributes), { status: 201, body: { status } });
    expect(got).toEqual(want);
    expect(seen).toEqual([
      {
        url: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: { user: "viewer", uid: "u-1", groups: ["g"], extra: { k: ["v"] }, ...attributes },
        },
      },
    ]);
  });

  it("rejects when the API server refuses the review itself (the controller's RBAC lacks create)", async () => {
    const refused = {
      status: 403,
      body: {
        kind: "Status",
        reason: "Forbidden",
        message: 'tokenreviews.authentication.k8s.io is forbidden: User "c"',
      },
    };
    await expect(review((r) => r.reviewToken("t"), refused)).rejects.toThrow(
      /tokenreviews: 403 Forbidden: tokenreviews.authentication.k8s.io is forbidden/,
    );
  });
});

describe("metricsAuthEnabled", () => {
  // A client-node KubeConfig, as `kubeConnectionOf` gives it to the library: in a pod, and a file's.
  const inCluster = () => {
    const kc = new KubeConfig();
    // What client-node's loadFromCluster builds in a pod.
    kc.loadFromOptions({
      clusters: [{ name: "inCluster", server: "https://10.0.0.1:443" }],
      users: [{ name: "inClusterUser" }],
      contexts: [{ name: "inClusterContext", cluster: "inCluster", user: "inClusterUser" }],
      currentContext: "inClusterContext",
    });
    return kubeConnectionOf(kc);
  };
  const fromFile = () => kubeConnectionOf(api.kubeConfig());
  // The lean loader's connection in a pod, from the service account's files.
  const leanInCluster = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "access-review-sa-"));
    for (const file of ["token", "ca.crt", "namespace"]) writeFileSync(path.join(dir, file), "x");
    const verdict = loadKubeconfig({
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" },
      serviceAccountDir: dir,
    });
    if (verdict.kind !== "lean") throw new Error(`not lean: ${verdict.kind}`);
    return verdict.connection;
  };

  it.each([
    { reason: "kubernetes: always", mode: "kubernetes", kubeConfig: fromFile, want: true },
    { reason: "none: never, even in a cluster", mode: "none", kubeConfig: inCluster, want: false },
    { reason: "auto in a pod, on its service account: on", mode: "auto", kubeConfig: inCluster, want: true },
    {
      reason: "auto with a kubeconfig file (laptop, demo, compose): off",
      mode: "auto",
      kubeConfig: fromFile,
      want: false,
    },
    {
      reason: "auto in a pod, the lean loader's in-cluster connection: on",
      mode: "auto",
      kubeConfig: leanInCluster,
      want: true,
    },
  ] as const)("$reason", ({ mode, kubeConfig, want }) => {
    expect(metricsAuthEnabled(mode, kubeConfig())).toBe(want);
    expect(isInClusterConfig(kubeConfig())).toBe(kubeConfig === inCluster || kubeConfig === leanInCluster);
  });
});
