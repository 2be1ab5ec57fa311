#!/usr/bin/env node
/**
 * The `taskgate` command.
 *   taskgate --config FILE        read the policy, build the gateway, listen; SIGTERM drains;
 *                                 SIGHUP or a change of FILE reloads the policy
 *   taskgate check-config FILE    validate a policy file without starting anything
 */
import { parseArgs } from 'node:util';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './config/index.js';
import { checkConfigCommand } from './config/check-config.js';
import { buildGateway } from './gateway.js';
import { readPolicyFile } from './reload/policy-source.js';
import { startReloadTriggers } from './reload/reload-triggers.js';

const USAGE = `usage:
  taskgate --config FILE        start the gateway with the policy in FILE
                                (reloaded on SIGHUP and when FILE changes)
  taskgate check-config FILE    validate FILE and report every problem
  taskgate --help`;

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    // An unknown option is a usage mistake, not a crash: say so, no stack trace.
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals[0] === 'check-config') {
    const file = positionals[1] ?? values.config;
    if (!file || positionals.length > 2) {
      console.error(USAGE);
      return 2;
    }
    return checkConfigCommand(file, { log: (s) => console.log(s), error: (s) => console.error(s) });
  }
  if (positionals.length > 0 || !values.config) {
    console.error(USAGE);
    return 2;
  }
  return serve(values.config);
}

async function serve(file: string): Promise<number> {
  let policy;
  try {
    policy = await readPolicyFile(file);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const gateway = await buildGateway(policy.config, { policyHash: policy.hash });
  await gateway.listen();
  const reloads = startReloadTriggers({ file, reloadFile: gateway.reloadFile, logger: gateway.logger });
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      gateway.logger.info({ signal }, 'stopping: draining in-flight requests');
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      reloads.close();
      gateway.close().then(resolve, (error: unknown) => {
        gateway.logger.error({ err: error }, 'error while closing');
        resolve();
      });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  gateway.logger.info('stopped');
  return 0;
}

// Run only when executed as the command, not when imported (tests import main()).
const invokedPath = process.argv[1] ? realpathSync(process.argv[1]) : '';
if (invokedPath === realpathSync(fileURLToPath(import.meta.url))) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
