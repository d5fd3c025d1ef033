/**
 * The conformance suite (reconcile-kit/conformance) for the Shapes controller on the lean Kubernetes client
 * (`--kube-client=lean`: the library's kubeconfig loader and keep-alive client for every call, client-node
 * never loaded): the same scenarios as e2e/conformance-shapes.test.ts, so every outcome the default client
 * proves holds on the lean one too. `npm run conformance` runs it with every other subject's.
 */
import { conformance } from "reconcile-kit/conformance";
import { shapesSubject } from "./conformance/subjects/shapes.ts";

conformance(shapesSubject({ kubeClient: "lean" }));
