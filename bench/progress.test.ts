import { describe, expect, test } from "vitest";
import { Progress, renderProgress } from "./progress.ts";

describe("renderProgress", () => {
  test.each([
    {
      reason: "a bar, the count, the rate and the elapsed time",
      label: "converge",
      done: 250,
      total: 1000,
      ms: 2_000,
      opts: { unit: "Ready", barWidth: 8 },
      want: "converge [##------] 250/1000 Ready  125/s  2.0s",
    },
    {
      reason: "a slow rate keeps a decimal",
      label: "delete",
      done: 3,
      total: 10,
      ms: 2_000,
      opts: { barWidth: 10 },
      want: "delete [###-------] 3/10  1.5/s  2.0s",
    },
    {
      reason: "no time yet: no rate",
      label: "x",
      done: 0,
      total: 5,
      ms: 0,
      opts: { barWidth: 4 },
      want: "x [----] 0/5  -/s  0.0s",
    },
    {
      reason: "a count past the total fills the bar, no more",
      label: "x",
      done: 7,
      total: 5,
      ms: 1_000,
      opts: { barWidth: 4 },
      want: "x [####] 7/5  7.0/s  1.0s",
    },
  ])("$reason", ({ label, done, total, ms, opts, want }) => {
    expect(renderProgress(label, done, total, ms, opts)).toBe(want);
  });
});

describe("Progress", () => {
  function recorder(tty: boolean) {
    const written: string[] = [];
    let now = 0;
    const progress = new Progress({ write: (t: string) => written.push(t) }, { tty, now: () => now });
    return { written, progress, advance: (ms: number) => (now += ms) };
  }

  test("on a terminal, redraws one line in place, at most ten times a second", () => {
    const { written, progress, advance } = recorder(true);
    const task = progress.task("converge", 10);
    task.update(1);
    advance(50);
    task.update(2); // too soon: not drawn
    advance(100);
    task.update(3);
    task.end("done");
    expect(written.filter((w) => w.startsWith("\r"))).toHaveLength(3); // two draws and the clear before the end
    expect(written.at(-1)).toMatch(/^bench: converge \[.*\] 3\/10 .* done\n$/);
  });

  test("elsewhere, whole lines every 5 s and one at the end, no control characters", () => {
    const { written, progress, advance } = recorder(false);
    const task = progress.task("steady", 30, "s");
    task.update(1);
    advance(1_000);
    task.update(2);
    advance(5_000);
    task.update(7);
    task.end();
    expect(written).toHaveLength(3);
    expect(written.every((w) => w.endsWith("\n") && !w.includes("\r"))).toBe(true);
  });

  test("a log line clears a bar in progress first", () => {
    const { written, progress } = recorder(true);
    progress.task("converge", 10).update(1);
    progress.log("something happened");
    expect(written.slice(-2)).toEqual(["\r\x1b[K", "bench: something happened\n"]);
  });
});
