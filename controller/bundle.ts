/**
 * The second step of the controller's build (`npm run build -w @shapes/controller`, and the image's
 * controller-build stage): esbuild bundles what tsc emitted, `dist/main.js` and everything it imports (the
 * library's build and the packages), into `dist/main.js` again, tree-shaken and minified, with a chunk of
 * its own for each lazy import (the tracing SDK, imported only with an OTLP endpoint). Why: issue 31, the idle
 * controller's memory — one module instead of 250, tree-shaken, its whitespace and comments dropped, holds
 * about 2.5 MB less once ready
 * (controller/README.md#idle-memory-npm-run-benchidle). What stays outside, loaded from node_modules at run
 * time: `@kubernetes/client-node` (imported only for an exec credential plugin or an auth provider, and large)
 * and `yaml` (required only to read a YAML kubeconfig file, library/src/kube/kubeconfig.ts).
 *
 * The source map follows the bundle back to tsc's output and, through its maps, to src/.
 */
import { join } from "node:path";
import { build } from "esbuild";

const DIST = join(import.meta.dirname, "dist");

await build({
  entryPoints: [join(DIST, "main.js")],
  outdir: DIST,
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  // Whitespace and syntax only: identifiers keep their names, so do classes (pino logs an error's type
  // from its constructor's name) — and `minify` with `keepNames` broke client-node's lazy import here.
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  sourcemap: "linked",
  chunkNames: "chunks/[name]-[hash]",
  external: ["@kubernetes/client-node", "yaml"],
  // CommonJS packages in an ES module bundle still call require() for node's builtins.
  banner: {
    js: 'import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);',
  },
  logLevel: "warning",
});
