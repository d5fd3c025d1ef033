import { defaultClientConditions, defaultServerConditions } from "vite";
import { createRequire } from "node:module";
import { defineConfig } from "vitest/config";

// What the tests start (the controller, replicas, the DNS example) resolves reconcile-kit to its sources too,
// also when Vitest is run directly (`npx vitest`) instead of through an npm script (scripts/with-node.cjs).
const { withSourceCondition } = createRequire(import.meta.url)("./scripts/with-node.cjs") as {
  withSourceCondition: (env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
};
process.env.NODE_OPTIONS = withSourceCondition(process.env).NODE_OPTIONS;

/**
 * Three projects:
 * - unit: fast tests beside the code (`*.test.ts` under each package's src/); fakes allowed.
 * - e2e: scenarios against a REAL kube-apiserver + etcd started by envtest, the real mock cloud over HTTP,
 *   and the controller as a separate process (the stack: stack/). The global setup builds (or finds) the
 *   Kubernetes binaries once. USE_EXISTING_CLUSTER=true: the KUBECONFIG cluster instead (stack/README.md).
 * - compose: e2e/compose-demo.test.ts, the compose demo in a real Docker engine. Its own project, run last: by
 *   then the Docker engine, the Compose CLI and the base images that .ci/run prepares in the background while
 *   the other suites run are ready.
 * The order is explicit (sequence.groupOrder: unit 1, e2e 2, compose 3). Not 0: Vitest moves a project that
 * runs one file at a time and keeps the default 0 behind every other group (on 2 cores the unit project is
 * one of those, since it gets a single worker), so without the numbers the order depends on the machine.
 */
export default defineConfig({
  // A workspace package (reconcile-kit) resolves to its TypeScript sources here, as under Node with
  // --conditions=shapes-source (scripts/with-node.cjs), never to a stale dist/.
  resolve: { conditions: ["shapes-source", ...defaultClientConditions] },
  ssr: { resolve: { conditions: ["shapes-source", ...defaultServerConditions] } },
  // The same for the global setups (e2e/global-setup.ts imports @shapes/envtest): Vitest runs them in an
  // environment of its own, whose resolve options are its defaults unless set here.
  environments: { __vitest__: { resolve: { conditions: ["shapes-source", ...defaultServerConditions] } } },
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "{library,mock-cloud,controller,envtest,crds,scripts,bench,deploy,demo,chaos,crash-points,stack,examples}/**/*.test.ts",
          ],
          sequence: { groupOrder: 1 },
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["e2e/**/*.test.ts"],
          exclude: ["e2e/compose-demo.test.ts"],
          sequence: { groupOrder: 2 },
          globalSetup: ["e2e/global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          // 2 cores run the API server, etcd, the cloud and the controller: one file at a time.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "compose",
          include: ["e2e/compose-demo.test.ts"],
          sequence: { groupOrder: 3 },
          globalSetup: ["e2e/global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
