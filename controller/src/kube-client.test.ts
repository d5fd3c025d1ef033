/**
 * `--kube-client` (kube-client.ts): which loader and clients each value gives, what an exec-plugin kubeconfig
 * does on the lean one (client-node's loader, with one log line), and that a kubeconfig neither can use is one
 * line — from `openKube`, and from the controller process itself: stderr and exit code 2, no stack.
 * The real API server is in e2e/lean-controller.test.ts.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadConfig } from "./config.ts";
import { openKube, type KubeVerdict } from "./kube-client.ts";

const dir = mkdtempSync(path.join(tmpdir(), "kube-client-"));
const opened: KubeVerdict[] = [];
afterAll(async () => {
  for (const verdict of opened) if (verdict.kind === "ok") await verdict.kube.close();
});

/** A kubeconfig file of one cluster and one user (`user` is the user entry's body), written to `dir`. */
function kubeconfig(
  name: string,
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", ...cluster } }],
      users: [{ name: "u", user }],
      contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
      "current-context": "ctx",
    }),
  );
  return file;
}

const token = kubeconfig("token", { token: "t" });
const exec = kubeconfig("exec", {
  exec: {
    apiVersion: "client.authentication.k8s.io/v1",
    command: "print-credential",
    interactiveMode: "Never",
  },
});
const proxied = kubeconfig("proxy", { token: "t" }, { "proxy-url": "http://proxy:3128" });
const missing = path.join(dir, "missing");

describe("openKube", () => {
  const cases: {
    reason: string;
    kubeClient: "lean" | "client-node";
    file: string;
    expected: { kind: "lean" | "client-node"; isKubeConfig: boolean; logged?: RegExp } | RegExp;
  }[] = [
    {
      reason: "lean, a token kubeconfig: the lean loader's connection, nothing of client-node",
      kubeClient: "lean",
      file: token,
      expected: { kind: "lean", isKubeConfig: false },
    },
    {
      reason: "lean, an exec plugin: client-node's loader runs it, and one line says so",
      kubeClient: "lean",
      file: exec,
      expected: {
        kind: "lean",
        isKubeConfig: false,
        logged:
          /uses an exec credential plugin \(print-credential\), which only @kubernetes\/client-node's loader runs: loading it/,
      },
    },
    {
      reason: "lean, a file that is not there: one line naming it",
      kubeClient: "lean",
      file: missing,
      expected: /^cannot use kubeconfig .*missing[^\n]*$/,
    },
    {
      reason: "lean, a proxy-url: one line (the lean client connects directly)",
      kubeClient: "lean",
      file: proxied,
      expected: /^cannot use kubeconfig .*proxy-url[^\n]*$/,
    },
    {
      reason: "client-node (the default), a token kubeconfig: client-node's KubeConfig",
      kubeClient: "client-node",
      file: token,
      expected: { kind: "client-node", isKubeConfig: true },
    },
    {
      reason: "client-node, a file that is not there: one line, as before",
      kubeClient: "client-node",
      file: missing,
      expected: /^cannot load the kubeconfig: /,
    },
    {
      reason: "client-node, a proxy-url: one line, as before",
      kubeClient: "client-node",
      file: proxied,
      expected: /^cannot use a kubeconfig that names a proxy \(proxy-url\)$/,
    },
  ];
  it.each(cases)("$reason", async ({ kubeClient, file, expected }) => {
    const config = loadConfig(
      [
        "--cloud-url=http://127.0.0.1:1",
        "--cloud-token=t",
        `--kubeconfig=${file}`,
        `--kube-client=${kubeClient}`,
      ],
      {},
    );
    if (config === "help") throw new Error("unexpected --help");
    const logged: string[] = [];
    const verdict = await openKube(config, { info: (_: unknown, msg?: string) => logged.push(msg ?? "") });
    opened.push(verdict);
    if (expected instanceof RegExp) {
      expect(verdict).toMatchObject({ kind: "invalid", message: expect.stringMatching(expected) });
      return;
    }
    if (verdict.kind !== "ok") throw new Error(`not ok: ${verdict.message}`);
    expect(verdict.kube.kind).toBe(expected.kind);
    expect("applyToHTTPSOptions" in verdict.kube.target).toBe(expected.isKubeConfig);
    if (expected.logged) expect(logged.filter((line) => expected.logged?.test(line))).toHaveLength(1);
  });
});

describe("the controller process with a kubeconfig it cannot use", () => {
  const main = path.join(import.meta.dirname, "main.ts");
  it.each([
    {
      reason: "--kube-client=lean, a file that is not there",
      args: ["--kube-client=lean", `--kubeconfig=${missing}`],
    },
    { reason: "--kube-client=lean, a proxy-url", args: ["--kube-client=lean", `--kubeconfig=${proxied}`] },
  ])("$reason: one line on stderr, exit code 2", ({ args }) => {
    const run = spawnSync(
      process.execPath,
      [main, "--cloud-url=http://127.0.0.1:1", "--cloud-token=t", "--log-level=silent", ...args],
      {
        encoding: "utf8",
        env: { ...process.env, KUBECONFIG: "" },
        timeout: 60_000,
      },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^shapes-controller: cannot use kubeconfig [^\n]*\n$/);
  });
});
