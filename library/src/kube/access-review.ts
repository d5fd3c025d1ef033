/**
 * The API server as the health server's reviewer (observability/access.ts): a TokenReview says who a bearer
 * token is, a SubjectAccessReview whether that user may do something. Both are one POST over the library's
 * keep-alive client (kube-http.ts) with the controller's own credentials, which need `create` on
 * `tokenreviews` (authentication.k8s.io) and `subjectaccessreviews` (authorization.k8s.io): what
 * controller-runtime's secure metrics ask of a controller's ClusterRole too.
 *
 * Also the `--metrics-auth` setting every controller on the library's manager shares: `kubernetes` (this reviewer), `none`, or `auto`
 * (`kubernetes` exactly when the process runs in a cluster on its pod's service account).
 */
import type {
  AccessAttributes,
  AccessDecision,
  AccessReviewer,
  ReviewedUser,
  TokenReviewOutcome,
} from "../observability/access.ts";
import { KubeHttp } from "./kube-http.ts";
import type { KubeConnection } from "./kubeconfig.ts";

/** Options of a {@link KubeAccessReviewer}. */
export interface KubeAccessReviewerOptions {
  /** Gives up on a review that has not answered after this long. Default 10 s (controller-runtime's). */
  timeoutMs?: number;
  /**
   * Audiences the token must be meant for (TokenReview `spec.audiences`). Default none: the API server's
   * own, which is what a service account token from `kubectl create token` or a pod's mount is for.
   */
  audiences?: readonly string[];
}

interface TokenReview {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    error?: string;
  };
}

interface SubjectAccessReview {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** Reviews tokens and accesses with the API server of a connection (kubeconfig.ts). */
export class KubeAccessReviewer implements AccessReviewer {
  readonly #http: KubeHttp;
  readonly #audiences: readonly string[];

  constructor(target: KubeConnection, options: KubeAccessReviewerOptions = {}) {
    // A few connections are plenty: answers are cached, and a scrape is one request every 15-60 s.
    this.#http = new KubeHttp(target, { maxSockets: 4, timeoutMs: options.timeoutMs ?? 10_000 });
    this.#audiences = options.audiences ?? [];
  }

  /** POST /apis/authentication.k8s.io/v1/tokenreviews. Rejects when the API server does not answer 2xx. */
  async reviewToken(token: string): Promise<TokenReviewOutcome> {
    const review = await this.#http.request<TokenReview>(
      "POST",
      "/apis/authentication.k8s.io/v1/tokenreviews",
      {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token, ...(this.#audiences.length > 0 ? { audiences: this.#audiences } : {}) },
      },
    );
    const status = review?.status;
    const username = status?.user?.username;
    if (status?.authenticated !== true || !username) {
      return { authenticated: false, ...(status?.error ? { error: status.error } : {}) };
    }
    const { uid, groups, extra } = status.user ?? {};
    return {
      authenticated: true,
      user: { username, ...(uid ? { uid } : {}), ...(groups ? { groups } : {}), ...(extra ? { extra } : {}) },
    };
  }

  /** POST /apis/authorization.k8s.io/v1/subjectaccessreviews. Rejects when the API server does not answer 2xx. */
  async reviewAccess(user: ReviewedUser, attributes: AccessAttributes): Promise<AccessDecision> {
    const review = await this.#http.request<SubjectAccessReview>(
      "POST",
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups ? { groups: user.groups } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          ...attributes,
        },
      },
    );
    const status = review?.status;
    const reason = status?.reason || status?.evaluationError;
    return { allowed: status?.allowed === true, ...(reason ? { reason } : {}) };
  }

  /** Closes the idle connections. Call once at shutdown. */
  async close(): Promise<void> {
    await this.#http.close();
  }
}

/** The values of the controllers' `--metrics-auth`. */
export const METRICS_AUTH_MODES = ["auto", "kubernetes", "none"] as const;

/** Who may read `/metrics` and `/why`: see {@link metricsAuthEnabled}. */
export type MetricsAuthMode = (typeof METRICS_AUTH_MODES)[number];

/**
 * True when `/metrics` and `/why` should ask for a token: `kubernetes`, or `auto` in a cluster, i.e. when the
 * kubeconfig in use is the in-cluster one (client-node's `loadFromDefault` took the pod's service account
 * because no KUBECONFIG or ~/.kube/config was there). On a laptop or in the demo, `auto` leaves the port
 * open: it listens on loopback there. Where other processes reach the port without being in a cluster (docker
 * compose's containers share networks with it), say `kubernetes`.
 */
export function metricsAuthEnabled(mode: MetricsAuthMode, target: KubeConnection): boolean {
  if (mode === "kubernetes") return true;
  if (mode === "none") return false;
  return isInClusterConfig(target);
}

/**
 * True when the kubeconfig in use is the pod's service account: the loader's in-cluster connection
 * (kubeconfig.ts names it as client-node's `loadFromCluster` does, so a connection made of such a KubeConfig
 * by `kubeConnectionOf` is one too).
 */
export function isInClusterConfig(target: KubeConnection): boolean {
  // The in-cluster loaders name what they build so; nothing else does.
  const { contextName: context, clusterName: cluster, userName: user } = target;
  return context === "inClusterContext" && cluster === "inCluster" && user === "inClusterUser";
}
