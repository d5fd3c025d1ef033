/**
 * What the crash explorer needs of a controller on top of a conformance subject: {@link CrashSubject}, its
 * taps ({@link WriteTap}) and the faults they apply ({@link TapFault}).
 */
import type { Subject } from "../conformance/subject.ts";
import type { TrialScope, WriteAttribution } from "./attribution.ts";

/** Which connection a write went over. */
export type Side = "kube" | "external";

/**
 * What the tap does at the write an arm selects:
 *
 * - `crash-before`: the request has left the controller but not reached the server: the tap kills the
 *   controller (SIGKILL, waits until it is gone) and drops the request. Nothing committed.
 * - `crash-after`: the tap forwards the request, the server commits it and answers, then the tap kills the
 *   controller before a byte of the answer reaches it. Committed, never heard.
 * - `fail`: the tap answers 503 itself and forwards nothing: a write that failed, nothing committed.
 * - `answer-lost`: the tap forwards the request, the server commits it, then the tap resets the connection
 *   instead of passing the answer on: what a timeout whose write committed looks like to the client (an
 *   error, no answer), without waiting out the client's timeout.
 *
 * The last two do not kill: the controller hears a failure and must recover on its own.
 */
export type TapFault = "crash-before" | "crash-after" | "fail" | "answer-lost";

/** Every fault, in the order the explorer tries them at one write. */
export const TAP_FAULTS: readonly TapFault[] = ["crash-before", "crash-after", "fail", "answer-lost"];

/** One write the controller sent, as its tap saw it. */
export interface TappedWrite {
  /**
   * Increases across every tap of the process, in the order writes reach them: merges the writes of the
   * two taps in order.
   */
  seq: number;
  /** Which connection it went over. */
  side: Side;
  /** The HTTP method: POST, PUT, PATCH or DELETE. */
  method: string;
  /** The request's path, without the query. */
  path: string;
  /** The request's body, as text ("" when none). */
  requestBody: string;
  /** The server's HTTP status; undefined while unanswered, or when the request never reached the server. */
  status: number | undefined;
  /** The server's answer, as text ("" when none, or not yet). */
  responseBody: string;
  /** The fault the tap applied to this write, if it was the armed one. */
  fault: TapFault | undefined;
}

/** One armed fault: one-shot, it disarms itself at the write it selects. */
export interface TapArm {
  /** Called for each write before it is forwarded (its status not known yet): true selects it. */
  select(write: TappedWrite): boolean;
  /** What the tap does at the selected write. */
  fault: TapFault;
  /**
   * For the crash faults: kills the controller with SIGKILL and resolves once the process is gone. The tap
   * drops the request (crash-before) or the answer (crash-after) only after it resolved.
   */
  crash(): Promise<void>;
}

/**
 * A tap on one of the controller's connections: a proxy the connection goes through. It forwards
 * everything; it records each write (POST, PUT, PATCH, DELETE) in the order the writes reach it; and, once
 * armed, it applies the arm's {@link TapFault} to the ONE write the arm selects.
 */
export interface WriteTap {
  /** Which connection it taps. */
  readonly side: Side;
  /** The writes seen since the last `take()`, oldest first; forgets them. */
  take(): TappedWrite[];
  /** Arms one fault (replacing an armed one that has not fired). */
  arm(arm: TapArm): void;
  /** Disarms it (a no-op when it fired already or none is armed). */
  disarm(): void;
}

/**
 * A conformance subject the crash explorer can drive ({@link exploreCrashPoints}): a tap on each of the
 * controller's two connections (Kubernetes and the external API) that sees every write it sends and can
 * crash it at one of them, the kill itself, and how to tell the writes apart.
 *
 * # Guarantees
 * - The explorer arms at most one tap at a time, with one fault, and disarms it when the trial ends; it
 *   takes each tap's writes at the start and the end of every trial.
 * - It kills the controller only from an arm's `crash`, and starts it again before it checks anything.
 * - It acts on the cluster and the external API only through the subject's methods, each trial in a
 *   namespace `newNamespace` gave.
 *
 * # Assumptions
 * - Every run of the controller (the restarts after a kill too) sends all its Kubernetes and external
 *   traffic through `taps`, and a tap sees each write before it is forwarded.
 * - `describeWrite` names no object, so the same write of the next run has the same label.
 * - `attributeWrite` (or the REST default) decides whether a write is the trial's from the request alone:
 *   the tap asks before the answer exists.
 *
 * # Errors
 * A tap, `killController` or `startController` that throws during a trial makes that trial's one violation
 * ("the trial could not finish"); the exploration goes on.
 */
export interface CrashSubject extends Subject {
  /**
   * The taps on the controller's two connections. `startController` must start the controller with its
   * Kubernetes and external traffic through them (every run of it, also the restarts after a crash).
   */
  readonly taps: { readonly kube: WriteTap; readonly external: WriteTap };
  /** Kills the running controller (SIGKILL) and resolves once it is gone; a no-op when none runs. */
  killController(): Promise<void>;
  /**
   * What a write does, in words that name no object (the Shapes subject's "POST ShapeRef", "PATCH Shape status",
   * "POST cloud shape"): the explorer's tables list writes by it, and counts a label's occurrences to find the
   * same write
   * again in the next run. `create`: the write creates an external object (the "created twice" check counts
   * them).
   */
  describeWrite(write: TappedWrite): { label: string; create: boolean };
  /**
   * Which recorded writes are the trial's, which of them are creates the external API committed, and the id
   * an answer names. Left out, the explorer uses {@link restWriteAttribution} (names and ids as plain text in
   * the request, a create committed when its status is below 300, the id from an `id` field of the answer),
   * which fits a REST API of JSON objects and Kubernetes. A subject whose API encodes its requests, or
   * answers a write that did not take effect with a 2xx, gives its own: a lifecycle whose recording has no
   * external write of the trial fails the run, never counts as tried.
   */
  attributeWrite?(write: TappedWrite, trial: TrialScope): WriteAttribution;
  /**
   * Creates the external object of `namespace/name` (variant "first") as an earlier owner id of this
   * controller left it (owner mark `earlierOwner`, the resource's uid not known yet), for the adoption
   * lifecycle; undefined when the subject has no notion of earlier owner ids (the lifecycle is skipped).
   */
  readonly earlierOwner?: {
    /** The earlier owner id, one the controller was started to adopt from. */
    readonly ownerId: string;
    create(namespace: string, name: string): Promise<void>;
  };
}
