/**
 * The conformance suite (reconcile-kit/conformance) for the DNS records controller (examples/dns-controller/)
 * on the lean Kubernetes client (`--kube-client=lean`): the same scenarios as e2e/conformance-dns.test.ts, so
 * a second controller on the library proves the lean client too. `npm run conformance` runs it.
 */
import { conformance } from "reconcile-kit/conformance";
import { dnsSubject } from "./conformance/subjects/dns.ts";

conformance(dnsSubject({ kubeClient: "lean" }));
