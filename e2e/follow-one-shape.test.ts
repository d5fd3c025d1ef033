/**
 * Scenario: the learner's path, measured. docs/follow-one-shape.md follows one Shape through the code and
 * lists the controller-side files a reader must open (between `<!-- must-open -->` markers) and those they
 * can take on trust (`<!-- on-trust -->`). This test follows one Shape for real — create → Ready → drift
 * repair → delete — against the real API server and mock cloud, with the controller's V8 coverage on, and
 * holds the page to what ran:
 *
 * - every library or controller source file with a function that ran during the story is named in one of
 *   the two lists;
 * - every "must open" file had a function that ran.
 *
 * How it measures: the controller runs with `--inspect=127.0.0.1:0`; once it is ready (started, synced, no
 * Shape) the test connects to its inspector and starts V8's precise coverage with call counts
 * (`Profiler.startPreciseCoverage`), then takes it once to reset the counters. Module evaluation and the
 * startup sync are behind that reset, so a file counts only when one of its functions was called between the
 * reset and the end of the story (a count above 0 in the second take), never because it was imported. A
 * module's top-level function (name "", at offset 0) never counts. The controller runs from its TypeScript
 * sources (type stripping), so the coverage URLs are the .ts files themselves.
 *
 * Both lists and the path are read at run time (the page's links, the coverage's URLs): nothing here names a
 * file of the path.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { type ControllerProcess, REPO_ROOT, type Stack, waitConverged, waitFor } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

const PAGE = join(REPO_ROOT, "docs", "follow-one-shape.md");

/** One script's function coverage, as `Profiler.takePreciseCoverage` answers (detailed: false). */
interface ScriptCoverage {
  url: string;
  functions: { functionName: string; ranges: { startOffset: number; endOffset: number; count: number }[] }[];
}

/**
 * The library and controller source files (repo-relative, tests left out) with at least one function that
 * was called, each with the names of those functions: a count above 0 on the function's own range. A
 * module's top-level function does not count.
 */
function functionsThatRan(coverage: readonly ScriptCoverage[], root: string): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const script of coverage) {
    if (!script.url.startsWith("file://")) continue;
    const path = relative(root, fileURLToPath(script.url));
    if (!/^(library|controller)\/src\/.*\.ts$/.test(path) || /\.test(-support)?\.ts$/.test(path)) continue;
    const ran = script.functions
      .filter((fn) => {
        const whole = fn.ranges[0];
        const topLevel = fn.functionName === "" && whole?.startOffset === 0;
        return !topLevel && (whole?.count ?? 0) > 0;
      })
      .map((fn) => fn.functionName || "(anonymous)");
    if (ran.length > 0) files.set(path, [...new Set([...(files.get(path) ?? []), ...ran])]);
  }
  return new Map([...files].sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The page's two reading lists: the library and controller .ts files linked between `<!-- tag -->` and
 * `<!-- /tag -->`, as repo-relative paths (the links without `../` and anchors).
 */
function readingList(markdown: string, tag: "must-open" | "on-trust"): string[] {
  const start = markdown.indexOf(`<!-- ${tag} -->`);
  const end = markdown.indexOf(`<!-- /${tag} -->`);
  if (start === -1 || end < start) return [];
  const targets = [...markdown.slice(start, end).matchAll(/\]\(([^)\s]+)\)/g)].map(
    (m) => m[1]?.split("#")[0]?.replace(/^(\.\.\/)+/, "") ?? "",
  );
  return [...new Set(targets.filter((t) => /^(library|controller)\/.*\.ts$/.test(t)))].sort();
}

/** What the page gets wrong about a measured path: files it names in neither list, "must open" files that never ran. */
function pathProblems(
  path: readonly string[],
  markdown: string,
): { unnamed: string[]; mustOpenNotRun: string[] } {
  const mustOpen = readingList(markdown, "must-open");
  const onTrust = readingList(markdown, "on-trust");
  return {
    unnamed: path.filter((f) => !mustOpen.includes(f) && !onTrust.includes(f)),
    mustOpenNotRun: mustOpen.filter((f) => !path.includes(f)),
  };
}

/** A Chrome DevTools Protocol session over the inspector's WebSocket: one request at a time, in order. */
async function openInspector(url: string) {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot connect to the inspector at ${url}`)), {
      once: true,
    });
  });
  let id = 0;
  const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
    };
    if (message.id === undefined) return; // an event: none is asked for
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(message.error.message));
    else waiter?.resolve(message.result);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      id += 1;
      const request = { id, method, params };
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: (r) => resolve(r as T), reject });
        socket.send(JSON.stringify(request));
      });
    },
    close(): void {
      socket.close();
    },
  };
}

describe("follow one Shape, measured", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let inspector: Awaited<ReturnType<typeof openInspector>> | undefined;
  let ns: string;
  let path: string[] = [];

  beforeAll(async () => {
    stack = await startStack("follow-one-shape");
    ns = await stack.kube.createNamespace("follow");
    controller = await stack.startController({
      nodeFlags: [...CONTROLLER_NODE_FLAGS, "--inspect=127.0.0.1:0"],
    });
    const url = await waitFor("the controller's inspector URL in its log", () => {
      const log = readFileSync(controller.logFiles.at(-1) ?? "", "utf8");
      const found = /Debugger listening on (ws:\/\/\S+)/.exec(log)?.[1];
      if (!found) throw new Error("no 'Debugger listening on ws://…' line yet");
      return found;
    });
    inspector = await openInspector(url);
    await inspector.send("Profiler.enable");
    await inspector.send("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
    // The first take resets the counters: what module loading and the startup sync ran is not the story's.
    await inspector.send("Profiler.takePreciseCoverage");
  });
  afterAll(async () => {
    inspector?.close();
    await stack?.stop();
  });

  test("one Shape is created, becomes Ready, has its drift repaired and is deleted", async () => {
    await stack.kube.applyShape(ns, "red-square", { type: "square", color: "red" });
    const created = await waitConverged(stack, ns, "red-square");

    await stack.cloud.patch(created.cloud.id, { color: "yellow" });
    await waitFor("the drift to be repaired", async () => {
      const c = await waitConverged(stack, ns, "red-square", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
      expect(c.cloud.color).toBe("red");
    });

    await stack.kube.deleteShape(ns, "red-square");
    await waitFor("the Shape, its ShapeRef and its cloud shape to be gone", async () => {
      expect(await stack.kube.getShape(ns, "red-square"), "Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.red-square`), "ShapeRef").toBeUndefined();
      expect(await stack.cloud.get(created.cloud.id), "cloud shape").toBeUndefined();
    });

    const taken = await inspector!.send<{ result: ScriptCoverage[] }>("Profiler.takePreciseCoverage");
    const ran = functionsThatRan(taken.result, REPO_ROOT);
    path = [...ran.keys()];
    console.log(
      `the story called functions in ${path.length} files:\n` +
        [...ran].map(([file, names]) => `${file}: ${names.join(", ")}`).join("\n"),
    );
    expect(path.length).toBeGreaterThan(0);
  });

  test("the page names every file on the path, and every file it says to open is on it", () => {
    expect(path.length, "the story's coverage (the test above)").toBeGreaterThan(0);
    expect(pathProblems(path, readFileSync(PAGE, "utf8"))).toEqual({ unnamed: [], mustOpenNotRun: [] });
  });

  test("the check fails on a page that leaves out a file on the path", () => {
    const page = readFileSync(PAGE, "utf8");
    const named = readingList(page, "on-trust").find((f) => path.includes(f));
    expect(named, "an on-trust file on the path").toBeDefined();
    const without = page.replaceAll(`](../${named})`, "](../elsewhere.md)");
    const before = pathProblems(path, page).unnamed;
    expect(pathProblems(path, without).unnamed).toEqual([...before, named].sort());
  });

  test("the check fails on a page that asks to open a file the path never ran", () => {
    const page = readFileSync(PAGE, "utf8");
    const offPath = "library/src/never-ran.ts";
    const asked = page.replace("<!-- /must-open -->", `- [x](../${offPath})\n\n<!-- /must-open -->`);
    expect(pathProblems(path, asked).mustOpenNotRun).toEqual([offPath]);
  });

  test("the controller logged nothing unexpected", async () => {
    const inspectorLines = /^not a log line: (Debugger listening on|For help, see|Debugger attached)/;
    expect((await controller.problems()).filter((p) => !inspectorLines.test(p))).toEqual([]);
  });
});
