/**
 * The controller process with a kubeconfig it cannot use: one line on stderr and exit code 2, never a stack
 * trace — with `--kube-client=lean` (the lean loader's one-line errors) as with the default.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";

const dir = mkdtempSync(path.join(tmpdir(), "bad-kubeconfig-"));
const missing = path.join(dir, "missing");
const proxied = path.join(dir, "proxied");
writeFileSync(
  proxied,
  stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "c", cluster: { server: "https://127.0.0.1:6443", "proxy-url": "http://proxy:3128" } },
    ],
    users: [{ name: "u", user: { token: "t" } }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
    "current-context": "ctx",
  }),
);

describe("the controller process with a kubeconfig it cannot use", () => {
  const main = path.join(import.meta.dirname, "main.ts");
  it.each([
    {
      reason: "--kube-client=lean, a file that is not there",
      args: ["--kube-client=lean", `--kubeconfig=${missing}`],
      line: /^shapes-controller: cannot use kubeconfig .*missing: [^\n]*\n$/,
    },
    {
      reason: "--kube-client=lean, a proxy-url",
      args: ["--kube-client=lean", `--kubeconfig=${proxied}`],
      line: /^shapes-controller: cannot use kubeconfig .*proxy-url[^\n]*\n$/,
    },
    {
      reason: "the default client, a file that is not there",
      args: [`--kubeconfig=${missing}`],
      line: /^shapes-controller: cannot load the kubeconfig: [^\n]*\n$/,
    },
  ])("$reason: one line on stderr, exit code 2", ({ args, line }) => {
    const run = spawnSync(
      process.execPath,
      [main, "--cloud-url=http://127.0.0.1:1", "--cloud-token=t", "--log-level=silent", ...args],
      { encoding: "utf8", env: { ...process.env, KUBECONFIG: "" }, timeout: 60_000 },
    );
    expect(run.stderr).toMatch(line);
    expect(run.status).toBe(2);
  });
});
