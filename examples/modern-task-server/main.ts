#!/usr/bin/env node
// Runs the 2026-07-28 task server until SIGINT/SIGTERM.
// Usage: tsx examples/modern-task-server/main.ts [--port N] [--host H] [--name NAME] [--poll-interval-ms N] [--push-tasks]
import { parseArgs } from 'node:util';
import { startModernTaskServer } from './server.js';
import { closeOnSignals } from '../http-serving.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    name: { type: 'string' },
    'poll-interval-ms': { type: 'string', default: '500' },
    'push-tasks': { type: 'boolean', default: false },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`invalid --port: ${values.port}`);
  process.exit(2);
}
const pollIntervalMs = Number(values['poll-interval-ms']);
if (!Number.isInteger(pollIntervalMs) || pollIntervalMs <= 0) {
  console.error(`invalid --poll-interval-ms: ${values['poll-interval-ms']}`);
  process.exit(2);
}

const server = await startModernTaskServer({
  host: values.host,
  port,
  name: values.name,
  pollIntervalMs,
  pushTasks: values['push-tasks'],
});
console.log(server.url);

closeOnSignals(server);
