/**
 * The module-recording hook (record-modules.js) from the outside: its path, for a process's node flags
 * (`--import <RECORD_MODULES_HOOK>` with RECORD_MODULES_FILE in its environment), and the reading of what it
 * recorded. The e2e suite uses it to prove the default lean client never loads `@kubernetes/client-node`, the
 * bench to count the modules each configuration's controller loaded.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** The hook's file, for `node --import`. */
export const RECORD_MODULES_HOOK = join(import.meta.dirname, "record-modules.js");
/** The environment variable naming the file the hook appends to. */
export const RECORD_MODULES_FILE = "RECORD_MODULES_FILE";
/** What every module URL of `@kubernetes/client-node` contains. */
export const CLIENT_NODE_MODULES = "/node_modules/@kubernetes/client-node/";

/** The module URLs the hook recorded in `file` so far, in the order they were resolved, each once. */
export async function readRecordedModules(file: string): Promise<string[]> {
  return (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");
}
