/**
 * Notices when the policy file changes on disk, however it is replaced:
 *
 * - edited in place, or written to a temporary file and renamed over (editors, `kubectl cp`);
 * - a Kubernetes ConfigMap volume, where the file is a symlink through `..data`, itself a
 *   symlink to a timestamped directory. The kubelet writes a new directory, points `..data`
 *   at it with one rename, then deletes the old directory: the file's own inode never
 *   changes, so watching the file itself would see nothing.
 *
 * So directories are watched, not the file: the one the configured path is in, each one a
 * chain of symlinks passes through, and the one the real file is in. They are worked out
 * again after every change (the real directory is a new one after each ConfigMap update).
 * Events are debounced: one update is several events (write, rename, delete), and a reload
 * should read the file once they are over. Any event in a watched directory counts, whatever
 * its file name (renames of `..data` name `..data`, not the policy file); the reloader skips
 * a file whose bytes have not changed.
 *
 * node:fs watch (inotify on Linux) rather than a watcher library: the directory set changes
 * with every resolution, which chokidar's path-based API does not express any better, and
 * these few lines are all that is needed on top.
 */
import { watch, lstatSync, readlinkSync, realpathSync, type FSWatcher } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';

export interface PolicyFileWatch {
  close(): void;
}

export interface WatchOptions {
  /** Quiet time after the last event before `onChange` runs. */
  readonly debounceMs?: number;
  /** Longest `onChange` waits while events keep coming. */
  readonly maxWaitMs?: number;
  readonly logger: Logger;
}

const DEFAULT_DEBOUNCE_MS = 250;
const DEFAULT_MAX_WAIT_MS = 2000;
/** Symlink chains longer than this are not followed (the OS gives up at 40). */
const MAX_LINKS = 40;

export function watchPolicyFile(path: string, onChange: () => void, options: WatchOptions): PolicyFileWatch {
  const file = resolve(path);
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  /** By the directory's real path: a directory deleted and replaced under the same name is a new one. */
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let firstEventAt: number | undefined;
  let closed = false;

  const fire = () => {
    timer = undefined;
    firstEventAt = undefined;
    if (closed) return;
    rewatch();
    onChange();
  };

  const schedule = () => {
    if (closed) return;
    const now = Date.now();
    firstEventAt ??= now;
    clearTimeout(timer);
    timer = setTimeout(fire, Math.max(0, Math.min(debounceMs, firstEventAt + maxWaitMs - now)));
    timer.unref();
  };

  const rewatch = () => {
    const wanted = directoriesOf(file);
    for (const [dir, watcher] of watchers) {
      if (!wanted.has(dir)) {
        watcher.close();
        watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, { persistent: false }, schedule);
        // A watched directory that is deleted (the kubelet removes the old one) ends its
        // watcher; what replaced it is found on the next resolution.
        watcher.on('error', () => {
          watcher.close();
          if (watchers.get(dir) === watcher) watchers.delete(dir);
          schedule();
        });
        watchers.set(dir, watcher);
      } catch (error) {
        options.logger.warn({ err: error, dir }, 'cannot watch the policy file\'s directory; send SIGHUP to reload');
      }
    }
  };

  rewatch();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

/** The real paths of the directories to watch for `file`: its own, every symlink's on the way, the real file's. */
function directoriesOf(file: string): Set<string> {
  const dirs = new Set<string>();
  const add = (dir: string) => {
    try {
      dirs.add(realpathSync(dir));
    } catch {
      // Gone for now (mid-update): the next event resolves again.
    }
  };
  let path = file;
  for (let i = 0; i < MAX_LINKS; i++) {
    add(dirname(path));
    let isLink = false;
    try {
      isLink = lstatSync(path).isSymbolicLink();
    } catch {
      break;
    }
    if (!isLink) break;
    try {
      path = resolve(dirname(path), readlinkSync(path));
    } catch {
      break;
    }
  }
  try {
    add(dirname(realpathSync(file)));
  } catch {
    // A dangling link, mid-update.
  }
  return dirs;
}
