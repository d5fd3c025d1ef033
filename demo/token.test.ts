import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateToken } from "./token.ts";

describe("a demo token (the cloud's, the page's)", () => {
  let dir: string;
  beforeAll(async () => (dir = await mkdtemp(join(tmpdir(), "demo-token-"))));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("is made once (random, 0600) and then reused, so a second npm start keeps it", async () => {
    const path = join(dir, "sub", "cloud-token");
    const first = await loadOrCreateToken(path);
    expect(first.created).toBe(true);
    expect(first.token).toMatch(/^[0-9a-f]{32}$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await loadOrCreateToken(path)).toEqual({ token: first.token, created: false });
    const other = await loadOrCreateToken(join(dir, "other-token"));
    expect(other.token).not.toBe(first.token);
  });

  it("takes a token written by hand (whitespace trimmed), and refuses an empty file", async () => {
    await writeFile(join(dir, "mine"), "  my-token\n");
    expect((await loadOrCreateToken(join(dir, "mine"))).token).toBe("my-token");
    await writeFile(join(dir, "empty"), "\n");
    await expect(loadOrCreateToken(join(dir, "empty"))).rejects.toThrow(/cannot use the token in .* empty/);
    expect(await readFile(join(dir, "empty"), "utf8")).toBe("\n"); // never overwritten
  });
});
