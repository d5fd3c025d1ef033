/**
 * The conformance suite (reconcile-kit/conformance) for the etcd controller (examples/etcd-controller/):
 * the same scenarios as every other subject, against a real API server and a real, separate etcd.
 * `npm run conformance` runs it. The "renamed behind our back" scenarios are skipped: an etcd key cannot be
 * renamed.
 */
import { conformance } from "reconcile-kit/conformance";
import { etcdSubject } from "@shapes/etcd-controller/conformance";
import { subjectOptions } from "./support/stack.ts";

conformance(etcdSubject(subjectOptions("conformance-etcd")));
