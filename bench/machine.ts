/**
 * The machine a run was measured on, written into every result: a number without its machine is not a
 * result. Includes the git commit (and whether the tree had uncommitted changes) and the load average at
 * the start, because this project's benchmarks often run on shared machines.
 */
import { execFileSync } from "node:child_process";
import { availableParallelism, cpus, loadavg, release, totalmem, type } from "node:os";
import { type BinaryPaths, readBinaryVersions } from "@shapes/envtest";
import { REPO_ROOT } from "@shapes/stack";
import type { Machine } from "./results.ts";

/** Describes this machine and the binaries of the stack. */
export async function describeMachine(binaries: BinaryPaths): Promise<Machine> {
  const versions = await readBinaryVersions(binaries);
  return {
    cpuModel: cpus()[0]?.model.trim() ?? "unknown",
    cores: availableParallelism(),
    memoryBytes: totalmem(),
    os: `${type()} ${release()}`,
    node: process.version,
    kubernetes: versions.kubeApiServer,
    etcd: versions.etcd,
    gitCommit: git(["rev-parse", "HEAD"]) ?? "unknown",
    gitDirty: (git(["status", "--porcelain", "--untracked-files=no"]) ?? "") !== "",
    loadAverage: loadavg()[0] ?? 0,
  };
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync("git", args, {
      cwd: REPO_ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}
