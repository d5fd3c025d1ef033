/**
 * The `certs` job of docker-compose.yml: the PKI of the compose control plane, made once and kept in the
 * `pki` volume (a second `docker compose up` finds it and changes nothing, so every kubeconfig handed out
 * stays valid). The same files as envtest's control planes (envtest/src/pki-dir.ts), from the same code
 * (envtest/src/pki.ts), with serving names that also work between containers:
 *
 *   ca.crt ca.key                 the CA (also kube-apiserver's --client-ca-file)
 *   apiserver.crt apiserver.key   serving certificate: kube-apiserver, kubernetes.*, localhost, 127.0.0.1
 *   admin.crt admin.key           the admin user: CN=admin, O=system:masters
 *   sa.pub sa.key                 service-account token verification / signing keys
 *   admin.kubeconfig              the admin, for the other containers (https://kube-apiserver:6443)
 *   host.kubeconfig               the admin, for kubectl on the host (https://127.0.0.1:6443)
 *
 *   node deploy/compose/certs.ts --dir /pki [--server URL] [--host-server URL]
 */
import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import {
  ADMIN,
  createCertificateAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  renderKubeconfig,
  writePrivateFile,
} from "@shapes/envtest";

/** The compose service name of the API server: the name other containers reach it by. */
export const API_SERVER_HOST = "kube-apiserver";

/** DNS names in the serving certificate: the compose service, the in-cluster names, localhost. */
export const SERVING_DNS_NAMES = [
  API_SERVER_HOST,
  "kubernetes",
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
  "localhost",
] as const;

/** IP addresses in the serving certificate: the published port is reached on the host's loopback. */
export const SERVING_IPS = ["127.0.0.1"] as const;

/** Where the API server is reached from. */
export interface PkiOptions {
  /** The folder (the `pki` volume). Created if missing. */
  dir: string;
  /** The API server URL for the other containers. Default `https://kube-apiserver:6443`. */
  server?: string;
  /** The API server URL for kubectl on the host. Default `https://127.0.0.1:6443`. */
  hostServer?: string;
}

/** What {@link ensureComposePki} did: `created` on the first run, `kept` when every file was there. */
export type PkiOutcome = "created" | "kept";

const KEY_FILES = [
  "ca.crt",
  "ca.key",
  "apiserver.crt",
  "apiserver.key",
  "admin.crt",
  "admin.key",
  "sa.pub",
  "sa.key",
] as const;

/**
 * Creates the PKI in `options.dir` unless every key file exists, then (re)writes both kubeconfigs from it.
 * Every file is written 0600: only the compose user (uid 1000) reads them.
 */
export async function ensureComposePki(options: PkiOptions): Promise<PkiOutcome> {
  const { dir } = options;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const complete = KEY_FILES.every((f) => existsSync(join(dir, f)));
  if (!complete) {
    const ca = await createCertificateAuthority("shapes-compose-ca");
    const [serving, admin, sa] = await Promise.all([
      issueServingCertificate(ca, { dnsNames: SERVING_DNS_NAMES, ipAddresses: SERVING_IPS }),
      issueClientCertificate(ca, { user: ADMIN.user, groups: ADMIN.groups }),
      generateKeyPair(),
    ]);
    const files: Record<(typeof KEY_FILES)[number], string> = {
      "ca.crt": ca.certPem,
      "ca.key": ca.keyPem,
      "apiserver.crt": serving.certPem,
      "apiserver.key": serving.keyPem,
      "admin.crt": admin.certPem,
      "admin.key": admin.keyPem,
      "sa.pub": sa.publicKeyPem,
      "sa.key": sa.privateKeyPem,
    };
    for (const [file, content] of Object.entries(files)) await writePrivateFile(join(dir, file), content);
  }
  const read = (file: string) => readFile(join(dir, file), "utf8");
  const [caPem, certPem, keyPem] = await Promise.all([read("ca.crt"), read("admin.crt"), read("admin.key")]);
  const kubeconfig = (server: string) =>
    renderKubeconfig({ server, caPem, certPem, keyPem, userName: ADMIN.user, contextName: "shapes-compose" });
  await writePrivateFile(
    join(dir, "admin.kubeconfig"),
    kubeconfig(options.server ?? `https://${API_SERVER_HOST}:6443`),
  );
  await writePrivateFile(
    join(dir, "host.kubeconfig"),
    kubeconfig(options.hostServer ?? "https://127.0.0.1:6443"),
  );
  return complete ? "kept" : "created";
}

/** The command line's options (node:util parseArgs). */
export const CERTS_OPTIONS = {
  dir: { type: "string" },
  server: { type: "string" },
  "host-server": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

const USAGE = `Usage: node deploy/compose/certs.ts --dir DIR [--server URL] [--host-server URL]

Creates the compose control plane's PKI in DIR (kept when it exists) and writes two admin kubeconfigs:
admin.kubeconfig (--server, default https://${API_SERVER_HOST}:6443) and host.kubeconfig (--host-server,
default https://127.0.0.1:6443).
`;

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: CERTS_OPTIONS,
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`certs: cannot parse the command line: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.dir) {
    process.stderr.write(`certs: cannot run without --dir\n${USAGE}`);
    return 2;
  }
  const outcome = await ensureComposePki({
    dir: values.dir,
    ...(values.server ? { server: values.server } : {}),
    ...(values["host-server"] ? { hostServer: values["host-server"] } : {}),
  });
  process.stdout.write(`certs: ${outcome === "created" ? "created" : "kept"} the PKI in ${values.dir}\n`);
  return 0;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`certs: cannot create the PKI: ${(error as Error).message}\n`);
    return 1;
  });
}
