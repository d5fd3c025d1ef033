/**
 * Versioned schema migrations. The database's `PRAGMA user_version` is the number of the last migration
 * applied; each migration runs in its own transaction together with the bump of `user_version`, so a crash
 * leaves the database at one version or the next, never in between. Migrations are append-only: never
 * edit one that has shipped, add the next version instead.
 */
import type { Database } from "better-sqlite3";

/** One schema step. */
export interface Migration {
  /** 1, 2, 3, ... without gaps: the `user_version` after this step. */
  readonly version: number;
  /** What the step does, for people reading a log. */
  readonly name: string;
  /** The SQL, run with `exec` (several statements allowed). */
  readonly sql: string;
}

/** The cloud's schema, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "shapes, the revision counter and the change history",
    sql: `
      -- The cloud-wide revision counter: bumped by every write (create, update, delete).
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      ) STRICT;
      INSERT INTO meta (key, value) VALUES ('revision', 0);

      CREATE TABLE shapes (
        id               TEXT PRIMARY KEY,
        name             TEXT NOT NULL UNIQUE,
        type             TEXT NOT NULL,
        color            TEXT NOT NULL,
        size             REAL,
        tags             TEXT NOT NULL,            -- JSON object, string -> string
        revision         INTEGER NOT NULL,         -- revision of the last write
        created_revision INTEGER NOT NULL UNIQUE,  -- immutable: the key list pages are ordered by
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL
      ) STRICT;

      -- The change feed. One row per write; the oldest rows are pruned (bounded retention).
      CREATE TABLE events (
        revision         INTEGER PRIMARY KEY,
        type             TEXT NOT NULL CHECK (type IN ('ADDED', 'MODIFIED', 'DELETED')),
        shape_id         TEXT NOT NULL,
        created_revision INTEGER NOT NULL,
        shape            TEXT NOT NULL,            -- JSON: the shape after the change (DELETED: before)
        previous         TEXT,                     -- JSON: the shape before the change (NULL for ADDED)
        committed_at_ms  INTEGER NOT NULL          -- never decreases with revision
      ) STRICT;
      CREATE INDEX events_by_shape ON events (shape_id, revision);
      CREATE INDEX events_by_time ON events (committed_at_ms);
    `,
  },
];

/**
 * Brings `db` up to the last of `migrations`. Returns the versions before and after.
 * Throws when the database is newer than this code (it was written by a later mock cloud).
 */
export function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): { from: number; to: number } {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`cannot migrate: migration #${i + 1} has version ${m.version}`);
  });
  const from = db.pragma("user_version", { simple: true }) as number;
  const latest = migrations.length;
  if (from > latest) {
    throw new Error(
      `cannot open the database: its schema version ${from} is newer than this mock cloud knows (${latest})`,
    );
  }
  for (const m of migrations.slice(from)) {
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
  return { from, to: latest };
}
