/**
 * A controller for ANOTHER external API, built on the generic core (controller/src/core/): the skeleton
 * docs/writing-your-own.md walks through. The API is a made-up object store whose `Bucket` custom resources
 * become buckets; what is specific to it is in the three interfaces at the top (your HTTP client, your
 * Kubernetes writes, your resource type). Everything below them is the pattern the shapes controllers use.
 *
 * It is typechecked and linted with the rest of the repository (it is not run: there is no bucket API), so
 * the core's signatures on the page cannot drift from the code. The real, tested example of every step is
 * controller/src/shapes/ (setup.ts for the wiring, shape-reconciler.ts for the reconcile).
 */
import {
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1ObjectMeta,
} from "@kubernetes/client-node";
import { Controller } from "../../controller/src/core/controller.ts";
import { mergePatchFor, type Json } from "../../controller/src/core/diff.ts";
import { KubeEventRecorder, type EventRecorder } from "../../controller/src/core/events.ts";
import {
  ExternalInformer,
  GoneError,
  type ListWatchClient,
  type ExternalWatchEvent,
} from "../../controller/src/core/external-informer.ts";
import { WriteFence } from "../../controller/src/core/fence.ts";
import { HealthServer } from "../../controller/src/core/health.ts";
import { SupervisedInformer } from "../../controller/src/core/informer.ts";
import { LeaderElector } from "../../controller/src/core/leader-election.ts";
import { KubeLeaseClient } from "../../controller/src/core/lease-client.ts";
import type { Logger } from "../../controller/src/core/logger.ts";
import { CoreMetrics } from "../../controller/src/core/metrics.ts";
import { initialSync, startPeriodicResync } from "../../controller/src/core/resync.ts";
import {
  done,
  failed,
  terminal,
  type ReconcileResult,
  type Reconciler,
} from "../../controller/src/core/result.ts";

// ---------------------------------------------------------------------------------------------------------
// 1. What is specific to your API: the external object, your client, your custom resource, your writes.
// ---------------------------------------------------------------------------------------------------------

/** A bucket as the external API returns it. `revision` increases on every write (used for If-Match). */
export interface CloudBucket {
  id: string;
  name: string;
  storageClass: string;
  versioning: boolean;
  labels: Record<string, string>;
  revision: number;
}

/** Your HTTP client. Each call is one request that honours `signal`; errors carry the HTTP status. */
export interface BucketApi {
  /** One page of the buckets labelled `selector`, and the revision the listing is consistent with. */
  list(
    selector: Record<string, string>,
    pageToken: string | undefined,
    signal: AbortSignal,
  ): Promise<{ items: CloudBucket[]; nextPageToken?: string; revision: number }>;
  /** Streams the changes after `since` to `onEvent`; rejects with status 410 when `since` is too old. */
  watch(
    selector: Record<string, string>,
    since: number,
    onEvent: (type: "ADDED" | "MODIFIED" | "DELETED", bucket: CloudBucket, revision: number) => void,
    signal: AbortSignal,
  ): Promise<void>;
  create(bucket: Omit<CloudBucket, "id" | "revision">, signal: AbortSignal): Promise<CloudBucket>;
  patch(id: string, patch: Record<string, Json>, ifMatch: number, signal: AbortSignal): Promise<CloudBucket>;
  /** Resolves also when the bucket is already gone (404 is what we wanted). */
  delete(id: string, ifMatch: number | undefined, signal: AbortSignal): Promise<void>;
}

/** The `Bucket` custom resource (namespaced). */
export interface Bucket extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string };
  spec: { storageClass: string; versioning: boolean };
}

/** Your Kubernetes writes (see controller/src/shapes/kube.ts for real ones over client-node). */
export interface BucketWriter {
  /** Adds FINALIZER, guarded by the resourceVersion read (409 when it changed). */
  addFinalizer(bucket: Bucket): Promise<void>;
  /** Removes FINALIZER, guarded the same way. */
  removeFinalizer(bucket: Bucket): Promise<void>;
}

/** Holds a Bucket's deletion until its external bucket is gone. */
export const FINALIZER = "storage.example.com/bucket";
/** Ownership marks, written into every bucket we create: an owner id, and the uid of the one Bucket it is for. */
export const LABEL_OWNER = "owner";
export const LABEL_UID = "k8s-uid";

/** The deterministic external name: found again by name, never only by a stored id. */
export function externalNameOf(bucket: Bucket): string {
  return `${bucket.metadata.namespace}-${bucket.metadata.name}`;
}

// ---------------------------------------------------------------------------------------------------------
// 2. The external source: your API as a ListWatchClient, filtered to what we own.
// ---------------------------------------------------------------------------------------------------------

/** List-then-watch over the buckets labelled with our owner id (foreign buckets never reach the cache). */
export function ownedBuckets(api: BucketApi, ownerId: string): ListWatchClient<CloudBucket> {
  const selector = { [LABEL_OWNER]: ownerId };
  return {
    list: (pageToken, signal) => api.list(selector, pageToken, signal),
    watch: async (since, onEvent: (event: ExternalWatchEvent<CloudBucket>) => void, signal) => {
      try {
        await api.watch(
          selector,
          Number(since),
          (type, object, revision) => onEvent({ type, object, revision }),
          signal,
        );
      } catch (error) {
        // The informer relists on GoneError; any other error resumes the watch after a backoff.
        if ((error as { status?: number }).status === 410) throw new GoneError();
        throw error;
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// 3. The reconciler: converge ONE Bucket, read from caches, write only on a difference.
// ---------------------------------------------------------------------------------------------------------

/** What the reconciler reads and writes. Writers come wrapped by the WriteFence. */
export interface BucketReconcilerDeps {
  buckets: SupervisedInformer<Bucket>;
  cloud: ExternalInformer<CloudBucket>;
  api: Pick<BucketApi, "create" | "patch" | "delete">;
  kube: BucketWriter;
  events: EventRecorder;
  ownerId: string;
}

/**
 * Finalizer → observe by name → create with ownership labels / never touch a foreign holder → diff and repair.
 * What the shapes controller adds on top, and yours should too: an intent record before the create (the
 * ShapeRef: crash safety and missed deletions), a sweep of owned objects nothing claims, status conditions.
 */
export class BucketReconciler implements Reconciler {
  readonly #d: BucketReconcilerDeps;

  constructor(deps: BucketReconcilerDeps) {
    this.#d = deps;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const [namespace = "", name = ""] = key.split("/");
    const bucket = this.#d.buckets.get(name, namespace);
    if (!bucket) return done(); // gone: a missed deletion is the intent record's job
    const observed = this.#d.cloud.get(externalNameOf(bucket));
    const ours = observed?.labels[LABEL_UID] === bucket.metadata.uid ? observed : undefined;

    if (bucket.metadata.deletionTimestamp) {
      if (!bucket.metadata.finalizers?.includes(FINALIZER)) return done();
      // A bucket created a moment ago may not be in the cache yet, and would leak here: the shapes
      // controller closes that gap with its intent record, which remembers the id (see #finalize there).
      try {
        if (ours) await this.#d.api.delete(ours.id, ours.revision, signal);
      } catch (error) {
        return failed(error as Error);
      }
      await this.#d.kube.removeFinalizer(bucket);
      return done();
    }

    if (!bucket.metadata.finalizers?.includes(FINALIZER)) await this.#d.kube.addFinalizer(bucket);
    if (observed && !ours) {
      // Our name, not our bucket (another owner, or an earlier Bucket of the same name): never touch it.
      const message = `cannot create bucket ${externalNameOf(bucket)}: the name is held by a bucket that is not ours`;
      this.#d.events.record(bucket, "Warning", "NameConflict", message);
      return terminal(new Error(message));
    }
    const desired = {
      storageClass: bucket.spec.storageClass,
      versioning: bucket.spec.versioning,
      labels: { [LABEL_OWNER]: this.#d.ownerId, [LABEL_UID]: bucket.metadata.uid },
    };
    try {
      if (!ours) {
        const created = await this.#d.api.create({ name: externalNameOf(bucket), ...desired }, signal);
        this.#d.events.record(bucket, "Normal", "Created", `Created bucket ${created.name} (${created.id})`);
        return done();
      }
      const patch = mergePatchFor(desired, ours as unknown as Json);
      if (patch) await this.#d.api.patch(ours.id, patch, ours.revision, signal);
      return done();
    } catch (error) {
      // Transient: retried with per-key backoff (or after Retry-After, when your errors carry it).
      return failed(error as Error);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// 4. The wiring: sources → handlers (keys) → controller; fence, leader election, resync, health, metrics.
// ---------------------------------------------------------------------------------------------------------

/** Runs the bucket controller until `signal` aborts. */
export async function runBucketController(options: {
  kubeConfig: KubeConfig;
  api: BucketApi;
  kube: BucketWriter;
  ownerId: string;
  identity: string;
  log: Logger;
  signal: AbortSignal;
}): Promise<void> {
  const { kubeConfig, api, log, signal } = options;
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const metrics = new CoreMetrics({ prefix: "buckets_controller_", processMetrics: true });

  // Sources.
  const buckets = new SupervisedInformer<Bucket>({
    name: "buckets",
    kubeConfig,
    path: "/apis/storage.example.com/v1alpha1/buckets",
    listFn: () =>
      custom.listCustomObjectForAllNamespaces({
        group: "storage.example.com",
        version: "v1alpha1",
        resourcePlural: "buckets",
      }) as Promise<KubernetesListObject<Bucket>>,
    logger: log,
  });
  const cloud = new ExternalInformer<CloudBucket>({
    name: "cloud-buckets",
    client: ownedBuckets(api, options.ownerId),
    key: (b) => b.name,
    revisionOf: (b) => b.revision,
    logger: log,
  });

  // Writers go through the fence: only the leader writes, and not a moment after it stops leading.
  const fence = new WriteFence();
  const controller = new Controller({
    name: "bucket",
    reconciler: new BucketReconciler({
      buckets,
      cloud,
      api: fence.guard(api),
      kube: fence.guard(options.kube),
      events: fence.guard(new KubeEventRecorder(kubeConfig, { component: "buckets-controller", log })),
      ownerId: options.ownerId,
    }),
    workers: 4,
    logger: log,
    metrics,
  });

  // Handlers: events → keys, nothing else. A cloud change enqueues its Bucket at once (fast drift repair).
  const keyOf = (b: Bucket) => `${b.metadata.namespace}/${b.metadata.name}`;
  buckets.on("add", (b) => controller.enqueue(keyOf(b)));
  buckets.on("update", (_old, b) => controller.enqueue(keyOf(b)));
  buckets.on("delete", (b) => controller.enqueue(keyOf(b)));
  const bucketOfCloud = (c: CloudBucket) =>
    buckets.list().find((b) => externalNameOf(b) === c.name && b.metadata.uid === c.labels[LABEL_UID]);
  for (const event of ["add", "delete"] as const) {
    cloud.on(event, (c) => {
      const owner = bucketOfCloud(c);
      if (owner) controller.enqueue(keyOf(owner));
    });
  }
  cloud.on("update", (_old, c) => {
    const owner = bucketOfCloud(c);
    if (owner) controller.enqueue(keyOf(owner));
  });

  // Health and metrics: ready once the startup resync is done (a standby: once its caches synced).
  let ready = false;
  const health = new HealthServer({ registry: metrics.registry, logger: log });
  health.setReadinessCheck("controller", () => ready);
  await health.start("127.0.0.1:8081");

  await buckets.start();
  cloud.start();
  const synced = (await Promise.all([buckets.waitForSync(signal), cloud.waitForSync(signal)])).every(Boolean);
  const allKeys = () => buckets.list().map(keyOf);

  if (synced) {
    const elector = new LeaderElector({
      client: new KubeLeaseClient(kubeConfig, "buckets-system", "buckets-controller"),
      identity: options.identity,
      onStartedLeading: async (leadership) => {
        fence.open(leadership);
        controller.start();
        await initialSync(controller, allKeys, leadership); // everything once, before ready
        ready = true;
        const resync = startPeriodicResync({
          target: controller,
          listKeys: allKeys,
          periodMs: 300_000,
          logger: log,
        });
        leadership.addEventListener("abort", () => resync.stop(), { once: true });
      },
      onStoppedLeading: async () => {
        fence.close();
        ready = false;
        await controller.stop(); // in-flight reconciles were aborted; wait for them
      },
      hooks: { onLeaderChange: (leading) => metrics.leader.set(leading ? 1 : 0) },
      logger: log,
    });
    await elector.run(signal); // until shutdown; then it drains and releases the Lease
  }
  await controller.shutDown();
  await Promise.all([buckets.stop(), cloud.stop()]);
  await health.stop();
}
