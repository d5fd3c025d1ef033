/**
 * The workload: N Shapes created at once (POST, as `kubectl create` would, `concurrency` requests in flight),
 * and deleted at once. Specs are varied but deterministic (a seeded generator), so two runs ask the cloud for
 * the same shapes. Every create records when the API server answered: the "creation" end of each latency.
 */
import PQueue from "p-queue";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, SHAPES, type ShapeSpec, VERSION } from "@shapes/controller";
import { COLORS, maxSizeOf, SHAPE_TYPES as TYPES } from "@shapes/mock-cloud";

/** The cloud's (and the CRD's) colors and types: the mock cloud's schema is their one source. */
export { COLORS, TYPES };

/** A small seeded generator (mulberry32): the same seed gives the same sequence in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `items`, chosen by `random`. */
export function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** The name of the i-th Shape (0-based): `shape-00000`, sortable. */
export function shapeName(i: number): string {
  return `shape-${String(i).padStart(5, "0")}`;
}

/**
 * The spec of the i-th Shape: a type and a color, and a size on two of three, within the cloud's limit for
 * the type (a triangle's is 500): every Shape of the workload is one the cloud accepts, so each converges.
 */
export function shapeSpec(i: number): ShapeSpec {
  const random = seededRandom(i + 1);
  const type = pick(TYPES, random);
  const spec: ShapeSpec = { type, color: pick(COLORS, random) };
  if (i % 3 !== 0) spec.size = 1 + Math.floor(random() * maxSizeOf(type));
  return spec;
}

/** Creates and deletes the bench's Shapes as the cluster admin. */
export class Workload {
  readonly namespace: string;
  readonly #api: CustomObjectsApi;
  readonly #concurrency: number;

  constructor(kubeConfig: KubeConfig, namespace: string, concurrency: number) {
    this.namespace = namespace;
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#concurrency = concurrency;
  }

  /**
   * Creates the Shapes `names` with `concurrency` requests in flight. Resolves with performance.now() of each
   * create's answer, by name. `onCreated` is called after each (progress).
   */
  async createAll(
    names: readonly string[],
    specOf: (name: string) => ShapeSpec,
    onCreated?: () => void,
  ): Promise<Map<string, number>> {
    const createdAt = new Map<string, number>();
    await this.#forEach(names, async (name) => {
      await this.create(name, specOf(name));
      createdAt.set(name, performance.now());
      onCreated?.();
    });
    return createdAt;
  }

  /** Creates one Shape. */
  async create(name: string, spec: ShapeSpec): Promise<void> {
    await this.#api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SHAPES,
      namespace: this.namespace,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "Shape",
        metadata: { name, namespace: this.namespace },
        spec,
      },
    });
  }

  /** Merge-patches the spec of every Shape in `names` (e.g. a new color), `concurrency` requests in flight. */
  async patchSpecs(names: readonly string[], specOf: (name: string) => Partial<ShapeSpec>): Promise<void> {
    await this.#forEach(names, async (name) => {
      await this.#api.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          plural: SHAPES,
          namespace: this.namespace,
          name,
          body: { spec: specOf(name) },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    });
  }

  /** Asks for the deletion of every Shape in `names` (the finalizer keeps each until the controller let go). */
  async deleteAll(names: readonly string[], onDeleted?: () => void): Promise<void> {
    await this.#forEach(names, async (name) => {
      await this.#api.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SHAPES,
        namespace: this.namespace,
        name,
      });
      onDeleted?.();
    });
  }

  async #forEach(names: readonly string[], fn: (name: string) => Promise<void>): Promise<void> {
    const queue = new PQueue({ concurrency: this.#concurrency });
    let failure: unknown;
    for (const name of names) {
      void queue.add(async () => {
        if (failure !== undefined) return;
        try {
          await fn(name);
        } catch (error) {
          failure ??= error;
        }
      });
    }
    await queue.onIdle();
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
  }
}
