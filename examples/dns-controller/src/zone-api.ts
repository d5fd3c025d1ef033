/**
 * A small DNS zone API, in memory, over real HTTP: what the tests start in place of a real DNS provider. It
 * offers exactly what the external-resource pattern needs from an API (library/src/reconcile/contract.ts):
 *
 * - unique names (`name` is the FQDN): `POST /records` → 201, or 409 problem+json naming the `holderId`;
 * - a consistent read by name: `GET /records/by-name/:name` (404 when none);
 * - conditional writes: `PATCH /records/:id` (a JSON merge patch of name/type/value/ttl/labels: a new name
 *   renames the record, 409 naming the `holderId` when another record holds it) and `DELETE /records/:id`,
 *   with `If-Match: <revision>` (412 when stale, 404 when gone);
 * - a list filtered by label, with the zone-wide revision it is consistent with:
 *   `GET /records?label=key=value&limit=&pageToken=` → `{items, nextPageToken?, revision}`;
 * - a change feed that resumes from that revision: `GET /records/changes?since=&label=&timeoutMs=`, a long
 *   poll answering `{events, revision}` as soon as there are changes after `since` (or none at the timeout);
 *   410 when `since` is older than the retained history; a record whose labels stop matching is DELETED.
 *
 * Its own rule, beyond the schema: a TTL below {@link MIN_TTL_SECONDS} is refused with 422 (problem+json,
 * the detail naming the minimum), in a create and in a patch: this zone does not let resolvers cache its
 * answers for less than a minute. The Record CRD allows a TTL from 1 s: only the zone knows its minimum, as a
 * real DNS provider's does, so the controller learns it from the 422 (Synced=False, `SpecRejected`).
 *
 * For tests: `writes(clientId?)` counts write requests (by `X-Client-Id`), `throttleNext(s)` answers the
 * next request 429 with `Retry-After: s`.
 */
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import type { ZoneChanges, ZoneRecord } from "./client.ts";

/** The zone's shortest TTL, in seconds: a create or a patch asking for less is answered 422. */
export const MIN_TTL_SECONDS = 60;

const FQDN = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const Type = z.enum(["A", "CNAME", "TXT"]);
const Value = z.string().min(1).max(255);
const Ttl = z.int().min(1).max(604_800);
const LabelKey = z.string().min(1).max(63);
const LabelFilter = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((v) => [v ?? []].flat())
  .pipe(z.array(z.string().regex(/^[^=]+=/, "a label filter is key=value")))
  .transform((pairs) =>
    Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)])),
  );

const CreateBody = z.strictObject({
  name: z.string().regex(FQDN, "must be a lowercase FQDN"),
  type: Type,
  value: Value,
  ttl: Ttl.optional(),
  labels: z.record(LabelKey, z.string()).default({}),
});
const PatchBody = z.strictObject({
  name: z.string().regex(FQDN, "must be a lowercase FQDN").optional(),
  type: Type.optional(),
  value: Value.optional(),
  ttl: Ttl.nullable().optional(),
  labels: z.record(LabelKey, z.string().nullable()).optional(),
});
const ListQuery = z.object({
  label: LabelFilter,
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  pageToken: z.string().optional(),
});
const ChangesQuery = z.object({
  since: z.coerce.number().int().min(0),
  label: LabelFilter,
  timeoutMs: z.coerce.number().int().min(0).max(60_000).default(30_000),
});

/** An error answer: RFC 9457 problem+json, with extra members (`holderId`). */
class Problem extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown>;
  constructor(status: number, detail: string, extra: Record<string, unknown> = {}) {
    super(detail);
    this.status = status;
    this.extra = extra;
  }
}

/** One change, as the history keeps it: the record before and after (absent: created / deleted). */
interface Change {
  before?: ZoneRecord;
  after?: ZoneRecord;
  revision: number;
}

/** Options of {@link ZoneApi}. */
export interface ZoneApiOptions {
  /** How many changes the feed keeps; older `since` values get 410. Default 1000. */
  historyLimit?: number;
}

/** The zone API: `start()` listens on a free local port, `stop()` ends every request. */
export class ZoneApi {
  readonly #records = new Map<string, ZoneRecord>(); // by name
  readonly #history: Change[] = [];
  readonly #historyLimit: number;
  #horizon = 0; // the last revision dropped from the history
  #revision = 0;
  #changed = new AbortController(); // aborted (and replaced) at every change: wakes the long polls
  readonly #stopping = new AbortController();
  readonly #writes = new Map<string, number>();
  #throttleSeconds: number | undefined;
  #server: Server | undefined;
  #url = "";

  constructor(options: ZoneApiOptions = {}) {
    this.#historyLimit = options.historyLimit ?? 1000;
  }

  /** The base URL, once started. */
  get url(): string {
    return this.#url;
  }

  /** Write requests (POST, PATCH, DELETE) received from `clientId` (`X-Client-Id`), or from anyone. */
  writes(clientId?: string): number {
    if (clientId !== undefined) return this.#writes.get(clientId) ?? 0;
    return [...this.#writes.values()].reduce((a, b) => a + b, 0);
  }

  /** Answers the next request 429 with `Retry-After: seconds`. */
  throttleNext(seconds: number): void {
    this.#throttleSeconds = seconds;
  }

  /** Listens on 127.0.0.1 (port 0: a free one) and resolves with the base URL. */
  async start(port = 0): Promise<string> {
    const app = express();
    app.use(express.json({ type: ["application/json", "application/merge-patch+json"] }));
    app.use((req, res, next) => this.#countAndThrottle(req, res, next));
    app.get("/records", (req, res) => res.json(this.#list(ListQuery.parse(req.query))));
    app.get("/records/changes", async (req, res) =>
      res.json(await this.#changes(ChangesQuery.parse(req.query), res)),
    );
    app.get("/records/by-name/:name", (req, res) => res.json(this.#byName(req.params.name)));
    app.post("/records", (req, res) => res.status(201).json(this.#create(CreateBody.parse(req.body))));
    app.patch("/records/:id", (req, res) =>
      res.json(this.#patch(this.#current(req), PatchBody.parse(req.body))),
    );
    app.delete("/records/:id", (req, res) => {
      this.#commit(this.#current(req), undefined);
      res.status(204).end();
    });
    app.use(() => {
      throw new Problem(404, "no such route");
    });
    app.use(answerProblem);
    const server = app.listen(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => server.once("listening", resolve).once("error", reject));
    this.#server = server;
    this.#url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.#url;
  }

  /** Ends the long polls and every connection, and closes the port. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    await closed;
  }

  #countAndThrottle(req: Request, res: Response, next: NextFunction): void {
    if (req.method !== "GET") {
      const client = req.get("x-client-id") ?? "";
      this.#writes.set(client, (this.#writes.get(client) ?? 0) + 1);
    }
    const seconds = this.#throttleSeconds;
    if (seconds === undefined) return next();
    this.#throttleSeconds = undefined;
    res.set("retry-after", String(seconds));
    throw new Problem(429, "too many requests: slow down");
  }

  #list({ label, limit, pageToken }: z.infer<typeof ListQuery>) {
    const after = pageToken === undefined ? "" : Buffer.from(pageToken, "base64url").toString();
    const names = [...this.#records.keys()].filter((n) => n > after).sort();
    const items = names.map((n) => this.#records.get(n)!).filter((r) => matches(r, label));
    const page = items.slice(0, limit);
    const last = page.at(-1);
    const more = last !== undefined && items.length > limit;
    return {
      items: page,
      ...(more ? { nextPageToken: Buffer.from(last.name).toString("base64url") } : {}),
      revision: this.#revision,
    };
  }

  async #changes(
    { since, label, timeoutMs }: z.infer<typeof ChangesQuery>,
    res: Response,
  ): Promise<ZoneChanges> {
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    const deadline = AbortSignal.any([AbortSignal.timeout(timeoutMs), gone.signal, this.#stopping.signal]);
    for (;;) {
      if (since < this.#horizon || since > this.#revision)
        throw new Problem(410, `cannot resume from ${since}: the history holds ${this.#horizon} on`);
      const events = this.#history.filter((c) => c.revision > since).flatMap((c) => visible(c, label));
      if (events.length > 0 || deadline.aborted) return { events, revision: this.#revision };
      const wake = AbortSignal.any([this.#changed.signal, deadline]);
      await new Promise((resolve) => wake.addEventListener("abort", resolve, { once: true }));
    }
  }

  #byName(name: string): ZoneRecord {
    const record = this.#records.get(name);
    if (!record) throw new Problem(404, `cannot find a record named ${name}`);
    return record;
  }

  #create(body: z.infer<typeof CreateBody>): ZoneRecord {
    refuseShortTtl("create", body.name, body.ttl);
    const holder = this.#records.get(body.name);
    if (holder)
      throw new Problem(409, `cannot create ${body.name}: the name is taken`, { holderId: holder.id });
    return this.#commit(undefined, { id: `rec_${randomBytes(8).toString("hex")}`, ...body, revision: 0 })!;
  }

  #patch(old: ZoneRecord, { ttl = old.ttl ?? null, labels = {}, ...fields }: z.infer<typeof PatchBody>) {
    refuseShortTtl("patch", old.name, ttl ?? undefined);
    const holder = fields.name === undefined ? undefined : this.#records.get(fields.name);
    if (holder && holder.id !== old.id)
      throw new Problem(409, `cannot rename ${old.name} to ${holder.name}: the name is taken`, {
        holderId: holder.id,
      });
    const merged = Object.entries({ ...old.labels, ...labels }).filter(([, v]) => v !== null);
    const { ttl: _, ...rest } = old;
    const next = { ...rest, ...fields, ...(ttl === null ? {} : { ttl }) };
    return this.#commit(old, { ...next, labels: Object.fromEntries(merged) as Record<string, string> })!;
  }

  /** The record `:id` names, checked against `If-Match` (404 when gone, 412 when stale). */
  #current(req: Request): ZoneRecord {
    const record = [...this.#records.values()].find((r) => r.id === req.params.id);
    if (!record) throw new Problem(404, `cannot find record ${String(req.params.id)}`);
    const ifMatch = req.get("if-match")?.replaceAll('"', "");
    if (ifMatch !== undefined && ifMatch !== String(record.revision))
      throw new Problem(412, `cannot write ${record.name}: it is at revision ${record.revision}`);
    return record;
  }

  /** Applies one change at the next zone revision, keeps it in the history, and wakes the long polls. */
  #commit(before: ZoneRecord | undefined, next: ZoneRecord | undefined): ZoneRecord | undefined {
    const revision = ++this.#revision;
    const after = next && { ...next, revision };
    if (before) this.#records.delete(before.name);
    if (after) this.#records.set(after.name, after);
    this.#history.push({ ...(before ? { before } : {}), ...(after ? { after } : {}), revision });
    while (this.#history.length > this.#historyLimit) this.#horizon = this.#history.shift()!.revision;
    this.#changed.abort();
    this.#changed = new AbortController();
    return after;
  }
}

/** The zone's own rule: a TTL below {@link MIN_TTL_SECONDS} is refused for good (422), whatever else the request says. */
function refuseShortTtl(verb: string, name: string, ttl: number | undefined): void {
  if (ttl === undefined || ttl >= MIN_TTL_SECONDS) return;
  throw new Problem(
    422,
    `cannot ${verb} ${name}: ttl ${ttl} is below this zone's minimum TTL of ${MIN_TTL_SECONDS} seconds`,
  );
}

/** True when `record` carries every label of `filter`. */
function matches(record: ZoneRecord, filter: Record<string, string>): boolean {
  return Object.entries(filter).every(([key, value]) => record.labels[key] === value);
}

/** A change as a client filtering on `filter` sees it: a record that stops matching is DELETED. */
function visible({ before, after, revision }: Change, filter: Record<string, string>): ZoneChanges["events"] {
  const was = before !== undefined && matches(before, filter);
  const is = after !== undefined && matches(after, filter);
  if (is) return [{ type: was ? "MODIFIED" : "ADDED", record: after, revision }];
  return was ? [{ type: "DELETED", record: after ?? before, revision }] : [];
}

/** The one error middleware: every failure as application/problem+json. */
function answerProblem(err: unknown, _req: Request, res: Response, _next: NextFunction): void {
  const problem =
    err instanceof Problem
      ? err
      : err instanceof z.ZodError
        ? new Problem(400, err.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "))
        : isClientError(err)
          ? new Problem(err.status, err.message)
          : new Problem(500, `cannot answer: ${err instanceof Error ? err.message : String(err)}`);
  res
    .status(problem.status)
    .type("application/problem+json")
    .json({ type: "about:blank", status: problem.status, detail: problem.message, ...problem.extra });
}

/** An error express's body parser raised (malformed JSON, too large). */
function isClientError(err: unknown): err is Error & { status: number } {
  return err instanceof Error && "status" in err && typeof err.status === "number" && err.status < 500;
}

// `node examples/dns-controller/src/zone-api.ts [PORT]`: a zone to run the controller against by hand.
if (import.meta.main) {
  const url = await new ZoneApi().start(Number(process.argv[2] ?? 8053));
  process.stdout.write(`zone API on ${url} (in memory; Ctrl-C stops it)\n`);
}
