// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

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
    // The library is a package: from outside library/ it is reached through its public entries only
    // (reconcile-kit, reconcile-kit/tracing, reconcile-kit/testing; library/package.json's exports), never a
    // file inside it. Inside library/ the same rule forbids reaching back out of the package.
    files: ["**/*.ts"],
    ignores: ["library/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^|/)library/|^reconcile-kit/(src|dist)(/|$)",
              message:
                "import the library's public entry (reconcile-kit, reconcile-kit/tracing, reconcile-kit/testing), not a file inside it",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["library/**/*.ts"],
    ignores: ["library/**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(\\.\\./){2,}(?!src/)|^reconcile-kit(/|$)",
              message:
                "the library's sources import only each other (relative, inside library/src/) and their npm dependencies",
            },
          ],
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
