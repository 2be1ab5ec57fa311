/** The policy file: schema, types, loading and validation. See docs/policy.md. */
export { configSchema } from './schema.js';
export type {
  AdminConfig,
  AuthConfig,
  Config,
  ConfigInput,
  LimitsConfig,
  ListenConfig,
  LoggingConfig,
  RouteConfig,
  UpstreamConfig,
} from './schema.js';
export { ConfigError, formatIssue, type ConfigIssue } from './config-error.js';
export { loadConfig, parseConfig, readPolicyText, type ParseConfigOptions } from './load.js';
export { validateConfig } from './validate.js';
export { parseDuration, parseSize } from './units.js';
export { configJsonSchema } from './json-schema.js';
export { checkConfigCommand, type CheckConfigOutput } from './check-config.js';
