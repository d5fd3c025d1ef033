/**
 * countModules: the "modules loaded" figure and its client-node share, from the URLs the recording hook
 * wrote down.
 */
import { describe, expect, test } from "vitest";
import { countModules } from "./modules.ts";

const CLIENT_NODE = "file:///repo/node_modules/@kubernetes/client-node/dist/index.js";

describe("countModules", () => {
  const cases = [
    { reason: "nothing recorded", urls: [], want: { total: 0, clientNode: 0 } },
    {
      reason: "builtins and our own files count, none of them client-node's",
      urls: ["node:fs", "file:///repo/controller/src/main.ts", "file:///repo/library/src/index.ts"],
      want: { total: 3, clientNode: 0 },
    },
    {
      reason: "client-node's files counted in both",
      urls: ["node:fs", CLIENT_NODE, "file:///repo/node_modules/@kubernetes/client-node/dist/api.js"],
      want: { total: 3, clientNode: 2 },
    },
    {
      reason: "a URL written twice (two processes on one record) counts once",
      urls: ["node:fs", CLIENT_NODE, CLIENT_NODE, "node:fs"],
      want: { total: 2, clientNode: 1 },
    },
    {
      reason: "a package merely named like it is not client-node",
      urls: ["file:///repo/node_modules/@kubernetes/client-node-extra/index.js"],
      want: { total: 1, clientNode: 0 },
    },
  ];
  test.each(cases)("$reason", ({ urls, want }) => {
    expect(countModules(urls)).toEqual(want);
  });
});
