// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

/** The folders of the workspace packages (package.json's `workspaces`), and the root's "". */
const root = import.meta.dirname;
const workspaces = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).workspaces ?? [];
const packageOf = (/** @type {string} */ file) =>
  workspaces.find((/** @type {string} */ w) => relative(join(root, w), file).split(sep)[0] !== "..") ?? "";

/** A relative import whose target is in another package than the importing file. */
const packageBoundaries = {
  meta: {
    type: "problem",
    messages: {
      crossing:
        "'{{specifier}}' reaches into {{target}} from {{source}}: import the package by its name ({{hint}}), one of the entries its package.json exports",
    },
    schema: [],
  },
  create(/** @type {import("eslint").Rule.RuleContext} */ context) {
    const from = packageOf(context.filename);
    /** @param {any} node */
    const check = (node) => {
      const specifier = node.source?.value;
      if (typeof specifier !== "string" || !specifier.startsWith(".")) return;
      const target = packageOf(resolve(dirname(context.filename), specifier));
      if (target === from) return;
      const name = (dir) =>
        dir === "" ? "the root" : JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")).name;
      context.report({
        node: node.source,
        messageId: "crossing",
        data: {
          specifier,
          target: name(target),
          source: name(from),
          hint: target === "" ? "-" : name(target),
        },
      });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

/**
 * The layers of library/src, from the bottom: a file imports from its own layer and the ones below it, never
 * from one above. Each layer is a folder (the assembly is the one file controllers.ts); the entries (index.ts,
 * client-node.ts) and the tooling (testing/, conformance/, crash-points/, harness/) sit on top of them all. The order:
 * the shared helpers, what the process tells (logs, metrics, traces, the story of a reconcile), the Kubernetes
 * client, the work queue and the worker's contract, the sources of keys, the pattern (the reconcilers and the
 * ports they write through), who may write (the fence, the ring), the assembly of one plugin's controllers, and
 * the manager that runs them as a process. Tests (`*.test.ts`, and the `*.test-support.ts` fixtures they share) are not held to it: a test beside its code builds
 * what it checks with the tooling (testing/) and whatever feeds the code under test.
 */
const layers = [
  "support",
  "observability",
  "kube",
  "queue",
  "source",
  "reconcile",
  "leadership",
  "controllers.ts",
  "manager",
];
const entries = ["index.ts", "client-node.ts", "testing", "conformance", "crash-points", "harness"];

/**
 * The imports that run down the layers anyway: each a type-only import of one file by one file, the names it
 * takes (for the reader: the rule checks that the import is type-only), and why. A value import, or a type
 * import of another file, is still an error.
 */
const layerExceptions = [
  {
    file: "library/src/observability/metrics.ts",
    imports: "../queue/rate-limiter.ts",
    names: ["RateLimiterHooks"],
    why: "CoreMetrics.rateLimiterHooks returns the hooks the rate limiter calls: the shape is the limiter's",
  },
  {
    file: "library/src/observability/reconcile-scope.ts",
    imports: "../queue/result.ts",
    names: ["ReconcileResult"],
    why: "a reconcile's scope ends with the result the worker was given, and tells it to the span and history",
  },
];

const escapeRegex = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The `@typescript-eslint/no-restricted-imports` patterns of a file in layer `index` (at `depth` under src/). */
function layerPatterns(/** @type {number} */ index, /** @type {number} */ depth) {
  const up = depth === 0 ? "\\./" : "\\.\\./";
  const above = [...layers.slice(index + 1), ...entries];
  return above.map((layer) => ({
    regex: `^${up}${escapeRegex(layer)}${layer.endsWith(".ts") ? "$" : "/"}`,
    message: `${layers[index]} is below ${layer} in library/src's layers (eslint.config.js): move the code to where it belongs, or, for a type only, name it in layerExceptions`,
  }));
}

/**
 * The harness (reconcile-kit/harness) runs a controller from the outside: it builds on the shared helpers,
 * the Kubernetes client and `waitFor`, and names the shapes of the suites it serves (a conformance Subject,
 * the crash explorer's taps) by type only; it never runs the core (a controller's queue, reconcilers or
 * manager) in the test's process. Nothing but the entries that re-export it imports it (layerPatterns).
 */
const harnessConfig = {
  files: ["library/src/harness/**/*.ts"],
  ignores: ["**/*.test.ts"],
  rules: {
    "@typescript-eslint/no-restricted-imports": [
      "error",
      {
        patterns: [
          ...["queue", "source", "reconcile", "leadership", "manager", "conformance", "crash-points"].map(
            (folder) => ({
              regex: `^\\.\\./${folder}/`,
              allowTypeImports: true,
              message: `the harness takes only types from ${folder}/ (eslint.config.js, harnessConfig)`,
            }),
          ),
          ...["controllers.ts", "index.ts", "client-node.ts", "parts.ts"].map((file) => ({
            regex: `^\\.\\./${escapeRegex(file)}$`,
            message: `the harness does not import the package's entry ${file} (eslint.config.js, harnessConfig)`,
          })),
          {
            regex: "^reconcile-kit(/|$)",
            message: "inside the library, import the file, not the package",
          },
        ],
      },
    ],
  },
};

/** One config per layer, then one per exception (a file's options replace its folder's). */
const layerConfigs = [
  ...layers.map((layer, index) => ({
    files: [layer.endsWith(".ts") ? `library/src/${layer}` : `library/src/${layer}/**/*.ts`],
    ignores: ["**/*.test.ts", "**/*.test-support.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        { patterns: layerPatterns(index, layer.endsWith(".ts") ? 0 : 1) },
      ],
    },
  })),
  ...layerExceptions.map(({ file, imports }) => {
    const index = layers.indexOf(file.split("/")[2] ?? "");
    return {
      files: [file],
      rules: {
        "@typescript-eslint/no-restricted-imports": [
          "error",
          {
            patterns: [
              { regex: `^${escapeRegex(imports)}$`, allowTypeImports: true },
              ...layerPatterns(index, 1),
            ],
          },
        ],
      },
    };
  }),
];

export default tseslint.config(
  { ignores: ["node_modules/", ".demo/", ".cache/", "bench/results/", "e2e/artifacts/", "**/dist/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/explicit-module-boundary-types": "off",
    },
  },
  {
    // Every folder with a package.json is a package: another one reaches it through its name and the entries
    // of its `exports` (reconcile-kit, @shapes/stack, ...), never by a relative path into its files.
    files: ["**/*.ts"],
    plugins: { shapes: { rules: { "package-boundaries": packageBoundaries } } },
    rules: { "shapes/package-boundaries": "error" },
  },
  ...layerConfigs,
  harnessConfig,
  {
    // The mock cloud stands for another party's API: it shares the wire with the controller (HTTP, the
    // `traceparent` header), never the operator's library. Static imports, re-exports and `import()` alike.
    files: ["mock-cloud/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["reconcile-kit", "reconcile-kit/*"],
              message: "the mock cloud does not depend on the operator's library (reconcile-kit)",
            },
          ],
        },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "ImportExpression[source.value=/^reconcile-kit(\\/|$)/]",
          message: "the mock cloud does not depend on the operator's library (reconcile-kit)",
        },
      ],
    },
  },
  {
    files: ["**/*.js", "**/*.cjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The launcher every npm script goes through must parse on old Node (it says what is wrong there):
    // CommonJS, and no syntax newer than ES2017.
    files: ["scripts/with-node.cjs"],
    languageOptions: { sourceType: "commonjs" },
    rules: {
      "@typescript-eslint/no-require-imports": "off",
      "@typescript-eslint/no-unused-vars": ["error", { caughtErrorsIgnorePattern: "^_" }],
      "no-restricted-syntax": [
        "error",
        ...[
          "ChainExpression",
          "LogicalExpression[operator='??']",
          "AssignmentExpression[operator=/^(\\?\\?|&&|\\|\\|)=$/]",
          "ObjectExpression > SpreadElement",
          "ObjectPattern > RestElement",
          "CatchClause[param=null]",
          "ForOfStatement[await=true]",
          "ImportExpression",
          "PropertyDefinition",
          "Literal[bigint]",
        ].map((selector) => ({ selector, message: "newer than ES2017: old Node cannot parse it" })),
      ],
    },
  },
  {
    // Tests may poke at loosely typed HTTP bodies.
    files: ["**/*.test.ts", "e2e/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
    },
  },
);
