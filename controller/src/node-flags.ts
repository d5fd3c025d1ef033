/**
 * The flags node runs the controller with, wherever it is started: the image's CMD (Dockerfile),
 * deploy/deployment.yaml, docker-compose.yml, `npm run controller`, and the harnesses that spawn it
 * (stack/controller.ts for e2e, chaos and bench; demo/controller-process.ts for `npm start`).
 * deploy/node-flags.test.ts checks that each of them passes exactly these, before the script
 * (controller/src/main.ts from the sources, controller/dist/main.js from the build).
 *
 * `--max-semi-space-size=2` (MB): V8's young generation is two semi-spaces, 16 MB each by default on 64-bit.
 * The controller's allocation comes in bursts (a watch event's JSON, a reconcile's objects), which grow them
 * to their maximum, and a bigger young generation also lets more survive into the old one before it is
 * collected. With 2 MB the process keeps less: RSS after converging 299 → 223 MB with 1,000 Shapes and
 * 519 → 417 MB with 10,000, for 6–11% more controller CPU (more, smaller scavenges); docs/benchmarks.md shows
 * it in the same runs as the column `default-semi-space` (node's default). It is a Node flag, not a controller flag: V8 sizes the
 * heap when the process starts, and setting it later (`v8.setFlagsFromString`) has no effect.
 */
export const CONTROLLER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=2"];
