/**
 * What the conformance suite drives: {@link Subject}, a controller under test in the words of the story, and
 * what the suite sees of its resources and external objects.
 */

import type { ManagementPolicy } from "../reconcile/policies.ts";

/** Two desired states a resource can ask for: the scenarios switch between them (an update). */
export type Variant = "first" | "second";

/**
 * A desired state the external API refuses for good, passed to {@link Subject.apply} instead of a
 * {@link Variant}: valid for the resource's schema (Kubernetes admits it), refused by a rule of the API's own
 * (a 422: a cloud shape larger than its type allows, a TTL below the zone's minimum), so that only editing the
 * spec can fix it. Each subject whose API refuses some input knows one, and the words its API answers it with
 * ({@link Subject.rejectedMessage}); one whose API refuses nothing says so ({@link Subject.refusesNothing})
 * and is never asked for it.
 */
export type Rejected = "rejected";

/** What the suite can see of an external object, whatever its API. */
export interface ExternalView {
  /** The external API's id of the object: stays the same across updates and renames. */
  id: string;
  /** The name it holds now. */
  name: string;
  /** The owner mark it carries (undefined: none). */
  owner: string | undefined;
  /** The uid mark it carries (undefined: none). */
  uid: string | undefined;
  /** Which variant its managed fields match, or "neither" (drifted, or a foreign object's own values). */
  matches: Variant | "neither";
}

/** What the suite can see of a resource. */
export interface ResourceView {
  /** `metadata.uid`. */
  uid: string;
  /** `metadata.generation`. */
  generation: number;
  /** `metadata.finalizers` (empty when none). */
  finalizers: string[];
  /** True once `metadata.deletionTimestamp` is set. */
  deleting: boolean;
  /** `status.conditions` by type: status and reason. */
  conditions: Record<string, { status: string; reason: string; message: string }>;
  /** `status.observedGeneration`. */
  observedGeneration: number | undefined;
  /** `status.atProvider`: the external object as last observed (its `id` at least), when written. */
  atProvider?: { id?: string } | undefined;
}

/** Options of {@link Subject.apply}. */
export interface ApplyOptions {
  /** `spec.deletionPolicy`, when given (left out: the resource's default, Delete). */
  deletionPolicy?: "Delete" | "Orphan";
  /** `spec.managementPolicies`, when given (the variant's fields are still written: the schema allows them). */
  managementPolicies?: ManagementPolicy[];
  /** Annotations the resource carries from its first apply (e.g. the adoption policy). */
  annotations?: Record<string, string>;
}

/**
 * One controller, its custom resources in a real cluster, and its external API, driven in the words of the
 * story: a person applies and deletes resources with kubectl, another person edits the external API behind
 * the controller's back, and the controller crashes, stops and starts. Each controller built on
 * reconcile-kit gives one (its test harness); the scenarios of {@link conformance} are written once against
 * it and run for every subject.
 *
 * # Guarantees
 * - The suite calls `setUp` once, then `startController`, before its first scenario, and `tearDown` once
 *   after its last, also when scenarios failed.
 * - Every scenario works in a namespace of its own (`newNamespace`) and names in a comment the controller bug
 *   it catches: none of them passes against a controller that has that bug.
 * - A scenario that asserts that something did NOT happen (an object untouched, no write) first waits for
 *   proof that the controller looked (`reconciles` moved, a control object was handled): a dead or idle
 *   controller fails it.
 * - After a scenario that failed with the controller stopped or crashed, the suite starts it again, so one
 *   failure does not take the next scenarios with it.
 * - An optional capability the subject leaves out (`renameExternal`, `uninstall`, `restartApiServer`) skips
 *   its scenarios, with a line on stderr saying why.
 * - On an existing cluster (USE_EXISTING_CLUSTER=true: the suite reads it itself) `uninstall` and
 *   `restartApiServer` are never called, and their scenarios are skipped, saying why: a subject need not
 *   decide it.
 * - An API that refuses no input for good (`refusesNothing`, its reason) skips the rejected-input scenario,
 *   with a line on stderr giving that reason; `apply` is then never asked for {@link Rejected}. A subject
 *   with neither `refusesNothing` nor `rejectedMessage` fails that scenario, saying so.
 *
 * # Assumptions
 * - The controller runs as a separate process, started and stopped by the subject, with a resync period far
 *   longer than the suite's deadlines (minutes): within a scenario only an event, a start or the refresh
 *   annotation explains a reconcile.
 * - The Kubernetes methods act as a person with kubectl does (through the API server, never around the
 *   controller), and the external API methods as another person with the API's own client: the suite sees
 *   only what they return.
 * - The counters (`externalWrites`, `kubeWrites`, `reconciles`) only grow while the subject runs, across
 *   the controller's restarts.
 *
 * # Errors
 * A method that throws (rejects) fails the scenario that called it; a `setUp` that throws fails every
 * scenario of the subject. The suite waits on conditions with generous deadlines, and a deadline passed is
 * a failure that says what it waited for.
 */
export interface Subject {
  /** Names the subject in test titles ("shapes", "dns records"). */
  readonly name: string;
  /** The owner id the controller stamps (its default, or the one it was started with). */
  readonly ownerId: string;

  // Lifecycle.
  /** Starts what the subject needs (cluster, CRDs and RBAC, external API) — not the controller. */
  setUp(): Promise<void>;
  /** Stops everything it started (controllers included), even after a failed test. */
  tearDown(): Promise<void>;
  /**
   * Starts the controller (as a separate process) and waits until it is ready; when it runs already, only
   * waits until it is ready (the suite calls it after a scenario that failed with the controller maybe down).
   * Its resync period must be far longer than the suite's deadlines (minutes), so that within a scenario
   * only an event, a start or the refresh annotation explains a reconcile.
   */
  startController(): Promise<void>;
  /** Stops the controller cleanly (SIGTERM) and waits for it to exit. Idempotent. */
  stopController(): Promise<void>;
  /**
   * Crash after create: with the controller running behind a gate that holds the external API's answer to
   * the create, applies `name` (variant "first"), waits until the API has created the object and answered,
   * kills the controller (SIGKILL) before it hears the answer, then lets the gate go. The controller is left
   * stopped; the suite starts it again.
   */
  crashAfterCreate(namespace: string, name: string): Promise<void>;

  // Kubernetes, as a person with kubectl.
  /** A fresh namespace for one scenario. */
  newNamespace(): Promise<string>;
  /**
   * Creates or updates the resource to ask for `variant`, or (`"rejected"`) for the spec its external API
   * refuses for good.
   */
  apply(namespace: string, name: string, variant: Variant | Rejected, options?: ApplyOptions): Promise<void>;
  /** Deletes the resource (returns at once; the finalizer may hold it). */
  delete(namespace: string, name: string): Promise<void>;
  /** Removes every finalizer from the resource: with the controller down, the deletion is missed. */
  stripFinalizers(namespace: string, name: string): Promise<void>;
  /** Sets (string) or removes (null) an annotation on the resource. */
  annotate(namespace: string, name: string, key: string, value: string | null): Promise<void>;
  /** The resource as the API server has it now, or undefined when it is gone. */
  read(namespace: string, name: string): Promise<ResourceView | undefined>;
  /** True while the intent record of the resource exists. */
  intentExists(namespace: string, name: string): Promise<boolean>;
  /** The annotation keys of the library's conventions for this resource kind. */
  readonly annotations: { paused: string; refresh: string; adoptionPolicy: string };
  /**
   * Words of the external API's own answer to the {@link Rejected} spec (e.g. "a triangle is at most size
   * 500"): the resource's Synced message must carry them, so a person reads why without the API's logs.
   * Left out only with {@link refusesNothing}.
   */
  readonly rejectedMessage?: string;
  /**
   * Set when the external API refuses no input for good, to say why (e.g. "etcd stores any bytes under any
   * key"): the plugin never classifies a failure `rejected`, and the rejected-input scenario is skipped with
   * a line on stderr giving this reason. Left out: the API refuses the {@link Rejected} spec, and the
   * scenario runs.
   */
  readonly refusesNothing?: string;

  // The external API, as another person.
  /** The external name the resource maps to. */
  externalNameOf(namespace: string, name: string): string;
  /** The external object holding `name`, whoever owns it; undefined when none. */
  getExternal(name: string): Promise<ExternalView | undefined>;
  /** Changes a managed field of the object behind the controller's back (so it matches "neither"). */
  drift(name: string): Promise<void>;
  /** Deletes the object behind the controller's back. */
  deleteExternal(name: string): Promise<void>;
  /**
   * A person renames the object behind the controller's back (the external API lets anyone change a name):
   * the object holding `name` keeps its id, its marks and its fields, and takes a new name that no resource
   * maps to; returns that new name. A subject whose API cannot rename an object leaves it out, and the
   * "renamed behind our back" scenarios are skipped, with a line saying why.
   */
  renameExternal?(name: string): Promise<string>;
  /** Every object of the external API, whoever owns it: the suite counts the objects that carry one uid. */
  listExternal(): Promise<ExternalView[]>;
  /**
   * Creates an object named `name` owned by someone else (owner mark `owner`), e.g. a name collision; with
   * `owner` undefined, one that carries no owner mark at all (what an adoption on request may take over).
   * Its managed fields match neither variant.
   */
  createForeign(name: string, owner: string | undefined): Promise<void>;
  /**
   * How many writes (create, update, delete) the controller has sent to the external API since the subject
   * started: the "no churn" scenario asserts this does not move while nothing changes.
   */
  externalWrites(): Promise<number>;
  /** How many writes the controller has sent to the Kubernetes API (from its metrics, or an audit). */
  kubeWrites(): Promise<number>;
  /**
   * How many reconciles of resources of this kind the controller has finished since the subject started,
   * across its runs (from its metrics). Proof that the controller LOOKED when looking changes nothing: the
   * "no churn" and "paused" scenarios wait for it to move before they assert that nothing was written.
   */
  reconciles(): Promise<number>;

  // The control plane.
  /**
   * Uninstalls with the controller running, and installs again: deletes the resource's CRD as a person
   * would (`kubectl delete crd <plural>.<group>`), waits until it is gone (so every resource of it went
   * through its finalizer), then installs the CRDs again. Never called on an existing cluster
   * (USE_EXISTING_CLUSTER=true); a subject that cannot uninstall leaves it out, and the "uninstall" scenario
   * is skipped, with a line saying why.
   */
  uninstall?(): Promise<void>;
  /**
   * Restarts the API server (its storage kept) under the running controller, and returns once it answers
   * again. Never called on an existing cluster (USE_EXISTING_CLUSTER=true); a subject that cannot restart
   * its API server leaves it out, and the scenario is skipped, with a line saying why.
   */
  restartApiServer?(): Promise<void>;
}
