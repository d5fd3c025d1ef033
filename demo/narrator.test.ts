import { describe, expect, it } from "vitest";
import { Narrator, waitUntil, WaitTimeout, wrap } from "./narrator.ts";

describe("the narrator", () => {
  it("wraps text at the width without cutting words, with an indent", () => {
    expect(wrap("one two three four five", 11, "  ")).toBe("  one two\n  three\n  four five");
    expect(wrap("a-very-long-word-that-does-not-fit", 10, "")).toBe("a-very-long-word-that-does-not-fit");
  });

  it("announces a wait, and its end", async () => {
    let out = "";
    const n = new Narrator((t) => (out += t));
    let calls = 0;
    const value = await n.wait(
      "the third call",
      () => {
        if (++calls < 3) throw new Error(`call ${calls}`);
        return "done";
      },
      30_000,
    );
    expect(value).toBe("done");
    expect(out).toMatch(/^ {2}… waiting for the third call\n {2}✓ the third call \(\d+\.\d s\)\n$/);
  });

  it("says what it waited for and what it last saw when time runs out", async () => {
    const wait = waitUntil(
      "the cloud shape to turn blue",
      () => {
        throw new Error("the cloud shape is yellow");
      },
      1,
    );
    await expect(wait).rejects.toThrow(WaitTimeout);
    await expect(wait).rejects.toThrow(
      /timed out after 0 s waiting for the cloud shape to turn blue; last seen: the cloud shape is yellow/,
    );
  });

  it("stops waiting when the signal aborts (Ctrl-C)", async () => {
    const interrupt = new AbortController();
    const wait = waitUntil(
      "forever",
      () => {
        interrupt.abort(new Error("interrupted"));
        throw new Error("not yet");
      },
      60_000,
      interrupt.signal,
    );
    await expect(wait).rejects.toThrow("interrupted");
  });

  it("prints headings, actions and labelled evidence", () => {
    let out = "";
    const n = new Narrator((t) => (out += t), 40);
    n.heading(2, 6, "Drift");
    n.act("recolor it");
    n.evidence("Cloud", "a long line of evidence that needs to wrap onto a second line");
    expect(out).toBe(
      "\n━━ Step 2 of 6: Drift ━━━━━━━━━━━━━━━━━━\n" +
        "  → recolor it\n" +
        // 40 columns: the evidence column is 24 wide.
        "    Cloud       a long line of evidence\n" +
        "                that needs to wrap onto\n" +
        "                a second line\n",
    );
  });
});
