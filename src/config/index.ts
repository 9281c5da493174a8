/** Configuration: the YAML file, the environment, the command line and the API tokens. */

export { REDACTED } from '../redact.js';
export type { ConfigIssue } from './cross-check.js';
export { formatDuration, parseDuration } from './duration.js';
export {
  COMMANDS,
  type Command,
  type CommandLine,
  DEFAULT_LISTEN_ADDRESS,
  type ListenAddress,
  LOG_FORMATS,
  LOG_LEVELS,
  parseCommandLine,
  parseListenAddress,
  UsageError,
  usage,
} from './flags.js';
export { ConfigError, type Env, formatIssue, type LoadOptions, loadConfig } from './load.js';
export { checkConfigReport, type PrintableConfig, redactConfig } from './printable.js';
export { BREAKDOWNS, type Breakdown, METRIC_NAMES } from './schema.js';
export {
  accountTokenSources,
  FileToken,
  InlineToken,
  type LoginCredential,
  TokenError,
  type TokenFs,
  type TokenSource,
  type TokenSources,
  tokenSource,
  tokenSources,
} from './token.js';
export type {
  AccountConfig,
  ApiConfig,
  CommitConfig,
  Config,
  DiscoveryConfig,
  LimitsConfig,
  MetricsConfig,
  RemoteWriteConfig,
  RemoteWriteTls,
  ServerConfig,
} from './typed-config.js';
