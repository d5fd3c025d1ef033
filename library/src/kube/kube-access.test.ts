/**
 * `openKubeAccess` (kube-access.ts): which loader and clients each client gives (lean when none is named),
 * what an exec-plugin kubeconfig does on the lean one (client-node's loader, with one log line), and that a
 * kubeconfig neither can use is a one-line verdict. The real API server: e2e/lean-controller.test.ts.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { openKubeAccess, type KubeAccessVerdict, type KubeClientKind } from "./kube-access.ts";

const dir = mkdtempSync(path.join(tmpdir(), "kube-client-"));
const opened: KubeAccessVerdict[] = [];
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
    /** Undefined: the caller does not choose (the default, lean). */
    client: KubeClientKind | undefined;
    file: string;
    expected: { kind: "lean" | "client-node"; isKubeConfig: boolean; logged?: RegExp } | RegExp;
  }[] = [
    {
      reason: "no client named (the default): the lean loader's connection, nothing of client-node",
      client: undefined,
      file: token,
      expected: { kind: "lean", isKubeConfig: false },
    },
    {
      reason: "lean, a token kubeconfig: the lean loader's connection, nothing of client-node",
      client: "lean",
      file: token,
      expected: { kind: "lean", isKubeConfig: false },
    },
    {
      reason: "lean, an exec plugin: client-node's loader runs it, and one line says so",
      client: "lean",
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
      client: "lean",
      file: missing,
      expected: /^cannot use kubeconfig .*missing[^\n]*$/,
    },
    {
      reason: "lean, a proxy-url: one line (the lean client connects directly)",
      client: "lean",
      file: proxied,
      expected: /^cannot use kubeconfig .*proxy-url[^\n]*$/,
    },
    {
      reason: "client-node (opt-in), a token kubeconfig: client-node's KubeConfig",
      client: "client-node",
      file: token,
      expected: { kind: "client-node", isKubeConfig: true },
    },
    {
      reason: "client-node, a file that is not there: one line, as before",
      client: "client-node",
      file: missing,
      expected: /^cannot load the kubeconfig: /,
    },
    {
      reason: "client-node, a proxy-url: one line, as before",
      client: "client-node",
      file: proxied,
      expected: /^cannot use a kubeconfig that names a proxy \(proxy-url\)$/,
    },
  ];
  it.each(cases)("$reason", async ({ client, file, expected }) => {
    const logged: string[] = [];
    const verdict = await openKubeAccess({
      ...(client === undefined ? {} : { client }),
      kubeconfig: file,
      log: { info: (_: unknown, msg?: string) => logged.push(msg ?? "") },
    });
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
