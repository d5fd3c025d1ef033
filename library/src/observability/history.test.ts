import { describe, expect, it } from "vitest";
import { DecisionHistory } from "./history.ts";
import type { ReconcileRecord } from "./reconcile-scope.ts";

let seq = 0;
function aRecord(over: Partial<ReconcileRecord> = {}): ReconcileRecord {
  seq += 1;
  return {
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
    reconcileId: `r-${seq}`,
    controller: "shape",
    key: "default/a",
    subject: "default/a",
    observed: ["Shape generation 1"],
    decided: [{ branch: "in-sync", why: "nothing to write" }],
    calls: [],
    events: [],
    result: "done",
    ms: 1,
    ...over,
  };
}
const aCall = { call: "create cloud shape", target: "default.a", outcome: "ok", ms: 3 };

describe("DecisionHistory", () => {
  it("tells which replica decided when it was given one, and nothing of the kind otherwise", () => {
    const mine = new DecisionHistory({ replica: "replica-b" });
    mine.add(aRecord());
    expect(mine.get("default/a")?.replica).toBe("replica-b");
    const alone = new DecisionHistory();
    alone.add(aRecord());
    expect(alone.get("default/a")).not.toHaveProperty("replica");
  });

  it.each<{ reason: string; records: Partial<ReconcileRecord>[]; entries: number; repeats: number[] }>([
    {
      reason: "identical reconciles that call nothing fold into one entry, counted",
      records: [{}, {}, {}],
      entries: 1,
      repeats: [3],
    },
    {
      reason: "a reconcile that called something is its own entry, and so is the next quiet one",
      records: [{ calls: [aCall] }, {}, {}],
      entries: 2,
      repeats: [1, 2],
    },
    {
      reason: "another decision is another entry",
      records: [{}, { decided: [{ branch: "repair-drift", why: "color: blue → red" }], calls: [aCall] }, {}],
      entries: 3,
      repeats: [1, 1, 1],
    },
    {
      reason: "another controller's reconcile of the same object is another entry",
      records: [{}, { controller: "shaperef" }],
      entries: 2,
      repeats: [1, 1],
    },
    {
      reason: "a quiet reconcile folds into its own controller's last one, even with another's in between",
      records: [{}, { controller: "shaperef" }, {}, { controller: "shaperef" }],
      entries: 2,
      repeats: [2, 2],
    },
  ])("$reason", ({ records, entries, repeats }) => {
    const history = new DecisionHistory();
    for (const r of records) history.add(aRecord(r));
    const kept = history.get("default/a");
    expect(kept?.entries).toHaveLength(entries);
    expect(kept?.entries.map((e) => e.repeats)).toEqual(repeats);
  });

  it("keeps at most perSubject entries per object, the newest", () => {
    const history = new DecisionHistory({ perSubject: 3 });
    for (let i = 0; i < 5; i++) history.add(aRecord({ calls: [aCall], reconcileId: `n${i}` }));
    expect(history.get("default/a")?.entries.map((e) => e.reconcileId)).toEqual(["n2", "n3", "n4"]);
    expect(history.size().entries).toBe(3);
  });

  it("keeps at most maxBytes in all, dropping the least recently touched objects", () => {
    const probe = new DecisionHistory();
    probe.add(aRecord({ subject: "default/x" }));
    const one = probe.size().bytes;
    const history = new DecisionHistory({ maxBytes: one * 2 + 10 });
    history.add(aRecord({ subject: "default/a" }));
    history.add(aRecord({ subject: "default/b" }));
    history.add(aRecord({ subject: "default/a", calls: [aCall] })); // touched: b is now the oldest
    expect(history.get("default/b")).toBeUndefined();
    expect(history.get("default/a")?.entries).toHaveLength(2);
    expect(history.size().bytes).toBeLessThanOrEqual(one * 2 + 10 + JSON.stringify(aCall).length + 20);
  });

  it.each([
    {
      reason: "by default at most 4 MiB as JSON (the measured cap), the newest objects kept",
      maxBytes: undefined,
      cap: 4 * 1024 * 1024,
    },
    { reason: "maxBytes overrides the default", maxBytes: 1024 * 1024, cap: 1024 * 1024 },
  ])("$reason", ({ maxBytes, cap }) => {
    const history = new DecisionHistory(maxBytes === undefined ? {} : { maxBytes });
    const why = "x".repeat(900); // about 1 KB an entry, as JSON
    const subjects = Math.ceil((cap * 1.5) / 1000);
    for (let i = 0; i < subjects; i++) {
      history.add(aRecord({ subject: `default/s${i}`, decided: [{ branch: "create", why }] }));
    }
    const { bytes } = history.size();
    expect(bytes).toBeLessThanOrEqual(cap);
    expect(bytes).toBeGreaterThan(cap - 2_000);
    expect(history.get(`default/s${subjects - 1}`)).toBeDefined();
    expect(history.get("default/s0")).toBeUndefined();
  });

  it("drops a gone object's history after retainGoneMs, unless it came back first", () => {
    let now = 0;
    const history = new DecisionHistory({ retainGoneMs: 1_000, now: () => now });
    history.add(aRecord({ subject: "default/a", subjectState: "gone", calls: [aCall] }));
    history.add(aRecord({ subject: "default/b", subjectState: "gone", calls: [aCall] }));
    // Another controller's later look (the intent reconciler's) does not bring it back.
    history.add(aRecord({ subject: "default/a", controller: "shaperef" }));
    now = 500;
    history.add(aRecord({ subject: "default/b", subjectState: "present", calls: [aCall] })); // a new b
    expect(history.get("default/a")?.goneAt).toBe(new Date(0).toISOString());
    now = 1_000;
    expect(history.get("default/a")).toBeUndefined();
    expect(history.get("default/b")?.entries).toHaveLength(2);
    expect(history.size()).toMatchObject({ subjects: 1, entries: 2 });
  });

  it("counts its size as the entries' JSON length, and gives it back when entries go", () => {
    const history = new DecisionHistory({ perSubject: 1 });
    history.add(aRecord({ calls: [aCall] }));
    const one = history.size().bytes;
    expect(one).toBeGreaterThan(100);
    history.add(aRecord({ calls: [aCall] }));
    expect(history.size().bytes).toBeGreaterThan(one - 20);
    expect(history.size().bytes).toBeLessThan(one + 20);
  });

  it("gives back exactly the bytes it counted, however often an entry was folded before it goes", () => {
    const history = new DecisionHistory({ perSubject: 1 });
    for (let i = 0; i < 12; i++) history.add(aRecord()); // one entry, repeats 12: its JSON grew by a byte
    const kept = history.get("default/a")?.entries;
    expect(kept?.map((e) => e.repeats)).toEqual([12]);
    history.add(aRecord({ calls: [aCall] })); // drops the folded entry
    const [left] = history.get("default/a")?.entries ?? [];
    expect(history.size()).toEqual({ subjects: 1, entries: 1, bytes: JSON.stringify(left).length });
  });

  it("tells the entries in the order the reconciles started, though a long one finished last", () => {
    const history = new DecisionHistory();
    history.add(aRecord({ at: "2026-01-01T00:00:02.000Z", reconcileId: "short", calls: [aCall] }));
    history.add(aRecord({ at: "2026-01-01T00:00:01.000Z", reconcileId: "long", calls: [aCall] }));
    expect(history.get("default/a")?.entries.map((e) => e.reconcileId)).toEqual(["long", "short"]);
  });

  it("hands out copies: changing what get() returned changes nothing kept", () => {
    const history = new DecisionHistory();
    history.add(aRecord());
    history.get("default/a")?.entries.pop();
    expect(history.get("default/a")?.entries).toHaveLength(1);
  });
});
