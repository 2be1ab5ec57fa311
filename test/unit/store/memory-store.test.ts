import { MemoryStore } from '../../../src/store/memory-store.js';
import { defineProvidedContract } from './provided-contract.js';
import { defineStoreContract } from './store-contract.js';

const factory = { create: async () => new MemoryStore({ maxSessions: 100, maxTasks: 100 }) };
defineStoreContract('memory', factory);
defineProvidedContract('memory', factory);
