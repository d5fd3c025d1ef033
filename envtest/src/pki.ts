/**
 * A throwaway public-key infrastructure for one control plane: a CA, the API server's serving certificate,
 * client certificates (the API server's users: CN = user name, O = groups) and the service-account key pair.
 *
 * RSA keys come from node:crypto (native, off the main thread: ~50 ms each, where node-forge's pure-JS
 * generator takes seconds); node-forge builds and signs the X.509 certificates, which node:crypto cannot.
 */
import { generateKeyPair as generateKeyPairCallback, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import forge from "node-forge";

const generateRsa = promisify(generateKeyPairCallback);

/** An RSA key pair in PEM: PKCS#1 private key, SPKI public key. */
export interface KeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
}

/** A certificate and its private key, in PEM. */
export interface CertificateAndKey {
  certPem: string;
  keyPem: string;
}

/** A certificate authority: signs the serving and client certificates of one control plane. */
export type CertificateAuthority = CertificateAndKey;

/** Who a client certificate says its holder is, in Kubernetes terms. */
export interface UserInfo {
  /** The user name (certificate CN), e.g. `admin` or `system:serviceaccount:demo:controller`. */
  user: string;
  /** The groups (one certificate O each), e.g. `system:masters`. */
  groups?: readonly string[];
}

/** Where a serving certificate is valid. */
export interface ServingNames {
  /** The certificate's CN (informational: TLS clients check the SANs). Default `kube-apiserver`. */
  commonName?: string;
  /** DNS subject alternative names. Default `localhost` and the in-cluster `kubernetes*` names. */
  dnsNames?: readonly string[];
  /** IP subject alternative names. Default `127.0.0.1`. */
  ipAddresses?: readonly string[];
}

/** How long certificates stay valid. A year: long enough for the persistent demo cluster. */
export const CERTIFICATE_VALIDITY_DAYS = 365;

/** Generates a 2048-bit RSA key pair (node:crypto, on the libuv thread pool). */
export async function generateKeyPair(): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateRsa("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

/** Creates a self-signed CA (CN `commonName`) valid for {@link CERTIFICATE_VALIDITY_DAYS}. */
export async function createCertificateAuthority(commonName = "envtest-ca"): Promise<CertificateAuthority> {
  const keys = await generateKeyPair();
  const privateKey = forge.pki.privateKeyFromPem(keys.privateKeyPem);
  const subject = [{ name: "commonName", value: commonName }];
  const cert = newCertificate(keys.publicKeyPem, subject, subject);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  cert.sign(privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

/** Issues a TLS server certificate signed by `ca` for the given names (defaults: localhost, 127.0.0.1). */
export async function issueServingCertificate(
  ca: CertificateAuthority,
  names: ServingNames = {},
): Promise<CertificateAndKey> {
  const dnsNames = names.dnsNames ?? [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
  ];
  const ipAddresses = names.ipAddresses ?? ["127.0.0.1"];
  return issue(ca, [{ name: "commonName", value: names.commonName ?? "kube-apiserver" }], {
    serverAuth: true,
    altNames: [
      ...dnsNames.map((value) => ({ type: 2, value })),
      ...ipAddresses.map((ip) => ({ type: 7, ip })),
    ],
  });
}

/**
 * Issues a client certificate signed by `ca`: the API server (started with `--client-ca-file`) takes the
 * CN as the user name and each O as a group. Throws on an empty user name or a group that is empty.
 */
export async function issueClientCertificate(
  ca: CertificateAuthority,
  who: UserInfo,
): Promise<CertificateAndKey> {
  if (who.user.trim() === "") throw new Error("cannot issue a client certificate: the user name is empty");
  const groups = who.groups ?? [];
  if (groups.some((g) => g.trim() === "")) {
    throw new Error(`cannot issue a client certificate for ${who.user}: a group name is empty`);
  }
  return issue(
    ca,
    [
      { name: "commonName", value: who.user },
      ...groups.map((value) => ({ name: "organizationName", value })),
    ],
    { serverAuth: false },
  );
}

/** Reads the user name (CN) and groups (O) a client certificate carries: the inverse of issueClientCertificate. */
export function userInfoOf(certPem: string): Required<UserInfo> {
  const cert = forge.pki.certificateFromPem(certPem);
  const values = (shortName: string) =>
    cert.subject.attributes.filter((a) => a.shortName === shortName).map((a) => String(a.value));
  return { user: values("CN")[0] ?? "", groups: values("O") };
}

async function issue(
  ca: CertificateAuthority,
  subject: forge.pki.CertificateField[],
  usage: { serverAuth: boolean; altNames?: object[] },
): Promise<CertificateAndKey> {
  const keys = await generateKeyPair();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const cert = newCertificate(keys.publicKeyPem, subject, caCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: usage.serverAuth, clientAuth: !usage.serverAuth },
    { name: "authorityKeyIdentifier", keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
    ...(usage.altNames ? [{ name: "subjectAltName", altNames: usage.altNames }] : []),
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

/**
 * A certificate serial number, in hex, from 16 random bytes: positive and in DER's minimal form, as Go's
 * crypto/x509 requires of every certificate kube-apiserver and etcd read ("x509: malformed serial number"
 * otherwise). node-forge writes the hex as the integer's bytes verbatim, so the first byte decides both:
 * 0x40 to 0x7f is neither negative (high bit clear) nor a redundant leading zero. 126 random bits remain.
 */
export function serialNumberHex(random: Uint8Array): string {
  if (random.length !== 16)
    throw new Error(`cannot make a serial number from ${random.length} bytes: it takes 16`);
  const bytes = Buffer.from(random);
  bytes[0] = ((bytes[0] ?? 0) & 0x3f) | 0x40;
  return bytes.toString("hex");
}

function newCertificate(
  publicKeyPem: string,
  subject: forge.pki.CertificateField[],
  issuer: forge.pki.CertificateField[],
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = serialNumberHex(randomBytes(16));
  const now = Date.now();
  // Back-dated an hour so a clock a little behind ours still accepts the certificate.
  cert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  cert.validity.notAfter = new Date(now + CERTIFICATE_VALIDITY_DAYS * 24 * 60 * 60 * 1000);
  cert.setSubject(subject);
  cert.setIssuer(issuer);
  return cert;
}
