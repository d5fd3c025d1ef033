/**
 * The certs job: the PKI the compose control plane runs on, made once and kept.
 */
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { parse } from "yaml";
import { userInfoOf } from "@shapes/envtest";
import { ensureComposePki } from "./certs.ts";

describe("ensureComposePki", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "compose-certs-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const read = (file: string) => readFile(join(dir, file), "utf8");

  test("the serving certificate is valid for every name the API server is reached by, signed by the CA", async () => {
    expect(await ensureComposePki({ dir })).toBe("created");
    const ca = new X509Certificate(await read("ca.crt"));
    const serving = new X509Certificate(await read("apiserver.crt"));
    expect(serving.verify(ca.publicKey)).toBe(true);
    const names: { reason: string; check: (c: X509Certificate) => string | undefined }[] = [
      { reason: "other containers: the compose service name", check: (c) => c.checkHost("kube-apiserver") },
      { reason: "kubectl on the host: the published loopback port", check: (c) => c.checkIP("127.0.0.1") },
      {
        reason: "the name a pod would use in a real cluster",
        check: (c) => c.checkHost("kubernetes.default.svc"),
      },
      { reason: "localhost", check: (c) => c.checkHost("localhost") },
    ];
    for (const { reason, check } of names) expect(check(serving), reason).toBeDefined();
    expect(serving.checkHost("cloud"), "not valid for other services").toBeUndefined();
  });

  test("the admin is in system:masters; the kubeconfigs point inside and outside compose", async () => {
    await ensureComposePki({
      dir,
      server: "https://kube-apiserver:6443",
      hostServer: "https://127.0.0.1:6443",
    });
    expect(userInfoOf(await read("admin.crt"))).toEqual({ user: "admin", groups: ["system:masters"] });
    const server = async (file: string) =>
      (parse(await read(file)) as { clusters: { cluster: { server: string } }[] }).clusters[0]?.cluster
        .server;
    expect(await server("admin.kubeconfig")).toBe("https://kube-apiserver:6443");
    expect(await server("host.kubeconfig")).toBe("https://127.0.0.1:6443");
  });

  test("every file is private to its owner (0600): they hold keys", async () => {
    await ensureComposePki({ dir });
    for (const file of [
      "ca.key",
      "apiserver.key",
      "admin.key",
      "sa.key",
      "admin.kubeconfig",
      "host.kubeconfig",
    ]) {
      expect(((await stat(join(dir, file))).mode & 0o777).toString(8), file).toBe("600");
    }
  });

  test("a second run keeps the CA and keys (every kubeconfig handed out stays valid), only the servers change", async () => {
    await ensureComposePki({ dir });
    const before = { ca: await read("ca.crt"), sa: await read("sa.key") };
    expect(await ensureComposePki({ dir, hostServer: "https://127.0.0.1:16443" })).toBe("kept");
    expect({ ca: await read("ca.crt"), sa: await read("sa.key") }).toEqual(before);
    expect(await read("host.kubeconfig")).toContain("https://127.0.0.1:16443");
  });

  test("a PKI missing a file is made again, whole (never a certificate from another CA)", async () => {
    await ensureComposePki({ dir });
    const ca = await read("ca.crt");
    await rm(join(dir, "admin.key"));
    expect(await ensureComposePki({ dir })).toBe("created");
    expect(await read("ca.crt")).not.toBe(ca);
    const serving = new X509Certificate(await read("apiserver.crt"));
    expect(serving.verify(new X509Certificate(await read("ca.crt")).publicKey)).toBe(true);
  });
});
