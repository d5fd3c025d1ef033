/**
 * What an image will hold, read from the files that build it, without Docker: Dockerfile stages, the build
 * context that .dockerignore lets through, and the source files a TypeScript entry point imports. Used by
 * deploy/compose.test.ts to check the images are right by construction (this machine has no Docker engine).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, matchesGlob, normalize, relative } from "node:path";
import ts from "typescript";

/** One Dockerfile instruction, continuation lines joined. */
export interface Instruction {
  /** Upper-cased: FROM, COPY, RUN, USER, ... */
  keyword: string;
  /** Everything after the keyword, trimmed. */
  args: string;
}

/** One build stage: `FROM <base> [AS <name>]` and what follows it. */
export interface Stage {
  /** The stage's name (`AS name`), if any. */
  name: string | undefined;
  /** The image or earlier stage it starts from. */
  base: string;
  instructions: Instruction[];
}

/** One `COPY`: from the build context (`from` undefined) or from an earlier stage. */
export interface CopyInstruction {
  from: string | undefined;
  chown: string | undefined;
  sources: string[];
  destination: string;
}

/** Splits a Dockerfile into stages. Comments and blank lines are dropped; `\` continues a line. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = `${pending}${line}`.trim();
    pending = "";
    const match = /^(\S+)\s*(.*)$/.exec(full);
    if (!match?.[1]) continue;
    const instruction = { keyword: match[1].toUpperCase(), args: (match[2] ?? "").trim() };
    if (instruction.keyword === "FROM") {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      if (!from?.[1]) throw new Error(`cannot parse FROM ${instruction.args}`);
      stages.push({ base: from[1], name: from[2], instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`cannot parse ${instruction.keyword} before the first FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** The stage named `name`, or the last stage when `name` is undefined; throws when there is none. */
export function stageOf(stages: readonly Stage[], name: string | undefined): Stage {
  const stage = name === undefined ? stages.at(-1) : stages.find((s) => s.name === name);
  if (!stage) throw new Error(`cannot find the stage ${name ?? "(last)"}`);
  return stage;
}

/** `stage` and the stages it is built FROM, nearest first (an external base image ends the chain). */
export function stageChain(stages: readonly Stage[], stage: Stage): Stage[] {
  const chain = [stage];
  for (let s = stage; ;) {
    const parent = stages.find((p) => p.name === s.base);
    if (!parent || chain.includes(parent)) return chain;
    chain.push(parent);
    s = parent;
  }
}

/** The external image a stage finally starts from. */
export function baseImageOf(stages: readonly Stage[], stage: Stage): string {
  return stageChain(stages, stage).at(-1)?.base ?? stage.base;
}

/** The USER a stage runs as (the last USER in it or its parent stages), or undefined (the base image's). */
export function effectiveUser(stages: readonly Stage[], stage: Stage): string | undefined {
  for (const s of stageChain(stages, stage)) {
    const user = s.instructions.findLast((i) => i.keyword === "USER");
    if (user) return user.args;
  }
  return undefined;
}

/** Parses the arguments of a COPY instruction (shell form; the flags `--from` and `--chown`). */
export function parseCopy(args: string): CopyInstruction {
  const words = args.split(/\s+/).filter(Boolean);
  const flags = new Map<string, string>();
  while (words[0]?.startsWith("--")) {
    const [flag = "", value = ""] = (words.shift() ?? "").slice(2).split("=", 2);
    flags.set(flag, value);
  }
  const destination = words.pop();
  if (destination === undefined || words.length === 0) throw new Error(`cannot parse COPY ${args}`);
  return { from: flags.get("from"), chown: flags.get("chown"), sources: words, destination };
}

/** Every COPY of `stage` and its parent stages. */
export function copiesOf(stages: readonly Stage[], stage: Stage): CopyInstruction[] {
  return stageChain(stages, stage).flatMap((s) =>
    s.instructions.filter((i) => i.keyword === "COPY").map((i) => parseCopy(i.args)),
  );
}

/** The patterns of a .dockerignore file (comments and blank lines dropped). */
export function readDockerignore(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

/**
 * True when .dockerignore `patterns` keep `path` (relative to the context, `/`-separated) out of the build
 * context: a pattern that matches the path or any folder above it. Negations (`!`) are not supported.
 */
export function isDockerIgnored(patterns: readonly string[], path: string): boolean {
  if (patterns.some((p) => p.startsWith("!"))) {
    throw new Error("cannot evaluate .dockerignore negations (!): keep the file to plain exclusions");
  }
  const parts = path.split("/");
  return parts.some((_, i) => {
    const prefix = parts.slice(0, i + 1).join("/");
    return patterns.some((p) => matchesGlob(prefix, p.replace(/^\/+|\/+$/g, "")));
  });
}

/**
 * True when the context COPYs of an image put the context file `path` into it: a COPY whose source is the
 * file or a folder above it.
 */
export function isCopied(copies: readonly CopyInstruction[], path: string): boolean {
  return copies
    .filter((c) => c.from === undefined)
    .some((c) =>
      c.sources.some((source) => {
        const s = normalize(source).replace(/\/+$/, "");
        return path === s || path.startsWith(`${s}/`);
      }),
    );
}

/** The files an entry point loads, found by following its imports. */
export interface ImportGraph {
  /** Source files, relative to the root, entry points included. */
  files: string[];
  /** Package names imported at run time (`import type` excluded), e.g. `@kubernetes/client-node`, `yaml`. */
  packages: string[];
}

/**
 * Follows every run-time import of `entryPoints` (static imports, re-exports and `import()` with a literal;
 * `import type` and `export type`, which Node erases, are skipped) within `root`. Throws when a relative
 * import names no file.
 */
export function importGraph(
  root: string,
  entryPoints: readonly string[],
  sources: ReadonlyMap<string, string> = workspaceSources(root),
): ImportGraph {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [...entryPoints];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (files.has(file)) continue;
    const path = join(root, file);
    if (!existsSync(path) || !statSync(path).isFile()) throw new Error(`cannot find ${file}`);
    files.add(file);
    for (const specifier of runtimeImports(readFileSync(path, "utf8"), file)) {
      if (specifier.startsWith(".")) {
        queue.push(
          relative(root, join(dirname(path), specifier))
            .split("\\")
            .join("/"),
        );
      } else if (!specifier.startsWith("node:") && !builtinModules.includes(specifier)) {
        const parts = specifier.split("/");
        packages.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier));
        // A workspace package that runs from its sources: its files are loaded as much as ours.
        const source = sources.get(specifier);
        if (source !== undefined) queue.push(source);
      }
    }
  }
  return { files: [...files].toSorted(), packages: [...packages].toSorted() };
}

/**
 * The entry files of the workspace packages under `root` that run from their TypeScript sources: specifier
 * (`@shapes/envtest`, `@shapes/envtest/testing`) → file relative to `root`. A package whose exports name a
 * built file (reconcile-kit's dist/) is not here: it is loaded as a package, from its build.
 */
export function workspaceSources(root: string): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces?: string[] };
  const sources = new Map<string, string>();
  for (const dir of manifest.workspaces ?? []) {
    const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
      if (typeof target === "string" && target.endsWith(".ts"))
        sources.set(
          subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`,
          `${dir}/${target.slice(2)}`,
        );
    }
  }
  return sources;
}

/** The module specifiers a TypeScript file loads at run time. */
function runtimeImports(text: string, fileName: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    // `import type` is erased; `import { type A } from "x"` is not (Node strips only `type A`, and still
    // loads "x"), so it counts.
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Compose's variable interpolation, the subset docker-compose.yml uses: `${NAME:-default}` (the default
 * when NAME is unset or empty), `${NAME-default}` (when unset), `${NAME}`, and `$$` for a literal `$`.
 * With no `env`, every variable takes its default: the file as `docker compose config` shows it on a
 * machine that sets none of them.
 */
export function interpolate(text: string, env: Readonly<Record<string, string | undefined>> = {}): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)-([^}]*))?\}/g,
    (whole, name, colon, fallback) => {
      if (whole === "$$") return "$";
      const value = env[name as string];
      if (fallback === undefined) return value ?? "";
      const missing = colon === ":" ? value === undefined || value === "" : value === undefined;
      return missing ? (fallback as string) : (value as string);
    },
  );
}
