/**
 * Command-line flags of the Go binaries, as `--name=value` strings. Callers pass extra flags; an extra
 * flag replaces a default of the same name (Go's flag packages would otherwise take the last one for
 * scalars but append for lists, which surprises).
 */

/** The name of a `--name=value` / `--name` flag; throws when the string is not a flag. */
export function flagName(flag: string): string {
  const match = /^--?([A-Za-z0-9][\w.-]*)(=|$)/.exec(flag);
  if (!match?.[1]) throw new Error(`cannot read flag "${flag}": flags look like --name=value or --name`);
  return match[1];
}

/** `defaults` with every flag named in `extra` replaced by the extra one, then the new extra flags. */
export function mergeFlags(defaults: readonly string[], extra: readonly string[] = []): string[] {
  const extraByName = new Map(extra.map((f) => [flagName(f), f]));
  const merged = defaults.map((f) => extraByName.get(flagName(f)) ?? f);
  const defaultNames = new Set(defaults.map(flagName));
  return [...merged, ...extra.filter((f) => !defaultNames.has(flagName(f)))];
}

/** The value of flag `name` in `flags` (the last one wins), or undefined. */
export function flagValue(flags: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (const flag of flags) {
    if (flagName(flag) !== name) continue;
    const eq = flag.indexOf("=");
    value = eq === -1 ? "true" : flag.slice(eq + 1);
  }
  return value;
}
