import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GO_MODULES_DIR } from "./build.ts";
import { CRDS_DIR } from "./crds.ts";
import { checkoutRoot, PACKAGE_DIR } from "./package-dir.ts";
import { DEFAULT_CLUSTER_DIR } from "./persistent.ts";

const REPO = join(import.meta.dirname, "..", "..");

describe("checkoutRoot", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "envtest-package-dir-test-"));
    const write = async (path: string, json: unknown) => {
      await mkdir(join(dir, path, ".."), { recursive: true });
      await writeFile(join(dir, path), JSON.stringify(json));
    };
    await write("repo/package.json", { workspaces: ["library", "envtest"] });
    await write("repo/envtest/package.json", { name: "@shapes/envtest" });
    await write("consumer/package.json", { dependencies: { "@shapes/envtest": "0.1.0" } });
    await write("consumer/node_modules/@shapes/envtest/package.json", { name: "@shapes/envtest" });
    await write("other/package.json", { workspaces: ["library"] });
    await write("other/envtest/package.json", { name: "@shapes/envtest" });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { reason: "a workspace of the checkout above", packageDir: "repo/envtest", want: "repo" },
    {
      reason: "installed: the folder above is a scope with no package.json",
      packageDir: "consumer/node_modules/@shapes/envtest",
      want: undefined,
    },
    { reason: "the package.json above lists other workspaces", packageDir: "other/envtest", want: undefined },
    { reason: "the folder above does not exist", packageDir: "nowhere/envtest", want: undefined },
  ])("$reason", ({ packageDir, want }) => {
    expect(checkoutRoot(join(dir, packageDir))).toBe(want === undefined ? undefined : join(dir, want));
  });

  it("finds this repo from the package's sources, so its defaults stay the repo's folders", () => {
    expect(PACKAGE_DIR).toBe(join(REPO, "envtest"));
    expect(checkoutRoot()).toBe(REPO);
    expect(CRDS_DIR).toBe(join(REPO, "crds"));
    expect(DEFAULT_CLUSTER_DIR).toBe(join(REPO, ".demo", "cluster"));
    expect(existsSync(join(GO_MODULES_DIR, "kubernetes", "go.mod"))).toBe(true);
  });
});
