/**
 * `.demo/env`: where a running demo is, for scripts and for `npm run tour` / `npm run kubectl`.
 *
 *   KUBECONFIG=/path/to/.demo/cluster/kubeconfig
 *   CLOUD_URL=http://127.0.0.1:8080
 *   CLOUD_TOKEN=3f1c...
 *   CLOUD_ADMIN_TOKEN=9b2e...
 *
 * Shell-compatible (`set -a; . .demo/env; set +a`): a value with characters a shell would interpret is
 * single-quoted. The file holds the cloud's tokens, so it is written 0600.
 */
import { readFile } from "node:fs/promises";
import { writePrivateFile } from "@shapes/envtest";

/** The content of the env file. */
export interface DemoEnv {
  /** The admin kubeconfig of the demo's cluster (a path, or a KUBECONFIG-style list for a user's cluster). */
  KUBECONFIG: string;
  /** The mock cloud's base URL; the console is at `/`. */
  CLOUD_URL: string;
  /** The cloud's API token (the controller's too). */
  CLOUD_TOKEN: string;
  /** The cloud's admin token: `/admin/*`, the fault switches and the request log. */
  CLOUD_ADMIN_TOKEN: string;
}

const KEYS = ["KUBECONFIG", "CLOUD_URL", "CLOUD_TOKEN", "CLOUD_ADMIN_TOKEN"] as const;

/** Thrown when the env file is missing or incomplete; the message says what to do. */
export class DemoEnvError extends Error {
  override name = "DemoEnvError";
}

/** The file's text: one `KEY=value` line per key, in a fixed order. */
export function renderEnv(env: DemoEnv): string {
  return KEYS.map((key) => `${key}=${quote(env[key])}\n`).join("");
}

/** Parses the file's text. Comments and blank lines are skipped; every key must be there. */
export function parseEnv(text: string, where = "the env file"): DemoEnv {
  const values = new Map<string, string>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new DemoEnvError(`cannot read ${where}: "${line}" is not KEY=value`);
    values.set(line.slice(0, eq).replace(/^export\s+/, ""), unquote(line.slice(eq + 1)));
  }
  const missing = KEYS.filter((key) => !values.get(key));
  if (missing.length > 0) throw new DemoEnvError(`cannot read ${where}: ${missing.join(", ")} missing`);
  return {
    KUBECONFIG: values.get("KUBECONFIG") ?? "",
    CLOUD_URL: values.get("CLOUD_URL") ?? "",
    CLOUD_TOKEN: values.get("CLOUD_TOKEN") ?? "",
    CLOUD_ADMIN_TOKEN: values.get("CLOUD_ADMIN_TOKEN") ?? "",
  };
}

/** Writes the env file (0600, atomically). */
export async function writeEnvFile(path: string, env: DemoEnv): Promise<void> {
  await writePrivateFile(path, renderEnv(env));
}

/** Reads the env file; a missing file is a DemoEnvError that says to run `npm start`. */
export async function readEnvFile(path: string): Promise<DemoEnv> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    throw new DemoEnvError(`cannot find ${path}: the demo has not run here yet (start it with: npm start)`);
  }
  return parseEnv(text, path);
}

function quote(value: string): string {
  return /^[A-Za-z0-9_./:@%+,=-]*$/.test(value) ? value : `'${value.replaceAll("'", `'"'"'`)}'`;
}

function unquote(value: string): string {
  if (!value.startsWith("'")) return value;
  // The inverse of quote(): 'a'"'"'b' is a'b.
  return value
    .split(`'"'"'`)
    .map((part) => part.replace(/^'/, "").replace(/'$/, ""))
    .join("'");
}
