/**
 * The only place that speaks SQL. `ShapeRepository` stores shapes in SQLite (better-sqlite3, WAL) and keeps,
 * in the same transaction as every write:
 *
 * - the cloud-wide revision counter (bumped once per write: create, update, delete);
 * - the change history (`events`), which feeds the watch and lets lists be served "as of" a past revision.
 *
 * better-sqlite3 is synchronous and Node runs one piece of JavaScript at a time, so a read-modify-write done
 * inside one transaction function cannot interleave with another request's: no lost updates. Write
 * transactions are `IMMEDIATE` so that a second process on the same file would wait rather than fail late.
 *
 * Tracing: each write transaction is a child span of the request's (`sqlite INSERT shapes`, ...), through
 * the one helper `#write`. The request's span reaches it by the active OpenTelemetry context; with tracing
 * off the tracer is a no-op.
 *
 * Snapshots: a list page is read at a revision `R` (possibly in the past, see `listLagMs`). The state at `R`
 * is every current row last written at or before `R`, plus, for each shape changed after `R`, its
 * `previous` state from its first change after `R` (unless that change created it). That needs every
 * change after `R` to still be in the history, which `oldestReadableRevision` guarantees.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import Database from "better-sqlite3";
import type { Database as Db, Statement } from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { NameTakenError, RevisionMismatchError, ShapeNotFoundError } from "../errors.ts";
import type { Shape, ShapeFields, WatchEventType } from "../schemas.ts";
import { cloudTracer } from "../tracer.ts";
import { migrate } from "./migrations.ts";

/** Options of `ShapeRepository.open`. */
export interface RepositoryOptions {
  /** A file path, or ":memory:". */
  path: string;
  /** How many changes the history keeps (the watch can resume from any of them). At least 1. */
  historyLimit: number;
  /** The clock, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** One change from the history. */
export interface Change {
  /** The revision the change was stamped with. */
  readonly revision: number;
  /** What happened. */
  readonly type: WatchEventType;
  /** The shape after the change; for DELETED, as it was when deleted. */
  readonly shape: Shape;
  /** The shape before the change; undefined for ADDED. */
  readonly previous: Shape | undefined;
}

/** A request for one list page. */
export interface ListQuery {
  /** `[key, value]` pairs the shape's tags must all contain. */
  readonly tags: readonly (readonly [string, string])[];
  /** Only shapes whose key (creation revision) is greater: the page token's cursor. 0 for the first page. */
  readonly after: number;
  /** Most items to return. */
  readonly limit: number;
  /** Read at this revision or later (the first page's revision, for later pages). */
  readonly notBefore: number;
  /** Serve the cloud as it was this long ago (eventual consistency). 0: the present. */
  readonly lagMs: number;
}

/** One page, as read. */
export interface ListResult {
  /** The shapes, ordered by creation. */
  readonly items: Shape[];
  /** The revision the page was read at. */
  readonly readAt: number;
  /** The cursor for the next page; undefined when this is the last. */
  readonly nextAfter: number | undefined;
}

/** Decides whether a write may go ahead given the shape's current revision (If-Match). */
export type RevisionCondition = (currentRevision: number) => boolean;

interface ShapeRow {
  id: string;
  name: string;
  type: string;
  color: string;
  size: number | null;
  tags: string;
  revision: number;
  created_revision: number;
  created_at: string;
  updated_at: string;
}

interface EventRow {
  revision: number;
  type: WatchEventType;
  shape: string;
  previous: string | null;
}

/** The shapes store. One instance per database; not safe to share one file between processes' writers. */
export class ShapeRepository {
  readonly #db: Db;
  readonly #historyLimit: number;
  readonly #now: () => number;
  readonly #listeners = new Set<(revision: number) => void>();
  readonly #statements = new Map<string, Statement>();
  readonly #listStatements = new Map<number, Statement>();
  readonly #path: string;
  #revision: number;
  #lastCommittedAt: number;
  #closed = false;

  private constructor(db: Db, options: RepositoryOptions) {
    this.#db = db;
    this.#path = options.path;
    this.#historyLimit = options.historyLimit;
    this.#now = options.now ?? Date.now;
    this.#revision = this.#readRevision();
    const last = db.prepare("SELECT max(committed_at_ms) AS t FROM events").get() as { t: number | null };
    this.#lastCommittedAt = last.t ?? 0;
  }

  /** Opens (creating and migrating as needed) the database at `options.path`. */
  static open(options: RepositoryOptions): ShapeRepository {
    if (!Number.isInteger(options.historyLimit) || options.historyLimit < 1) {
      throw new Error(`cannot open the shapes store: historyLimit must be a positive integer`);
    }
    const db = new Database(options.path);
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("busy_timeout = 5000");
      migrate(db);
    } catch (err) {
      db.close();
      throw err;
    }
    return new ShapeRepository(db, options);
  }

  /** The cloud revision: the revision of the last write (0 for a new cloud). */
  get revision(): number {
    return this.#revision;
  }

  /**
   * The oldest revision a watch can resume from (`since`) and a list can be read at: every change after it
   * is still in the history. Equals `revision` when the history is empty.
   */
  get oldestReadableRevision(): number {
    const row = this.#sql("SELECT min(revision) AS r FROM events").get() as { r: number | null };
    return row.r === null ? this.#revision : row.r - 1;
  }

  /** Calls `listener(revision)` after every committed write. Returns the unsubscribe function. */
  onCommit(listener: (revision: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Creates a shape. Throws `NameTakenError` when another shape holds the name. */
  create(fields: ShapeFields): Shape {
    const shape = this.#write("INSERT", (): Shape => {
      this.#assertNameFree(fields.name, undefined);
      const revision = this.#bump();
      const at = new Date(this.#now()).toISOString();
      const row: ShapeRow = {
        ...rowFields(fields),
        id: newId(),
        revision,
        created_revision: revision,
        created_at: at,
        updated_at: at,
      };
      this.#sql(
        `INSERT INTO shapes (id, name, type, color, size, tags, revision, created_revision, created_at, updated_at)
           VALUES (@id, @name, @type, @color, @size, @tags, @revision, @created_revision, @created_at, @updated_at)`,
      ).run(row);
      const created = toShape(row);
      this.#record("ADDED", created, undefined, revision, revision);
      return created;
    });
    this.#committed();
    return shape;
  }

  /** The shape with this id, or undefined. Always the latest state (strongly consistent). */
  get(id: string): Shape | undefined {
    const row = this.#sql("SELECT * FROM shapes WHERE id = ?").get(id) as ShapeRow | undefined;
    return row ? toShape(row) : undefined;
  }

  /**
   * The shape holding this name (names are unique), or undefined. Always the latest state, like `get`:
   * what a client that lost a create's answer asks before it creates again.
   */
  getByName(name: string): Shape | undefined {
    const row = this.#sql("SELECT * FROM shapes WHERE name = ?").get(name) as ShapeRow | undefined;
    return row ? toShape(row) : undefined;
  }

  /**
   * Read-modify-write of one shape in one transaction: `change` gets the current shape and returns its new
   * writable fields (it may throw to refuse: nothing is stored). A change that alters nothing is not a
   * write: no new revision, no event. Throws `ShapeNotFoundError`, `RevisionMismatchError` (when
   * `condition` refuses the current revision) or `NameTakenError` (a rename to a taken name).
   */
  update(id: string, change: (current: Shape) => ShapeFields, condition?: RevisionCondition): Shape {
    let wrote = false;
    const shape = this.#write("UPDATE", (): Shape => {
      const row = this.#sql("SELECT * FROM shapes WHERE id = ?").get(id) as ShapeRow | undefined;
      if (!row) throw new ShapeNotFoundError(id);
      const current = toShape(row);
      if (condition && !condition(current.revision)) throw new RevisionMismatchError(id, current.revision);
      const next = rowFields(change(current));
      if (sameFields(rowFields(current), next)) return current;
      if (next.name !== current.name) this.#assertNameFree(next.name, id);
      const revision = this.#bump();
      const updatedAt = new Date(this.#now()).toISOString();
      this.#sql(
        `UPDATE shapes SET name = @name, type = @type, color = @color, size = @size, tags = @tags,
             revision = @revision, updated_at = @updated_at WHERE id = @id`,
      ).run({ ...next, revision, updated_at: updatedAt, id });
      const updated = toShape({ ...row, ...next, revision, updated_at: updatedAt });
      this.#record("MODIFIED", updated, current, revision, row.created_revision);
      wrote = true;
      return updated;
    });
    if (wrote) this.#committed();
    return shape;
  }

  /** Deletes a shape and returns it as it was. Throws `ShapeNotFoundError` or `RevisionMismatchError`. */
  delete(id: string, condition?: RevisionCondition): Shape {
    const shape = this.#write("DELETE", (): Shape => {
      const row = this.#sql("SELECT * FROM shapes WHERE id = ?").get(id) as ShapeRow | undefined;
      if (!row) throw new ShapeNotFoundError(id);
      const current = toShape(row);
      if (condition && !condition(current.revision)) throw new RevisionMismatchError(id, current.revision);
      this.#sql("DELETE FROM shapes WHERE id = ?").run(id);
      const revision = this.#bump();
      this.#record("DELETED", current, current, revision, row.created_revision);
      return current;
    });
    this.#committed();
    return shape;
  }

  /**
   * One page of shapes, ordered by creation (an immutable key, so pages neither skip nor repeat a shape
   * that exists during the whole listing). Read at `max(notBefore, visibleRevision(lagMs))`.
   */
  list(query: ListQuery): ListResult {
    const readAt = Math.max(query.notBefore, this.visibleRevision(query.lagMs));
    const params: Record<string, string | number> = {
      readAt,
      after: query.after,
      limit: query.limit + 1,
    };
    query.tags.forEach(([k, v], i) => {
      params[`k${i}`] = k;
      params[`v${i}`] = v;
    });
    const rows = this.#listStatement(query.tags.length).all(params) as { k: number; body: string }[];
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return {
      items: page.map((r) => cleanShape(JSON.parse(r.body) as Shape & { size?: number | null })),
      readAt,
      nextAfter: more ? page[page.length - 1]?.k : undefined,
    };
  }

  /**
   * The newest revision visible to a reader that trails writes by `lagMs`: the last write committed at
   * least `lagMs` ago, but never older than `oldestReadableRevision` (the lag is bounded by the history).
   */
  visibleRevision(lagMs: number): number {
    if (lagMs <= 0) return this.#revision;
    const row = this.#sql("SELECT max(revision) AS r FROM events WHERE committed_at_ms <= ?").get(
      this.#now() - lagMs,
    ) as { r: number | null };
    return Math.max(row.r ?? 0, this.oldestReadableRevision);
  }

  /**
   * How long until the change `revision` becomes visible to a reader trailing by `lagMs` (0: already), or
   * undefined when that change is not in the history.
   */
  msUntilVisible(revision: number, lagMs: number): number | undefined {
    const row = this.#sql("SELECT committed_at_ms AS t FROM events WHERE revision = ?").get(revision) as
      { t: number } | undefined;
    return row === undefined ? undefined : Math.max(0, row.t + lagMs - this.#now());
  }

  /** The changes with `after < revision <= upTo`, oldest first, at most `limit`. */
  changes(after: number, upTo: number, limit: number): Change[] {
    const rows = this.#sql(
      "SELECT revision, type, shape, previous FROM events WHERE revision > ? AND revision <= ? ORDER BY revision LIMIT ?",
    ).all(after, upTo, limit) as EventRow[];
    return rows.map((r) => ({
      revision: r.revision,
      type: r.type,
      shape: JSON.parse(r.shape) as Shape,
      previous: r.previous === null ? undefined : (JSON.parse(r.previous) as Shape),
    }));
  }

  /** How many shapes exist. */
  count(): number {
    return (this.#sql("SELECT count(*) AS n FROM shapes").get() as { n: number }).n;
  }

  /** SQLite's `PRAGMA integrity_check`: "ok", or the problems it found. */
  integrityCheck(): string {
    const rows = this.#db.pragma("integrity_check") as { integrity_check: string }[];
    return rows.map((r) => r.integrity_check).join("; ");
  }

  /** Checkpoints the WAL into the main file and closes the database. Safe to call twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    if (this.#path !== ":memory:") this.#db.pragma("wal_checkpoint(TRUNCATE)");
    this.#db.close();
  }

  /**
   * Runs `work` as one IMMEDIATE write transaction, inside a child span of the active context named after
   * the statement it is about (`sqlite UPDATE shapes`); the span fails when the transaction throws (and
   * rolls back).
   */
  #write<T>(operation: "INSERT" | "UPDATE" | "DELETE", work: () => T): T {
    const attributes = {
      "db.system.name": "sqlite",
      "db.operation.name": operation,
      "db.collection.name": "shapes",
    };
    return cloudTracer().startActiveSpan(
      `sqlite ${operation} shapes`,
      { kind: SpanKind.CLIENT, attributes },
      (span) => {
        try {
          return this.#db.transaction(work).immediate();
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          span.setAttribute("error.type", error.name);
          span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  /** A prepared statement, cached by its text. */
  #sql(text: string): Statement {
    let stmt = this.#statements.get(text);
    if (!stmt) {
      stmt = this.#db.prepare(text);
      this.#statements.set(text, stmt);
    }
    return stmt;
  }

  #readRevision(): number {
    return (this.#sql("SELECT value FROM meta WHERE key = 'revision'").get() as { value: number }).value;
  }

  /** Inside a write transaction: the next revision. */
  #bump(): number {
    const row = this.#sql(
      "UPDATE meta SET value = value + 1 WHERE key = 'revision' RETURNING value",
    ).get() as { value: number };
    return row.value;
  }

  /** Inside a write transaction: appends the change to the history and prunes the oldest. */
  #record(
    type: WatchEventType,
    shape: Shape,
    previous: Shape | undefined,
    revision: number,
    createdRevision: number,
  ): void {
    const committedAt = Math.max(this.#lastCommittedAt, this.#now());
    this.#sql(
      `INSERT INTO events (revision, type, shape_id, created_revision, shape, previous, committed_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      revision,
      type,
      shape.id,
      createdRevision,
      JSON.stringify(shape),
      previous ? JSON.stringify(previous) : null,
      committedAt,
    );
    this.#sql("DELETE FROM events WHERE revision <= ?").run(revision - this.#historyLimit);
    this.#lastCommittedAt = committedAt;
  }

  /** After a write transaction committed: update the cache and tell the listeners. */
  #committed(): void {
    this.#revision = this.#readRevision();
    for (const listener of this.#listeners) listener(this.#revision);
  }

  #assertNameFree(name: string, exceptId: string | undefined): void {
    const holder = this.#sql("SELECT id FROM shapes WHERE name = ?").get(name) as { id: string } | undefined;
    if (holder && holder.id !== exceptId) throw new NameTakenError(name, holder.id);
  }

  #listStatement(tagCount: number): Statement {
    let stmt = this.#listStatements.get(tagCount);
    if (!stmt) {
      const tagConditions = Array.from(
        { length: tagCount },
        (_, i) =>
          `EXISTS (SELECT 1 FROM json_each(snapshot.body, '$.tags') WHERE key = @k${i} AND value = @v${i})`,
      );
      stmt = this.#db.prepare(`
        WITH changed AS (
          SELECT shape_id, min(revision) AS first_revision FROM events WHERE revision > @readAt GROUP BY shape_id
        ),
        snapshot AS (
          SELECT s.created_revision AS k,
                 json_object('id', s.id, 'name', s.name, 'type', s.type, 'color', s.color, 'size', s.size,
                             'tags', json(s.tags), 'revision', s.revision,
                             'createdAt', s.created_at, 'updatedAt', s.updated_at) AS body
            FROM shapes s
           WHERE s.revision <= @readAt AND s.created_revision > @after
          UNION ALL
          SELECT e.created_revision AS k, e.previous AS body
            FROM changed c JOIN events e ON e.revision = c.first_revision
           WHERE e.type <> 'ADDED' AND e.created_revision > @after
        )
        SELECT k, body FROM snapshot
        ${tagConditions.length ? `WHERE ${tagConditions.join(" AND ")}` : ""}
        ORDER BY k LIMIT @limit`);
      this.#listStatements.set(tagCount, stmt);
    }
    return stmt;
  }
}

/** A new opaque shape id. */
function newId(): string {
  return `shp_${randomBytes(8).toString("hex")}`;
}

interface RowFields {
  name: string;
  type: string;
  color: string;
  size: number | null;
  tags: string;
}

function rowFields(f: ShapeFields | Shape): RowFields {
  return { name: f.name, type: f.type, color: f.color, size: f.size ?? null, tags: JSON.stringify(f.tags) };
}

function sameFields(a: RowFields, b: RowFields): boolean {
  const tagsOf = (t: string) =>
    JSON.stringify(
      Object.entries(JSON.parse(t) as Record<string, string>).sort(([x], [y]) => (x < y ? -1 : 1)),
    );
  return (
    a.name === b.name &&
    a.type === b.type &&
    a.color === b.color &&
    a.size === b.size &&
    tagsOf(a.tags) === tagsOf(b.tags)
  );
}

function toShape(row: ShapeRow): Shape {
  return cleanShape({
    id: row.id,
    name: row.name,
    type: row.type as Shape["type"],
    color: row.color as Shape["color"],
    size: row.size,
    tags: JSON.parse(row.tags) as Record<string, string>,
    revision: row.revision,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

/** Drops a null `size` (SQL NULL means "no size") and fixes the member order. */
function cleanShape(s: Omit<Shape, "size"> & { size?: number | null }): Shape {
  const { id, name, type, color, size, tags, revision, createdAt, updatedAt } = s;
  return {
    id,
    name,
    type,
    color,
    ...(size === null || size === undefined ? {} : { size }),
    tags,
    revision,
    createdAt,
    updatedAt,
  };
}
