/**
 * A cross-process lock on a directory name: `mkdir` is atomic on every local file system, so exactly one
 * process creates the lock directory; it writes its pid and host inside. A lock whose owner is gone (a
 * dead pid on this host, or no owner file for a long while) is stale and broken, so a crashed build never
 * blocks the next one forever.
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { isAlive } from "./processes.ts";

/** Who holds a lock (the content of `owner.json` in the lock directory). */
export interface LockOwner {
  pid: number;
  host: string;
  /** ISO time the lock was taken. */
  since: string;
}

/** Options of {@link withLock}. */
export interface LockOptions {
  /** Called about every `noticeEveryMs` while waiting for another holder, with that holder (if known). */
  onWait?: (owner: LockOwner | undefined, waitedMs: number) => void;
  /** Default 30 s. */
  noticeEveryMs?: number;
  /** Give up after this long. Default: wait forever (a build takes minutes; its owner is checked for life). */
  timeoutMs?: number;
  /** Poll interval. Default 250 ms. */
  pollMs?: number;
  /** A lock directory without an owner file is stale after this long. Default 60 s. */
  ownerlessStaleMs?: number;
}

/**
 * Runs `fn` while holding the lock `lockDir` (a directory path that must not be used for anything else),
 * and releases it afterwards, also when `fn` throws.
 */
export async function withLock<T>(
  lockDir: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  await acquire(lockDir, options);
  try {
    return await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

/** Reads the owner of a lock; undefined when the lock is free or its owner file is missing or torn. */
export async function lockOwner(lockDir: string): Promise<LockOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(join(lockDir, "owner.json"), "utf8")) as Partial<LockOwner>;
    if (typeof owner.pid !== "number" || typeof owner.host !== "string") return undefined;
    return { pid: owner.pid, host: owner.host, since: String(owner.since) };
  } catch {
    return undefined;
  }
}

/**
 * True when the lock can be broken: its owner is a dead process on this host, or it has had no owner
 * file for longer than `ownerlessStaleMs`. A live owner, or one on another host (a shared home
 * directory), is never stale.
 */
export async function isStale(
  lockDir: string,
  ownerlessStaleMs = 60_000,
  now = Date.now(),
): Promise<boolean> {
  const owner = await lockOwner(lockDir);
  if (owner) return owner.host === hostname() && !isAlive(owner.pid);
  try {
    return now - (await stat(lockDir)).mtimeMs > ownerlessStaleMs;
  } catch {
    return false; // gone already: not stale, just free
  }
}

async function acquire(lockDir: string, options: LockOptions): Promise<void> {
  const started = Date.now();
  const noticeEveryMs = options.noticeEveryMs ?? 30_000;
  let lastNotice = started;
  for (;;) {
    try {
      await mkdir(lockDir);
      const owner: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
      await writeFile(join(lockDir, "owner.json"), JSON.stringify(owner));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (await isStale(lockDir, options.ownerlessStaleMs)) {
      await breakStaleLock(lockDir);
      continue;
    }
    const waited = Date.now() - started;
    if (options.timeoutMs !== undefined && waited > options.timeoutMs) {
      const owner = await lockOwner(lockDir);
      throw new Error(
        `cannot take the lock ${lockDir} within ${Math.round(options.timeoutMs / 1000)} s: ` +
          (owner
            ? `pid ${owner.pid} on ${owner.host} holds it since ${owner.since}`
            : "its owner is unknown"),
      );
    }
    if (Date.now() - lastNotice >= noticeEveryMs) {
      lastNotice = Date.now();
      options.onWait?.(await lockOwner(lockDir), waited);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
}

/**
 * Breaks a stale lock by renaming it away (atomic) and then deleting it. Two waiters may both find the
 * lock stale; the rename lets only one of them move it. If the moved lock turns out to have a different
 * owner than the stale one we saw (it was broken and re-taken in between), it is put back.
 */
async function breakStaleLock(lockDir: string): Promise<void> {
  const seen = await lockOwner(lockDir);
  const grave = `${lockDir}.stale-${process.pid}-${Date.now()}`;
  try {
    await rename(lockDir, grave);
  } catch {
    return; // someone else moved it first
  }
  const moved = await lockOwner(grave);
  if (moved && (!seen || moved.pid !== seen.pid || moved.since !== seen.since)) {
    try {
      await rename(grave, lockDir);
      return;
    } catch {
      // lockDir was taken again meanwhile; the moved lock's owner will find its lock gone on release.
    }
  }
  await rm(grave, { recursive: true, force: true });
}
