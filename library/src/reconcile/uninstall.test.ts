/**
 * How a delete on a resource's behalf tells an uninstall (its CRD being deleted) from a deletion: the pure
 * reading of the CRD, and the read itself (one live GET, none with deleteOnUninstall, and no guess when it
 * fails). What each reconciler then does is in their own tables (reconciler.test.ts, intent-reconciler.test.ts,
 * sweep.test.ts).
 */
import { describe, expect, it } from "vitest";
import type { ResourceDefinition } from "./kube-writer.ts";
import { kubeError } from "../testing/fake-world.ts";
import { uninstallOf, uninstallReason } from "./uninstall.ts";

const CRD = "widgets.test.example.com";
const present: ResourceDefinition = { name: CRD, uid: "u1", createdAt: "2026-01-10T00:00:00Z" };

describe("uninstallReason", () => {
  it.each([
    {
      reason: "a CRD being deleted (deletionTimestamp set) is an uninstall",
      definition: { ...present, deletingSince: "2026-02-01T00:00:00Z" },
      recordedAt: undefined,
      expected: `the CRD ${CRD} is being deleted (uninstall)`,
    },
    {
      reason: "a CRD that is gone (404) is an uninstall: its resources went with it",
      definition: undefined,
      recordedAt: undefined,
      expected: `the CRD ${CRD} is gone (uninstall)`,
    },
    {
      reason: "a CRD present and not being deleted: an ordinary deletion, the delete may go ahead",
      definition: present,
      recordedAt: undefined,
      expected: undefined,
    },
    {
      reason: "a record written after the CRD was created: an ordinary missed deletion",
      definition: present,
      recordedAt: "2026-01-15T00:00:00Z",
      expected: undefined,
    },
    {
      reason: "a record written in the CRD's own second (no earlier CRD can be told): not an uninstall",
      definition: present,
      recordedAt: "2026-01-10T00:00:00Z",
      expected: undefined,
    },
    {
      reason: "a record older than the CRD: the CRD was deleted and created again since, its resource went",
      definition: present,
      recordedAt: "2026-01-05T00:00:00Z",
      expected: `the CRD ${CRD} was deleted and created again (2026-01-10T00:00:00Z) after the record was written (2026-01-05T00:00:00Z): its resource went with the old CRD (uninstall)`,
    },
    {
      reason: "a CRD without a creation time cannot be compared: not an uninstall on that ground",
      definition: { name: CRD, uid: "u1" },
      recordedAt: "2026-01-05T00:00:00Z",
      expected: undefined,
    },
  ])("$reason", ({ definition, recordedAt, expected }) => {
    expect(uninstallReason(CRD, definition, recordedAt)).toBe(expected);
  });
});

describe("uninstallOf", () => {
  const plugin = { resource: { plural: "widgets", group: "test.example.com" } };

  it.each([
    {
      reason: "reads the CRD once: being deleted, an uninstall",
      read: () => Promise.resolve({ ...present, deletingSince: "2026-02-01T00:00:00Z" }),
      deleteOnUninstall: false,
      expected: `the CRD ${CRD} is being deleted (uninstall)`,
      reads: 1,
    },
    {
      reason: "reads the CRD once: present, not an uninstall",
      read: () => Promise.resolve(present),
      deleteOnUninstall: false,
      expected: undefined,
      reads: 1,
    },
    {
      reason: "with deleteOnUninstall it reads nothing and never says uninstall",
      read: () => Promise.resolve({ ...present, deletingSince: "2026-02-01T00:00:00Z" }),
      deleteOnUninstall: true,
      expected: undefined,
      reads: 0,
    },
  ])("$reason", async ({ read, deleteOnUninstall, expected, reads }) => {
    let count = 0;
    const kube = {
      readDefinition: () => {
        count++;
        return read();
      },
    };
    expect(await uninstallOf({ plugin, kube, deleteOnUninstall })).toBe(expected);
    expect(count).toBe(reads);
  });

  it.each([
    {
      reason: "a refusal (403) names the grant the controller needs",
      error: kubeError(403, "forbidden"),
      message: `cannot tell whether the CRD ${CRD} is being deleted (an uninstall), so nothing is deleted (the controller needs get on customresourcedefinitions, resourceNames [${CRD}], in its ClusterRole): forbidden`,
    },
    {
      reason: "any other failure says what it could not tell, and why",
      error: new Error("connect ECONNREFUSED"),
      message: `cannot tell whether the CRD ${CRD} is being deleted (an uninstall), so nothing is deleted: connect ECONNREFUSED`,
    },
  ])("a read that fails throws, so nothing is deleted on a guess: $reason", async ({ error, message }) => {
    const kube = { readDefinition: () => Promise.reject(error) };
    await expect(uninstallOf({ plugin, kube })).rejects.toThrow(message);
  });
});
