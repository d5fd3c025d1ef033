import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { controllerCommand } from "../demo/controller-process.ts";
import { ControllerProcess } from "@shapes/stack";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";

const ROOT = join(import.meta.dirname, "..");
const read = (file: string): string => readFileSync(join(ROOT, file), "utf8");

/**
 * node's arguments before the controller's script: `controller/src/main.ts` where its sources run (npm
 * scripts, the harnesses), `controller/dist/main.js` where its build does (the image, the Deployment,
 * compose), whatever path leads to it.
 */
function nodeFlagsOf(argv: readonly string[]): string[] {
  const script = argv.findIndex(
    (a) => a.endsWith("controller/src/main.ts") || a.endsWith("controller/dist/main.js"),
  );
  if (script < 0) throw new Error(`cannot find the controller's main in ${JSON.stringify(argv)}`);
  return argv.slice(argv[0] === "node" ? 1 : 0, script);
}

describe("every way the controller is started passes CONTROLLER_NODE_FLAGS to node", () => {
  const cases: { reason: string; argv: () => readonly string[] }[] = [
    {
      reason: "the image's CMD (Dockerfile)",
      argv: () => {
        const cmd = read("Dockerfile")
          .split("\n")
          .filter((l) => l.startsWith("CMD "))
          .at(0);
        return JSON.parse(cmd?.slice("CMD ".length) ?? "[]") as string[];
      },
    },
    {
      reason: "`npm run controller` (package.json)",
      argv: () => {
        const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
        const words = (scripts.controller ?? "").split(" ");
        return words.slice(words.lastIndexOf("node"));
      },
    },
    {
      reason: "the Deployment (deploy/deployment.yaml)",
      argv: () => {
        const d = parse(read("deploy/deployment.yaml")) as {
          spec: { template: { spec: { containers: { command: string[] }[] } } };
        };
        return d.spec.template.spec.containers[0]?.command ?? [];
      },
    },
    {
      reason: "docker-compose.yml's controller service",
      argv: () =>
        (parse(read("docker-compose.yml")) as { services: { controller: { command: string[] } } }).services
          .controller.command,
    },
    {
      reason: "the harness of e2e, chaos and bench (stack/controller.ts)",
      argv: () =>
        new ControllerProcess({
          name: "c",
          artifactsDir: "/tmp",
          kubeconfigPath: "/k",
          cloudUrl: "http://c",
          cloudToken: "t",
        }).args(),
    },
    {
      reason: "`npm start`'s controller (demo/controller-process.ts)",
      argv: () =>
        controllerCommand({
          kubeconfig: "/k",
          cloudUrl: "http://c",
          cloudTokenFile: "/t",
          metricsAddress: "127.0.0.1:0",
          logLevel: "info",
        }).args,
    },
  ];
  it.each(cases)("$reason", ({ argv }) => {
    expect(nodeFlagsOf(argv())).toEqual(CONTROLLER_NODE_FLAGS);
  });
});
