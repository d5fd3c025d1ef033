/**
 * reconcile-kit/crash-points: the crash explorer. For each lifecycle of a managed resource it records every
 * write the controller makes (Kubernetes and the external API), then kills the controller at each of them —
 * before the request reaches the server, and after the server committed it — and makes each fail once
 * without a kill, and checks the invariants after every step. Give it a {@link CrashSubject} (a conformance
 * subject with a tap on each of the controller's connections); it needs no test runner.
 */
export * from "./explorer.ts";
export * from "./lifecycles.ts";
export * from "./subject.ts";
export * from "./attribution.ts";
export * from "./labels.ts";
