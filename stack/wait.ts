/**
 * Waiting on conditions, never on the clock: `waitFor` polls a check until it passes and, when the deadline
 * comes first, fails with what did not happen and what the check last saw. It is the library's
 * (reconcile-kit/testing), the one the conformance scenarios wait with; the stack re-exports it for the e2e
 * tests, the demo, the bench and chaos.
 */
export { waitFor, DEFAULT_WAIT_MS, type WaitOptions } from "reconcile-kit/testing";
