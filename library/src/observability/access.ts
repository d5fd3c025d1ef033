/**
 * Who may read what the controller knows: the health server's optional gate in front of `/metrics` and `/why`,
 * as controller-runtime's `filters.WithAuthenticationAndAuthorization` does for secure metrics. A request
 * carries `Authorization: Bearer <token>`; the API server says who the token is (a TokenReview) and whether
 * that user may read what the request asks for (a SubjectAccessReview):
 *
 * | path                        | what the user needs                                                          |
 * | --------------------------- | ---------------------------------------------------------------------------- |
 * | `/metrics`                  | the non-resource URL: `get` on `/metrics` (controller-runtime's rule)        |
 * | `/why`                      | the same: it holds counts only (objects, entries, bytes), as metrics do      |
 * | `/why/<namespace>/<name>`   | `get` on that object of the plugin's resource (e.g. `shapes`), in its namespace |
 * | `/why/<anything else>`      | `get` on the plugin's resource in every namespace (a cluster-wide grant)     |
 *
 * No token, or one the API server does not authenticate: 401. Authenticated but not allowed: 403, naming the
 * user and what is missing. A review that fails (the API server unreachable, the controller's own RBAC lacking
 * `create` on tokenreviews or subjectaccessreviews): 503, with a short message; the log says why.
 * `/healthz` and `/readyz` stay open: the kubelet's probes carry no token.
 *
 * The answers are reused for a short while (allowed 30 s, denied 10 s by default; at most `maxCached` of each
 * kind, the oldest dropped first), and concurrent requests with the same token share one review, so a scrape
 * costs no API call most of the time. Tokens are kept only as their SHA-256.
 *
 * A token not in the cache costs a TokenReview, so whoever reaches the port could make the API server review
 * a new made-up token with every request. Those reviews are bounded: at most `tokenReviewsPerSecond` (10 by
 * default; a burst of as many after a quiet second). A request over the bound is answered 429 Too Many
 * Requests with a Retry-After, and no review is made: not 401, which would say the token is bad when nobody
 * looked at it (a scraper whose token just changed would report an authentication failure rather than retry).
 * A token in the cache, or one under review already, costs nothing and is never refused so. The bound also
 * keeps what a flood of made-up tokens leaves in the cache small (with the defaults, about 110 refusals, each
 * kept 10 s, against room for 1,024), so it cannot push a scraper's answer out. While such a flood lasts, a
 * scraper whose answer ran out (after 30 s) takes its turn with the made-up tokens: a 429 now and then.
 * Access reviews need an authenticated user first, and are not bounded.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** A user as the API server authenticated them: a TokenReview's `status.user`. */
export interface ReviewedUser {
  /** E.g. `system:serviceaccount:monitoring:prometheus`. */
  username: string;
  /** The user's uid, when the authenticator gives one (a service account's). */
  uid?: string;
  /** E.g. `system:serviceaccounts`, `system:authenticated`. */
  groups?: string[];
  /** What else the authenticator knows (a service account token's pod name, say): passed on to the access review. */
  extra?: Record<string, string[]>;
}

/** The outcome of reviewing a token. `error` is the API server's word on why it was not accepted. */
export type TokenReviewOutcome =
  { authenticated: true; user: ReviewedUser } | { authenticated: false; error?: string };

/** What a request asks to do, as a SubjectAccessReview's spec says it: a resource, or a non-resource URL. */
export type AccessAttributes =
  | {
      resourceAttributes: {
        verb: string;
        group: string;
        resource: string;
        /** Absent: in every namespace. */
        namespace?: string;
        name?: string;
      };
    }
  | { nonResourceAttributes: { path: string; verb: string } };

/** The outcome of reviewing an access: a SubjectAccessReview's `status.allowed` (and `reason`). */
export interface AccessDecision {
  /** True when the user may. */
  allowed: boolean;
  /** The authorizer's word on why, when it gave one; never sent to the client (it may tell of others' grants). */
  reason?: string;
}

/**
 * Asks someone who knows (the API server: `KubeAccessReviewer`) who a token is and what a user may do. A call
 * that cannot answer rejects; the gate then answers 503 and tries again at the next request.
 */
export interface AccessReviewer {
  /** Who `token` is, or that it is not accepted. Rejects when it cannot tell (the review failed). */
  reviewToken(token: string): Promise<TokenReviewOutcome>;
  /** Whether `user` may do `attributes`. Rejects when it cannot tell (the review failed). */
  reviewAccess(user: ReviewedUser, attributes: AccessAttributes): Promise<AccessDecision>;
}

/** The health server's gate (`HealthServerOptions.access`): see the module comment. */
export interface AccessControl {
  /** Reviews tokens and accesses. */
  reviewer: AccessReviewer;
  /** The plugin's custom resource: `get` on one of them lets a user read `/why/<namespace>/<name>`. */
  resource: { group: string; resource: string };
  /** How long an authenticated token or an allowed access is reused. Default 30 s. */
  allowTtlMs?: number;
  /** How long a refused token or a denied access is reused. Default 10 s. */
  denyTtlMs?: number;
  /** Answers kept at most, of each kind (tokens, accesses). Default 1,024. */
  maxCached?: number;
  /**
   * TokenReviews of tokens not in the cache, at most this many per second, and as many at once after a
   * quiet second; over it a request is answered 429 with no review made. Default 10.
   */
  tokenReviewsPerSecond?: number;
  /** The clock of the cache and of the bound on reviews. Default `Date.now`. */
  now?: () => number;
}

/** A request let through, or the answer to send instead. */
export type GateAnswer =
  | { allowed: true; user: ReviewedUser }
  | {
      allowed: false;
      status: 401 | 403 | 429 | 503;
      message: string;
      user?: ReviewedUser;
      failure?: unknown;
      /** With a 429: when to ask again, in whole seconds (the `Retry-After` header). */
      retryAfterSeconds?: number;
    };

/**
 * The gate: checks one request's token and access with the reviewer, through the caches. Built by the health
 * server from its {@link AccessControl}.
 */
export class AccessGate {
  readonly #control: AccessControl;
  readonly #tokens: ReviewCache<TokenReviewOutcome>;
  readonly #accesses: ReviewCache<AccessDecision>;
  readonly #reviews: TokenBucket;

  constructor(control: AccessControl) {
    this.#control = control;
    const allowMs = control.allowTtlMs ?? 30_000;
    const denyMs = control.denyTtlMs ?? 10_000;
    const max = control.maxCached ?? 1_024;
    const now = control.now ?? Date.now;
    this.#tokens = new ReviewCache((o) => (o.authenticated ? allowMs : denyMs), max, now);
    this.#accesses = new ReviewCache((d) => (d.allowed ? allowMs : denyMs), max, now);
    this.#reviews = new TokenBucket(control.tokenReviewsPerSecond ?? 10, now);
  }

  /** Checks `req`, a GET or HEAD of `path` (`/metrics`, `/why` or `/why/...`). Never rejects. */
  async check(req: IncomingMessage, path: string): Promise<GateAnswer> {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) {
      return {
        allowed: false,
        status: 401,
        message:
          "unauthorized: no bearer token (send Authorization: Bearer <token>, a token the Kubernetes API server accepts)",
      };
    }
    const key = createHash("sha256").update(token).digest("hex");
    if (!this.#tokens.has(key)) {
      const waitMs = this.#reviews.take();
      if (waitMs > 0) {
        return {
          allowed: false,
          status: 429,
          message:
            "too many requests: too many tokens to review at once, this one was not reviewed; try again later",
          retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        };
      }
    }
    let outcome: TokenReviewOutcome;
    try {
      outcome = await this.#tokens.get(key, () => this.#control.reviewer.reviewToken(token));
    } catch (failure) {
      return {
        allowed: false,
        status: 503,
        message:
          "cannot check the token: the Kubernetes API server did not review it (the controller's log says why)",
        failure,
      };
    }
    if (!outcome.authenticated) {
      const said = outcome.error ? `: ${oneLine(outcome.error)}` : "";
      return {
        allowed: false,
        status: 401,
        message: `unauthorized: the Kubernetes API server did not accept the token${said}`,
      };
    }
    const { user } = outcome;
    const attributes = attributesOf(path, this.#control.resource);
    let decision: AccessDecision;
    try {
      const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, attributes]);
      decision = await this.#accesses.get(key, () => this.#control.reviewer.reviewAccess(user, attributes));
    } catch (failure) {
      return {
        allowed: false,
        status: 503,
        message: `cannot check what user ${JSON.stringify(user.username)} may read: the Kubernetes API server did not review it (the controller's log says why)`,
        user,
        failure,
      };
    }
    if (!decision.allowed) {
      return {
        allowed: false,
        status: 403,
        message: `forbidden: user ${JSON.stringify(user.username)} may not ${describe(attributes)}`,
        user,
      };
    }
    return { allowed: true, user };
  }
}

/**
 * What reading `path` needs (see the module comment's table). `path` is the URL's path, still escaped: a
 * subject's name is decoded here, as the `/why` handler decodes it.
 */
export function attributesOf(path: string, resource: AccessControl["resource"]): AccessAttributes {
  if (!path.startsWith("/why/")) return { nonResourceAttributes: { path: "/metrics", verb: "get" } };
  let subject: string;
  try {
    subject = decodeURIComponent(path.slice("/why/".length));
  } catch {
    subject = "";
  }
  const [namespace = "", name = "", ...rest] = subject.split("/");
  const one = namespace !== "" && name !== "" && rest.length === 0;
  return {
    resourceAttributes: {
      verb: "get",
      group: resource.group,
      resource: resource.resource,
      ...(one ? { namespace, name } : {}),
    },
  };
}

/** "get the non-resource URL /metrics", "get shapes.shapes.example.com "red" in the namespace "default"". */
function describe(attributes: AccessAttributes): string {
  if ("nonResourceAttributes" in attributes) {
    const { verb, path } = attributes.nonResourceAttributes;
    return `${verb} the non-resource URL ${path}`;
  }
  const { verb, group, resource, namespace, name } = attributes.resourceAttributes;
  const what = group === "" ? resource : `${resource}.${group}`;
  if (namespace === undefined) return `${verb} ${what} in every namespace`;
  return `${verb} ${what} ${JSON.stringify(name)} in the namespace ${JSON.stringify(namespace)}`;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +([^\s]+) *$/i.exec(header ?? "");
  return match?.[1];
}

function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 200);
}

/**
 * Answers by key, each kept for a TTL its value decides; the answer being fetched is shared by every caller
 * that asks meanwhile; a failure is not kept. At most `max` keys: the oldest go first.
 */
class ReviewCache<T> {
  readonly #entries = new Map<string, { value: Promise<T>; expiresAt: number }>();
  readonly #ttlOf: (value: T) => number;
  readonly #max: number;
  readonly #now: () => number;

  constructor(ttlOf: (value: T) => number, max: number, now: () => number) {
    this.#ttlOf = ttlOf;
    this.#max = Math.max(1, max);
    this.#now = now;
  }

  /** True when `key` has an answer that is still fresh, or one being fetched: `get` would not load. */
  has(key: string): boolean {
    const kept = this.#entries.get(key);
    return kept !== undefined && kept.expiresAt > this.#now();
  }

  get(key: string, load: () => Promise<T>): Promise<T> {
    const kept = this.#entries.get(key);
    if (kept && kept.expiresAt > this.#now()) return kept.value;
    if (kept) this.#entries.delete(key);
    while (this.#entries.size >= this.#max) {
      const [oldest] = this.#entries.keys();
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
    // A load that throws at once rejects like one that fails later.
    const entry = {
      value: new Promise<T>((resolve) => resolve(load())),
      expiresAt: Number.POSITIVE_INFINITY,
    };
    this.#entries.set(key, entry);
    entry.value.then(
      (value) => {
        entry.expiresAt = this.#now() + this.#ttlOf(value);
      },
      () => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      },
    );
    return entry.value;
  }
}

/**
 * At most `perSecond` takes a second, and as many at once after a quiet second. Not the queue's RateLimiter
 * (queue/rate-limiter.ts): that one makes a caller wait for its turn, and a request over this bound must
 * not wait, it is answered at once.
 */
class TokenBucket {
  readonly #perSecond: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(perSecond: number, now: () => number) {
    if (!(perSecond > 0 && Number.isFinite(perSecond))) {
      throw new Error(`cannot bound token reviews to ${perSecond} per second: it must be a positive number`);
    }
    this.#perSecond = perSecond;
    this.#now = now;
    this.#tokens = Math.max(1, perSecond);
    this.#at = now();
  }

  /** Takes one: 0 when there was one, else the milliseconds until there is. */
  take(): number {
    const now = this.#now();
    const burst = Math.max(1, this.#perSecond);
    this.#tokens = Math.min(burst, this.#tokens + (Math.max(0, now - this.#at) / 1000) * this.#perSecond);
    this.#at = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return ((1 - this.#tokens) / this.#perSecond) * 1000;
  }
}
