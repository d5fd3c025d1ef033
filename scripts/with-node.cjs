/*
 * Every npm script runs through this: `node scripts/with-node.cjs <program> [args...]`, or
 * `node scripts/with-node.cjs -c "<shell command>" [args...]` for the scripts that chain commands.
 *
 * The project runs .ts files with Node's type stripping and needs Node >= the `engines` of package.json
 * (22.19). In a shell where `. scripts/node24.sh` was not sourced the machine's node may be older, and
 * `node demo/start.ts` dies with a stack trace. So, first:
 *  - the running Node is recent enough: run the target as if npm had run it itself (below);
 *  - it is too old, and the Node that scripts/node24.sh installs is in its cache: run the target with that
 *    Node's bin directory first on PATH and npm_config_nodedir at its headers, as node24.sh does (so npm,
 *    tsc, vitest and their workers get it too), after one line on stderr saying so;
 *  - it is too old and there is no such Node: one line on stderr saying what is needed and how to get
 *    it, and exit 1.
 * The version node24.sh installs is read out of node24.sh (its NODE24_VERSION default, or NODE24_VERSION
 * from the environment as node24.sh honours it), the minimum out of package.json's engines.
 *
 * How the target runs, when the Node is recent enough: process.execve (Node >= 22.15, so every Node that
 * gets here) replaces this process with the target. Not an in-process import(): that would make
 * `import.meta.main` false (deploy/compose/*.ts and examples/dns-controller/src/zone-api.ts check it) and
 * argv[1] this file (isInvokedDirectly compares it with the module's own path). Not a child process
 * either: the target keeps this process's pid, its process group and its parent (npm), so signals, exit
 * codes and `npm start`'s own SIGINT/SIGTERM/SIGHUP handling are exactly as without this file, and no
 * extra node process sits in memory for the life of `npm start`. Node ignores SIGPIPE and SIGXFSZ and an
 * ignored signal stays ignored across execve, so both get a handler first: execve resets a handled signal
 * to its default, as a child spawned by npm would have it.
 * With the cached Node 24 (this Node is too old for execve), or where there is no execve (Windows), the
 * target is a child process: stdio inherited, in the same process group (Ctrl-C in a terminal reaches it
 * directly), SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to this process forwarded to it (as npm forwards SIGINT and
 * SIGTERM to a script, so a target sees a terminal's Ctrl-C twice with or without this file), and its exit
 * code returned or the signal that ended it re-raised. That parent, the old Node, stays in memory while the
 * target runs (some 40 MB), only in a shell that did not source node24.sh: acceptable.
 *
 * CommonJS with ES2017 syntax at most (eslint.config.js holds it to that), so that even a Node too old for
 * ES modules without a flag (10) can parse it and say what is wrong; no dependencies.
 */
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const ROOT = path.join(__dirname, "..");
const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];

/** [major, minor, patch] of "v20.20.2", "22.19" or ">=22.19.0"; null when it is none of those. */
function parseVersion(text) {
  const m = /^\s*(?:>=\s*)?v?(\d+)\.(\d+)(?:\.(\d+))?\s*$/.exec(String(text));
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] || 0)] : null;
}

/** "22.19" for [22, 19, 0], "22.19.1" for [22, 19, 1]. */
function formatVersion(v) {
  return v[2] ? v.join(".") : v[0] + "." + v[1];
}

/** Whether version (as parseVersion returns it) is at least minimum. */
function atLeast(version, minimum) {
  for (let i = 0; i < 3; i++) {
    if (version[i] !== minimum[i]) return version[i] > minimum[i];
  }
  return true;
}

/** The minimum Node of package.json's `engines` (">=X.Y[.Z]"). */
function minimumNode(packageJsonText) {
  const engines = JSON.parse(packageJsonText).engines;
  const minimum = parseVersion(engines && engines.node);
  if (!minimum) throw new Error('package.json: engines.node is not ">=X.Y.Z"');
  return minimum;
}

/** The Node version scripts/node24.sh installs: NODE24_VERSION from env, else the script's default. */
function node24Version(node24ShText, env) {
  if (env.NODE24_VERSION) return env.NODE24_VERSION;
  const m = /NODE24_VERSION="\$\{NODE24_VERSION:-([\d.]+)\}"/.exec(node24ShText);
  if (!m) throw new Error("cannot read NODE24_VERSION from scripts/node24.sh");
  return m[1];
}

/**
 * Where scripts/node24.sh puts that Node:
 * ${XDG_CACHE_HOME:-$HOME/.cache}/shapes-demo/node-<version>/node_modules/node/node_modules/node-<os>-<arch>.
 */
function node24Layout(options) {
  const env = options.env;
  const cacheHome = env.XDG_CACHE_HOME || path.join(env.HOME || options.homedir, ".cache");
  const cacheDir = path.join(cacheHome, "shapes-demo");
  const arch = options.arch === "arm64" ? "arm64" : "x64"; // node24.sh: aarch64 | arm64 -> arm64, else x64
  const pkgDir = path.join(
    cacheDir,
    "node-" + options.version,
    "node_modules",
    "node",
    "node_modules",
    "node-" + options.platform + "-" + arch,
  );
  const binDir = path.join(pkgDir, "bin");
  return { cacheDir: cacheDir, pkgDir: pkgDir, binDir: binDir, node: path.join(binDir, "node") };
}

/** "run" (this Node will do), "cached" (run under the cached Node 24) or "fail". */
function decide(running, minimum, hasCachedNode) {
  const version = parseVersion(running);
  if (version && atLeast(version, minimum)) return "run";
  return hasCachedNode ? "cached" : "fail";
}

/** The command as the person typed it: `npm start`, `npm test`, `npm run why`; else the target itself. */
function commandName(env, target) {
  const event = env.npm_lifecycle_event;
  if (event === "start" || event === "test") return "npm " + event;
  if (event) return "npm run " + event;
  return target.join(" ");
}

/** path with the home directory shown as ~. */
function tildify(p, home) {
  return home && p.indexOf(home + path.sep) === 0 ? "~" + p.slice(home.length) : p;
}

function tooOldMessage(name, running, minimum, version, cacheDir) {
  return (
    name +
    " needs Node.js >= " +
    formatVersion(minimum) +
    " (this shell has " +
    running +
    "): run `. scripts/node24.sh` first (it fetches Node " +
    version +
    " into " +
    cacheDir +
    "), or install Node.js " +
    version.split(".")[0]
  );
}

function usingMessage(name, running, version, cacheDir) {
  return (
    name +
    ": using Node " +
    version +
    " from " +
    cacheDir +
    " (this shell has " +
    running +
    "; . scripts/node24.sh to make it the default)"
  );
}

function isExecutableFile(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch (_error) {
    return false;
  }
}

/** A program's file as the shell would find it: a name through PATH, a path as it is; null if none. */
function resolveProgram(program, pathVar) {
  if (program.indexOf("/") >= 0) return isExecutableFile(program) ? program : null;
  const dirs = (pathVar || "").split(path.delimiter);
  for (let i = 0; i < dirs.length; i++) {
    const file = path.join(dirs[i] || ".", program);
    if (isExecutableFile(file)) return file;
  }
  return null;
}

/** The target of the command line: { program, args } to run, as npm's `sh -c` would. */
function targetOf(argv) {
  if (argv[0] === "-c") {
    // npm appends the arguments after `--` to the script; "$@" puts them at the end of the command the same way.
    return { program: "sh", args: ["-c", argv[1] + ' "$@"', "sh"].concat(argv.slice(2)) };
  }
  return { program: argv[0], args: argv.slice(1) };
}

/** Replace this process with the target (execve), or run it as a child whose end becomes ours. */
function run(name, target, env) {
  if (process.platform === "win32") {
    const command = target.program === "sh" ? target.args[1].replace(' "$@"', "") : target.program;
    const args = target.program === "sh" ? target.args.slice(3) : target.args;
    return runChild(name, command, args, { env: env, stdio: "inherit", shell: true });
  }
  const file = resolveProgram(target.program, env.PATH);
  if (!file) {
    fail(name + ": " + target.program + ": not found (has `npm ci` run?)", 127);
    return;
  }
  if (typeof process.execve === "function") {
    const noop = function () {};
    process.on("SIGPIPE", noop);
    process.on("SIGXFSZ", noop);
    process.execve(file, [target.program].concat(target.args), env);
  }
  runChild(name, file, target.args, { argv0: target.program, env: env, stdio: "inherit" });
}

function runChild(name, file, args, options) {
  const child = childProcess.spawn(file, args, options);
  const forward = function (signal) {
    try {
      child.kill(signal);
    } catch (_error) {
      // it is gone already
    }
  };
  const listening = FORWARDED_SIGNALS.filter(function (signal) {
    try {
      process.on(signal, forward);
      return true;
    } catch (_error) {
      return false; // a signal this platform does not have
    }
  });
  child.on("error", function (error) {
    fail(name + ": cannot run " + file + ": " + error.message, 127);
  });
  child.on("exit", function (code, signal) {
    listening.forEach(function (s) {
      process.removeListener(s, forward);
    });
    if (signal) {
      process.kill(process.pid, signal);
      // Not ended by it (a signal Node ignores, such as SIGPIPE): a shell's 128 + its number.
      setTimeout(function () {
        process.exit(128 + (os.constants.signals[signal] || 0));
      }, 1000);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

const SOURCE_CONDITION = "--conditions=shapes-source";

function fail(line, code) {
  fs.writeSync(2, line + "\n");
  process.exit(code);
}

/**
 * The environment every target runs in: NODE_OPTIONS gains --conditions=shapes-source, so that node, and
 * every node the target starts, resolves a workspace package of this repo (reconcile-kit) to its
 * TypeScript sources instead of a dist/ that may be stale or unbuilt. A name of our own, not "source": some
 * published packages export a "source" condition that points at files Node cannot run.
 */
function withSourceCondition(env) {
  const options = env.NODE_OPTIONS || "";
  if (options.split(/\s+/).indexOf(SOURCE_CONDITION) !== -1) return env;
  return Object.assign({}, env, { NODE_OPTIONS: (options ? options + " " : "") + SOURCE_CONDITION });
}

function main(argv) {
  const env = withSourceCondition(process.env);
  const target = targetOf(argv);
  if (!target.program || (argv[0] === "-c" && argv[1] === undefined)) {
    fail("usage: node scripts/with-node.cjs <program> [args...] | -c <shell command> [args...]", 2);
    return;
  }
  const name = commandName(env, argv);
  try {
    const minimum = minimumNode(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    if (decide(process.version, minimum, false) === "run") {
      run(name, target, env);
      return;
    }
    const version = node24Version(fs.readFileSync(path.join(ROOT, "scripts", "node24.sh"), "utf8"), env);
    const layout = node24Layout({
      env: env,
      homedir: os.homedir(),
      platform: process.platform,
      arch: process.arch,
      version: version,
    });
    const cacheDir = tildify(layout.cacheDir, env.HOME || os.homedir());
    if (decide(process.version, minimum, isExecutableFile(layout.node)) === "fail") {
      fail(tooOldMessage(name, process.version, minimum, version, cacheDir), 1);
      return;
    }
    fs.writeSync(2, usingMessage(name, process.version, version, cacheDir) + "\n");
    const childEnv = Object.assign({}, env, {
      PATH: layout.binDir + path.delimiter + (env.PATH || ""),
      npm_config_nodedir: layout.pkgDir,
    });
    run(name, target, childEnv);
  } catch (error) {
    fail(name + ": " + (error && error.message), 1);
  }
}

module.exports = {
  parseVersion: parseVersion,
  atLeast: atLeast,
  minimumNode: minimumNode,
  node24Version: node24Version,
  node24Layout: node24Layout,
  decide: decide,
  commandName: commandName,
  tildify: tildify,
  tooOldMessage: tooOldMessage,
  usingMessage: usingMessage,
  withSourceCondition: withSourceCondition,
  targetOf: targetOf,
};

if (require.main === module) main(process.argv.slice(2));
