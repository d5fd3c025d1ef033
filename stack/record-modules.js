/**
 * A node `--import` hook for whoever must know which modules a process loaded: every module URL node
 * resolves is appended, one a line, to the file named by RECORD_MODULES_FILE — as it happens, so the record
 * is there while the process runs and after a SIGKILL. e2e/lean-controller.test.ts runs the controller with
 * it to show that the default lean client never loads `@kubernetes/client-node`; the bench runs every
 * configuration's controller with it and counts the modules loaded once idle. Node's in-thread
 * `registerHooks` (Node 22.15+): no loader thread, nothing changed in what is resolved. Not exported by
 * index.ts (importing it installs the hook): modules.ts names its path and reads its record.
 *
 * JavaScript, not TypeScript: a .ts given to `--import` loads node's type stripping (about 20 MB of RSS),
 * which a controller run from its build never does, and the bench's memory figures would carry it.
 */
import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";

const file = process.env.RECORD_MODULES_FILE;
if (!file) throw new Error("record-modules: RECORD_MODULES_FILE is not set");
/** @type {Set<string>} */
const seen = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (!seen.has(resolved.url)) {
      seen.add(resolved.url);
      appendFileSync(file, `${resolved.url}\n`);
    }
    return resolved;
  },
});
