/**
 * `npm run images`: makes sure every base image the Dockerfiles name is in the local Docker engine, so that
 * `docker compose build` works on a machine that reaches no container registry.
 *
 * For each image named by a `FROM` of Dockerfile, Dockerfile.etcd and Dockerfile.kube-apiserver, in order:
 * 1. present in the engine (pulled earlier, or a stand-in built earlier): nothing to do;
 * 2. `docker pull` succeeds: the real image, nothing else to do (a machine with a registry ends here, and
 *    the Dockerfiles build exactly as they are);
 * 3. else a **stand-in** is built under exactly that tag, from what this machine already has:
 *    - `node:<v>-bookworm-slim`: Debian bookworm made by `debootstrap` (minbase), plus the Node binary
 *      scripts/node24.sh takes from the npm registry, npm from the npm registry, a user `node` (uid 1000);
 *    - `golang:<v>-bookworm`: the same Debian, plus the Go toolchain of exactly that version (the local one,
 *      or the one `GOTOOLCHAIN=go<v>` fetches from the Go module proxy);
 *    - `registry.k8s.io/etcd:<v>-0`, `registry.k8s.io/kube-apiserver:<v>`: distroless-like (no shell), the
 *      binaries envtest builds from Go modules, and etcdctl built from deploy/images/go/etcdctl.
 *
 * A stand-in carries the label `io.shapes-demo.stand-in`, so `docker image inspect` tells it from the real
 * one. What is slow is cached under `${XDG_CACHE_HOME:-~/.cache}/shapes-demo/images/`, keyed by version:
 * the Debian root file system (about a minute and a half to make) and etcdctl.
 *
 * Why a script and not a Dockerfile: a stand-in is made from files outside any build context (the
 * toolchains and binaries of this machine), and from `debootstrap`, which needs root on the host.
 */
import { existsSync } from "node:fs";
import { chmod, copyFile, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  cacheRoot,
  elapsed,
  ensureBinaries,
  ETCD_VERSION,
  isInvokedDirectly,
  KUBERNETES_VERSION,
  type ProgressLog,
  run,
  stderrLog,
  withLock,
} from "@shapes/envtest";
import { parseDockerfile } from "../build-context.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const HERE = import.meta.dirname;

/** The Dockerfiles docker-compose.yml builds, relative to the repository root. */
export const DOCKERFILES = ["Dockerfile", "Dockerfile.etcd", "Dockerfile.kube-apiserver"] as const;

/** The Debian release of the Node and Go stand-ins (the `bookworm` of their tags). */
export const DEBIAN_SUITE = "bookworm";

/**
 * npm in the Node stand-in. The upstream image has the npm its Node release bundles; the Node package of
 * the npm registry carries no npm, so one is taken from the registry: the npm 11 this project is built with.
 */
export const NPM_VERSION = "11.19.1";

/** Bumped when a stand-in's recipe changes: part of the label, so `--force` is not needed after a change. */
export const RECIPE_REVISION = "1";

/** The label every stand-in carries: `<kind>@<revision>`. */
export const STAND_IN_LABEL = "io.shapes-demo.stand-in";

/** The tag of the imported Debian root file system (local only; no Dockerfile names it). */
export const DEBIAN_BASE_TAG = `shapes-demo/debian:${DEBIAN_SUITE}-minbase`;

/** How a stand-in for one base image is made. */
export type Recipe =
  | { kind: "node"; image: string; nodeVersion: string }
  | { kind: "golang"; image: string; goVersion: string }
  | { kind: "etcd"; image: string }
  | { kind: "kube-apiserver"; image: string };

/** The versions this machine can make stand-ins of. */
export interface Versions {
  node: string;
  kubernetes: string;
  etcd: string;
}

/** The base images of Dockerfiles' texts: every FROM that is not an earlier stage, in order, once each. */
export function baseImagesOf(dockerfiles: readonly string[]): string[] {
  const images: string[] = [];
  for (const text of dockerfiles) {
    const stages = parseDockerfile(text);
    const names = new Set(stages.map((s) => s.name).filter((n): n is string => n !== undefined));
    for (const stage of stages) {
      if (!names.has(stage.base) && !images.includes(stage.base)) images.push(stage.base);
    }
  }
  return images;
}

/**
 * Which stand-in makes `image`, or why none can: the repository decides the kind, and the tag must be a
 * version this machine has (the Node of scripts/node24.sh, envtest's Kubernetes and etcd, any Go release).
 */
export function recipeFor(image: string, versions: Versions): Recipe | { error: string } {
  const match = /^([^@]+):([^:@/]+)(@sha256:[0-9a-f]{64})?$/.exec(image);
  if (!match) return { error: `cannot make a stand-in for ${image}: it names no tag` };
  const [, repository, tag, digest] = match;
  if (digest) return { error: `cannot make a stand-in for ${image}: a stand-in cannot have a pinned digest` };
  const suffix = `-${DEBIAN_SUITE}`;
  if (repository === "node") {
    if (tag !== `${versions.node}${suffix}-slim`) {
      return { error: `cannot make a stand-in for ${image}: this machine's Node is ${versions.node}` };
    }
    return { kind: "node", image, nodeVersion: versions.node };
  }
  if (repository === "golang") {
    const go = new RegExp(`^(\\d+\\.\\d+\\.\\d+)${suffix}$`).exec(tag ?? "")?.[1];
    if (!go) return { error: `cannot make a stand-in for ${image}: expected golang:X.Y.Z${suffix}` };
    return { kind: "golang", image, goVersion: go };
  }
  if (repository === "registry.k8s.io/etcd") {
    if (tag !== `${versions.etcd.replace(/^v/, "")}-0`) {
      return { error: `cannot make a stand-in for ${image}: envtest builds etcd ${versions.etcd}` };
    }
    return { kind: "etcd", image };
  }
  if (repository === "registry.k8s.io/kube-apiserver") {
    if (tag !== versions.kubernetes) {
      return {
        error: `cannot make a stand-in for ${image}: envtest builds Kubernetes ${versions.kubernetes}`,
      };
    }
    return { kind: "kube-apiserver", image };
  }
  return { error: `cannot make a stand-in for ${image}: no recipe for ${repository}` };
}

/** The Node version scripts/node24.sh installs (its `NODE24_VERSION` default). */
export async function node24Version(): Promise<string> {
  const text = await readFile(join(ROOT, "scripts", "node24.sh"), "utf8");
  const version = /NODE24_VERSION="\$\{NODE24_VERSION:-([\d.]+)\}"/.exec(text)?.[1];
  if (!version) throw new Error("cannot read NODE24_VERSION from scripts/node24.sh");
  return version;
}

/** Options of {@link ensureBaseImages}. */
export interface EnsureImagesOptions {
  log?: ProgressLog;
  /** Ask no registry: build a stand-in for every image not present. Default false. */
  noPull?: boolean;
  /** Rebuild the stand-ins even when present (never replaces a real image). Default false. */
  force?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** What happened to one base image. */
export interface ImageOutcome {
  image: string;
  outcome: "present" | "pulled" | "built";
  seconds: number;
}

/**
 * Makes sure every base image of {@link DOCKERFILES} is in the local engine (see the module comment).
 * Idempotent: a second call finds them all present; concurrent calls take turns (a lock in the cache
 * folder). Throws an Error saying what is missing otherwise.
 */
export async function ensureBaseImages(options: EnsureImagesOptions = {}): Promise<ImageOutcome[]> {
  const log = options.log ?? (() => {});
  const env = options.env ?? process.env;
  // Two callers at once (.ci/run's background preparation and the compose test) take turns: the second
  // then finds every image present.
  await mkdir(imagesCacheDir(env), { recursive: true });
  return withLock(join(imagesCacheDir(env), "lock"), () => ensureUnlocked(options, log, env), {
    onWait: (_owner, waitedMs) =>
      log(`another run is making the base images; waited ${Math.round(waitedMs / 1000)} s`),
  });
}

/** {@link ensureBaseImages}, under its lock. */
async function ensureUnlocked(
  options: EnsureImagesOptions,
  log: ProgressLog,
  env: NodeJS.ProcessEnv,
): Promise<ImageOutcome[]> {
  const texts = await Promise.all(DOCKERFILES.map((f) => readFile(join(ROOT, f), "utf8")));
  const versions: Versions = {
    node: await node24Version(),
    kubernetes: KUBERNETES_VERSION,
    etcd: ETCD_VERSION,
  };
  const outcomes: ImageOutcome[] = [];
  for (const image of baseImagesOf(texts)) {
    const started = Date.now();
    const label = await standInLabel(image, env);
    const recipe = recipeFor(image, versions);
    // A stand-in from an older recipe (another RECIPE_REVISION) is rebuilt; a real image is always kept.
    const current = "error" in recipe ? undefined : `${recipe.kind}@${RECIPE_REVISION}`;
    const outdated = label !== undefined && label !== "" && label !== current;
    if (label !== undefined && !outdated && !(options.force && label !== "")) {
      log(`${image}: present${label ? ` (a stand-in, ${label})` : ""}`);
      outcomes.push({ image, outcome: "present", seconds: 0 });
      continue;
    }
    if (outdated) log(`${image}: a stand-in of an older recipe (${label}): building it anew`);
    if (label === undefined && !options.noPull) {
      const pulled = await run("docker", ["pull", "--quiet", image], ROOT, env);
      if (pulled.code === 0) {
        log(`${image}: pulled in ${elapsed(started)}`);
        outcomes.push({ image, outcome: "pulled", seconds: (Date.now() - started) / 1000 });
        continue;
      }
      log(`${image}: cannot pull (${lastLine(pulled.stderr)}): building a stand-in`);
    }
    if ("error" in recipe) throw new Error(recipe.error);
    await buildStandIn(recipe, { log, env });
    log(`${image}: stand-in built in ${elapsed(started)}`);
    outcomes.push({ image, outcome: "built", seconds: (Date.now() - started) / 1000 });
  }
  return outcomes;
}

/** `undefined` when the engine lacks `image`; its stand-in label when present ("" for a real image). */
async function standInLabel(image: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const format = `{{index .Config.Labels "${STAND_IN_LABEL}"}}`;
  const result = await run("docker", ["image", "inspect", "--format", format, image], ROOT, env);
  if (result.code !== 0) {
    if (/no such image/i.test(result.stderr)) return undefined;
    throw new Error(`cannot ask the Docker engine about ${image}: ${lastLine(result.stderr)}`);
  }
  const value = result.stdout.trim();
  return value === "<no value>" ? "" : value;
}

interface StepContext {
  log: ProgressLog;
  env: NodeJS.ProcessEnv;
}

async function buildStandIn(recipe: Recipe, context: StepContext): Promise<void> {
  const ctx = await mkdtemp(join(tmpdir(), `stand-in-${recipe.kind}-`));
  try {
    const buildArgs: string[] = [];
    if (recipe.kind === "node") {
      buildArgs.push(`BASE=${await ensureDebianBase(context)}`, `NODE_VERSION=${recipe.nodeVersion}`);
      await nodeContext(ctx, recipe.nodeVersion, context);
    } else if (recipe.kind === "golang") {
      buildArgs.push(`BASE=${await ensureDebianBase(context)}`);
      await golangContext(ctx, recipe.goVersion, context);
    } else {
      await distrolessContext(ctx, recipe.kind, context);
    }
    const args = ["build", "--quiet", "-f", join(HERE, `${recipe.kind}.Dockerfile`), "-t", recipe.image];
    args.push("--label", `${STAND_IN_LABEL}=${recipe.kind}@${RECIPE_REVISION}`);
    for (const arg of buildArgs) args.push("--build-arg", arg);
    await step(context, `${recipe.image}: docker build`, "docker", [...args, ctx]);
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
}

/** The cache folder of the stand-ins' slow parts. */
export function imagesCacheDir(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  return join(cacheRoot(env, home), "images");
}

/**
 * The Debian base in the engine, imported from the cached root file system, made first when the cache
 * has none: `debootstrap --variant=minbase` from the machine's Debian mirror (root only).
 */
async function ensureDebianBase(context: StepContext): Promise<string> {
  if ((await standInLabel(DEBIAN_BASE_TAG, context.env)) !== undefined) return DEBIAN_BASE_TAG;
  const cache = imagesCacheDir(context.env);
  const tarball = join(cache, `debian-${DEBIAN_SUITE}-minbase.tar`);
  if (!existsSync(tarball)) {
    if (process.getuid?.() !== 0) {
      throw new Error(
        "cannot make the Debian base image: debootstrap needs root (run `npm run images` as root)",
      );
    }
    const mirror = context.env.DEBIAN_MIRROR ?? (await debianMirror());
    await mkdir(cache, { recursive: true });
    const dir = await mkdtemp(join(cache, "rootfs-"));
    try {
      const args = ["--variant=minbase", DEBIAN_SUITE, join(dir, "root"), mirror];
      const made = await step(
        context,
        `Debian ${DEBIAN_SUITE} root file system (debootstrap, ${mirror})`,
        "debootstrap",
        args,
      );
      if (made === "missing") {
        throw new Error(
          "cannot make the Debian base image: debootstrap is not installed (apt-get install debootstrap)",
        );
      }
      // The package cache and lists are the image's dead weight: upstream's slim images drop them too.
      await rm(join(dir, "root", "var", "cache", "apt", "archives"), { recursive: true, force: true });
      await rm(join(dir, "root", "var", "lib", "apt", "lists"), { recursive: true, force: true });
      await step(context, "root file system → tar", "tar", [
        "-C",
        join(dir, "root"),
        "-cf",
        join(dir, "rootfs.tar"),
        ".",
      ]);
      await rename(join(dir, "rootfs.tar"), tarball);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  await step(context, `docker import → ${DEBIAN_BASE_TAG}`, "docker", [
    "import",
    "--change",
    'CMD ["bash"]',
    tarball,
    DEBIAN_BASE_TAG,
  ]);
  return DEBIAN_BASE_TAG;
}

/** The first Debian mirror of the machine's apt sources; Debian's own when none is found. */
export async function debianMirror(
  read: (path: string) => Promise<string> = (p) => readFile(p, "utf8").catch(() => ""),
): Promise<string> {
  const deb822 = await read("/etc/apt/sources.list.d/debian.sources");
  const fromDeb822 = /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(deb822)?.[1];
  if (fromDeb822) return fromDeb822;
  const list = await read("/etc/apt/sources.list");
  const fromList = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s+/m.exec(list)?.[1];
  return fromList ?? "http://deb.debian.org/debian";
}

/** bin/node from scripts/node24.sh's cache (installing it there if needed), npm/ from the npm registry. */
async function nodeContext(ctx: string, nodeVersion: string, context: StepContext): Promise<void> {
  const found = await run(
    "bash",
    ["-c", ". scripts/node24.sh >&2 && command -v node && node --version"],
    ROOT,
    {
      ...context.env,
      NODE24_FORCE: "1",
      NODE24_VERSION: nodeVersion,
    },
  );
  const [nodePath, version] = found.stdout.trim().split("\n");
  if (found.code !== 0 || !nodePath || version !== `v${nodeVersion}`) {
    throw new Error(`cannot find Node ${nodeVersion} from scripts/node24.sh: ${lastLine(found.stderr)}`);
  }
  await mkdir(join(ctx, "bin"));
  await copyFile(nodePath, join(ctx, "bin", "node"));
  await step(context, `npm ${NPM_VERSION} from the npm registry`, "npm", [
    "pack",
    `npm@${NPM_VERSION}`,
    "--silent",
    "--pack-destination",
    ctx,
  ]);
  await mkdir(join(ctx, "npm"));
  await step(context, "npm unpacked", "tar", [
    "-xzf",
    join(ctx, `npm-${NPM_VERSION}.tgz`),
    "-C",
    join(ctx, "npm"),
    "--strip-components=1",
  ]);
  await rm(join(ctx, `npm-${NPM_VERSION}.tgz`));
}

/** go/: the GOROOT of exactly go<version> (GOTOOLCHAIN fetches it from the module proxy when not local). */
async function golangContext(ctx: string, goVersion: string, context: StepContext): Promise<void> {
  const env = { ...context.env, GOTOOLCHAIN: `go${goVersion}` };
  const found = await run("go", ["env", "GOROOT", "GOVERSION"], ctx, env);
  const [goroot, version] = found.stdout.trim().split("\n");
  if (found.code !== 0 || !goroot || version !== `go${goVersion}`) {
    throw new Error(
      `cannot find the Go toolchain go${goVersion} (GOTOOLCHAIN=go${goVersion}): ${lastLine(found.stderr)}`,
    );
  }
  await cp(goroot, join(ctx, "go"), { recursive: true, dereference: false, verbatimSymlinks: true });
}

/** rootfs/: etc/passwd and group (root, nonroot, nobody, as distroless), tmp (1777) and the binaries. */
async function distrolessContext(
  ctx: string,
  kind: "etcd" | "kube-apiserver",
  context: StepContext,
): Promise<void> {
  const root = join(ctx, "rootfs");
  await mkdir(join(root, "etc"), { recursive: true });
  await mkdir(join(root, "usr", "local", "bin"), { recursive: true });
  await mkdir(join(root, "tmp"));
  await chmod(join(root, "tmp"), 0o1777);
  await writeFile(
    join(root, "etc", "passwd"),
    "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
      "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  );
  await writeFile(join(root, "etc", "group"), "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n");
  const binaries = await ensureBinaries({ log: (line) => context.log(`envtest: ${line}`), env: context.env });
  const bin = join(root, "usr", "local", "bin");
  if (kind === "kube-apiserver") {
    await copyFile(binaries.kubeApiServer, join(bin, "kube-apiserver"));
    return;
  }
  await copyFile(binaries.etcd, join(bin, "etcd"));
  await copyFile(await ensureEtcdctl(context), join(bin, "etcdctl"));
}

/** etcdctl of envtest's etcd release, built from deploy/images/go/etcdctl into the cache once. */
async function ensureEtcdctl(context: StepContext): Promise<string> {
  const dir = join(imagesCacheDir(context.env), `etcdctl-${ETCD_VERSION}`);
  const binary = join(dir, "etcdctl");
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const partial = `${binary}.tmp.${process.pid}`;
  const args = [
    "build",
    "-trimpath",
    "-buildvcs=false",
    "-ldflags=-s -w",
    "-o",
    partial,
    "go.etcd.io/etcd/etcdctl/v3",
  ];
  const env = { ...context.env, CGO_ENABLED: "0" };
  await step(
    { ...context, env },
    `etcdctl ${ETCD_VERSION} (go build)`,
    "go",
    args,
    join(HERE, "go", "etcdctl"),
  );
  await rename(partial, binary);
  return binary;
}

/**
 * One slow step, with progress: a line when it starts, one every 20 s while it runs, one when it ends.
 * Throws with the command's last lines when it fails; returns "missing" when the command is not installed.
 */
async function step(
  context: StepContext,
  title: string,
  command: string,
  args: readonly string[],
  cwd?: string,
): Promise<"done" | "missing"> {
  const started = Date.now();
  context.log(`${title} ...`);
  const heartbeat = setInterval(() => context.log(`${title}: still running (${elapsed(started)})`), 20_000);
  try {
    const result = await run(command, args, cwd ?? ROOT, context.env);
    if (result.notFound) return "missing";
    if (result.code !== 0) {
      const output = result.stderr.trim() || result.stdout.trim();
      const tail = output.split("\n").slice(-15).join("\n");
      throw new Error(
        `cannot finish "${title}": ${command} exited with ${result.code ?? result.signal}. Its last lines:\n${tail}`,
      );
    }
    context.log(`${title}: done in ${elapsed(started)}`);
    return "done";
  } finally {
    clearInterval(heartbeat);
  }
}

function lastLine(output: string): string {
  return output.trim().split("\n").at(-1) ?? "";
}

const HELP = `Usage: npm run images -- [options]

Makes sure the base images of Dockerfile, Dockerfile.etcd and Dockerfile.kube-apiserver are in the local
Docker engine, so that \`docker compose build\` works where no container registry can be reached. For each:
present → nothing; \`docker pull\` works → the real image; else a stand-in is built under the same tag from
this machine's parts (debootstrap's Debian, the Node of scripts/node24.sh, the Go toolchain, the etcd and
kube-apiserver envtest builds). Slow parts are cached in ~/.cache/shapes-demo/images/. Needs a running
Docker engine (scripts/docker-engine.sh starts one) and, for the Debian base, root and debootstrap.

Options:
  --no-pull    Ask no registry: build a stand-in for every image that is not present.
  --force      Rebuild the stand-ins even when present (a real, pulled image is never replaced).
  -h, --help   Show this help.

Environment:
  DEBIAN_MIRROR   The mirror debootstrap uses (default: the machine's apt sources, else deb.debian.org).
  XDG_CACHE_HOME  Where the cache lives (default ~/.cache).`;

async function main(argv: string[]): Promise<number> {
  let values: { "no-pull"?: boolean; force?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        "no-pull": { type: "boolean" },
        force: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    process.stderr.write(`images: ${(error as Error).message}\n\n${HELP}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const started = Date.now();
  const log = stderrLog("images");
  try {
    const outcomes = await ensureBaseImages({ log, noPull: values["no-pull"], force: values.force });
    const built = outcomes.filter((o) => o.outcome === "built").length;
    log(`${outcomes.length} base images ready (${built} stand-ins built) in ${elapsed(started)}`);
    return 0;
  } catch (error) {
    log((error as Error).message);
    return 1;
  }
}

if (isInvokedDirectly(import.meta.filename)) process.exitCode = await main(process.argv.slice(2));
