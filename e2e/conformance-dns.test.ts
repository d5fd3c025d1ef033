/**
 * The conformance suite (reconcile-kit/conformance) for the DNS records controller
 * (examples/dns-controller/): the same scenarios as every other subject. `npm run conformance` runs it.
 */
import { conformance } from "reconcile-kit/conformance";
import { dnsSubject } from "./conformance/subjects/dns.ts";

conformance(dnsSubject());
