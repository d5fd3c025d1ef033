/**
 * What the conformance suite registers for a subject, recorded instead of run: `describe`, `it` and the
 * hooks are replaced for scenarios.ts by a recorder, so no scenario needs a cluster.
 */
import { expect, test, vi } from "vitest";
import type * as Vitest from "vitest";
import type { Subject } from "./subject.ts";

/** Each scenario registered, with whether it was registered skipped. */
const registered = vi.hoisted(() => [] as { subject: string; name: string; skipped: boolean }[]);

vi.mock("vitest", async (importOriginal) => {
  const real = await importOriginal<typeof Vitest>();
  let subject = "";
  const record = (skipped: boolean) => (name: string) => void registered.push({ subject, name, skipped });
  const it = Object.assign(record(false), {
    skip: record(true),
    each: () => (name: string) => record(false)(name),
  });
  const describe = (name: string, factory: () => void) => {
    subject = name;
    factory();
  };
  const hook = () => undefined;
  return { ...real, it, describe, beforeAll: hook, afterAll: hook, afterEach: hook };
});

const REJECTED = "rejected input: Synced=False with the API's message, no retries, fixed by editing the spec";

/** A subject the suite only registers scenarios for: none of its methods is called. */
function registeredOnly(name: string, extra: Partial<Subject>): Subject {
  const annotations = { paused: "p", refresh: "r", adoptionPolicy: "a" };
  return { name, canRestartApiServer: false, ownerId: "o", annotations, ...extra } as Subject;
}

test.each([
  {
    reason: "an API that refuses nothing (refusesNothing): the scenario is skipped, with a line saying why",
    subject: registeredOnly("refuses-nothing", { refusesNothing: "it keeps any bytes under any key" }),
    skipped: true,
    warning: "conformance refuses-nothing: rejected input skipped: it keeps any bytes under any key",
  },
  {
    reason: "an API that refuses some input (rejectedMessage): the scenario runs",
    subject: registeredOnly("refuses-some", { rejectedMessage: "too large" }),
    skipped: false,
    warning: undefined,
  },
])("$reason", async ({ subject, skipped, warning }) => {
  const { conformance } = await import("./scenarios.ts");
  const warnings: string[] = [];
  const warn = vi
    .spyOn(console, "warn")
    .mockImplementation((line: unknown) => void warnings.push(String(line)));
  registered.length = 0;
  try {
    conformance(subject);
  } finally {
    warn.mockRestore();
  }
  expect(registered.filter((s) => s.name === REJECTED)).toEqual([
    { subject: `conformance: ${subject.name}`, name: REJECTED, skipped },
  ]);
  expect(warnings.filter((w) => w.includes("rejected input"))).toEqual(
    warning === undefined ? [] : [warning],
  );
});
