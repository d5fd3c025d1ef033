import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStale, lockOwner, withLock } from "./lock.ts";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "envtest-lock-test-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The pid of a process that has exited (so the kernel has no process with it, for now). */
function deadPid(): number {
  const result = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(result.stdout);
}

describe("withLock", () => {
  it("never lets two holders run at once, and runs every waiter", async () => {
    const lock = join(root, "build.lock");
    let active = 0;
    let maxActive = 0;
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        withLock(
          lock,
          async () => {
            active++;
            maxActive = Math.max(maxActive, active);
            await new Promise((resolve) => setTimeout(resolve, 30));
            order.push(n);
            active--;
          },
          { pollMs: 5 },
        ),
      ),
    );
    expect(maxActive).toBe(1);
    expect(order.sort()).toEqual([1, 2, 3, 4]);
    expect(await readdir(root)).toEqual([]); // released
  });

  it("records who holds it while it runs", async () => {
    const lock = join(root, "build.lock");
    const owner = await withLock(lock, () => lockOwner(lock));
    expect(owner).toMatchObject({ pid: process.pid, host: hostname() });
  });

  it("releases the lock when the function throws", async () => {
    const lock = join(root, "build.lock");
    await expect(withLock(lock, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await lockOwner(lock)).toBeUndefined();
    expect(await withLock(lock, () => Promise.resolve("again"))).toBe("again");
  });

  it("breaks a lock whose owner died (a crashed build) instead of waiting forever", async () => {
    const lock = join(root, "build.lock");
    await mkdir(lock);
    await writeFile(
      join(lock, "owner.json"),
      JSON.stringify({ pid: deadPid(), host: hostname(), since: "x" }),
    );
    expect(await isStale(lock)).toBe(true);
    expect(await withLock(lock, () => Promise.resolve("taken"), { timeoutMs: 5_000, pollMs: 5 })).toBe(
      "taken",
    );
    expect((await readdir(root)).filter((e) => e.includes("stale"))).toEqual([]);
  });

  it("breaks a lock that has had no owner file for too long, but not a fresh one", async () => {
    const lock = join(root, "build.lock");
    await mkdir(lock);
    expect(await isStale(lock, 60_000)).toBe(false); // the owner may be about to write its file
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    expect(await isStale(lock, 60_000)).toBe(true);
  });

  it("waits for a live owner and, past its timeout, says who holds the lock", async () => {
    const lock = join(root, "build.lock");
    await mkdir(lock);
    await writeFile(
      join(lock, "owner.json"),
      JSON.stringify({ pid: process.pid, host: hostname(), since: "t0" }),
    );
    const notices: number[] = [];
    await expect(
      withLock(lock, () => Promise.resolve(), {
        timeoutMs: 300,
        pollMs: 10,
        noticeEveryMs: 50,
        onWait: (owner) => notices.push(owner?.pid ?? -1),
      }),
    ).rejects.toThrow(new RegExp(`cannot take the lock .* pid ${process.pid} on ${hostname()} holds it`));
    expect(notices.length).toBeGreaterThan(0);
    expect(notices.every((pid) => pid === process.pid)).toBe(true);
  });

  it("never breaks a lock held on another host (a shared home directory)", async () => {
    const lock = join(root, "build.lock");
    await mkdir(lock);
    await writeFile(
      join(lock, "owner.json"),
      JSON.stringify({ pid: deadPid(), host: "elsewhere", since: "x" }),
    );
    expect(await isStale(lock)).toBe(false);
  });
});
