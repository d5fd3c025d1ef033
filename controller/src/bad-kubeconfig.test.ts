/**
 * The controller process with a kubeconfig it cannot use: one line on stderr and exit code 2, never a stack
 * trace (the lean loader's one-line errors).
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
      reason: "a file that is not there",
      args: [`--kubeconfig=${missing}`],
      line: /^shapes-controller: cannot use kubeconfig .*missing: [^\n]*\n$/,
    },
    {
      reason: "a proxy-url",
      args: [`--kubeconfig=${proxied}`],
      line: /^shapes-controller: cannot use kubeconfig .*proxy-url[^\n]*\n$/,
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
