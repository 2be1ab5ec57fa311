import { MemoryStore } from '../../../src/store/memory-store.js';
import { defineStoreContract } from './store-contract.js';

defineStoreContract('memory', {
  create: async () => new MemoryStore({ maxSessions: 100, maxTasks: 100 }),
});
