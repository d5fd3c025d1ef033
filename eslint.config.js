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
