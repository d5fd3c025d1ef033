/**
 * The conformance suite (e2e/conformance/scenarios.ts) for the DNS records controller
 * (examples/dns-controller/): the same scenarios as every other subject. `npm run conformance` runs it.
 */
import { conformance } from "./conformance/scenarios.ts";
import { dnsSubject } from "./conformance/subjects/dns.ts";

conformance(dnsSubject());
