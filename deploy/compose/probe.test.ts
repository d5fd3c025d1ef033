/**
 * The kube-apiserver container's healthcheck (deploy/compose/probe): built with the Go toolchain as
 * Dockerfile.kube-apiserver builds it, then run against a real TLS server that answers like /readyz.
 * Skipped, saying so, where no Go toolchain is installed (the e2e setup needs one to build Kubernetes).
 */
import { execFile, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCertificateAuthority, issueServingCertificate } from "@shapes/envtest";

const PROBE_DIR = join(import.meta.dirname, "probe");
const hasGo = spawnSync("go", ["version"], { encoding: "utf8" }).status === 0;

/** Runs the probe; resolves with its exit code and stderr. */
function runProbe(binary: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { timeout: 20_000 }, (error, _stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stderr });
    });
  });
}

describe.skipIf(!hasGo)("apiserver-probe (needs Go on PATH)", () => {
  let dir: string;
  let binary: string;
  let server: Server;
  let base: string;
  let status = 200;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "apiserver-probe-"));
    binary = join(dir, "apiserver-probe");
    const build = spawnSync("go", ["build", "-trimpath", "-o", binary, "."], {
      cwd: PROBE_DIR,
      encoding: "utf8",
      env: { ...process.env, CGO_ENABLED: "0", GOTOOLCHAIN: "local" },
    });
    if (build.status !== 0) throw new Error(`cannot build the probe: ${build.stderr}`);

    const ca = await createCertificateAuthority("probe-test-ca");
    const serving = await issueServingCertificate(ca); // localhost, 127.0.0.1
    await writeFile(join(dir, "ca.crt"), ca.certPem);
    const other = await createCertificateAuthority("some-other-ca");
    await writeFile(join(dir, "other-ca.crt"), other.certPem);
    await writeFile(join(dir, "empty.crt"), "");
    server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      res.writeHead(req.url === "/readyz" ? status : 404).end(status === 200 ? "ok" : "[-]etcd failed");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const cases: {
    reason: string;
    status: number;
    url: () => string;
    ca: string;
    code: number;
    says: RegExp;
  }[] = [
    {
      reason: "ready, over TLS verified against the CA",
      status: 200,
      url: () => `${base}/readyz`,
      ca: "ca.crt",
      code: 0,
      says: /^$/,
    },
    {
      reason: "not ready yet (503)",
      status: 503,
      url: () => `${base}/readyz`,
      ca: "ca.crt",
      code: 1,
      says: /cannot get 200 from .* answered 503: \[-\]etcd failed/,
    },
    {
      reason: "a server whose certificate our CA did not sign",
      status: 200,
      url: () => `${base}/readyz`,
      ca: "other-ca.crt",
      code: 1,
      says: /cannot reach .*certificate/,
    },
    {
      reason: "a CA file without a certificate",
      status: 200,
      url: () => `${base}/readyz`,
      ca: "empty.crt",
      code: 1,
      says: /cannot use the CA .*no PEM certificate/,
    },
    {
      reason: "a CA file that does not exist",
      status: 200,
      url: () => `${base}/readyz`,
      ca: "missing.crt",
      code: 1,
      says: /cannot read the CA/,
    },
    {
      reason: "nothing listening",
      status: 200,
      url: () => "https://127.0.0.1:1/readyz",
      ca: "ca.crt",
      code: 1,
      says: /cannot reach .*connection refused/,
    },
  ];
  test.each(cases)("exit $code: $reason", async (c) => {
    status = c.status;
    const { code, stderr } = await runProbe(binary, [`-url=${c.url()}`, `-ca=${join(dir, c.ca)}`]);
    expect(stderr.trim()).toMatch(c.says);
    expect(code).toBe(c.code);
  });

  test("exit 2 for a bad command line", async () => {
    const { code, stderr } = await runProbe(binary, ["https://127.0.0.1/readyz"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/cannot use arguments/);
  });
});
