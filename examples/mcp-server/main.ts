#!/usr/bin/env node
// Runs the example MCP server until SIGINT/SIGTERM.
// Usage: tsx examples/mcp-server/main.ts [--port N] [--host H] [--json] [--event-store] [--name NAME]
import { parseArgs } from 'node:util';
import { startExampleServer } from './server.js';
import { closeOnSignals } from '../http-serving.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    json: { type: 'boolean', default: false },
    'event-store': { type: 'boolean', default: false },
    name: { type: 'string' },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`invalid --port: ${values.port}`);
  process.exit(2);
}

const server = await startExampleServer({
  host: values.host,
  port,
  name: values.name,
  enableJsonResponse: values.json,
  eventStore: values['event-store'],
});
console.log(server.url);

closeOnSignals(server);
