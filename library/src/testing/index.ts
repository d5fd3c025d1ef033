/**
 * reconcile-kit/testing: what a plugin author tests with, no cluster needed — a fake plugin over an in-memory
 * external API and the Kubernetes side of table tests in memory (the library's own reconciler tests use
 * them), a fake Kubernetes API over real HTTP for informer tests, a clock that moves only when told to,
 * tracing kept in memory, and `waitFor` (poll a check until it passes). For a real cluster, run the
 * conformance scenarios: reconcile-kit/conformance (docs/writing-your-own.md).
 */
export * from "./fake-plugin.ts";
export * from "./fake-world.ts";
export * from "./fake-kube-api.ts";
export * from "./manual-clock.ts";
export * from "./tracing.ts";
export * from "./wait.ts";
