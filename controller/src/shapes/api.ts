/**
 * The Kubernetes side of the story: the `Shape` and `ShapeRef` custom resources (crds/), as TypeScript
 * types, plus the names (finalizer, annotations, owner tags) this controller stamps on things.
 */
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import {
  adoptionAnnotation,
  type Condition,
  type DeletionPolicy,
  type IntentPhase,
  type ManagementPolicy,
} from "reconcile-kit";

/** API group and version of both custom resources. */
export const GROUP = "shapes.example.com";
/** The served and stored version. */
export const VERSION = "v1alpha1";
/** Plural resource names, as used in API paths. */
export const SHAPES = "shapes";
/** Plural resource name of the cluster-scoped ShapeRef. */
export const SHAPEREFS = "shaperefs";

/** The finalizer that holds a Shape's deletion until its cloud shape is gone (or orphaned). */
export const FINALIZER = "shapes.example.com/cloud-shape";
/** Annotation: "true" stops every write and every observation for this Shape (a condition says so). */
export const PAUSED_ANNOTATION = "shapes.example.com/paused";
/** Annotation: any new value forces an immediate reconcile (the informer's update event does it). */
export const REFRESH_ANNOTATION = "shapes.example.com/refresh";
/**
 * Annotation `shapes.example.com/adoption-policy`: `adopt` takes over the cloud shape of the Shape's name when
 * it carries no owner tag (never creates one), `adopt-or-create` too but creates it when absent; a shape with
 * another owner's tag is never adopted (the library's adoption.ts).
 */
export const ADOPTION_POLICY_ANNOTATION = adoptionAnnotation({ group: GROUP });

/** Owner tags on every cloud shape we create. Ownership is ONLY what these tags say. */
export const TAG_OWNER = "owner";
/** The uid of the Shape the cloud shape belongs to: tells our own shape from a foreign one with our name. */
export const TAG_UID = "k8s-uid";
/** `<namespace>/<name>` of the owning Shape, for people reading the cloud console. */
export const TAG_NAME = "k8s-name";
/**
 * The cloud merge patch that lets one of our shapes go (deletionPolicy Orphan): our three tags removed,
 * nothing else touched — from then on it is foreign to us, and never written again.
 */
export const RELEASE_PATCH = Object.freeze({
  tags: Object.freeze({ [TAG_OWNER]: null, [TAG_UID]: null, [TAG_NAME]: null }),
});

/** What happens to the cloud shape when its Shape is deleted. */
export type { DeletionPolicy };

/**
 * `Shape.spec`: the desired cloud shape. `type` and `color` are required by the CRD unless
 * `managementPolicies` leaves out Create (observe only: the Shape asks for nothing, it only looks).
 */
export interface ShapeSpec {
  type?: string;
  color?: string;
  size?: number;
  deletionPolicy?: DeletionPolicy;
  /** Crossplane's management policies (reconcile-kit's policies.ts): `["*"]` when unset. */
  managementPolicies?: ManagementPolicy[];
}

export type { Condition };

/** `Shape.status`: what the controller observed and did. */
export interface ShapeStatus {
  conditions?: Condition[];
  observedGeneration?: number;
  cloudId?: string;
  cloudName?: string;
  lastSyncTime?: string;
  driftRepairs?: number;
  /** The cloud shape as last observed, when managementPolicies is not ["*"] (observe only, no Update). */
  atProvider?: ShapeAtProvider;
}

/** `Shape.status.atProvider`: the observed cloud shape ({} when an observe-only Shape finds none). */
export type ShapeAtProvider = {
  id?: string;
  type?: string;
  color?: string;
  size?: number;
  /** The owner tag it carries (absent: none): whose shape an observe-only Shape looks at. */
  owner?: string;
};

/** A `Shape` custom resource (namespaced). */
export interface Shape extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  spec: ShapeSpec;
  status?: ShapeStatus;
}

/** Lifecycle of a ShapeRef; see crds/README.md. */
export type ShapeRefPhase = IntentPhase;

/** `ShapeRef.spec`: the durable record of ONE cloud object this controller created or is about to create. */
export interface ShapeRefSpec {
  shape: { namespace: string; name: string; uid: string };
  cloudName: string;
  /**
   * The Shape's deletionPolicy, copied and kept current by the controller, so that a missed deletion (the
   * Shape gone without our finalizer) still honours it. Absent (a ShapeRef from before the field): Delete.
   */
  deletionPolicy?: DeletionPolicy;
  /**
   * The owner id the controller stamps on the cloud shape (its `owner` tag), kept current: tells a person
   * which controller's record this is (`kubectl get shaperefs` shows it). Absent: a ShapeRef from before
   * the field.
   */
  owner?: string;
}

/** `ShapeRef.status`: where that cloud object is in its life. No phase yet means Pending. */
export interface ShapeRefStatus {
  phase?: ShapeRefPhase;
  /** The cloud id, once the cloud object was created (or adopted). */
  cloudId?: string;
  message?: string;
}

/** A `ShapeRef` custom resource (cluster-scoped). */
export interface ShapeRef extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string };
  spec: ShapeRefSpec;
  status?: ShapeRefStatus;
}

/** The deterministic cloud name of a Shape: found again by name, no stored id needed. */
export function cloudNameOf(namespace: string, name: string): string {
  return `${namespace}.${name}`;
}

/** The ShapeRef of a Shape has the same deterministic name as its cloud shape. */
export const shapeRefNameOf = cloudNameOf;

/** Where a Shape lives: its namespace and name. */
export interface ShapeName {
  namespace: string;
  name: string;
}

/**
 * The inverse of {@link cloudNameOf}: the namespace and name of the Shape a cloud name belongs to, or
 * undefined when the name cannot be one of ours. A namespace is a DNS label (no dots) while a Shape's name
 * may hold dots, so the FIRST dot is the split. This, not the `k8s-name` tag, is how a cloud shape leads
 * to its Shape: the name is ours by construction, a tag is anyone's to edit.
 */
export function shapeOfCloudName(cloudName: string): ShapeName | undefined {
  const dot = cloudName.indexOf(".");
  if (dot <= 0 || dot === cloudName.length - 1) return undefined;
  return { namespace: cloudName.slice(0, dot), name: cloudName.slice(dot + 1) };
}
