/**
 * A small client of the mock cloud for the tour: it plays "a person in the console, or another system"
 * (list, create, recolor, delete shapes) and reads the request log for evidence. Deliberately not the
 * controller's own cloud client: the tour observes the cloud from the outside, as a person would.
 */
import type {
  RequestLogEntry,
  RequestLogPage,
  Shape as CloudShape,
  ShapeCreate,
  ShapePage,
  ShapePatch,
} from "../mock-cloud/src/schemas.ts";

export type { CloudShape, RequestLogEntry, ShapeCreate };

/** The client id the tour sends (X-Client-Id): its writes are told apart from the controller's in the request log. */
export const TOUR_CLIENT_ID = "shapes-tour";

/** A failed call, with the HTTP status. */
export class CloudCallError extends Error {
  override name = "CloudCallError";
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** The cloud's API (and admin endpoints, with the same token), as a person would use it. */
export class CloudClient {
  readonly baseUrl: string;
  readonly #token: string;

  constructor(baseUrl: string, token: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.#token = token;
  }

  /** `GET /healthz`: throws when the cloud does not answer. */
  async health(): Promise<{ status: string; revision: number; shapes: number }> {
    return this.#call("GET", "/healthz");
  }

  /** Every shape (all pages), oldest first. */
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

  /** The shape holding `name`, or undefined. */
  async byName(name: string): Promise<CloudShape | undefined> {
    return (await this.list()).find((s) => s.name === name);
  }

  /** The shape `id`, or undefined when it does not exist. */
  async get(id: string): Promise<CloudShape | undefined> {
    try {
      return await this.#call<CloudShape>("GET", `/v1/shapes/${encodeURIComponent(id)}`);
    } catch (error) {
      if (error instanceof CloudCallError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Creates a shape. */
  create(shape: ShapeCreate): Promise<CloudShape> {
    return this.#call("POST", "/v1/shapes", shape);
  }

  /** Merge-patches a shape without If-Match (a person in a console does not send one). */
  patch(id: string, patch: ShapePatch): Promise<CloudShape> {
    return this.#call("PATCH", `/v1/shapes/${encodeURIComponent(id)}`, patch);
  }

  /** Deletes a shape; an absent one is fine. */
  async delete(id: string): Promise<void> {
    try {
      await this.#call("DELETE", `/v1/shapes/${encodeURIComponent(id)}`);
    } catch (error) {
      if (!(error instanceof CloudCallError && error.status === 404)) throw error;
    }
  }

  /** The most recent writes the cloud answered (POST, PUT, PATCH, DELETE), oldest first. */
  async requests(): Promise<RequestLogEntry[]> {
    return (await this.#call<RequestLogPage>("GET", "/admin/requests")).items;
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          "x-client-id": TOUR_CLIENT_ID,
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
