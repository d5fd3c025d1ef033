/**
 * The crash explorer: "crash anywhere, lose nothing, duplicate nothing, touch nothing foreign", tried at
 * EVERY write instead of at a few chosen ones or at random moments. What it records, tries and checks, and
 * what it assumes of a subject, is on {@link exploreCrashPoints}; a trial runs the lifecycle in a fresh
 * namespace, awaits each step's end state (`settle`) and checks the invariants after it (`runTrial`).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ExternalView, ResourceView } from "../conformance/subject.ts";
import { type Expectation, LIFECYCLES, type Lifecycle, type TrialContext } from "./lifecycles.ts";
import { restWriteAttribution, type TrialScope, type WriteAttribution } from "./attribution.ts";
import { type CrashSubject, type Side, TAP_FAULTS, type TapFault, type TappedWrite } from "./subject.ts";

/** One crash point: a write of a lifecycle's recording, and the fault tried at it. */
export interface CrashPoint {
  /** The lifecycle's id ({@link Lifecycle.id}). */
  lifecycle: string;
  /** The write's position in the lifecycle's recording (1-based). */
  index: number;
  /** Which connection the write goes over. */
  side: Side;
  /** The write's label (CrashSubject.describeWrite). */
  write: string;
  /** Which occurrence of that label on its side (1-based): how the next run finds the same write. */
  occurrence: number;
  /** What the tap does at the write. */
  fault: TapFault;
}

/** What trying one crash point showed. */
export interface PointResult extends CrashPoint {
  /** False when the write did not come again in the run (the point was not tried). */
  reached: boolean;
  /** What the server answered to the write (undefined: it never reached the server). */
  status: number | undefined;
  /** The writes the controller made after the fault, in order (labels; the restarted controller's, after a kill). */
  after: string[];
  /** Milliseconds from the fault until every step's end state held. */
  recoveredMs: number | undefined;
  /** Every invariant that did not hold; empty when the point passed. */
  violations: string[];
}

/** One recorded write of a lifecycle. */
export interface RecordedWrite {
  /** Which connection it went over. */
  side: Side;
  /** What it does ({@link CrashSubject.describeWrite}). */
  label: string;
  /** Which occurrence of its label on its side (1-based). */
  occurrence: number;
  /** What the server answered (undefined: no answer). */
  status: number | undefined;
}

/** A lifecycle's recording and its points. */
export interface LifecycleResult {
  /** The lifecycle's id ({@link Lifecycle.id}). */
  id: string;
  /** What it is, in a sentence ({@link Lifecycle.title}). */
  title: string;
  /** The explored steps' titles. */
  steps: string[];
  /** Why it was not explored for this subject (a capability it lacks); undefined when it was. */
  skipped: string | undefined;
  /** The trial's writes while the steps ran without a fault, in order: the points are made of them. */
  recorded: RecordedWrite[];
  /** Invariants the recording run (no fault) broke: a lifecycle that fails without a fault. */
  recordingViolations: string[];
  /** Every point tried (or not reached), in the recording's order. */
  points: PointResult[];
}

/** A whole exploration of one subject. */
export interface CrashReport {
  /** The subject's name ({@link CrashSubject.name}). */
  subject: string;
  /** Every lifecycle walked, skipped ones included, in {@link LIFECYCLES} order. */
  lifecycles: LifecycleResult[];
  /** Crash points tried (reached). */
  tried: number;
  /** Points whose write did not come again. */
  notReached: number;
  /** Violations over every point and recording. */
  violations: number;
  /** The exploration's wall time. */
  durationMs: number;
}

/** Options of {@link exploreCrashPoints}. */
export interface ExploreOptions {
  /** The lifecycles to walk (ids). Default: every one of {@link LIFECYCLES}. */
  lifecycles?: readonly string[];
  /** The faults to try at each write. Default: all four ({@link TAP_FAULTS}). */
  faults?: readonly TapFault[];
  /**
   * One point per lifecycle instead of all: lifecycle k (0-based, in {@link LIFECYCLES} order) tries the
   * k-th first occurrence of a write (modulo their count) with fault k modulo 4. Deterministic, and every
   * lifecycle and fault is covered.
   */
  sample?: boolean;
  /** How long a step may take to reach its end state (default 60 s). */
  stepTimeoutMs?: number;
  /** A progress line per trial. */
  onProgress?: (line: string) => void;
}

/** The owner mark the explorer's foreign objects carry. */
const FOREIGN_OWNER = "someone-else";

/**
 * Explores every crash point of every lifecycle for `subject` and returns the table; the caller decides what
 * a violation means (the test fails, the CLI exits 1). Plain async code, no test runner: `npm run
 * crash-points` prints and commits the full table, and a test runs a sample of it (`sample`).
 *
 * For each lifecycle ({@link LIFECYCLES}) it first RECORDS: it runs the lifecycle once with the taps only
 * watching, and lists the trial's writes made while the steps ran, on both connections, in order. Each
 * (write, fault) pair is a crash point ({@link TapFault}). Then, for every point, it runs the lifecycle again
 * in a fresh namespace with the tap armed at that write (the same label's same occurrence), restarts the
 * controller after a kill, and checks after every step.
 *
 * # Guarantees
 * After every step, within `stepTimeoutMs`, each of these holds or is a violation of the point:
 * - the step's end state ({@link Expectation}): converged on the spec with Ready=True and Synced=True for
 *   the generation, or the conflict, the pause, the deletion or the hand-over it asked for;
 * - no external object created twice: at most one of ours carries the resource's uid at any time, and the
 *   trial's committed creates do not exceed the lifecycle's {@link Lifecycle.creates};
 * - nothing leaked: once the resource is deleted at the end (the cleanup), nothing of ours is left;
 * - nothing foreign written: every foreign object seen before the steps is there, unchanged, and no write of
 *   the controller, the trial's or not, addresses one by id, or by the name it holds until its person
 *   deletes it ({@link WriteAttribution.addresses});
 * - nothing stuck: the final deletion completes (the finalizer is released).
 *
 * It never passes what it did not try:
 * - a point whose write does not come again in its run is reported as not reached
 *   ({@link CrashReport.notReached}), never as passed;
 * - a recording without an external write of the trial is a violation of the lifecycle
 *   ({@link LifecycleResult.recordingViolations}): every lifecycle writes to the external API, so the
 *   subject's writes went unrecognised ({@link CrashSubject.attributeWrite});
 * - a lifecycle the subject lacks a capability for is listed as skipped, saying which.
 *
 * # Assumptions
 * The subject is set up (`setUp` called; `tearDown` is the caller's too) and meets {@link CrashSubject}: its
 * controller goes through the taps on every start, and the explorer may start, stop and kill it at will. The
 * explorer owns the taps while it runs.
 *
 * # Errors
 * A trial that cannot finish (a step's action throws, the controller does not start again) is that point's
 * one violation, and the exploration goes on: it rejects only when `onProgress` throws.
 */
export async function exploreCrashPoints(
  subject: CrashSubject,
  options: ExploreOptions = {},
): Promise<CrashReport> {
  const started = Date.now();
  const progress = options.onProgress ?? (() => {});
  const chosen = options.lifecycles
    ? LIFECYCLES.filter((l) => options.lifecycles?.includes(l.id))
    : LIFECYCLES;
  const faults = options.faults ?? TAP_FAULTS;
  const results: LifecycleResult[] = [];

  for (const lifecycle of chosen) {
    const result: LifecycleResult = {
      id: lifecycle.id,
      title: lifecycle.title,
      steps: lifecycle.steps.map((s) => s.title),
      skipped: undefined,
      recorded: [],
      recordingViolations: [],
      points: [],
    };
    results.push(result);
    if (lifecycle.needs === "earlierOwner" && !subject.earlierOwner) {
      result.skipped = `${subject.name} has no earlier owner ids to adopt from`;
      progress(`${subject.name} ${lifecycle.id}: skipped (${result.skipped})`);
      continue;
    }

    const recording = await runTrialOrSay(subject, lifecycle, undefined, options);
    result.recorded = recording.writes.map((w) => ({
      side: w.side,
      label: w.label,
      occurrence: w.occurrence,
      status: w.status,
    }));
    result.recordingViolations = recording.violations;
    if (recording.finished && !recording.writes.some((w) => w.side === "external")) {
      // Every lifecycle makes the controller write to the external API: a recording without one attributed
      // none to the trial, and its points would try only the Kubernetes writes.
      result.recordingViolations.push(
        "the recording attributed no external write to the trial: the subject's writes are not recognised " +
          "(give the CrashSubject an attributeWrite)",
      );
    }
    progress(
      `${subject.name} ${lifecycle.id}: recorded ${result.recorded.length} writes` +
        (recording.violations.length ? `; ${recording.violations.length} violations without a fault` : ""),
    );

    const points = pointsOf(lifecycle, result.recorded, faults).filter(
      (p) => !options.sample || isSampled(lifecycle, result.recorded, p),
    );
    for (const point of points) {
      const trial = await runTrialOrSay(subject, lifecycle, point, options);
      const faulted = trial.writes.find((w) => w.fault !== undefined);
      const after = faulted ? trial.writes.filter((w) => w.seq > faulted.seq).map((w) => w.label) : [];
      const outcome: PointResult = {
        ...point,
        reached: faulted !== undefined,
        status: faulted?.status,
        after,
        recoveredMs: faulted && trial.violations.length === 0 ? trial.settledAt - trial.faultAt : undefined,
        violations: trial.violations,
      };
      result.points.push(outcome);
      progress(
        `${subject.name} ${lifecycle.id} #${point.index} ${point.side} ${point.write} (${point.occurrence}) ` +
          `${point.fault}: ` +
          (!outcome.reached
            ? "not reached"
            : outcome.violations.length
              ? `${outcome.violations.length} violations: ${outcome.violations.join("; ")}`
              : `ok in ${outcome.recoveredMs} ms`),
      );
    }
  }

  const points = results.flatMap((r) => r.points);
  return {
    subject: subject.name,
    lifecycles: results,
    tried: points.filter((p) => p.reached).length,
    notReached: points.filter((p) => !p.reached).length,
    violations:
      points.reduce((n, p) => n + p.violations.length, 0) +
      results.reduce((n, r) => n + r.recordingViolations.length, 0),
    durationMs: Date.now() - started,
  };
}

/**
 * The sample's one point of a lifecycle: lifecycle k (in {@link LIFECYCLES} order) takes the k-th write
 * (modulo their count) among the FIRST occurrences of its labels, with fault k modulo four. A second
 * occurrence is left out: it comes from a retry or an echo, which a run may or may not repeat.
 */
function isSampled(lifecycle: Lifecycle, recorded: readonly RecordedWrite[], point: CrashPoint): boolean {
  const k = LIFECYCLES.indexOf(lifecycle);
  const firsts = recorded.map((w, i) => ({ w, index: i + 1 })).filter(({ w }) => w.occurrence === 1);
  const chosen = firsts[k % Math.max(1, firsts.length)];
  return (
    chosen !== undefined && point.index === chosen.index && point.fault === TAP_FAULTS[k % TAP_FAULTS.length]
  );
}

/** Every (write, fault) pair of a recording, in order. */
function pointsOf(
  lifecycle: Lifecycle,
  recorded: readonly RecordedWrite[],
  faults: readonly TapFault[],
): CrashPoint[] {
  return recorded.flatMap((w, i) =>
    faults.map((fault) => ({
      lifecycle: lifecycle.id,
      index: i + 1,
      side: w.side,
      write: w.label,
      occurrence: w.occurrence,
      fault,
    })),
  );
}

/** A write of a trial, labelled. */
interface LabelledWrite extends TappedWrite {
  label: string;
  occurrence: number;
  create: boolean;
  /** A create the external API committed (the subject's attribution). */
  committedCreate: boolean;
}

interface TrialOutcome {
  writes: LabelledWrite[];
  violations: string[];
  /** False when something stopped the trial before its end (its one violation says what). */
  finished: boolean;
  faultAt: number;
  settledAt: number;
}

/**
 * {@link runTrial}, or, when it could not finish (a step's action failed, the controller would not start
 * again), what stopped it as the trial's one violation: never a run that dies at one point, never a pass.
 */
async function runTrialOrSay(
  subject: CrashSubject,
  lifecycle: Lifecycle,
  point: CrashPoint | undefined,
  options: ExploreOptions,
): Promise<TrialOutcome> {
  try {
    return await runTrial(subject, lifecycle, point, options);
  } catch (error) {
    subject.taps.kube.disarm();
    subject.taps.external.disarm();
    const writes = [...subject.taps.kube.take(), ...subject.taps.external.take()];
    const faulted = writes.find((w) => w.fault !== undefined);
    const labelledWrites: LabelledWrite[] = faulted
      ? [
          {
            ...faulted,
            ...subject.describeWrite(faulted),
            committedCreate: false,
            occurrence: point?.occurrence ?? 1,
          },
        ]
      : [];
    return {
      writes: labelledWrites,
      violations: [`the trial could not finish: ${(error as Error).message.split("\n")[0]}`],
      finished: false,
      faultAt: 0,
      settledAt: 0,
    };
  }
}

/**
 * Runs `lifecycle` once in a fresh namespace: the prelude, then the steps with the tap armed at `point`
 * (none: the recording), each step's end state awaited and checked, then the cleanup.
 */
async function runTrial(
  subject: CrashSubject,
  lifecycle: Lifecycle,
  point: CrashPoint | undefined,
  options: ExploreOptions,
): Promise<TrialOutcome> {
  const stepTimeoutMs = options.stepTimeoutMs ?? 60_000;
  await subject.startController();
  const namespace = await subject.newNamespace();
  const name = lifecycle.id;
  const trial: TrialContext = {
    subject,
    namespace,
    name,
    externalName: subject.externalNameOf(namespace, name),
    uid: undefined,
    foreignOwner: FOREIGN_OWNER,
  };
  const violations: string[] = [];
  const ids = new Set<string>();
  const scope: Scope = { namespace, externalName: trial.externalName, ids };
  const watch = new TrialWatch(subject, trial, ids);

  for (const step of lifecycle.prelude) {
    await step.act(trial);
    const unmet = await settle(watch, step.expect, undefined, stepTimeoutMs, () => Promise.resolve());
    if (unmet.length)
      throw new Error(`the prelude of ${lifecycle.id} failed at "${step.title}": ${unmet.join("; ")}`);
    trial.uid ??= (await subject.read(namespace, name))?.uid;
  }
  // The controller may have been stopped by the prelude: the steps start it when they need it.
  // Foreign: neither ours nor an earlier owner id of ours (the adoption lifecycle's object is to be taken),
  // nor, for an adoption on request, the untagged object of the resource's name.
  const foreignBefore = (await subject.listExternal()).filter(
    (e) =>
      e.owner !== subject.ownerId &&
      e.owner !== subject.earlierOwner?.ownerId &&
      !(lifecycle.adoptsUntagged === true && e.owner === undefined && e.name === trial.externalName),
  );
  const startObject = await subject.getExternal(trial.externalName);
  if (startObject) ids.add(startObject.id);
  subject.taps.kube.take();
  subject.taps.external.take();

  // Armed: the write with the point's label and occurrence on its side, among this trial's writes.
  /** The kill, once the tap started it: a restart waits until the process is gone. */
  let crash: Promise<void> | undefined;
  let restarted = false;
  let faultAt = 0;
  if (point) {
    let seen = 0;
    subject.taps[point.side].arm({
      fault: point.fault,
      select: (write) => {
        if (!attribute(subject, write, scope).ours) return false;
        if (subject.describeWrite(write).label !== point.write) return false;
        seen++;
        if (seen !== point.occurrence) return false;
        faultAt = Date.now();
        return true;
      },
      crash: () => (crash = subject.killController()),
    });
  }
  const restartIfCrashed = async () => {
    if (crash && !restarted) {
      restarted = true;
      await crash;
      await subject.startController();
    }
  };

  const deleted = new Set<string>(); // foreign objects a step's person deleted
  try {
    for (const step of lifecycle.steps) {
      const holder = await subject.getExternal(trial.externalName);
      try {
        await step.act(trial);
      } catch (error) {
        // A step that starts the controller fails when the crash hits its startup: the restart follows.
        if (!crash) throw error;
      }
      if (holder && holder.owner !== subject.ownerId && !(await subject.getExternal(trial.externalName))) {
        deleted.add(holder.id);
      }
      await restartIfCrashed();
      const unmet = await settle(watch, step.expect, startObject?.id, stepTimeoutMs, restartIfCrashed);
      violations.push(...unmet.map((u) => `after "${step.title}": ${u}`));
      trial.uid ??= (await subject.read(namespace, name))?.uid;
    }
  } finally {
    subject.taps[point?.side ?? "kube"].disarm();
  }
  await restartIfCrashed();
  const settledAt = Date.now();
  const stepWrites = [...subject.taps.kube.take(), ...subject.taps.external.take()];

  // Nothing foreign touched: every foreign object seen before the steps is there, as it was.
  const foreignAfter = new Map((await subject.listExternal()).map((e) => [e.id, e]));
  for (const before of foreignBefore) {
    if (deleted.has(before.id)) continue;
    const after = foreignAfter.get(before.id);
    if (!after) violations.push(`foreign object ${before.name} (${before.id}) is gone`);
    else if (JSON.stringify(after) !== JSON.stringify(before)) {
      violations.push(`foreign object ${before.name} (${before.id}) changed: ${JSON.stringify(after)}`);
    }
  }

  // The cleanup: deleting the resource must complete and leave nothing of ours behind.
  if (await subject.read(namespace, name)) {
    await subject.delete(namespace, name);
    const unmet = await settle(watch, { kind: "gone" }, undefined, stepTimeoutMs, restartIfCrashed);
    violations.push(...unmet.map((u) => `after the final kubectl delete: ${u}`));
  }
  for (const leaked of (await subject.listExternal()).filter(
    (e) =>
      e.owner === subject.ownerId && (e.name === trial.externalName || (trial.uid && e.uid === trial.uid)),
  )) {
    violations.push(`leaked: ${leaked.name} (${leaked.id}) is ours with no resource left`);
  }

  violations.push(...watch.duplicates);

  // The report lists the steps' writes; the checks read the cleanup's too.
  const writes = labelled(subject, stepWrites, scope);
  const cleanupWrites = [...subject.taps.kube.take(), ...subject.taps.external.take()];
  const cleanup = labelled(subject, cleanupWrites, scope);
  // A foreign object its person deleted gave its name up (ours may hold it now): only its id stays foreign.
  const foreignMarks = foreignBefore.flatMap((f) => (deleted.has(f.id) ? [f.id] : [f.id, f.name]));
  violations.push(...foreignWrites(subject, [...stepWrites, ...cleanupWrites], scope, foreignMarks));
  const creates = [...writes, ...cleanup].filter((w) => w.committedCreate);
  if (creates.length > lifecycle.creates) {
    violations.push(`${creates.length} external objects created; the lifecycle needs ${lifecycle.creates}`);
  }
  return { writes, violations, finished: true, faultAt, settledAt };
}

/** A trial's {@link TrialScope}, whose ids the explorer adds to. */
interface Scope extends TrialScope {
  readonly ids: Set<string>;
}

/** The trial's writes in order, labelled, with each label's occurrence on its side. */
function labelled(subject: CrashSubject, writes: TappedWrite[], scope: Scope): LabelledWrite[] {
  const counts = new Map<string, number>();
  return writes
    .sort((a, b) => a.seq - b.seq)
    .flatMap((w) => {
      const { ours, committedCreate } = attribute(subject, w, scope);
      if (!ours) return [];
      const { label, create } = subject.describeWrite(w);
      const key = `${w.side} ${label}`;
      const occurrence = (counts.get(key) ?? 0) + 1;
      counts.set(key, occurrence);
      return [{ ...w, label, create, committedCreate, occurrence }];
    });
}

/**
 * One violation for each recorded external write, the trial's or not, that addresses an id or a name of
 * `foreign` (the ids of the objects listed as foreign before the steps, and the names they still hold).
 */
function foreignWrites(
  subject: CrashSubject,
  writes: readonly TappedWrite[],
  scope: Scope,
  foreign: readonly string[],
): string[] {
  const marks = new Set(foreign);
  return writes
    .filter((w) => w.side === "external")
    .filter((w) => attribute(subject, w, scope).addresses.some((a) => marks.has(a)))
    .map((w) => `wrote a foreign object: ${w.method} ${w.path}`);
}

/**
 * What a write is to the trial, by the subject's {@link CrashSubject.attributeWrite} or the REST default;
 * learns the id its answer names into the trial's ids.
 */
function attribute(subject: CrashSubject, write: TappedWrite, scope: Scope): WriteAttribution {
  const attribution = subject.attributeWrite
    ? subject.attributeWrite(write, scope)
    : restWriteAttribution(write, scope, subject.describeWrite(write).create);
  if (attribution.ours && attribution.objectId !== undefined) scope.ids.add(attribution.objectId);
  return attribution;
}

/** What the explorer reads of a trial at each check: the resource, its intent record, the external side. */
class TrialWatch {
  /** Every time two of our external objects carried the resource's uid at once. */
  readonly duplicates: string[] = [];

  readonly subject: CrashSubject;
  readonly trial: TrialContext;
  readonly ids: Set<string>;

  constructor(subject: CrashSubject, trial: TrialContext, ids: Set<string>) {
    this.subject = subject;
    this.trial = trial;
    this.ids = ids;
  }

  /** The unmet parts of `expect` now; empty when it holds. */
  async unmet(expect: Expectation, startId: string | undefined): Promise<string[]> {
    const { subject, trial } = this;
    const [resource, external, intent, all] = await Promise.all([
      subject.read(trial.namespace, trial.name),
      subject.getExternal(trial.externalName),
      subject.intentExists(trial.namespace, trial.name),
      subject.listExternal(),
    ]);
    if (external) this.ids.add(external.id);
    const uid = resource?.uid ?? trial.uid;
    const ours = all.filter((e) => uid && e.uid === uid && e.owner === subject.ownerId);
    if (ours.length > 1) {
      const line = `two external objects of ours carry the resource's uid: ${ours.map((e) => e.id).join(", ")}`;
      if (!this.duplicates.includes(line)) this.duplicates.push(line);
    }
    return expectationUnmet(expect, resource, external, intent, subject.ownerId, startId, trial.foreignOwner);
  }
}

/** The parts of `expect` the observed state does not meet (empty: it holds). */
export function expectationUnmet(
  expect: Expectation,
  resource: ResourceView | undefined,
  external: ExternalView | undefined,
  intent: boolean,
  ownerId: string,
  startId: string | undefined,
  foreignOwner: string,
): string[] {
  const unmet: string[] = [];
  const condition = (type: string, status: string, reason?: string) => {
    const c = resource?.conditions[type];
    if (!c || c.status !== status || (reason !== undefined && c.reason !== reason)) {
      unmet.push(
        `${type} is ${c ? `${c.status} (${c.reason})` : "missing"}, not ${status}${reason ? ` (${reason})` : ""}`,
      );
    }
  };
  const currentGeneration = () => {
    if (resource && resource.observedGeneration !== resource.generation) {
      unmet.push(
        `observedGeneration ${resource.observedGeneration} is not generation ${resource.generation}`,
      );
    }
  };
  switch (expect.kind) {
    case "unchecked":
      return [];
    case "converged":
      if (!resource) return ["the resource does not exist"];
      if (resource.deleting) unmet.push("the resource is being deleted");
      condition("Ready", "True", "Available");
      condition("Synced", "True");
      currentGeneration();
      if (resource.finalizers.length === 0) unmet.push("the resource has no finalizer");
      if (!intent) unmet.push("no intent record");
      if (!external) unmet.push("no external object holds its name");
      else {
        if (external.owner !== ownerId)
          unmet.push(`the external object's owner is ${external.owner ?? "none"}`);
        if (external.uid !== resource.uid)
          unmet.push(`the external object's uid is ${external.uid ?? "none"}`);
        if (external.matches !== expect.variant) {
          unmet.push(`the external object matches ${external.matches}, not ${expect.variant}`);
        }
        if (expect.sameObject === true && external.id !== startId) {
          unmet.push(`the external object is ${external.id}, not the one it had (${startId})`);
        }
        if (expect.sameObject === false && external.id === startId) {
          unmet.push(`the external object is still the deleted one (${startId})`);
        }
      }
      return unmet;
    case "conflict":
      if (!resource) return ["the resource does not exist"];
      condition("Ready", "False", "NameConflict");
      condition("Synced", "False", "NameConflict");
      currentGeneration();
      if (external?.owner !== foreignOwner) {
        unmet.push(
          `the name is held by ${external ? `owner ${external.owner ?? "none"}` : "nothing"}, not the foreign object`,
        );
      }
      return unmet;
    case "paused":
      if (!resource) return ["the resource does not exist"];
      condition("Synced", "False", "ReconcilePaused");
      condition("Ready", "Unknown");
      currentGeneration();
      if (!external || external.owner !== ownerId) unmet.push("the external object is not ours any more");
      else if (external.matches !== expect.external) {
        unmet.push(`the external object matches ${external.matches}, not ${expect.external}`);
      }
      return unmet;
    case "gone":
      if (resource) unmet.push(resource.deleting ? "the resource is stuck deleting" : "the resource exists");
      if (intent) unmet.push("the intent record exists");
      if (external?.owner === ownerId) unmet.push("our external object still exists");
      return unmet;
    case "orphaned":
      if (resource) unmet.push(resource.deleting ? "the resource is stuck deleting" : "the resource exists");
      if (intent) unmet.push("the intent record exists");
      if (!external) unmet.push("the external object is gone");
      else {
        if (external.owner === ownerId) unmet.push("the external object still carries our owner mark");
        if (external.matches !== expect.variant) {
          unmet.push(`the external object matches ${external.matches}, not ${expect.variant}`);
        }
      }
      return unmet;
  }
}

/**
 * Waits until `expect` holds (restarting a crashed controller on the way), at most `timeoutMs`; returns
 * what was still unmet at the deadline (empty: it held).
 */
async function settle(
  watch: TrialWatch,
  expect: Expectation,
  startId: string | undefined,
  timeoutMs: number,
  restartIfCrashed: () => Promise<void>,
): Promise<string[]> {
  if (expect.kind === "unchecked") return [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await restartIfCrashed();
    let unmet: string[];
    try {
      unmet = await watch.unmet(expect, startId);
    } catch (error) {
      unmet = [`could not read the state: ${(error as Error).message}`];
    }
    if (unmet.length === 0) return [];
    if (Date.now() >= deadline) return unmet;
    await sleep(100);
  }
}
