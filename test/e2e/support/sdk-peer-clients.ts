/**
 * The real SDK 1.x client, connected to the example MCP server directly or through the gateway:
 * what sdk-peers.test.ts and sdk-peers-options.test.ts share.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, type CallToolResult, type ElicitRequest, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { startExampleServer, type ExampleServerOptions, type ExampleServerStats } from '../../../examples/mcp-server/server.js';
import { startStack } from './harness.js';


export type Via = 'direct' | 'gateway';

/** Where the client connects: the backend itself, or the gateway in front of it. */
export interface Target {
  url: string;
  /** What the backend received, either way. */
  stats: ExampleServerStats;
  close(): Promise<void>;
}

export async function startTarget(via: Via, options: ExampleServerOptions = {}): Promise<Target> {
  if (via === 'direct') return startExampleServer(options);
  const stack = await startStack({ server: options });
  return { url: stack.gw.url, stats: stack.servers[0]!.stats, close: () => stack.close() };
}

export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  elicitations: ElicitRequest[];
  logs: LoggingMessageNotification['params'][];
}

const openClients: Client[] = [];

export async function connect(server: Target, answers: { name?: string; color?: string } = {}): Promise<Connected> {
  const client = new Client({ name: 'example-server-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const elicitations: ElicitRequest[] = [];
  const logs: LoggingMessageNotification['params'][] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request);
    const properties = 'requestedSchema' in request.params ? request.params.requestedSchema.properties : {};
    if ('name' in properties && answers.name) return { action: 'accept', content: { name: answers.name } };
    if ('color' in properties && answers.color) return { action: 'accept', content: { color: answers.color } };
    return { action: 'decline' };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  const transport = new StreamableHTTPClientTransport(new URL(server.url));
  await client.connect(transport);
  openClients.push(client);
  return { client, transport, elicitations, logs };
}

export const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

/** Closes every client connect() opened: each test file runs it after each test. */
export async function closeOpenClients(): Promise<void> {
  await Promise.allSettled(openClients.splice(0).map((c) => c.close()));
}

export function rawHeaders(sessionId: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  };
}

export function toolCall(id: number, name: string, args: Record<string, unknown>): unknown {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

export async function* sseEvents(res: Response): AsyncGenerator<EventSourceMessage> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
