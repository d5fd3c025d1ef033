/**
 * The PKI folder of one control plane: created on first use, loaded as is afterwards (so the persistent
 * cluster keeps its CA — and every kubeconfig handed out — across `down` / `up`).
 *
 *   ca.crt ca.key                 the throwaway CA (also the --client-ca-file)
 *   apiserver.crt apiserver.key   the serving certificate (localhost, 127.0.0.1)
 *   admin.crt admin.key           the admin user: CN=admin, O=system:masters
 *   sa.pub sa.key                 service-account token verification / signing keys
 */
import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writePrivateFile } from "./kubeconfig.ts";
import {
  createCertificateAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  type CertificateAndKey,
  type CertificateAuthority,
} from "./pki.ts";

/** The admin user of every local control plane. */
export const ADMIN = { user: "admin", groups: ["system:masters"] } as const;

/** The loaded PKI of a control plane. */
export interface ControlPlanePki {
  dir: string;
  ca: CertificateAuthority;
  admin: CertificateAndKey;
}

const FILES = [
  "ca.crt",
  "ca.key",
  "apiserver.crt",
  "apiserver.key",
  "admin.crt",
  "admin.key",
  "sa.pub",
  "sa.key",
];

/** Loads the PKI in `dir`, creating all of it first when any file is missing. */
export async function ensurePki(dir: string): Promise<ControlPlanePki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (!FILES.every((f) => existsSync(join(dir, f)))) {
    const ca = await createCertificateAuthority("shapes-envtest-ca");
    const [serving, admin, sa] = await Promise.all([
      issueServingCertificate(ca),
      issueClientCertificate(ca, { user: ADMIN.user, groups: ADMIN.groups }),
      generateKeyPair(),
    ]);
    const contents: Record<string, string> = {
      "ca.crt": ca.certPem,
      "ca.key": ca.keyPem,
      "apiserver.crt": serving.certPem,
      "apiserver.key": serving.keyPem,
      "admin.crt": admin.certPem,
      "admin.key": admin.keyPem,
      "sa.pub": sa.publicKeyPem,
      "sa.key": sa.privateKeyPem,
    };
    for (const [file, content] of Object.entries(contents)) await writePrivateFile(join(dir, file), content);
  }
  const read = (file: string) => readFile(join(dir, file), "utf8");
  return {
    dir,
    ca: { certPem: await read("ca.crt"), keyPem: await read("ca.key") },
    admin: { certPem: await read("admin.crt"), keyPem: await read("admin.key") },
  };
}
