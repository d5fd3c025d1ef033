/**
 * The conformance suite (reconcile-kit/conformance) for the DNS records controller (examples/dns-controller/)
 * on client-node (`--kube-client=client-node`, the opt-in ablation): the same scenarios as
 * e2e/conformance-dns.test.ts, which runs the default lean client, so a second controller on the library
 * proves both paths. `npm run conformance` runs it.
 */
import { conformance } from "reconcile-kit/conformance";
import { dnsSubject } from "./conformance/subjects/dns.ts";

conformance(dnsSubject({ kubeClient: "client-node" }));
