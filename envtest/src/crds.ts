/**
 * Installing CustomResourceDefinitions (the YAML files of a folder; by default the project's crds/) into a
 * cluster and waiting until they are really usable: Established, and served (the API group's discovery lists
 * the resource).
 */
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  ApiextensionsV1Api,
  ApiException,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { loadKubeConfig } from "./kubeconfig.ts";
import { projectPath } from "./package-dir.ts";
import { sleep } from "./processes.ts";

/**
 * The default CRD folder: `crds/` at the root of this repo when envtest runs from its checkout; installed
 * from the package, `crds` relative to the working directory (the project's own crds/). Pass `dir` to
 * {@link installCRDs} to name another.
 */
export const CRDS_DIR = projectPath("crds");

/** The field manager of our server-side applies. */
export const FIELD_MANAGER = "shapes-envtest";

/** A JSON schema as written in a CRD (a subset of the fields, by their wire names). */
export interface CrdSchema {
  type?: string;
  description?: string;
  properties?: Record<string, CrdSchema>;
  items?: CrdSchema;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  "x-kubernetes-validations"?: { rule: string; message?: string; fieldPath?: string; reason?: string }[];
  [key: string]: unknown;
}

/**
 * A CustomResourceDefinition as written in YAML, with its wire field names (`enum`,
 * `x-kubernetes-validations`). client-node's V1CustomResourceDefinition model renames some of them
 * (`_enum`, `x_kubernetes_validations`) and would not describe these parsed objects truthfully.
 */
export interface CrdManifest {
  apiVersion: string;
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    scope: "Namespaced" | "Cluster";
    names: { kind: string; plural: string; singular?: string; shortNames?: string[]; categories?: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: Record<string, never> };
      additionalPrinterColumns?: { name: string; type: string; jsonPath: string; priority?: number }[];
      schema?: { openAPIV3Schema: CrdSchema };
    }[];
  };
}

/** Reads every CustomResourceDefinition in the `*.yaml` / `*.yml` files of `dir` (not its subfolders). */
export async function readCRDs(dir = CRDS_DIR): Promise<CrdManifest[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    const message = `cannot install CRDs: there is no folder ${resolve(dir)} (pass \`dir\`, the folder of your CRD files)`;
    throw new Error(message, { cause: error });
  }
  const files = names.filter((f) => /\.ya?ml$/.test(f)).sort();
  const crds: CrdManifest[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(join(dir, file), "utf8"))) {
      if (doc.errors.length > 0)
        throw new Error(`cannot parse ${join(dir, file)}: ${doc.errors[0]?.message}`);
      const object = doc.toJS() as CrdManifest | null;
      if (object?.kind === "CustomResourceDefinition") crds.push(object);
    }
  }
  if (crds.length === 0) throw new Error(`cannot install CRDs: ${dir} holds no CustomResourceDefinition`);
  return crds;
}

/** Options of {@link installCRDs}. */
export interface InstallOptions {
  /** The folder of CRD files. Default {@link CRDS_DIR}. */
  dir?: string;
  /** How long to wait for each CRD to be Established and served. Default 60 s. */
  timeoutMs?: number;
}

/**
 * Server-side applies every CRD in `dir` (create or update, our field manager, forced) and waits until
 * each is Established and its resource answers a list. Returns the CRD names. Throws "cannot install
 * ..." with the API server's message when a CRD is rejected, or when one is not ready in time.
 */
export async function installCRDs(
  kubeconfig: KubeConfig | string,
  options: InstallOptions = {},
): Promise<string[]> {
  const kc = typeof kubeconfig === "string" ? loadKubeConfig(kubeconfig) : kubeconfig;
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const crds = await readCRDs(options.dir);
  for (const crd of crds) {
    const name = crd.metadata.name;
    try {
      await api.patchCustomResourceDefinition(
        { name, body: crd, fieldManager: FIELD_MANAGER, force: true },
        setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply),
      );
    } catch (error) {
      throw new Error(`cannot install CRD ${name}: ${apiMessage(error)}`, { cause: error });
    }
  }
  const timeoutMs = options.timeoutMs ?? 60_000;
  for (const crd of crds) await waitUntilServed(kc, api, crd, timeoutMs);
  return crds.map((c) => c.metadata.name);
}

async function waitUntilServed(
  kc: KubeConfig,
  api: ApiextensionsV1Api,
  crd: CrdManifest,
  timeoutMs: number,
): Promise<void> {
  const name = crd.metadata.name;
  const version = crd.spec.versions.find((v) => v.served)?.name ?? "";
  const objects = kc.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    try {
      const live = await api.readCustomResourceDefinition({ name });
      const established = live.status?.conditions?.find((c) => c.type === "Established");
      if (established?.status === "True") {
        // Established can precede the first successful request by a moment: list once to be sure.
        await objects.listClusterCustomObject({
          group: crd.spec.group,
          version,
          plural: crd.spec.names.plural,
          limit: 1,
        });
        return;
      }
      const names = live.status?.conditions?.find((c) => c.type === "NamesAccepted");
      if (names?.status === "False")
        throw new Error(`cannot install CRD ${name}: ${names.message ?? names.reason}`);
      last = `Established=${established?.status ?? "absent"}`;
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("cannot install")) throw error;
      last = apiMessage(error);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `cannot install CRD ${name}: not served after ${Math.round(timeoutMs / 1000)} s (${last})`,
      );
    }
    await sleep(100);
  }
}

/**
 * The human part of a client-node error: the Status message of an ApiException (its body is often a JSON
 * string), else the error's own message.
 */
export function apiMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    try {
      const status = (typeof body === "string" ? JSON.parse(body) : body) as { message?: string };
      if (status?.message) return `${status.message} (HTTP ${error.code})`;
    } catch {
      // not JSON
    }
    return `HTTP ${error.code}: ${String(body)}`;
  }
  return error instanceof Error ? error.message : String(error);
}
