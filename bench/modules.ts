/**
 * "Modules loaded": what the controller had resolved once ready and idle, counted from the module URLs the
 * stack's recording hook wrote down (stack/record-modules.js, run with every configuration's controller:
 * runner.ts). Issue 31 asks for the figure beside the idle RSS, with how many of them are
 * `@kubernetes/client-node`'s: none in every column, since every configuration runs the lean client. Pure:
 * the runner reads the file.
 */
import { CLIENT_NODE_MODULES } from "@shapes/stack";
import type { LoadedModules } from "./results.ts";

/** Counts distinct module URLs (node's builtins, `node:…`, included) and those under client-node. */
export function countModules(urls: readonly string[]): LoadedModules {
  const distinct = new Set(urls);
  return {
    total: distinct.size,
    clientNode: [...distinct].filter((url) => url.includes(CLIENT_NODE_MODULES)).length,
  };
}
