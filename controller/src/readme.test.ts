/**
 * Keeps controller/README.md true: every flag and every metric the code has is documented, and nothing the
 * README documents is missing from the code.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { OPTIONS } from "./config.ts";
import { CoreMetrics } from "reconcile-kit";

const readme = readFileSync(join(import.meta.dirname, "..", "README.md"), "utf8");

describe("controller/README.md", () => {
  test.each(
    OPTIONS.map((o) => ({ reason: `--${o.flag} is a flag`, flag: o.flag, env: o.env, def: o.default })),
  )("documents $reason with its env and default", ({ flag, env, def }) => {
    const row = readme.split("\n").find((line) => line.startsWith(`| \`--${flag}\``));
    expect(row, `a table row for --${flag}`).toBeDefined();
    expect(row).toContain(`\`${env}\``);
    if (def !== undefined) expect(row).toContain(`\`${def}\``);
  });

  test("documents no flag the controller does not have", () => {
    const documented = [...readme.matchAll(/^\| `--([a-z-]+)`/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(OPTIONS.map((o) => o.flag).sort());
  });

  test("documents every metric of the core", async () => {
    const metrics = new CoreMetrics({ prefix: "" });
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) expect(readme, name).toContain(`\`${name}\``);
  });
});
