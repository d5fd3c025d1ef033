import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCRDs } from "./crds.ts";

describe("readCRDs", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "envtest-crds-test-"));
    await writeFile(join(dir, "notes.yaml"), "kind: ConfigMap\n");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    {
      reason: "a folder that does not exist is named, with what to pass instead",
      folder: () => join(dir, "missing"),
      want: /^cannot install CRDs: there is no folder .*missing \(pass `dir`, the folder of your CRD files\)$/,
    },
    {
      reason: "a folder without a CustomResourceDefinition",
      folder: () => dir,
      want: /^cannot install CRDs: .* holds no CustomResourceDefinition$/,
    },
  ])("$reason", async ({ folder, want }) => {
    await expect(readCRDs(folder())).rejects.toThrow(want);
  });
});
