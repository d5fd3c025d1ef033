/**
 * A small fetch client of the mock cloud for everything that plays "a person (or another system) using the
 * cloud": the demo's tour, the e2e tests, the bench and the chaos harness. It lists, creates, recolors and
 * deletes shapes, and reads the admin endpoints (faults, request log).
 *
 * Deliberately not the controller's cloud client (controller/src/shapes/cloud/client.ts): whoever uses this
 * observes the cloud from the outside, not through the code under test.
 */
import type {
  FaultConfig,
  FaultRule,
  RequestLogEntry,
  RequestLogPage,
  Shape as CloudShape,
  ShapeCreate,
  ShapePage,
  ShapePatch,
} from "./schemas.ts";

export type { CloudShape, FaultConfig, FaultRule, RequestLogEntry, ShapeCreate, ShapePatch };

/** A shape to create: the cloud's create body, whose `tags` may be left out. */
export type NewCloudShape = Omit<ShapeCreate, "tags"> & { tags?: ShapeCreate["tags"] };

/** A failed cloud call, with the HTTP status (0: the cloud did not answer) and the problem text it sent. */
export class CloudCallError extends Error {
  override name = "CloudCallError";
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** Who the client is to the cloud. */
export interface CloudHttpClientOptions {
  /** The cloud's base URL, e.g. http://127.0.0.1:8080 (a trailing slash is fine). */
  baseUrl: string;
  /** The API token. */
  token: string;
  /** The admin token (faults, request log). Default: `token` (a cloud started with one token for both). */
  adminToken?: string;
  /** Sent as X-Client-Id, so this client's writes are told apart from the controller's in the request log. */
  clientId: string;
}

/** The cloud's API and admin endpoints, as a person would use them. Every call is one HTTP request. */
export class CloudHttpClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #adminToken: string;
  readonly #clientId: string;

  constructor(options: CloudHttpClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#adminToken = options.adminToken ?? options.token;
    this.#clientId = options.clientId;
  }

  /** `GET /healthz`: throws when the cloud does not answer. */
  async health(): Promise<{ status: string; revision: number; shapes: number }> {
    return this.#call("GET", "/healthz");
  }

  /** Every shape in the cloud (all pages), ours and foreign, oldest first. */
  async list(): Promise<CloudShape[]> {
    const all: CloudShape[] = [];
    let pageToken: string | undefined;
    do {
      const query = new URLSearchParams({ limit: "1000", ...(pageToken ? { pageToken } : {}) });
      const page = await this.#call<ShapePage>("GET", `/v1/shapes?${query.toString()}`);
      all.push(...page.items);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return all;
  }

  /** The shape holding `name`, or undefined, from a listing (which trails writes under a `listLagMs` fault). */
  async byName(name: string): Promise<CloudShape | undefined> {
    return (await this.list()).find((s) => s.name === name);
  }

  /**
   * `GET /v1/shapes/by-name/{name}`: the shape holding `name`, or undefined when none does. One request, and
   * always the latest state (it never trails, even under a `listLagMs` fault).
   */
  async getByName(name: string): Promise<CloudShape | undefined> {
    try {
      return await this.#call<CloudShape>("GET", `/v1/shapes/by-name/${encodeURIComponent(name)}`);
    } catch (error) {
      if (error instanceof CloudCallError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** The shape with `id`, or undefined when it does not exist. */
  async get(id: string): Promise<CloudShape | undefined> {
    try {
      return await this.#call<CloudShape>("GET", `/v1/shapes/${encodeURIComponent(id)}`);
    } catch (error) {
      if (error instanceof CloudCallError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Creates a shape (as someone other than the controller would). No `tags`: none. */
  create(shape: NewCloudShape): Promise<CloudShape> {
    return this.#call<CloudShape>("POST", "/v1/shapes", shape);
  }

  /** A JSON merge patch of a shape, unconditionally (a person in the console does not send If-Match). */
  patch(id: string, patch: ShapePatch): Promise<CloudShape> {
    return this.#call<CloudShape>("PATCH", `/v1/shapes/${encodeURIComponent(id)}`, patch);
  }

  /** Deletes a shape, unconditionally; a 404 is an error (a CloudCallError with status 404). */
  async delete(id: string): Promise<void> {
    await this.#call<undefined>("DELETE", `/v1/shapes/${encodeURIComponent(id)}`);
  }

  /** The fault rules in force (`GET /admin/faults`). */
  faults(): Promise<FaultConfig> {
    return this.#call<FaultConfig>("GET", "/admin/faults", undefined, true);
  }

  /** Replaces every fault rule (an empty list: a well-behaved cloud again). */
  async setFaults(rules: FaultRule[]): Promise<void> {
    await this.#call<unknown>("PUT", "/admin/faults", { rules }, true);
  }

  /** Removes every fault rule. */
  async clearFaults(): Promise<void> {
    await this.#call<undefined>("DELETE", "/admin/faults", undefined, true);
  }

  /** The write requests the cloud answered (POST, PUT, PATCH, DELETE under /v1), oldest first. */
  async requests(): Promise<RequestLogEntry[]> {
    return (await this.#call<RequestLogPage>("GET", "/admin/requests", undefined, true)).items;
  }

  /** Empties the request log (its `seq` keeps counting), so a reader sees only the writes after this point. */
  async clearRequests(): Promise<void> {
    await this.#call<undefined>("DELETE", "/admin/requests", undefined, true);
  }

  async #call<T>(method: string, path: string, body?: unknown, admin = false): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${admin ? this.#adminToken : this.#token}`,
          "x-client-id": this.#clientId,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new CloudCallError(`cannot reach the cloud at ${this.baseUrl}: ${(error as Error).message}`, 0);
    }
    if (!res.ok) {
      throw new CloudCallError(
        `cannot ${method} ${path}: HTTP ${res.status}: ${await res.text()}`,
        res.status,
      );
    }
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
}
