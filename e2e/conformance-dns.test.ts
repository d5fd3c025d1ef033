/**
 * The conformance suite (reconcile-kit/conformance) for the DNS records controller
 * (examples/dns-controller/): the same scenarios as every other subject. `npm run conformance` runs it.
 */
import { conformance } from "reconcile-kit/conformance";
import { dnsSubject } from "@shapes/dns-controller/conformance";
import { subjectOptions } from "./support/stack.ts";

conformance(dnsSubject(subjectOptions("conformance-dns")));
