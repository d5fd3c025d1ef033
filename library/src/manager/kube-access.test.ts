/**
 * `openKubeAccess` (kube-access.ts): the lean loader's connection, what an exec-plugin kubeconfig does
 * (client-node's loader, with one log line), and that a kubeconfig it cannot use is a one-line verdict. The real API server: e2e/lean-controller.test.ts.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { openKubeAccess, type OpenedKubeAccess } from "./kube-access.ts";

const dir = mkdtempSync(path.join(tmpdir(), "kube-client-"));
const opened: OpenedKubeAccess[] = [];
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

describe("openKubeAccess", () => {
  const cases: {
    reason: string;
    file: string;
    expected: { logged?: RegExp } | RegExp;
  }[] = [
    {
      reason: "a token kubeconfig: the lean loader's connection, nothing of client-node",
      file: token,
      expected: {},
    },
    {
      reason: "an exec plugin: client-node's loader runs it, and one line says so",
      file: exec,
      expected: {
        logged:
          /uses an exec credential plugin \(print-credential\), which only @kubernetes\/client-node's loader runs: loading it/,
      },
    },
    {
      reason: "a file that is not there: one line naming it",
      file: missing,
      expected: /^cannot use kubeconfig .*missing[^\n]*$/,
    },
    {
      reason: "a proxy-url: one line (the lean client connects directly)",
      file: proxied,
      expected: /^cannot use kubeconfig .*proxy-url[^\n]*$/,
    },
  ];
  it.each(cases)("$reason", async ({ file, expected }) => {
    const logged: string[] = [];
    const verdict = await openKubeAccess({
      kubeconfig: file,
      log: { info: (_: unknown, msg?: string) => logged.push(msg ?? "") },
    });
    opened.push(verdict);
    if (expected instanceof RegExp) {
      expect(verdict).toMatchObject({ kind: "invalid", message: expect.stringMatching(expected) });
      return;
    }
    if (verdict.kind !== "ok") throw new Error(`not ok: ${verdict.message}`);
    // The lean loader's connection, not a client-node KubeConfig.
    expect("applyToHTTPSOptions" in verdict.kube.target).toBe(false);
    if (expected.logged) expect(logged.filter((line) => expected.logged?.test(line))).toHaveLength(1);
  });
});
