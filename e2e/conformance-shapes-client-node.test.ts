/**
 * The conformance suite (reconcile-kit/conformance) for the Shapes controller on client-node
 * (`--kube-client=client-node`, the opt-in ablation: client-node's kubeconfig loader, list-watch, Lease and
 * cluster identity; the writes over the library's client): the same scenarios as
 * e2e/conformance-shapes.test.ts, which runs the default lean client, so both paths stay proven.
 * `npm run conformance` runs it with every other subject's.
 */
import { conformance } from "reconcile-kit/conformance";
import { shapesSubject } from "./conformance/subjects/shapes.ts";

conformance(shapesSubject({ kubeClient: "client-node" }));
