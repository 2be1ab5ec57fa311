/**
 * What makes the `taskgate` process reload its policy file: SIGHUP (always reads the file
 * again and reports, even when nothing changed) and a change of the file on disk (only when
 * its bytes changed). Reloads never overlap: one asked for while another runs is done once
 * that one is over, and several asked for meanwhile are done once.
 */
import type { Logger } from 'pino';
import { watchPolicyFile, type PolicyFileWatch } from './file-watch.js';
import type { ReloadFileOptions } from './policy-reloader.js';

export interface ReloadTriggerOptions {
  readonly file: string;
  readonly reloadFile: (path: string, options: ReloadFileOptions) => Promise<unknown>;
  readonly logger: Logger;
}

export interface ReloadTriggers {
  close(): void;
}

export function startReloadTriggers(options: ReloadTriggerOptions): ReloadTriggers {
  const { file, logger } = options;
  let running: Promise<void> | undefined;
  /** A reload asked for while one runs; `forced` once any of those came from SIGHUP. */
  let pending: { forced: boolean } | undefined;
  let closed = false;

  const run = (forced: boolean): void => {
    if (closed) return;
    if (running) {
      pending = { forced: forced || (pending?.forced ?? false) };
      return;
    }
    running = options
      .reloadFile(file, { onlyIfChanged: !forced })
      .then(
        () => undefined,
        (error: unknown) => logger.error({ err: error }, 'policy reload failed unexpectedly; the policy in force is unchanged'),
      )
      .finally(() => {
        running = undefined;
        const next = pending;
        pending = undefined;
        if (next) run(next.forced);
      });
  };

  const onHangup = () => {
    logger.info({ signal: 'SIGHUP', file }, 'reloading the policy');
    run(true);
  };
  process.on('SIGHUP', onHangup);
  const watcher: PolicyFileWatch = watchPolicyFile(file, () => run(false), { logger });

  return {
    close() {
      closed = true;
      process.off('SIGHUP', onHangup);
      watcher.close();
    },
  };
}
