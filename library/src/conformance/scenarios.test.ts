/**
 * What the conformance suite registers for a subject, recorded instead of run: `describe`, `it` and the
 * hooks are replaced for scenarios.ts by a recorder, so no scenario needs a cluster.
 */
import { afterEach, expect, test, vi } from "vitest";
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
  return { name, ownerId: "o", annotations, ...extra } as Subject;
}

/** Registers `subject`'s scenarios; returns the lines the suite wrote to stderr. */
async function register(subject: Subject): Promise<string[]> {
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
  return warnings;
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
  const warnings = await register(subject);
  expect(registered.filter((s) => s.name === REJECTED)).toEqual([
    { subject: `conformance: ${subject.name}`, name: REJECTED, skipped },
  ]);
  expect(warnings.filter((w) => w.includes("rejected input"))).toEqual(
    warning === undefined ? [] : [warning],
  );
});

const UNINSTALL =
  "uninstall: deleting the CRD deletes nothing outside; every external object stays, released";
const RESTART = "API server restart: the watches recover; later creates, updates and deletes are carried";
const canAll = { uninstall: () => Promise.resolve(), restartApiServer: () => Promise.resolve() };

afterEach(() => {
  vi.unstubAllEnvs();
});

test.each([
  {
    reason: "a local cluster and a subject that can do both: uninstall and restart run",
    env: undefined,
    subject: registeredOnly("local", canAll),
    skipped: { uninstall: false, restart: false },
    warnings: [],
  },
  {
    reason:
      "USE_EXISTING_CLUSTER=true: the suite itself skips uninstall and restart, whatever the subject offers, saying why",
    env: "true",
    subject: registeredOnly("existing", canAll),
    skipped: { uninstall: true, restart: true },
    warnings: [
      "conformance existing: uninstall skipped: the cluster is an existing one (USE_EXISTING_CLUSTER=true), whose CRD this suite must not delete",
      "conformance existing: API server restart skipped: the cluster is an existing one (USE_EXISTING_CLUSTER=true), which this suite must not restart",
    ],
  },
  {
    reason: "USE_EXISTING_CLUSTER=false: a local cluster, both run",
    env: "false",
    subject: registeredOnly("local-false", canAll),
    skipped: { uninstall: false, restart: false },
    warnings: [],
  },
  {
    reason: "a local cluster and a subject that offers neither: both skipped, saying the subject cannot",
    env: undefined,
    subject: registeredOnly("unable", {}),
    skipped: { uninstall: true, restart: true },
    warnings: [
      "conformance unable: uninstall skipped: the subject cannot uninstall (it gives no uninstall)",
      "conformance unable: API server restart skipped: the subject cannot restart its API server (it gives no restartApiServer)",
    ],
  },
])("$reason", async ({ env, subject, skipped, warnings: expected }) => {
  vi.stubEnv("USE_EXISTING_CLUSTER", env);
  const warnings = await register(subject);
  expect(registered.filter((s) => s.name === UNINSTALL || s.name === RESTART)).toEqual([
    { subject: `conformance: ${subject.name}`, name: UNINSTALL, skipped: skipped.uninstall },
    { subject: `conformance: ${subject.name}`, name: RESTART, skipped: skipped.restart },
  ]);
  expect(warnings.filter((w) => w.includes("uninstall") || w.includes("API server restart"))).toEqual(
    expected,
  );
});
