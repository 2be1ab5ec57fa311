/** Task change announcements within one process (the memory store has no other replicas). */
import { EventEmitter } from 'node:events';
import type { TaskEvents } from './provided-store.js';

export class MemoryTaskEvents implements TaskEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per waiting request or running call: bounded by the limits on those.
    this.emitter.setMaxListeners(0);
  }

  async publish(handle: string): Promise<void> {
    // Delivered on a later turn, as from another replica: a publisher never runs listeners
    // inside its own step.
    setImmediate(() => this.emitter.emit(handle));
  }

  subscribe(handle: string, listener: () => void): () => void {
    this.emitter.on(handle, listener);
    return () => this.emitter.off(handle, listener);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
