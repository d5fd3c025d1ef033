/**
 * Who may read what the controller knows, against the real kube-apiserver: with `--metrics-auth=kubernetes`
 * the metrics port asks the API server who a bearer token is (TokenReview) and what its user may read
 * (SubjectAccessReview). `/why/<namespace>/<name>` is for whoever may `get` that Shape; `/metrics` for whoever
 * may `get` the non-resource URL /metrics (deploy/rbac.yaml's `shapes-metrics-reader`); the probes stay open.
 * The tokens are real service account tokens from the TokenRequest API, as a pod or `kubectl create token`
 * has them, and `npm run why` is run with one.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthenticationV1Api, CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { main as why } from "@shapes/controller";
import { type ControllerProcess, METRIC, type Stack, waitConverged } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("/why and /metrics answer only to a token that may read them (--metrics-auth=kubernetes)", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  let other: string;
  let dir: string;
  /** Tokens of three service accounts of `ns`: none may get Shapes, one may in `ns`, one may scrape. */
  const token = { outsider: "", reader: "", scraper: "" };
  let scraperBinding = "";

  beforeAll(async () => {
    stack = await startStack("why-authz");
    dir = await mkdtemp(join(tmpdir(), "why-authz-"));
    controller = await stack.startController({ extraArgs: ["--metrics-auth=kubernetes"] });
    ns = await stack.kube.createNamespace("why");
    other = await stack.kube.createNamespace("why-other");
    await stack.kube.applyShape(ns, "red", { type: "square", color: "red" });
    await stack.kube.applyShape(other, "blue", { type: "circle", color: "blue" });
    await waitConverged(stack, ns, "red");
    await waitConverged(stack, other, "blue");

    const core = stack.kubeConfig.makeApiClient(CoreV1Api);
    const rbac = stack.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    for (const name of Object.keys(token)) {
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
    }
    // reader: get on Shapes in `ns` only, as a team's Role would give it.
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: "shape-reader" },
        rules: [{ apiGroups: ["shapes.example.com"], resources: ["shapes"], verbs: ["get"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: "shape-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "shape-reader" },
        subjects: [{ kind: "ServiceAccount", name: "reader", namespace: ns }],
      },
    });
    // scraper: the ClusterRole deploy/rbac.yaml ships for Prometheus.
    scraperBinding = `shapes-metrics-reader-${ns}`;
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: scraperBinding },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "shapes-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: "scraper", namespace: ns }],
      },
    });
    // Tokens as `kubectl create token` makes them (TokenRequest), for the API server's own audience.
    for (const name of Object.keys(token) as (keyof typeof token)[]) {
      const answer = await core.createNamespacedServiceAccountToken({
        namespace: ns,
        name,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      token[name] = answer.status?.token ?? "";
      expect(token[name], `a token for ${name}`).not.toBe("");
    }
  });
  afterAll(async () => {
    if (scraperBinding) {
      await stack?.kubeConfig
        .makeApiClient(RbacAuthorizationV1Api)
        .deleteClusterRoleBinding({ name: scraperBinding })
        .catch(() => {});
    }
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const user = (name: string) => `system:serviceaccount:${ns}:${name}`;
  const get = (path: string, bearer?: string) =>
    fetch(`${controller.url}${path}`, {
      headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` },
    });
  /** The answer's status and what it said (`error` of a JSON answer, else the text). */
  async function ask(path: string, bearer?: string): Promise<{ status: number; said: string }> {
    const res = await get(path, bearer);
    const text = await res.text();
    let said = text;
    if (res.headers.get("content-type")?.startsWith("application/json")) {
      const body = JSON.parse(text) as { error?: string };
      said = body.error ?? text;
    }
    return { status: res.status, said };
  }

  test("the envtest control plane reviews service account tokens (TokenReview works there)", async () => {
    // The kube-apiserver flags (envtest/src/apiserver.ts): --service-account-issuer, -key-file and
    // -signing-key-file; the TokenRequest API issues, the TokenReview authenticator accepts.
    const review = await stack.kubeConfig
      .makeApiClient(AuthenticationV1Api)
      .createTokenReview({ body: { spec: { token: token.reader } } });
    expect(review.status).toMatchObject({ authenticated: true, user: { username: user("reader") } });
  });

  const cases: {
    reason: string;
    who: keyof typeof token | "forged" | undefined;
    path: () => string;
    status: number;
    said?: () => string;
  }[] = [
    {
      reason: "no token: 401",
      who: undefined,
      path: () => `/why/${ns}/red`,
      status: 401,
      said: () => "unauthorized: no bearer token",
    },
    {
      reason: "a token the API server does not know: 401",
      who: "forged",
      path: () => `/why/${ns}/red`,
      status: 401,
      said: () => "unauthorized: the Kubernetes API server did not accept the token",
    },
    {
      reason: "a service account that may not get Shapes in that namespace: 403, saying who and what",
      who: "outsider",
      path: () => `/why/${ns}/red`,
      status: 403,
      said: () =>
        `forbidden: user "${user("outsider")}" may not get shapes.shapes.example.com "red" in the namespace "${ns}"`,
    },
    {
      reason: "the reader may not read another namespace's Shape",
      who: "reader",
      path: () => `/why/${other}/blue`,
      status: 403,
      said: () => `may not get shapes.shapes.example.com "blue" in the namespace "${other}"`,
    },
    {
      reason: "the scraper may read /metrics, not a Shape's story",
      who: "scraper",
      path: () => `/why/${ns}/red`,
      status: 403,
      said: () => `forbidden: user "${user("scraper")}"`,
    },
    {
      reason: "/metrics: 403 to the outsider",
      who: "outsider",
      path: () => "/metrics",
      status: 403,
      said: () => `forbidden: user "${user("outsider")}" may not get the non-resource URL /metrics`,
    },
    {
      reason: "/metrics: 403 to the reader too (get on Shapes is not get on /metrics)",
      who: "reader",
      path: () => "/metrics",
      status: 403,
      said: () => "may not get the non-resource URL /metrics",
    },
    {
      reason: "/metrics: 401 without a token",
      who: undefined,
      path: () => "/metrics",
      status: 401,
      said: () => "unauthorized: no bearer token",
    },
    { reason: "/healthz stays open for the probes", who: undefined, path: () => "/healthz", status: 200 },
    { reason: "/readyz stays open for the probes", who: undefined, path: () => "/readyz", status: 200 },
  ];
  test.each(cases)("$reason", async ({ who, path, status, said }) => {
    const bearer = who === undefined ? undefined : who === "forged" ? "not-a-token" : token[who];
    const answer = await ask(path(), bearer);
    expect(answer.status).toBe(status);
    if (said) expect(answer.said).toContain(said());
  });

  test("200 with the story to the service account that may get the Shape", async () => {
    const res = await get(`/why/${ns}/red`, token.reader);
    expect(res.status).toBe(200);
    const story = (await res.json()) as { subject: string; entries: { decided: { branch: string }[] }[] };
    expect(story.subject).toBe(`${ns}/red`);
    expect(story.entries.length).toBeGreaterThan(0);
    // It may ask about a Shape nothing is kept for: 404, as without access control.
    expect((await ask(`/why/${ns}/never-was`, token.reader)).status).toBe(404);
  });

  test("200 on /metrics to the service account bound to shapes-metrics-reader, and on /why's counts", async () => {
    const metrics = await controller.metrics({ token: token.scraper });
    expect(metrics.sum(METRIC.reconciles)).toBeGreaterThan(0);
    const counts = await get("/why", token.scraper);
    expect(counts.status).toBe(200);
    expect(await counts.json()).toMatchObject({ subjects: expect.any(Number) as number });
  });

  test("npm run why with --token-file tells the story to the reader, and one clear line to the outsider", async () => {
    const run = async (tokenText: string) => {
      const file = join(dir, `token-${tokenText.slice(-8)}`);
      await writeFile(file, `${tokenText}\n`, { mode: 0o600 });
      let out = "";
      let err = "";
      const code = await why([`${ns}/red`, "--metrics-url", controller.url, "--token-file", file], {
        env: {},
        out: (t) => (out += t),
        err: (t) => (err += t),
      });
      return { code, out, err };
    };
    const told = await run(token.reader);
    expect(told).toMatchObject({ code: 0, err: "" });
    expect(told.out).toContain(`${ns}/red: `);
    expect(told.out).toContain("decided");

    const refused = await run(token.outsider);
    expect(refused.code).toBe(1);
    expect(refused.out).toBe("");
    expect(refused.err).toBe(
      `npm run why: the controller at ${controller.url} refused: forbidden: user "${user("outsider")}" may not get shapes.shapes.example.com "red" in the namespace "${ns}" — it tells a Shape's story to whoever may get that Shape: use a token of a user with get on shapes in the namespace ${ns} (a Role and RoleBinding)\n`,
    );
  });

  test("the controller met no refusal of its own: deploy/rbac.yaml lets it create both reviews", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});
