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
 *
 * `--v8-pool-size=1`: one V8 platform worker thread instead of four (node's default). They run V8's background
 * work (concurrent marking, parallel scavenges, off-thread compilation); each keeps its own stack and
 * allocation buffers. With one the idle controller's build holds about 2 MB less (92.0–92.5 MB against
 * 94.3–94.7, `npm run bench:idle`) and its sources 11 MB less (113 against 124–125 MB idle in the bench);
 * controller CPU per Shape in the 1,000-Shape converge stayed within what two runs of the default spread over
 * on the shared 2-core machine (3.09 and 3.54 ms, against 2.64 and 3.59: controller/README.md#idle-memory-npm-run-benchidle).
 *
 * `--expose-gc`: gives the process `gc()`, which the library's HeapPageRelease
 * (library/src/manager/heap-pages.ts) calls to ask V8 for a memory-reducing collection when the memory
 * outside its heap has grown. V8 keeps the heap pages a collection empties in a pool until such a
 * collection, and its own memory reducer never makes one in a process as busy as a controller. heap-pages.ts
 * says what that cost before; docs/benchmarks.md ("V8's pooled pages") has the 10,000-Shape soak before and
 * after (242 → 140 MB, +42 → −4.8 MB/h). The flag itself costs the idle build 1.7 MB (79.5–79.8 MB against
 * 77.6–78.2 without it, `npm run bench:idle`), not broken down.
 */
export const CONTROLLER_NODE_FLAGS: readonly string[] = [
  "--max-semi-space-size=2",
  "--v8-pool-size=1",
  "--expose-gc",
];
