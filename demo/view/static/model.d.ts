/**
 * Types of model.js (browser JavaScript, served as is; its tests run in Node). What each verdict means is
 * documented in model.js.
 */
import type { Changes, Snapshot, ViewCloudShape, ViewShape, ViewShapeRef } from "../wire.ts";

/** What links a Shape, its ShapeRef and its cloud shape, or what breaks the link. */
export type Verdict =
  | "linked"
  | "pending"
  | "unrecorded"
  | "failing"
  | "paused"
  | "observed"
  | "adopting"
  | "deleting"
  | "conflict"
  | "dangling"
  | "renamed"
  | "leak"
  | "other-owner"
  | "foreign";

/** One cloud name, in both worlds. */
export interface Row {
  key: string;
  shape: ViewShape | undefined;
  shapeRef: ViewShapeRef | undefined;
  cloud: ViewCloudShape | undefined;
  verdict: Verdict;
  why: string;
}

/** Every verdict, in the page's order, with its label and whether it is a problem. */
export const VERDICTS: readonly { verdict: Verdict; label: string; problem: boolean }[];

/** `<namespace>.<name>`. */
export function cloudNameOf(namespace: string, name: string): string;

/** Ours, another owner's, or foreign, by the `owner` tag. */
export function ownerOf(cloud: ViewCloudShape, ownerId: string): "ours" | "other" | "foreign";

/** The page's copy of both worlds. */
export declare class Worlds {
  shapes: Map<string, ViewShape>;
  shapeRefs: Map<string, ViewShapeRef>;
  cloud: Map<string, ViewCloudShape>;
  ownerId: string;
  reset(snapshot: Snapshot): void;
  apply(changes: Changes): void;
  rows(): Row[];
}

/** The rows of both worlds, sorted by cloud name. */
export function rowsOf(worlds: {
  shapes: Map<string, ViewShape>;
  shapeRefs: Map<string, ViewShapeRef>;
  cloud: Map<string, ViewCloudShape>;
  ownerId: string;
}): Row[];

/** The verdict of one row, with its why. */
export function verdictOf(
  shape: ViewShape | undefined,
  shapeRef: ViewShapeRef | undefined,
  cloud: ViewCloudShape | undefined,
  ownerId: string,
  renames?: { claimant?: ViewShape | undefined; renamedAway?: ViewCloudShape | undefined },
): { verdict: Verdict; why: string };

/** A ShapeRef in a few words: `ShapeRef · intent recorded` (no status, the default), or its phase and id. */
/** True when the Shape observes only: its `managementPolicies` leave out Create (and are not `*`). */
export function isObserveOnly(shape: ViewShape): boolean;

export function shapeRefLabel(shapeRef: ViewShapeRef): string;

/** The rows matching a text and a set of verdicts (empty: all). */
export function filterRows(
  rows: readonly Row[],
  filter: { text: string; verdicts: ReadonlySet<string> },
): Row[];

/** How many rows have each verdict. */
export function countVerdicts(rows: readonly Row[]): Record<string, number>;

/** The keys of the rows a tour moment is about. */
export function highlightedKeys(
  rows: readonly Row[],
  moment: { namespace: string; shapes: readonly string[]; cloudNames: readonly string[] } | null,
): Set<string>;

/** Whether an Event is about the row's Shape or ShapeRef. */
export function isAbout(row: Row, about: { kind: string; namespace: string; name: string }): boolean;
