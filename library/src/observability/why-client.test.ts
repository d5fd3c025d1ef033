import { afterEach, describe, expect, it } from "vitest";
import type {
  AccessAttributes,
  AccessDecision,
  AccessReviewer,
  ReviewedUser,
  TokenReviewOutcome,
} from "./access.ts";
import { HealthServer } from "./health.ts";
import { DecisionHistory } from "./history.ts";
import { silentLogger } from "./logger.ts";
import { CoreMetrics } from "./metrics.ts";
import { runWhy, type WhyCommand } from "./why-client.ts";

/** A plugin other than Shapes: the DNS example's Records, as its `why` command names them. */
const RECORDS_WHY: WhyCommand = {
  command: "npm run why -w @shapes/dns-controller",
  resource: { kind: "Record", plural: "records", group: "dns.example.com" },
  example: "default/www",
  defaultMetricsUrl: "http://127.0.0.1:8081",
  metricsUrlEnv: "DNS_METRICS_URL",
  tokenEnv: "DNS_METRICS_TOKEN",
  listCommand: "kubectl get records.dns.example.com -n <namespace>",
};

/** Two reconciles of the Record default/www as the record reconciler records them: create, then in sync. */
const RECORDED = [
  {
    at: "2026-01-01T10:00:00.000Z",
    reconcileId: "7c1d-1",
    controller: "record",
    key: "default/www",
    subject: "default/www",
    observed: ["Record generation 1", "RecordRef absent", "zone record www.default.example.test: absent"],
    decided: [{ branch: "create", why: "no zone record holds the name www.default.example.test" }],
    calls: [{ call: "create zone record", target: "www.default.example.test", outcome: "ok", ms: 7 }],
    events: ["Normal Created: Created zone record www.default.example.test"],
    result: "done",
    subjectState: "present" as const,
    ms: 12,
  },
  {
    at: "2026-01-01T10:00:05.000Z",
    reconcileId: "7c1d-2",
    controller: "record",
    key: "default/www",
    subject: "default/www",
    observed: ["Record generation 1", "zone record www.default.example.test: ours, in sync"],
    decided: [{ branch: "in sync", why: "the zone record matches the Record" }],
    calls: [],
    events: [],
    result: "done",
    subjectState: "present" as const,
    ms: 2,
  },
];

/** A reviewer that knows one token, of a user who may get Records in the namespace `team-a` only. */
class RecordsReviewer implements AccessReviewer {
  reviewToken(token: string): Promise<TokenReviewOutcome> {
    return Promise.resolve(
      token === "viewer-token"
        ? { authenticated: true, user: { username: "system:serviceaccount:team-a:viewer" } }
        : { authenticated: false, error: "invalid bearer token" },
    );
  }
  reviewAccess(_user: ReviewedUser, attributes: AccessAttributes): Promise<AccessDecision> {
    const allowed =
      "resourceAttributes" in attributes &&
      attributes.resourceAttributes.resource === "records" &&
      attributes.resourceAttributes.namespace === "team-a";
    return Promise.resolve({ allowed });
  }
}

const servers: HealthServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** The library's own /why server (the manager's), holding RECORDED, on a free loopback port. */
async function startWhyServer(guarded: boolean): Promise<string> {
  const history = new DecisionHistory();
  for (const record of RECORDED) history.add(record);
  const server = new HealthServer({
    registry: new CoreMetrics().registry,
    logger: silentLogger(),
    history,
    ...(guarded
      ? {
          access: {
            reviewer: new RecordsReviewer(),
            resource: { group: "dns.example.com", resource: "records" },
          },
        }
      : {}),
  });
  servers.push(server);
  return server.start("127.0.0.1:0");
}

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runWhy(RECORDS_WHY, argv, {
    env: {},
    out: (text) => (out += text),
    err: (text) => (err += text),
    now: () => new Date("2026-01-01T10:01:05.000Z"),
    timeZone: "UTC",
    timeoutMs: 5_000,
  });
  return { code, out, err };
}

describe("runWhy: a plugin's `why` reads its controller's /why", () => {
  it.each([
    {
      reason: "a Record's story: both reconciles, what each saw, decided and did, and its Events' annotation",
      guarded: false,
      argv: ["default/www"],
      code: 0,
      out: [
        "default/www: 2 reconciles kept, oldest first (times UTC, 2026-01-01, the last 1 min ago)\n",
        "10:00:00.000  record  reconcile 7c1d-1\n",
        "  saw      Record generation 1; RecordRef absent; zone record www.default.example.test: absent\n",
        "  decided  create: no zone record holds the name www.default.example.test\n",
        "  did      create zone record www.default.example.test (ok, 7 ms)\n",
        "  told     Normal Created: Created zone record www.default.example.test\n",
        "  decided  in sync: the zone record matches the Record\n  did      nothing\n  result   done (2 ms)\n",
        "on its Events (annotation\n      dns.example.com/reconcile-id)",
      ],
      err: "",
    },
    {
      reason: "--json: the controller's history as it sent it",
      guarded: false,
      argv: ["default/www", "--json"],
      code: 0,
      out: ['"subject": "default/www"', '"reconcileId": "7c1d-2"'],
      err: "",
    },
    {
      reason: "a Record nothing is kept for: the controller's word, and how to list Records",
      guarded: false,
      argv: ["default/mail"],
      code: 1,
      out: [],
      err: "npm run why -w @shapes/dns-controller: no decisions recorded for default/mail\n",
      errAlso: "kubectl get records.dns.example.com -n default\n",
    },
    {
      reason: "no token for a guarded port: which variable, and the grant on Records it needs",
      guarded: true,
      argv: ["default/www"],
      code: 1,
      out: [],
      err: "give --token-file <file> or DNS_METRICS_TOKEN: a token of a user with get on records in the namespace default",
    },
    {
      reason: "a token of a user who may not get that Record: 403 told in the Record's words",
      guarded: true,
      argv: ["default/www", "--token", "viewer-token"],
      code: 1,
      out: [],
      err: "it tells a Record's story to whoever may get that Record: use a token of a user with get on records in the namespace default",
    },
  ])("$reason", async ({ guarded, argv, code, out, err, errAlso }) => {
    const url = await startWhyServer(guarded);
    const result = await run([...argv, "--metrics-url", url]);
    expect(result.code).toBe(code);
    for (const part of out) expect(result.out).toContain(part);
    if (out.length === 0) expect(result.out).toBe("");
    if (err === "") expect(result.err).toBe("");
    else expect(result.err).toContain(err);
    if (errAlso !== undefined) expect(result.err).toContain(errAlso);
  });
});
