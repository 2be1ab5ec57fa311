/**
 * Waiting on a background call from a status tool call: until it ends (or needs input), the
 * wait runs out, or the client leaves. Any replica may run the call, so this replica learns of
 * a change from the store's task announcements (best effort, so the task is read again every
 * few seconds anyway) and the store stays the truth.
 */
import type { Store } from '../store/store.js';
import type { ProvidedTaskView } from '../task-model/provided-state.js';
import { isTerminalStatus, type TaskStatus } from '../task-model/task-record.js';
import type { ClientAbort } from '../upstream/client-abort.js';

/** The task is read at least this often while a status call waits, whatever it hears. */
const RECHECK_MS = 2000;

/** Nothing more will happen without the client: the call ended, or it waits for input. */
export function isSettled(status: TaskStatus): boolean {
  return isTerminalStatus(status) || status === 'input_required';
}

/** The task as it is once settled, or when `waitMs` ran out (or the client left); undefined once it is gone. */
export async function waitUntilSettled(store: Store, handle: string, waitMs: number, abort: ClientAbort): Promise<ProvidedTaskView | undefined> {
  const until = Date.now() + waitMs;
  let changed = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    changed = true;
    wake?.();
  };
  const unsubscribe = store.events.subscribe(handle, poke);
  abort.once('abort', poke);
  try {
    for (;;) {
      changed = false;
      const view = await store.readProvidedTask(handle);
      const left = until - Date.now();
      if (!view || isSettled(view.record.status) || left <= 0 || abort.aborted) return view;
      // An announcement that came while the task was being read counts: read again at once.
      if (changed) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => resolve(), Math.min(RECHECK_MS, left));
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
    abort.off('abort', poke);
  }
}

/** Sleeps `ms`, or less if the client leaves. */
export async function pause(ms: number, abort: ClientAbort): Promise<void> {
  if (abort.aborted || ms <= 0) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      abort.off('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    abort.once('abort', done);
  });
}
