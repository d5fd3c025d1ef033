import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CLI = join(import.meta.dirname, "cli.ts");
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "envtest-cli-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", timeout: 20_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("npm run cluster", () => {
  const cases = [
    {
      reason: "--help prints the usage on stdout",
      args: ["--help"],
      code: 0,
      out: /Usage: npm run cluster -- <command>/,
      err: /^$/,
    },
    { reason: "no command: usage on stderr, exit 2", args: [], code: 2, out: /^$/, err: /Commands:/ },
    {
      reason: "an unknown command is named",
      args: ["launch"],
      code: 2,
      out: /^$/,
      err: /cannot understand "launch"/,
    },
    { reason: "an unknown option is named", args: ["up", "--fast"], code: 2, out: /^$/, err: /--fast/ },
    {
      reason: "a bad --timeout says what to give",
      args: ["up", "--timeout", "soon"],
      code: 2,
      out: /^$/,
      err: /cannot use --timeout soon: give a number of seconds/,
    },
  ];
  it.each(cases)("$reason", ({ args, code, out, err }) => {
    const result = cli(...args);
    expect(result.code).toBe(code);
    expect(result.stdout).toMatch(out);
    expect(result.stderr).toMatch(err);
  });

  it("status with nothing running says so, with exit code 3", () => {
    const result = cli("status", "--dir", join(dir, "none"));
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/nothing runs .*npm run cluster -- up/);
  });

  it("down with nothing running is fine and says so", () => {
    const result = cli("down", "--dir", join(dir, "none"));
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/nothing was running/);
  });
});
