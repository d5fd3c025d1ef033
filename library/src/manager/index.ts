/**
 * The manager: a plugin's controllers run as a process by one call (`runManager`), with one command line
 * for the library's flags and the plugin's (`parseManagerFlags`, `managerUsage`).
 */
export {
  allOptions,
  ConfigError,
  type FlagReader,
  type FlagSpec,
  type ManagerConfig,
  type ManagerDefaults,
  type ManagerFlags,
  managerOptions,
  managerUsage,
  parseDuration,
  parseManagerFlags,
  type ParsedFlags,
} from "./flags.ts";
export {
  combineControllers,
  type ManagedSettings,
  type ManagerContext,
  type ManagerSpec,
  runManager,
  type RunManagerOptions,
} from "./manager.ts";
