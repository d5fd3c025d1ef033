/**
 * Types of faults.js (browser JavaScript, served as is; its tests run in Node). The rules of the switches
 * are documented in faults.js.
 */
import type { FaultConfig, FaultRule } from "../../schemas.ts";

export type { FaultConfig, FaultRule };

/** The three switches of the console. */
export type SwitchName = "outage" | "latency" | "throttling";

/** The rule field each switch sets. */
export const SWITCH_FIELDS: {
  readonly outage: "outage";
  readonly latency: "latencyMs";
  readonly throttling: "throttleRate";
};

/** The switches as a set of rules shows them. */
export interface Switches {
  /** Some rule sets an outage. */
  readonly outage: boolean;
  /** The largest latency any rule sets. */
  readonly latencyMs: number | undefined;
  /** The largest throttle rate any rule sets. */
  readonly throttleRate: number | undefined;
}

/** Reads the switches from the rules. */
export function switchesOf(config: FaultConfig): Switches;

/** The rules after turning one switch on (`value`) or off (undefined); every other effect is kept. */
export function withSwitch(
  config: FaultConfig,
  name: SwitchName,
  value: number | true | undefined,
): FaultConfig;
