/**
 * The Kubernetes client's https Agent names its pools by host and port only, never with its CA, certificate
 * and key as text (what node's https Agent does, at a cost of several KiB per request). That it still speaks
 * mutual TLS and keeps its connection is kube-http.test.ts's part: KubeHttp runs on it.
 */
import http from "node:http";
import https from "node:https";
import { describe, expect, test } from "vitest";
import { OneTlsAgent } from "./one-tls-agent.ts";

const PEM = (what: string) =>
  Buffer.from(`-----BEGIN ${what}-----\n${"A".repeat(1600)}\n-----END ${what}-----\n`);

describe("OneTlsAgent.getName", () => {
  test.each([
    {
      reason: "TLS material on the agent: the name is http's, no PEM text in it",
      agent: { ca: PEM("CERTIFICATE"), cert: PEM("CERTIFICATE"), key: PEM("PRIVATE KEY"), keepAlive: true },
      request: { host: "127.0.0.1", port: 6443 },
    },
    {
      reason: "another port is another pool, as with http",
      agent: { ca: PEM("CERTIFICATE") },
      request: { host: "127.0.0.1", port: 7443 },
    },
  ])("$reason", ({ agent, request }) => {
    const ours = new OneTlsAgent(agent);
    const name = ours.getName({ ...agent, ...request });
    expect(name).toBe(new http.Agent().getName(request));
    expect(name).not.toContain("BEGIN");
    // What it replaces: node's https Agent puts the PEM text into every name.
    expect(new https.Agent(agent).getName({ ...agent, ...request })).toContain("BEGIN CERTIFICATE");
    ours.destroy();
  });
});
