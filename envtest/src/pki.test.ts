import { X509Certificate } from "node:crypto";
import { createServer, request } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createCertificateAuthority,
  issueClientCertificate,
  issueServingCertificate,
  serialNumberHex,
  userInfoOf,
  type CertificateAndKey,
  type CertificateAuthority,
} from "./pki.ts";

let ca: CertificateAuthority;
let serving: CertificateAndKey;

beforeAll(async () => {
  ca = await createCertificateAuthority("test-ca");
  serving = await issueServingCertificate(ca);
});

describe("the CA", () => {
  it("is self-signed and may sign certificates", () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe("CN=test-ca");
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
  });
});

describe("the serving certificate", () => {
  it("is signed by the CA, for server auth, valid for localhost and 127.0.0.1", () => {
    const cert = new X509Certificate(serving.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.keyUsage).toContain("1.3.6.1.5.5.7.3.1"); // serverAuth
    expect(cert.checkHost("localhost")).toBe("localhost");
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(cert.checkHost("kubernetes.default.svc")).toBe("kubernetes.default.svc");
    expect(cert.checkIP("10.0.0.1")).toBeUndefined();
  });
});

describe("client certificates", () => {
  it("carry the user as CN and each group as O, for client auth", async () => {
    const client = await issueClientCertificate(ca, { user: "alice", groups: ["team-a", "system:masters"] });
    const cert = new X509Certificate(client.certPem);
    expect(cert.keyUsage).toContain("1.3.6.1.5.5.7.3.2"); // clientAuth
    expect(cert.keyUsage).not.toContain("1.3.6.1.5.5.7.3.1");
    expect(userInfoOf(client.certPem)).toEqual({ user: "alice", groups: ["team-a", "system:masters"] });
  });

  it("work for a service-account user name (colons) and no groups", async () => {
    const client = await issueClientCertificate(ca, { user: "system:serviceaccount:demo:controller" });
    expect(userInfoOf(client.certPem)).toEqual({ user: "system:serviceaccount:demo:controller", groups: [] });
  });

  const bad = [
    { reason: "an empty user name", who: { user: "" }, error: /cannot issue .*user name is empty/ },
    {
      reason: "a blank group",
      who: { user: "bob", groups: ["ok", " "] },
      error: /cannot issue .*group name is empty/,
    },
  ];
  it.each(bad)("refuse $reason", async ({ who, error }) => {
    await expect(issueClientCertificate(ca, who)).rejects.toThrow(error);
  });
});

describe("a real mutual-TLS handshake with these certificates", () => {
  /** An HTTPS server that requires a client certificate from our CA and answers with its CN. */
  async function withServer(fn: (port: number) => Promise<void>): Promise<void> {
    const server = createServer(
      {
        cert: serving.certPem,
        key: serving.keyPem,
        ca: ca.certPem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.end(String(peer.subject?.CN));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      await fn((server.address() as AddressInfo).port);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  function get(port: number, options: { ca: string; cert?: string; key?: string }): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: "/", agent: false, ...options }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve(body));
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("succeeds with a client certificate from the CA, and the server sees its CN", async () => {
    const client = await issueClientCertificate(ca, { user: "admin", groups: ["system:masters"] });
    await withServer(async (port) => {
      expect(await get(port, { ca: ca.certPem, cert: client.certPem, key: client.keyPem })).toBe("admin");
    });
  });

  it("fails without a client certificate, and with one from another CA", async () => {
    const otherCa = await createCertificateAuthority("other-ca");
    const stranger = await issueClientCertificate(otherCa, { user: "mallory" });
    await withServer(async (port) => {
      await expect(get(port, { ca: ca.certPem })).rejects.toThrow();
      await expect(
        get(port, { ca: ca.certPem, cert: stranger.certPem, key: stranger.keyPem }),
      ).rejects.toThrow();
    });
  });

  it("fails when the client does not trust the CA that signed the server", async () => {
    const otherCa = await createCertificateAuthority("other-ca");
    await withServer(async (port) => {
      await expect(get(port, { ca: otherCa.certPem })).rejects.toThrow(
        /self-signed|unable to verify|certificate/i,
      );
    });
  });
});

describe("serialNumberHex", () => {
  // Go's crypto/x509 refuses a negative serial and one with a redundant leading zero byte: kube-apiserver then
  // exits with "x509: malformed serial number". node-forge writes the hex verbatim, so the first byte decides.
  it.each([
    { reason: "random bytes starting with 00 (was written as a redundant leading zero)", first: 0x00 },
    { reason: "random bytes starting with 0x0f (was 0x0f: fine, still fine)", first: 0x0f },
    { reason: "random bytes starting with 0x80 (a negative integer if written as is)", first: 0x80 },
    { reason: "random bytes starting with 0xff", first: 0xff },
  ])("is positive and minimal for $reason", ({ first }) => {
    const random = new Uint8Array(16).fill(0x11);
    random[0] = first;
    const hex = serialNumberHex(random);
    expect(hex).toHaveLength(32);
    const lead = Number.parseInt(hex.slice(0, 2), 16);
    expect(lead & 0x80, "high bit: negative").toBe(0);
    expect(lead, "leading zero byte: not minimal").not.toBe(0);
    expect(hex.slice(2)).toBe("11".repeat(15)); // the rest of the randomness is kept
  });

  it("is what the certificates carry", () => {
    for (const { certPem } of [ca, serving]) {
      expect(new X509Certificate(certPem).serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
    }
  });
});
