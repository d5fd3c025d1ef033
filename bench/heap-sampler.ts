/**
 * A node `--import` hook for `npm run bench -- --heap-prof`: V8's sampling heap profiler over the controller's
 * whole life, objects collected since included (`includeObjectsCollectedByMajorGC`/`MinorGC`), so the profile
 * says what the process ALLOCATED, by stack — garbage too — not only what is alive at the end, which is all
 * node's own `--heap-prof` keeps. Written on exit, as a `.heapprofile` (Chrome DevTools reads it), to the file
 * named by HEAP_PROFILE_FILE. Not imported by anything: the runner names its path (runner.ts).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const file = process.env.HEAP_PROFILE_FILE;
if (!file) throw new Error("heap-sampler: HEAP_PROFILE_FILE is not set");
const session = new Session();
session.connect();
session.post("HeapProfiler.enable");
// One sample per 32 KiB allocated on average (V8's default): cheap enough to leave on for a converge.
session.post("HeapProfiler.startSampling", {
  samplingInterval: 32 * 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
// A session on the main thread answers synchronously: the profile is written before the process is gone.
process.on("exit", () => {
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error) process.stderr.write(`heap-sampler: ${error.message}\n`);
    else writeFileSync(file, JSON.stringify(result.profile));
  });
});
