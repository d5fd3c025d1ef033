/**
 * The conformance suite (reconcile-kit/conformance) for the Shapes controller: every scenario of the story,
 * against a real control plane (or the USE_EXISTING_CLUSTER one), the mock cloud and the controller as a
 * separate process. `npm run conformance` runs it with every other subject's.
 */
import { conformance } from "reconcile-kit/conformance";
import { shapesSubject } from "./conformance/subjects/shapes.ts";

conformance(shapesSubject());
