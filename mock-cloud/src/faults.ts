/**
 * Fault injection: the switches that make the mock cloud misbehave like a real one (errors, latency,
 * throttling, outages, eventual consistency). `FaultStore` holds the rules and decides, per request, what
 * goes wrong; middleware/faults.ts acts on the decision, and lists and the watch ask it for their lag.
 *
 * Every rule that matches a request applies: an outage wins; latency, lag and Retry-After are the
 * largest of the matching rules'; error and throttle rates each roll their own dice.
 */
import type { FaultConfig, FaultRule } from "./schemas.ts";

/** What should happen to one request. */
export type FaultDecision =
  | { readonly kind: "none"; readonly latencyMs: number }
  | { readonly kind: "outage"; readonly latencyMs: number; readonly retryAfterSeconds: number | undefined }
  | { readonly kind: "throttle"; readonly latencyMs: number; readonly retryAfterSeconds: number }
  | { readonly kind: "error"; readonly latencyMs: number };

/** Retry-After of a throttled answer when no rule says. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

interface CompiledRule {
  readonly rule: FaultRule;
  readonly matchesPath: (path: string) => boolean;
}

/** The current fault rules. One per app; starts empty (a well-behaved cloud). */
export class FaultStore {
  #rules: CompiledRule[] = [];
  readonly #random: () => number;
  readonly #listeners = new Set<() => void>();

  /** `random` returns a number in [0, 1); tests may pass a fixed one. */
  constructor(random: () => number = Math.random) {
    this.#random = random;
  }

  /** The configuration, as set. */
  get config(): FaultConfig {
    return { rules: this.#rules.map((r) => r.rule) };
  }

  /** Replaces every rule. Listeners are told (a watch re-checks its lag). */
  set(config: FaultConfig): void {
    this.#rules = config.rules.map((rule) => ({ rule, matchesPath: compilePath(rule.path) }));
    for (const listener of this.#listeners) listener();
  }

  /** Removes every rule. */
  clear(): void {
    this.set({ rules: [] });
  }

  /** Calls `listener` after every change of the rules. Returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Decides the fate of one API request. Rolls the dice: two calls may decide differently. */
  decide(method: string, path: string): FaultDecision {
    const rules = this.#matching(method, path);
    const latencyMs = Math.max(0, ...rules.map((r) => r.latencyMs ?? 0));
    const outage = rules.filter((r) => r.outage === true);
    if (outage.length > 0) {
      const seconds = outage.map((r) => r.retryAfterSeconds).filter((s) => s !== undefined);
      return {
        kind: "outage",
        latencyMs,
        retryAfterSeconds: seconds.length > 0 ? Math.max(...seconds) : undefined,
      };
    }
    for (const r of rules) {
      if (r.throttleRate !== undefined && this.#random() < r.throttleRate) {
        return {
          kind: "throttle",
          latencyMs,
          retryAfterSeconds: r.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS,
        };
      }
    }
    for (const r of rules) {
      if (r.errorRate !== undefined && this.#random() < r.errorRate) return { kind: "error", latencyMs };
    }
    return { kind: "none", latencyMs };
  }

  /** How far lists and the watch at `method path` trail writes, in ms (0: not at all). */
  lagMs(method: string, path: string): number {
    return Math.max(0, ...this.#matching(method, path).map((r) => r.listLagMs ?? 0));
  }

  #matching(method: string, path: string): FaultRule[] {
    return this.#rules
      .filter((r) => (r.rule.method === undefined || r.rule.method === method) && r.matchesPath(path))
      .map((r) => r.rule);
  }
}

/**
 * Compiles a rule's path template. Absent: any path. `/v1/*`: that prefix. `/v1/shapes/:id`: one
 * segment per `:param`. Anything else: exactly that path.
 */
export function compilePath(template: string | undefined): (path: string) => boolean {
  if (template === undefined) return () => true;
  if (template.endsWith("*")) {
    const prefix = template.slice(0, -1);
    return (path) => path.startsWith(prefix);
  }
  const want = template.split("/");
  return (path) => {
    const got = path.split("/");
    return (
      got.length === want.length &&
      want.every((seg, i) => (seg.startsWith(":") ? got[i] !== "" : seg === got[i]))
    );
  };
}
