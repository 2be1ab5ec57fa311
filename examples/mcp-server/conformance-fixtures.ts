import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { PNG_BASE64, registerConformanceResources } from './conformance-resources.js';

// The fixtures the conformance server scenarios (0.1.16 and 0.2.0-alpha.12) call by name. Names,
// URIs and payloads are the ones spelled out in each scenario's description; resources and
// prompts live in conformance-resources.ts.

/** A WAV header with one 16-bit mono sample; `tools-call-audio` insists on audio/wav. */
const WAV_BASE64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==';
const JSON_SCHEMA_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

export function registerConformanceFixtures(server: McpServer): void {
  registerContentTools(server);
  registerInteractionTools(server);
  registerConformanceResources(server);
}

function registerContentTools(server: McpServer): void {
  server.registerTool('test_simple_text', { description: 'Returns simple text content.' }, async () =>
    text('This is a simple text response for testing.'),
  );
  server.registerTool('test_image_content', { description: 'Returns image content.' }, async () => ({
    content: [{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }],
  }));
  server.registerTool('test_audio_content', { description: 'Returns audio content.' }, async () => ({
    content: [{ type: 'audio', data: WAV_BASE64, mimeType: 'audio/wav' }],
  }));
  server.registerTool('test_embedded_resource', { description: 'Returns an embedded resource.' }, async () => ({
    content: [
      {
        type: 'resource',
        resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
      },
    ],
  }));
  server.registerTool('test_multiple_content_types', { description: 'Returns text, image and resource content.' }, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) },
      },
    ],
  }));
  // Thrown errors become `isError: true` results in McpServer, which is what the scenario checks.
  server.registerTool('test_error_handling', { description: 'Always fails.' }, async () => {
    throw new Error('This tool intentionally returns an error for testing');
  });

  // zod writes draft-07 by default; the scenario checks that `$schema`, `$defs` and
  // `additionalProperties` survive tools/list, so they are set through schema metadata.
  const address = z.object({ street: z.string().optional(), city: z.string().optional() });
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool whose input schema uses JSON Schema 2020-12 keywords (SEP-1613).',
      inputSchema: z
        .strictObject({ name: z.string().optional(), address: address.optional().meta({ $ref: '#/$defs/address' }) })
        .meta({
          $schema: JSON_SCHEMA_2020_12,
          $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        }),
    },
    async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );
}

function registerInteractionTools(server: McpServer): void {
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Sends three log notifications while it runs.', inputSchema: {} },
    async (_args, extra) => {
      for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
        await sleep(20);
      }
      return text('Tool with logging executed successfully');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50 and 100 of 100.', inputSchema: {} },
    async (_args, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        for (const progress of [0, 50, 100]) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
          await sleep(20);
        }
      }
      return text(String(progressToken ?? 'no progress token'));
    },
  );
  // Closing the POST stream mid-call makes the client resume with GET + Last-Event-ID (SEP-1699);
  // closeSSEStream exists only when the session has an event store.
  server.registerTool(
    'test_reconnection',
    { description: 'Closes its SSE stream mid-call; the result arrives after the client reconnects.', inputSchema: {} },
    async (_args, extra) => {
      extra.closeSSEStream?.();
      await sleep(100);
      return text('Reconnection test completed successfully.');
    },
  );
  server.registerTool(
    'test_sampling',
    { description: 'Asks the client for an LLM completion.', inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const result = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const reply = result.content.type === 'text' ? result.content.text : `(${result.content.type})`;
      return text(`LLM response: ${reply}`);
    },
  );

  const elicit = async (params: ElicitRequestFormParams, extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => {
    const result = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
    return text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
  };
  server.registerTool(
    'test_elicitation',
    { description: 'Asks the client for input.', inputSchema: { message: z.string() } },
    async ({ message }, extra) =>
      elicit(
        {
          mode: 'form',
          message,
          requestedSchema: {
            type: 'object',
            properties: { response: { type: 'string', description: "User's response" } },
            required: ['response'],
          },
        },
        extra,
      ),
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicitation whose fields all carry defaults (SEP-1034).', inputSchema: {} },
    async (_args, extra) =>
      elicit(
        {
          mode: 'form',
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        },
        extra,
      ),
  );
  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Elicitation with every enum schema variant (SEP-1330).', inputSchema: {} },
    async (_args, extra) =>
      elicit(
        {
          mode: 'form',
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                description: 'Select one option with titles',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Select one option (legacy)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Select multiple options',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Select multiple options with titles',
                minItems: 1,
                maxItems: 3,
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
            required: [],
          },
        },
        extra,
      ),
  );
}
