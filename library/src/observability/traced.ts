/**
 * The library's ports, traced: every Kubernetes call and every external call a reconcile makes is a child
 * span of its reconcile and a line of its story, named in the reader's words (`add finalizer`, `create cloud
 * shape`); every Event a reconcile records is told in its story and names the reconcile (an annotation).
 * Calls outside a reconcile pass through untouched. See reconcile/reconcile-scope.ts.
 */
import type { EventRecorder } from "../kube/events.ts";
import { currentReconcile, tracedPort } from "../reconcile/reconcile-scope.ts";
import type { ExternalClient, ExternalKind, ManagedResource, ResourceKind } from "../reconcile/contract.ts";
import type { ResourceWriter } from "../kube/kube-writer.ts";

const keyOf = (r: ManagedResource) => `${r.metadata.namespace}/${r.metadata.name}`;

/** `kube`, with each call traced as `kubernetes` (span names say what, in the resource's own kinds). */
export function tracedWriter<R extends ManagedResource>(
  kube: ResourceWriter<R>,
  kind: Pick<ResourceKind<R>, "kind" | "intentKind">,
): ResourceWriter<R> {
  const { kind: resource, intentKind: intent } = kind;
  return tracedPort(kube, "kubernetes", {
    addFinalizer: ([r]) => ({ call: `add finalizer to ${resource}`, target: keyOf(r) }),
    removeFinalizer: ([r]) => ({ call: `remove finalizer from ${resource}`, target: keyOf(r) }),
    updateStatus: ([r]) => ({ call: `write ${resource} status`, target: keyOf(r) }),
    createIntent: ([name]) => ({ call: `create ${intent}`, target: name }),
    updateIntentSpec: ([name]) => ({ call: `update ${intent} spec`, target: name }),
    setIntentStatus: ([name]) => ({ call: `write ${intent} status`, target: name }),
    deleteIntent: ([name]) => ({ call: `delete ${intent}`, target: name }),
    readResource: ([namespace, name]) => ({ call: `read ${resource}`, target: `${namespace}/${name}` }),
    readIntent: ([name]) => ({ call: `read ${intent}`, target: name }),
  });
}

/** `client`, with each call traced as the external API (`peer.service` = the noun: `cloud shape`). */
export function tracedClient<E>(client: ExternalClient<E>, external: ExternalKind<E>): ExternalClient<E> {
  const noun = external.noun.text;
  return tracedPort(client, noun, {
    getByName: ([name]) => ({ call: `read ${noun} by name`, target: name }),
    create: ([desired]) => ({ call: `create ${noun}`, target: desired.name }),
    update: ([observed]) => ({ call: `update ${noun}`, target: external.nameOf(observed) }),
    delete: ([observed]) => ({ call: `delete ${noun}`, target: external.nameOf(observed) }),
    release: ([observed]) => ({ call: `release ${noun}`, target: external.nameOf(observed) }),
  });
}

/**
 * `events`, telling each Event in the story of the reconcile recording it. (Which reconcile recorded an
 * Event is written on the Event itself by the recorder: see `reconcileAnnotations`.)
 */
export function toldEvents(events: EventRecorder): EventRecorder {
  return {
    record: (object, type, reason, message) => {
      currentReconcile()?.told(type, reason, message);
      events.record(object, type, reason, message);
    },
  };
}
