import { describe, expect, test } from "vitest";
import { onlyWorkspaces } from "./only-workspaces.ts";

const manifest = {
  name: "root",
  workspaces: ["library", "controller", "mock-cloud"],
  dependencies: { express: "^5" },
  devDependencies: { vitest: "^5" },
  scripts: { test: "vitest" },
};

describe("onlyWorkspaces", () => {
  const cases = [
    {
      reason: "the controller image: the library and the controller, nothing of the root's own",
      keep: ["controller", "library"],
      expected: { name: "root", workspaces: ["library", "controller"] },
    },
    {
      reason: "the cloud image",
      keep: ["library", "mock-cloud"],
      expected: { name: "root", workspaces: ["library", "mock-cloud"] },
    },
  ];
  test.each(cases)("$reason", ({ keep, expected }) => {
    expect(onlyWorkspaces(manifest, keep)).toEqual(expected);
  });

  test("a folder that is not a workspace is an error, not a smaller image", () => {
    expect(() => onlyWorkspaces(manifest, ["library", "contoller"])).toThrow(
      "not a workspace of package.json: contoller",
    );
  });
});
