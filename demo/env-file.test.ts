import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DemoEnvError, parseEnv, readEnvFile, renderEnv, writeEnvFile, type DemoEnv } from "./env-file.ts";

const plain: DemoEnv = {
  KUBECONFIG: "/home/me/shapes/.demo/cluster/kubeconfig",
  CLOUD_URL: "http://127.0.0.1:8080",
  CLOUD_TOKEN: "0123456789abcdef",
  CLOUD_ADMIN_TOKEN: "fedcba9876543210",
};

describe(".demo/env", () => {
  let dir: string;
  beforeAll(async () => (dir = await mkdtemp(join(tmpdir(), "demo-env-test-"))));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("is exactly the four KEY=value lines", () => {
    expect(renderEnv(plain)).toBe(
      "KUBECONFIG=/home/me/shapes/.demo/cluster/kubeconfig\n" +
        "CLOUD_URL=http://127.0.0.1:8080\n" +
        "CLOUD_TOKEN=0123456789abcdef\n" +
        "CLOUD_ADMIN_TOKEN=fedcba9876543210\n",
    );
  });

  it.each([
    { value: "/path with spaces/kubeconfig", reason: "spaces" },
    { value: "/it's/here", reason: "a single quote" },
    { value: "/a:b/c;rm -rf $HOME", reason: "shell syntax" },
  ])("quotes a value with $reason so a shell reads it back unchanged", ({ value }) => {
    const env = { ...plain, KUBECONFIG: value };
    const text = renderEnv(env);
    expect(parseEnv(text)).toEqual(env);
    // The real test of "shell-compatible": sh sources it and prints the value.
    const sh = spawnSync("sh", ["-c", `${text}\nprintf %s "$KUBECONFIG"`], { encoding: "utf8" });
    expect(sh.stdout).toBe(value);
  });

  it("skips comments, blank lines and `export`", () => {
    expect(
      parseEnv(
        `# the demo\n\nexport KUBECONFIG=/k\nCLOUD_URL=http://c\nCLOUD_TOKEN=t\nCLOUD_ADMIN_TOKEN=a\n`,
      ),
    ).toEqual({
      KUBECONFIG: "/k",
      CLOUD_URL: "http://c",
      CLOUD_TOKEN: "t",
      CLOUD_ADMIN_TOKEN: "a",
    });
  });

  it.each([
    {
      text: "KUBECONFIG=/k\nCLOUD_URL=http://c\n",
      message: /CLOUD_TOKEN, CLOUD_ADMIN_TOKEN missing/,
      reason: "a key is missing",
    },
    {
      text: "KUBECONFIG=/k\nCLOUD_URL=http://c\nCLOUD_TOKEN=t\n",
      message: /CLOUD_ADMIN_TOKEN missing/,
      reason: "the admin token is missing (a file of a demo that gave the controller the admin token too)",
    },
    {
      text: "KUBECONFIG=/k\nnonsense\n",
      message: /"nonsense" is not KEY=value/,
      reason: "a line is not KEY=value",
    },
  ])("refuses a file where $reason", ({ text, message }) => {
    expect(() => parseEnv(text)).toThrow(DemoEnvError);
    expect(() => parseEnv(text)).toThrow(message);
  });

  it("is written readable by its owner only (it holds the token), and read back", async () => {
    const path = join(dir, "env");
    await writeEnvFile(path, plain);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, "utf8")).toBe(renderEnv(plain));
    expect(await readEnvFile(path)).toEqual(plain);
  });

  it("says to run npm start when there is no file", async () => {
    await expect(readEnvFile(join(dir, "absent"))).rejects.toThrow(/start it with: npm start/);
  });
});
