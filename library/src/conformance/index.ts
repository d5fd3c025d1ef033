/**
 * reconcile-kit/conformance: the story's scenarios as a suite a plugin author runs against their own
 * controller, in a real cluster. Write a {@link Subject} (how to start your API, CRDs and controller, and how a
 * person and the external API act on them), then call `conformance(mySubject())` at the top level of a test
 * file. It registers Vitest tests, so this entry needs Vitest installed (an optional peer dependency of the
 * package); `reconcile-kit/testing` does not. See docs/writing-your-own.md ("How to prove yours").
 */
export * from "./scenarios.ts";
export * from "./subject.ts";
