/**
 * The console's client of the cloud: the shapes API with the API token, the fault switches with the admin
 * token. Every call either returns what the cloud answered or throws a `CloudError` whose message is the
 * cloud's own explanation (the `detail` of its application/problem+json answer), so the page can show it.
 *
 * Writes are conditional (`If-Match` on the revision the console shows): a person acting on what they see
 * must not overwrite a change they have not seen; the cloud answers 412 and the page says so.
 *
 * Each answer's `traceresponse` header (W3C Trace Context Level 2) says which trace the cloud recorded the
 * request in: `traceId` is the latest answer's, and `session()` gives one action its own client, so the
 * page can show the trace of what a person just did.
 */

/**
 * A failed call. The message is "cannot <what>: <detail>"; `detail` is the cloud's own explanation, `status`
 * the HTTP status (0 when the cloud could not be reached), `retryAfterSeconds` its `Retry-After`, if any.
 */
export class CloudError extends Error {
  /**
   * @param {string} what
   * @param {string} detail
   * @param {number} status
   * @param {number | undefined} retryAfterSeconds
   */
  constructor(what, detail, status, retryAfterSeconds) {
    super(`cannot ${what}: ${detail}`);
    this.name = "CloudError";
    this.detail = detail;
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Tells the console's writes apart from others' in the cloud's request log (`GET /admin/requests`). */
export const CLIENT_ID = "cloud-console";

/**
 * The trace id (32 lowercase hex) of an answer's `traceresponse` header (W3C Trace Context Level 2:
 * `<version>-<trace id>-<span id>-<flags>`), or undefined when it has none or it is malformed.
 *
 * @param {Response} res
 * @returns {string | undefined}
 */
export function traceIdOf(res) {
  const match = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-|$)/.exec(
    res.headers.get("traceresponse")?.trim() ?? "",
  );
  if (!match || match[1] === "ff" || /^0+$/.test(match[2] ?? "") || /^0+$/.test(match[3] ?? "")) {
    return undefined;
  }
  return match[2];
}

/**
 * @typedef {import("./store.js").Shape} Shape
 * @typedef {import("./faults.js").FaultConfig} FaultConfig
 * @typedef {{ baseUrl?: string, token: string, adminToken?: string, fetch?: typeof fetch }} CloudClientOptions
 */

/** The calls the console makes. */
export class CloudClient {
  #baseUrl;
  #token;
  #adminToken;
  #fetch;
  /** @type {string | undefined} */
  #traceId;

  /** @param {CloudClientOptions} options */
  constructor({ baseUrl = "", token, adminToken = token, fetch = globalThis.fetch.bind(globalThis) }) {
    this.#baseUrl = baseUrl;
    this.#token = token;
    this.#adminToken = adminToken;
    this.#fetch = fetch;
  }

  /**
   * The trace id of this client's latest call, from the answer's `traceresponse` header; undefined when
   * that answer had none, or no answer came.
   *
   * @returns {string | undefined}
   */
  get traceId() {
    return this.#traceId;
  }

  /**
   * A client with the same settings and its own `traceId`: one per action of the person at the console,
   * so that actions running at the same time do not mix up their traces.
   *
   * @returns {CloudClient}
   */
  session() {
    return new CloudClient({
      baseUrl: this.#baseUrl,
      token: this.#token,
      adminToken: this.#adminToken,
      fetch: this.#fetch,
    });
  }

  /**
   * Every shape (all pages), and the revision the listing was read at (watch from there).
   *
   * @param {AbortSignal} [signal]
   * @returns {Promise<{ items: Shape[], revision: number }>}
   */
  async listAll(signal) {
    /** @type {Shape[]} */
    const items = [];
    let revision = 0;
    let pageToken = "";
    do {
      const query = new URLSearchParams({ limit: "1000" });
      if (pageToken) query.set("pageToken", pageToken);
      const page = await this.#json("GET", `/v1/shapes?${query.toString()}`, { signal, what: "list shapes" });
      if (items.length === 0 && !pageToken) revision = page.revision;
      items.push(...page.items);
      pageToken = page.nextPageToken ?? "";
    } while (pageToken);
    return { items, revision };
  }

  /**
   * Opens the change feed after `since`: the 200 response, whose body streams Server-Sent Events.
   *
   * @param {number} since
   * @param {AbortSignal} [signal]
   * @returns {Promise<Response>}
   */
  watch(since, signal) {
    return this.#call("GET", `/v1/watch?since=${since}`, {
      signal,
      what: "watch the cloud",
      headers: { accept: "text/event-stream" },
    });
  }

  /**
   * Creates a shape that no controller owns (no tags): what "another system" would do.
   *
   * @param {{ name: string, type: string, color: string }} fields
   * @returns {Promise<Shape>}
   */
  create(fields) {
    return this.#json("POST", "/v1/shapes", { body: fields, what: `create ${fields.name}` });
  }

  /**
   * Changes a shape's color, if it is still at the revision the console shows.
   *
   * @param {Shape} shape
   * @param {string} color
   * @returns {Promise<Shape>}
   */
  recolor(shape, color) {
    return this.#json("PATCH", `/v1/shapes/${encodeURIComponent(shape.id)}`, {
      body: { color },
      ifMatch: shape.revision,
      what: `recolor ${shape.name}`,
    });
  }

  /**
   * Deletes a shape, if it is still at the revision the console shows.
   *
   * @param {Shape} shape
   * @returns {Promise<void>}
   */
  async remove(shape) {
    await this.#call("DELETE", `/v1/shapes/${encodeURIComponent(shape.id)}`, {
      ifMatch: shape.revision,
      what: `delete ${shape.name}`,
    });
  }

  /** @returns {Promise<FaultConfig>} the fault rules now */
  faults() {
    return this.#json("GET", "/admin/faults", { admin: true, what: "read the faults" });
  }

  /**
   * Replaces the fault rules; answers the rules as the cloud now has them.
   *
   * @param {FaultConfig} config
   * @returns {Promise<FaultConfig>}
   */
  setFaults(config) {
    return this.#json("PUT", "/admin/faults", { body: config, admin: true, what: "set the faults" });
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {CallOptions} options
   * @returns {Promise<any>}
   */
  async #json(method, path, options) {
    const res = await this.#call(method, path, options);
    return res.json();
  }

  /**
   * @typedef {{ what: string, body?: unknown, ifMatch?: number, admin?: boolean, signal?: AbortSignal,
   *   headers?: Record<string, string> }} CallOptions
   * @param {string} method
   * @param {string} path
   * @param {CallOptions} options
   * @returns {Promise<Response>}
   */
  async #call(method, path, { what, body, ifMatch, admin = false, signal, headers = {} }) {
    /** @type {Record<string, string>} */
    const all = {
      authorization: `Bearer ${admin ? this.#adminToken : this.#token}`,
      "x-client-id": CLIENT_ID,
      ...headers,
    };
    if (body !== undefined) all["content-type"] = "application/json";
    if (ifMatch !== undefined) all["if-match"] = `"${ifMatch}"`;
    this.#traceId = undefined;
    let res;
    try {
      res = await this.#fetch(`${this.#baseUrl}${path}`, {
        method,
        headers: all,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new CloudError(what, `the cloud does not answer (${String(error)})`, 0, undefined);
    }
    this.#traceId = traceIdOf(res);
    if (res.ok) return res;
    const retryAfter = Number(res.headers.get("retry-after") ?? NaN);
    throw new CloudError(
      what,
      await problemDetail(res),
      res.status,
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  }
}

/**
 * What a failed answer says: the `detail` of a problem+json body, else its HTTP status.
 *
 * @param {Response} res
 * @returns {Promise<string>}
 */
export async function problemDetail(res) {
  const text = await res.text().catch(() => "");
  try {
    const problem = JSON.parse(text);
    if (typeof problem?.detail === "string" && problem.detail) return problem.detail;
  } catch {
    // not JSON: fall through to the status
  }
  return `HTTP ${res.status} ${res.statusText}`.trim();
}
