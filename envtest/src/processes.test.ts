import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isAlive, spawnChild, tailFile, terminatePid, waitForPidExit } from "./processes.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "envtest-processes-test-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SLEEP = "/bin/sleep";
const SH = "/bin/sh";

describe("spawnChild", () => {
  it("writes the child's output to its log file and reports how it exited", async () => {
    const child = await spawnChild({
      name: "echo",
      command: SH,
      args: ["-c", "echo one; echo two >&2; exit 3"],
      logFile: join(dir, "echo.log"),
    });
    expect(await child.exited).toEqual({ code: 3, signal: null });
    expect(await child.logTail(1)).toBe("two");
    expect(await readFile(join(dir, "echo.log"), "utf8")).toBe("one\ntwo\n");
  });

  it("stop() sends SIGTERM, and SIGKILL to a child that ignores it", async () => {
    const polite = await spawnChild({
      name: "sleep",
      command: SLEEP,
      args: ["600"],
      logFile: join(dir, "a.log"),
    });
    expect(await polite.stop(5_000)).toEqual({ code: null, signal: "SIGTERM" });
    const stubborn = await spawnChild({
      name: "stubborn",
      command: SH,
      args: ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"],
      logFile: join(dir, "b.log"),
    });
    while (!(await stubborn.logTail(1)).includes("ready")) await new Promise((r) => setTimeout(r, 20));
    expect(await stubborn.stop(300)).toEqual({ code: null, signal: "SIGKILL" });
    expect(isAlive(stubborn.pid)).toBe(false);
  });

  it("refuses a command that is not an executable file, naming it", async () => {
    await expect(
      spawnChild({ name: "ghost", command: join(dir, "nope"), args: [], logFile: join(dir, "c.log") }),
    ).rejects.toThrow(/cannot start ghost: .*nope is not an executable file/);
  });
});

/**
 * A Node parent that starts a `sleep` through spawnChild, prints the child's pid, then ends the way the
 * case says. The child must not outlive it.
 */
async function orphanAfter(ending: string, parentDeath: "auto" | "watchdog"): Promise<number> {
  const script = `
    const { spawnChild } = await import(${JSON.stringify(join(import.meta.dirname, "processes.ts"))});
    const child = await spawnChild({ name: "sleep", command: ${JSON.stringify(SLEEP)}, args: ["600"],
      logFile: ${JSON.stringify(join(dir, "orphan.log"))}, parentDeath: ${JSON.stringify(parentDeath)} });
    console.log(child.pid);
    // End only once the test has seen the child alive (else the exit hook can win that race).
    process.stdin.once("data", () => { ${ending} });
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const pid = await new Promise<number>((resolve, reject) => {
    parent.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    parent.once("exit", (code) => reject(new Error(`parent exited (${code}) before printing a pid`)));
  });
  expect(isAlive(pid)).toBe(true);
  if (ending === "") parent.kill("SIGKILL");
  else parent.stdin.write("go\n");
  await new Promise((resolve) =>
    parent.exitCode !== null || parent.signalCode !== null ? resolve(null) : parent.once("exit", resolve),
  );
  return pid;
}

describe("children die with their parent", () => {
  const cases = [
    {
      reason: "the parent exits normally (exit hook)",
      ending: "process.exit(0);",
      parentDeath: "auto" as const,
    },
    {
      reason: "the parent gets SIGTERM (signal hook)",
      ending: "process.kill(process.pid, 'SIGTERM');",
      parentDeath: "auto" as const,
    },
    {
      reason: "the parent is SIGKILLed (kernel: setpriv --pdeathsig)",
      ending: "",
      parentDeath: "auto" as const,
    },
    {
      reason: "the parent is SIGKILLed (fallback: shell watchdog)",
      ending: "",
      parentDeath: "watchdog" as const,
    },
  ];
  it.each(cases)("$reason", async ({ ending, parentDeath }) => {
    const pid = await orphanAfter(ending, parentDeath);
    try {
      // The watchdog polls once a second; everything else is immediate.
      expect(await waitForPidExit(pid, 10_000)).toBe(true);
    } finally {
      if (isAlive(pid)) process.kill(pid, "SIGKILL"); // leave nothing behind when the test fails
    }
  });
});

describe("terminatePid", () => {
  it("stops a process that is not our child and says how", async () => {
    const child = spawn(SLEEP, ["600"], { detached: true, stdio: "ignore" });
    child.unref();
    expect(await terminatePid(child.pid ?? -1, 5_000)).toBe("terminated");
    expect(await terminatePid(child.pid ?? -1, 5_000)).toBe("gone");
  });
});

describe("tailFile", () => {
  it("returns the last lines, and nothing for a missing file", async () => {
    const child = await spawnChild({
      name: "seq",
      command: "/usr/bin/seq",
      args: ["1", "100"],
      logFile: join(dir, "s.log"),
    });
    await child.exited;
    expect(await tailFile(join(dir, "s.log"), 3)).toBe("98\n99\n100");
    expect(await tailFile(join(dir, "missing.log"), 3)).toBe("");
  });
});
