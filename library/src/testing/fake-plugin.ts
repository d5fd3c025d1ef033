/**
 * A plugin that needs no Shapes and no network, to test the library by itself (as crossplane-runtime's
 * ExternalClientFns and NopClient do): the `Widget` custom resource with its `WidgetRef` intent record, asking
 * for an `Item` of a {@link FakeItemApi} — an in-memory external API with unique names, revisions, owner tags,
 * conditional writes, and failures injected per call. {@link WidgetWorld} puts it over the in-memory
 * Kubernetes side (fake-world.ts); its `deps()` are what the three reconcilers take.
 */
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import {
  classifyHttp,
  type DeletionPolicy,
  type Desired,
  type ExternalClient,
  type ExternalResourcePlugin,
  type IntentPhase,
  type IntentRecord,
  type JsonObject,
  type ManagedResource,
  type ManagedStatus,
} from "../reconcile/contract.ts";
import type { ManagementPolicy } from "../reconcile/policies.ts";
import type { ExternalCache } from "../reconcile/ports.ts";
import { InMemoryWorld, asRequest } from "./fake-world.ts";

/** The fake plugin's custom resource: a widget of some size. */
export interface Widget extends ManagedResource {
  /** The item's size, and the library's policies. */
  spec: { size: number; deletionPolicy?: DeletionPolicy; managementPolicies?: ManagementPolicy[] };
  /** The library's status, with the item's id and name (the plugin's `statusOf`). */
  status?: ManagedStatus & { itemId?: string; itemName?: string };
}

/** The fake plugin's intent record, as the API server keeps it. */
export interface WidgetRef extends KubernetesObject {
  /** Named after the item (`<namespace>.<name>`). */
  metadata: V1ObjectMeta & { name: string };
  /** The widget it stands for, the item's name, the deletion policy and the owner id that wrote it. */
  spec: {
    widget: { namespace: string; name: string; uid: string };
    itemName: string;
    deletionPolicy?: DeletionPolicy;
    owner?: string;
  };
  /** The record's phase, and the item's id once known. */
  status?: { phase?: IntentPhase; itemId?: string };
}

/** The external object: an item with a size and tags (`owner` and `uid` are the owner marks). */
export interface Item {
  /** Given by the API at the create (`i1`, `i2`, ...); never changes. */
  id: string;
  /** Unique in the API (`<namespace>.<name>` for a widget's); a rename changes it. */
  name: string;
  /** Moves at every write; a write naming an older one fails with 412. */
  revision: number;
  /** The managed field. */
  size: number;
  /** Owner marks (`owner`, `uid`) and any other tag. */
  tags: Record<string, string>;
}

/** The finalizer the fake plugin's reconciler puts on a widget. */
export const WIDGET_FINALIZER = "test.example.com/item";
/** The annotation that pauses a widget's reconcile (`"true"`). */
export const WIDGET_PAUSED = "test.example.com/paused";

/** A failed call of the fake API: an HTTP status, and the Retry-After it gave. */
export class ItemApiError extends Error {
  /** The HTTP status the API answered (404, 409, 412, 429, 503, ...). */
  readonly status: number;
  /** The Retry-After it gave, in milliseconds; undefined when none. */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, message: string, retryAfterMs?: number) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The calls of the fake API, as `fail` and `calls` name them. */
export type ItemCall = "getByName" | "create" | "update" | "delete" | "release" | "rename" | "list";

/**
 * The in-memory external API, and the plugin's client over it (the five calls, `rename` and `classify`). Each call is
 * recorded in `calls` (`items.create default.foo`, `items.update i1 {"size":2}`, ...) and fails once for
 * every failure injected with {@link fail}.
 */
export class FakeItemApi implements ExternalClient<Item> {
  /** Items by id. */
  readonly items = new Map<string, Item>();
  /** Every call in order, as `items.<call> <what>` (shared with a {@link WidgetWorld}'s Kubernetes calls). */
  readonly calls: string[];
  readonly #failures = new Map<ItemCall, Error[]>();
  #revision = 10;
  #nextId = 1;

  constructor(calls: string[] = []) {
    this.calls = calls;
  }

  /** The next call of `call` fails with `error`; a second `fail` of the same call fails the one after. */
  fail(call: ItemCall, error: Error): void {
    this.#failures.set(call, [...(this.#failures.get(call) ?? []), error]);
  }

  /** Puts an item as it is, a revision of its own (a fixture, or someone else's change). */
  put(item: Omit<Item, "revision"> & { revision?: number }): Item {
    const stored = { ...item, revision: item.revision ?? ++this.#revision };
    this.items.set(stored.id, stored);
    return stored;
  }

  /** The item holding `name`, whoever owns it; undefined when none. */
  getByName(name: string): Promise<Item | undefined> {
    return this.#call("getByName", name, () => this.#byName(name));
  }

  /** Creates the item `desired` asks for (its `size` and `tags`); 409 when its name is taken. */
  create(desired: Desired): Promise<Item> {
    return this.#call("create", desired.name, () => {
      if (this.#byName(desired.name)) throw new ItemApiError(409, `${desired.name} exists`);
      const fields = desired.fields as { size: number; tags: Record<string, string> };
      return this.put({ id: `i${this.#nextId++}`, name: desired.name, size: fields.size, tags: fields.tags });
    });
  }

  /**
   * Applies `patch` (`size`, and `tags` merged: a null tag is removed) to the item at `observed`'s revision:
   * 404 when gone, 412 when it changed since.
   */
  update(observed: Item, patch: JsonObject): Promise<Item> {
    return this.#call("update", `${observed.id} ${JSON.stringify(patch)}`, () => {
      const current = this.#current(observed);
      const tags = { ...current.tags };
      for (const [k, v] of Object.entries((patch.tags ?? {}) as Record<string, string | null>)) {
        if (v === null) delete tags[k];
        else tags[k] = v;
      }
      const size = typeof patch.size === "number" ? patch.size : current.size;
      return this.put({ ...current, size, tags, revision: undefined });
    });
  }

  /** Deletes the item at `observed`'s revision: 404 when gone, 412 when it changed since. */
  delete(observed: Item): Promise<void> {
    return this.#call("delete", observed.id, () => {
      this.items.delete(this.#current(observed).id);
    });
  }

  /** Removes the owner marks (`owner`, `uid`) and keeps the rest, at `observed`'s revision. */
  release(observed: Item): Promise<void> {
    return this.#call("release", observed.id, () => {
      const current = this.#current(observed);
      const { owner: _o, uid: _u, ...tags } = current.tags;
      this.put({ ...current, tags, revision: undefined });
    });
  }

  /** Gives the item at `observed`'s revision the name `name`: 409 when another item holds it. */
  rename(observed: Item, name: string): Promise<Item> {
    return this.#call("rename", `${observed.id} ${name}`, () => {
      const current = this.#current(observed);
      if (this.#byName(name)) throw new ItemApiError(409, `${name} exists`);
      return this.put({ ...current, name, revision: undefined });
    });
  }

  /** An {@link ItemApiError} by its HTTP status (the library's `classifyHttp`); anything else as `failed`. */
  classify(err: unknown): ReturnType<ExternalClient<Item>["classify"]> {
    return err instanceof ItemApiError ? classifyHttp(err) : { failure: "failed" };
  }

  /** The items that carry `owner` as their owner tag, with the API's revision. */
  list(owner: string): Promise<{ items: Item[]; revision: number }> {
    return this.#call("list", owner, () => ({
      items: [...this.items.values()].filter((i) => i.tags.owner === owner),
      revision: this.#revision,
    }));
  }

  #byName(name: string): Item | undefined {
    return [...this.items.values()].find((i) => i.name === name);
  }

  /** The item `observed` names, if still at its revision: 404 when gone, 412 when it changed. */
  #current(observed: Item): Item {
    const current = this.items.get(observed.id);
    if (!current) throw new ItemApiError(404, `item ${observed.id} not found`);
    if (current.revision !== observed.revision) throw new ItemApiError(412, `item ${observed.id} changed`);
    return current;
  }

  #call<T>(call: ItemCall, what: string, f: () => T): Promise<T> {
    return asRequest(() => {
      this.calls.push(`items.${call} ${what}`);
      const error = this.#failures.get(call)?.shift();
      if (error) throw error;
      return f();
    });
  }
}

/** The fake plugin over `api`: widgets named `<namespace>.<name>` in the API, tagged `owner` and `uid`. */
export function widgetPlugin(api: FakeItemApi): ExternalResourcePlugin<Widget, Item> {
  return {
    resource: {
      group: "test.example.com",
      version: "v1",
      kind: "Widget",
      plural: "widgets",
      intentKind: "WidgetRef",
      intentPlural: "widgetrefs",
      finalizer: WIDGET_FINALIZER,
      pausedAnnotation: WIDGET_PAUSED,
      externalNameOf: (namespace, name) => `${namespace}.${name}`,
      resourceOf: (externalName) => {
        const [namespace, name, ...rest] = externalName.split(".");
        return namespace && name && rest.length === 0 ? { namespace, name } : undefined;
      },
      desired: (widget, marks) => ({
        name: `${widget.metadata.namespace}.${widget.metadata.name}`,
        fields: { size: widget.spec.size, tags: { owner: marks.owner, uid: marks.uid } },
      }),
      statusOf: (observed) => ({ itemId: observed.id, itemName: observed.name }),
      readIntent: (obj): IntentRecord => {
        const ref = obj as WidgetRef;
        return {
          name: ref.metadata.name,
          uid: ref.metadata.uid ?? "",
          resource: ref.spec.widget,
          externalName: ref.spec.itemName,
          deletionPolicy: ref.spec.deletionPolicy ?? "Delete",
          ...(ref.spec.owner === undefined ? {} : { owner: ref.spec.owner }),
          phase: ref.status?.phase ?? "Pending",
          ...(ref.status?.itemId === undefined ? {} : { externalId: ref.status.itemId }),
        };
      },
      intentSpec: (record) => ({
        widget: record.resource,
        itemName: record.externalName,
        deletionPolicy: record.deletionPolicy,
        ...(record.owner === undefined ? {} : { owner: record.owner }),
      }),
    },
    external: {
      noun: { text: "item", reason: "Item" },
      nameOf: (item) => item.name,
      idOf: (item) => item.id,
      revisionOf: (item) => item.revision,
      marksOf: (item) => ({ owner: item.tags.owner, uid: item.tags.uid }),
      fieldsOf: (item) => ({ size: item.size, tags: item.tags }),
      atProvider: (item) => ({ id: item.id, size: item.size }),
      listWatch: (owner) => ({
        list: async () => {
          const { items, revision } = await api.list(owner);
          return { items, revision };
        },
        // No change feed in unit tests: a watch that never delivers, until aborted.
        watch: (_since, _onEvent, signal) =>
          new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
      }),
    },
  };
}

/**
 * Widgets, WidgetRefs and items in one world: the in-memory Kubernetes side and a {@link FakeItemApi}, sharing
 * `calls`. The items cache shows the API's items that carry our owner tag, less those in `hiddenFromCache`
 * (a list-watch that trails).
 */
export class WidgetWorld extends InMemoryWorld<Widget, Item, WidgetRef> {
  /** The in-memory external API, recording into the world's `calls`. */
  readonly api: FakeItemApi;
  /** {@link widgetPlugin} over `api`. */
  readonly plugin: ExternalResourcePlugin<Widget, Item>;
  /** The plugin's client: `api` itself. */
  readonly client: FakeItemApi;
  /** Items (by id) the cache does NOT show yet. */
  readonly hiddenFromCache = new Set<string>();

  constructor(ownerId = "k8s") {
    super(ownerId);
    this.api = new FakeItemApi(this.calls);
    this.client = this.api;
    this.plugin = widgetPlugin(this.api);
  }

  /** The API's items that carry the world's owner tag, less `hiddenFromCache`, read at each call. */
  get cache(): ExternalCache<Item> {
    const visible = () =>
      [...this.api.items.values()].filter(
        (i) => i.tags.owner === this.ownerId && !this.hiddenFromCache.has(i.id),
      );
    return {
      get: (name) => visible().find((i) => i.name === name),
      list: visible,
      withUid: (uid) => visible().filter((i) => i.tags.uid === uid),
    };
  }
}

/**
 * The plugin of `world` with one function of its resource or external side throwing `error`: what no step
 * of a reconciler foresees (a plugin bug), for the rows that show such a throw is still a result.
 */
export function throwingIn<S extends "resource" | "external">(
  world: WidgetWorld,
  side: S,
  fn: keyof ExternalResourcePlugin<Widget, Item>[S],
  error: Error,
): ExternalResourcePlugin<Widget, Item> {
  const thrower = () => {
    throw error;
  };
  return { ...world.plugin, [side]: { ...world.plugin[side], [fn]: thrower } };
}

/** A widget for tests: `default/foo`, uid `uid-foo`, size 1, generation 1. */
export function aWidget(
  overrides: {
    uid?: string;
    size?: number;
    deletionPolicy?: DeletionPolicy;
    managementPolicies?: ManagementPolicy[];
    status?: Widget["status"];
    generation?: number;
    finalizers?: string[];
    deleting?: boolean;
    paused?: boolean;
    /** More annotations (e.g. the adoption policy, `test.example.com/adoption-policy`). */
    annotations?: Record<string, string>;
  } = {},
): Widget {
  const annotations = {
    ...(overrides.paused ? { [WIDGET_PAUSED]: "true" } : {}),
    ...overrides.annotations,
  };
  return {
    apiVersion: "test.example.com/v1",
    kind: "Widget",
    metadata: {
      name: "foo",
      namespace: "default",
      uid: overrides.uid ?? "uid-foo",
      generation: overrides.generation ?? 1,
      ...(overrides.finalizers ? { finalizers: overrides.finalizers } : {}),
      ...(overrides.deleting ? { deletionTimestamp: new Date("2026-01-01T00:00:00Z") } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: {
      size: overrides.size ?? 1,
      ...(overrides.deletionPolicy ? { deletionPolicy: overrides.deletionPolicy } : {}),
      ...(overrides.managementPolicies ? { managementPolicies: overrides.managementPolicies } : {}),
    },
    ...(overrides.status ? { status: overrides.status } : {}),
  };
}

/** The WidgetRef of `default/foo` for the widget with `uid`, as the reconciler writes it. */
export function aWidgetRef(uid = "uid-foo", spec: Partial<WidgetRef["spec"]> = {}): WidgetRef {
  return {
    metadata: { name: "default.foo", uid: `ref-${uid}` },
    spec: {
      widget: { namespace: "default", name: "foo", uid },
      itemName: "default.foo",
      deletionPolicy: "Delete",
      owner: "k8s",
      ...spec,
    },
  };
}
