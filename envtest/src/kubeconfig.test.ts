import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  loadKubeConfig,
  renderImpersonatingKubeconfig,
  renderKubeconfig,
  writePrivateFile,
} from "./kubeconfig.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "envtest-kubeconfig-test-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const input = {
  server: "https://127.0.0.1:6443",
  caPem: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n",
  certPem: "-----BEGIN CERTIFICATE-----\nME\n-----END CERTIFICATE-----\n",
  keyPem: "-----BEGIN RSA PRIVATE KEY-----\nKEY\n-----END RSA PRIVATE KEY-----\n",
  userName: "alice",
};

describe("renderKubeconfig", () => {
  it("embeds the CA and client certificate, and client-node reads it back", async () => {
    const path = join(dir, "kubeconfig");
    await writePrivateFile(path, renderKubeconfig(input));
    const kc = loadKubeConfig(path);
    expect(kc.getCurrentContext()).toBe("envtest");
    expect(kc.getCurrentCluster()?.server).toBe(input.server);
    expect(Buffer.from(kc.getCurrentCluster()?.caData ?? "", "base64").toString()).toBe(input.caPem);
    expect(kc.getCurrentUser()?.name).toBe("alice");
    expect(Buffer.from(kc.getCurrentUser()?.certData ?? "", "base64").toString()).toBe(input.certPem);
    expect(Buffer.from(kc.getCurrentUser()?.keyData ?? "", "base64").toString()).toBe(input.keyPem);
  });

  it("names the context as asked", () => {
    expect(parse(renderKubeconfig({ ...input, contextName: "shapes-demo" }))["current-context"]).toBe(
      "shapes-demo",
    );
  });
});

describe("writePrivateFile", () => {
  it("writes a file only its owner can read (it holds a private key), replacing an older one", async () => {
    const path = join(dir, "secret");
    await writePrivateFile(path, "one");
    await writePrivateFile(path, "two");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, "utf8")).toBe("two");
  });
});

describe("renderImpersonatingKubeconfig", () => {
  it("keeps the cluster and credentials and adds `as: <user>`", () => {
    const source = new KubeConfig();
    source.loadFromString(renderKubeconfig(input));
    const copy = new KubeConfig();
    copy.loadFromString(renderImpersonatingKubeconfig(source, "system:serviceaccount:demo:bot"));
    expect(copy.getCurrentCluster()?.server).toBe(input.server);
    expect(copy.getCurrentUser()?.impersonateUser).toBe("system:serviceaccount:demo:bot");
    expect(copy.getCurrentUser()?.certData).toBe(source.getCurrentUser()?.certData);
  });

  it("refuses a kubeconfig without a current context", () => {
    expect(() => renderImpersonatingKubeconfig(new KubeConfig(), "bob")).toThrow(/cannot impersonate/);
  });
});
