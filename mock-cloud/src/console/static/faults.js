/**
 * The console's three fault switches (outage, latency, throttling) over the cloud's fault RULES
 * (`/admin/faults`, see mock-cloud/README.md). Other tools (a chaos test, curl) may have set rules of their
 * own, scoped to a method or a path; a switch must neither hide them nor wipe them out. So:
 *
 * - a switch shows ON when any rule sets its effect (e.g. any rule with `outage: true`);
 * - turning a switch changes only its own effect: the effect is removed from every rule (a rule left
 *   with no effect at all is dropped), then, when the switch is on, one cloud-wide rule sets it.
 *   Every other effect of every rule (error rates, list lag, scoped throttling of another switch) stays.
 */

/**
 * @typedef {{ method?: string, path?: string, errorRate?: number, latencyMs?: number, throttleRate?: number,
 *   retryAfterSeconds?: number, outage?: boolean, listLagMs?: number }} FaultRule
 * @typedef {{ rules: FaultRule[] }} FaultConfig
 * @typedef {{ outage: boolean, latencyMs: number | undefined, throttleRate: number | undefined }} Switches
 */

/** What each switch sets in a rule. */
export const SWITCH_FIELDS = /** @type {const} */ ({
  outage: "outage",
  latency: "latencyMs",
  throttling: "throttleRate",
});

/** The fields of a rule that make it do something (`retryAfterSeconds`, `method`, `path` only qualify). */
const EFFECTS = /** @type {const} */ (["errorRate", "latencyMs", "throttleRate", "outage", "listLagMs"]);

/**
 * Does the rule set this effect? (`outage: false` sets nothing.)
 *
 * @param {FaultRule} rule
 * @param {(typeof EFFECTS)[number]} field
 */
function sets(rule, field) {
  return field === "outage" ? rule.outage === true : rule[field] !== undefined;
}

/**
 * The switches as the rules set them: outage when any rule has one; the largest latency and throttle rate
 * of any rule (undefined when none sets it).
 *
 * @param {FaultConfig} config
 * @returns {Switches}
 */
export function switchesOf(config) {
  /** @param {"latencyMs" | "throttleRate"} field */
  const largest = (field) => {
    const values = config.rules.map((r) => r[field]).filter((v) => v !== undefined);
    return values.length > 0 ? Math.max(...values) : undefined;
  };
  return {
    outage: config.rules.some((r) => sets(r, "outage")),
    latencyMs: largest("latencyMs"),
    throttleRate: largest("throttleRate"),
  };
}

/**
 * The rules after turning one switch: `value` undefined turns it off; otherwise it is the latency in
 * milliseconds, the throttle rate in [0, 1], or `true` for the outage.
 *
 * @param {FaultConfig} config
 * @param {keyof typeof SWITCH_FIELDS} name
 * @param {number | true | undefined} value
 * @returns {FaultConfig}
 */
export function withSwitch(config, name, value) {
  const field = SWITCH_FIELDS[name];
  /** @type {FaultRule[]} */
  const rules = [];
  for (const rule of config.rules) {
    const { [field]: _removed, ...rest } = rule;
    if (EFFECTS.some((effect) => sets(rest, effect))) rules.push(rest);
  }
  if (value !== undefined) rules.push({ [field]: value });
  return { rules };
}
