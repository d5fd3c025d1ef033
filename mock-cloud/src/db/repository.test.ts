import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { NameTakenError, RevisionMismatchError, ShapeNotFoundError } from "../errors.ts";
import { migrate, MIGRATIONS, type Migration } from "./migrations.ts";
import { ShapeRepository } from "./repository.ts";
import { shapeFields } from "../test-support.ts";

const dirs: string[] = [];
const repos: ShapeRepository[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), "mock-cloud-repo-"));
  dirs.push(dir);
  return join(dir, "cloud.db");
}
function open(path = ":memory:", historyLimit = 100, now?: () => number): ShapeRepository {
  const repo = ShapeRepository.open({ path, historyLimit, ...(now ? { now } : {}) });
  repos.push(repo);
  return repo;
}

describe("migrations", () => {
  it("bring a new database to the last version, and are not re-run", () => {
    const db = new Database(":memory:");
    try {
      expect(migrate(db)).toEqual({ from: 0, to: MIGRATIONS.length });
      expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
      expect(migrate(db)).toEqual({ from: MIGRATIONS.length, to: MIGRATIONS.length });
    } finally {
      db.close();
    }
  });

  it("apply only the new steps to an older database", () => {
    const db = new Database(":memory:");
    try {
      migrate(db);
      const next: Migration = {
        version: MIGRATIONS.length + 1,
        name: "test",
        sql: "CREATE TABLE extra (x INTEGER)",
      };
      expect(migrate(db, [...MIGRATIONS, next])).toEqual({
        from: MIGRATIONS.length,
        to: MIGRATIONS.length + 1,
      });
      expect(db.prepare("SELECT count(*) AS n FROM extra").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });

  it("roll a failing step back whole, version included", () => {
    const db = new Database(":memory:");
    try {
      migrate(db);
      const broken: Migration = {
        version: MIGRATIONS.length + 1,
        name: "broken",
        sql: "CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);",
      };
      expect(() => migrate(db, [...MIGRATIONS, broken])).toThrow(/nowhere/);
      expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
    } finally {
      db.close();
    }
  });

  it("refuse a database written by a newer mock cloud", () => {
    const path = tempDb();
    const db = new Database(path);
    db.pragma("user_version = 99");
    db.close();
    expect(() => ShapeRepository.open({ path, historyLimit: 10 })).toThrow(/schema version 99 is newer/);
  });
});

describe("ShapeRepository", () => {
  it("stamps every write with the next cloud revision and records it in the history", () => {
    const repo = open();
    const a = repo.create(shapeFields("a"));
    const b = repo.create(shapeFields("b"));
    const a2 = repo.update(a.id, (s) => ({ ...s, color: "blue" }));
    const gone = repo.delete(b.id);
    expect([a.revision, b.revision, a2.revision]).toEqual([1, 2, 3]);
    expect(gone).toEqual(b);
    expect(repo.revision).toBe(4);
    expect(repo.changes(0, 4, 10).map((c) => [c.revision, c.type, c.shape.name])).toEqual([
      [1, "ADDED", "a"],
      [2, "ADDED", "b"],
      [3, "MODIFIED", "a"],
      [4, "DELETED", "b"],
    ]);
    expect(repo.changes(2, 3, 10).map((c) => c.revision)).toEqual([3]);
  });

  it("throws domain errors and writes nothing when a write is refused", () => {
    const repo = open();
    const a = repo.create(shapeFields("a"));
    const b = repo.create(shapeFields("b"));
    expect(() => repo.create(shapeFields("a"))).toThrow(NameTakenError);
    expect(() => repo.update(b.id, (s) => ({ ...s, name: "a" }))).toThrow(NameTakenError);
    expect(() =>
      repo.update(
        a.id,
        (s) => s,
        (rev) => rev === 999,
      ),
    ).toThrow(RevisionMismatchError);
    expect(() => repo.delete("shp_nope")).toThrow(ShapeNotFoundError);
    expect(() =>
      repo.update(a.id, () => {
        throw new Error("refused by the caller");
      }),
    ).toThrow("refused by the caller");
    expect(repo.revision).toBe(2);
    expect(repo.get(a.id)).toEqual(a);
  });

  it("keeps a bounded history; the oldest readable revision moves with it", () => {
    const repo = open(":memory:", 3);
    expect(repo.oldestReadableRevision).toBe(0);
    for (let i = 0; i < 5; i++) repo.create(shapeFields(`h${i}`));
    expect(repo.changes(0, 5, 10).map((c) => c.revision)).toEqual([3, 4, 5]);
    expect(repo.oldestReadableRevision).toBe(2);
  });

  it("lists the cloud as it was at a past revision (visible with a lag)", () => {
    let now = 1_000_000;
    const repo = open(":memory:", 100, () => now);
    const a = repo.create(shapeFields("a", { tags: { t: "1" } }));
    const b = repo.create(shapeFields("b"));
    now += 10_000;
    const a2 = repo.update(a.id, (s) => ({ ...s, tags: {} }));
    repo.delete(b.id);
    const c = repo.create(shapeFields("c", { tags: { t: "1" } }));
    const at = (lagMs: number, tags: [string, string][] = []) =>
      repo.list({ tags, after: 0, limit: 10, notBefore: 0, lagMs });
    expect(at(5_000)).toEqual({ items: [a, b], readAt: 2, nextAfter: undefined });
    expect(at(5_000, [["t", "1"]]).items).toEqual([a]);
    expect(at(0)).toEqual({ items: [a2, c], readAt: 5, nextAfter: undefined });
    expect(at(0, [["t", "1"]]).items).toEqual([c]);
    expect(repo.msUntilVisible(3, 5_000)).toBe(5_000);
    now += 5_000;
    expect(at(5_000).readAt).toBe(5);
  });

  it("keeps shapes and the revision counter across a restart of a file database", () => {
    const path = tempDb();
    const first = ShapeRepository.open({ path, historyLimit: 10 });
    const a = first.create(shapeFields("a", { size: 2, tags: { k: "v" } }));
    const b = first.create(shapeFields("b"));
    first.delete(b.id);
    first.close();
    first.close(); // twice is fine

    const second = open(path, 10);
    expect(second.revision).toBe(3);
    expect(second.get(a.id)).toEqual(a);
    expect(second.get(b.id)).toBeUndefined();
    expect(second.create(shapeFields("c")).revision).toBe(4);
    expect(second.changes(0, 4, 10).map((c) => c.type)).toEqual(["ADDED", "ADDED", "DELETED", "ADDED"]);
    expect(second.integrityCheck()).toBe("ok");
  });

  it("uses WAL for file databases", () => {
    const path = tempDb();
    open(path);
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    } finally {
      db.close();
    }
  });
});
