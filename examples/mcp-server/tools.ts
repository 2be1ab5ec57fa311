import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';

/** What the plain tools tell the server's stats. */
export interface ToolHooks {
  /** A call was cancelled by its client (notifications/cancelled) while it worked. */
  onCancelled?(tool: string): void;
}

/** Plain (non-task) tools: the traffic shapes a gateway has to pass through untouched. */
export function registerExampleTools(server: McpServer, hooks: ToolHooks = {}): void {
  // A long plain call, the kind the gateway can turn into a task: progress on the way, and it
  // stops when the client cancels it (notifications/cancelled aborts extra.signal).
  server.registerTool(
    'slow_report',
    {
      description: 'Works for `seconds` in `steps`, reporting progress, then returns a report.',
      inputSchema: { seconds: z.number().min(0).max(3600), steps: z.number().int().min(1).max(100).default(4) },
    },
    async ({ seconds, steps }, extra) => {
      const progressToken = extra._meta?.progressToken;
      try {
        for (let i = 1; i <= steps; i++) {
          await sleep((seconds * 1000) / steps, undefined, { signal: extra.signal });
          if (progressToken !== undefined && i < steps) {
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: i, total: steps, message: `step ${i} of ${steps}` } });
          }
        }
      } catch (error) {
        if (extra.signal.aborted) hooks.onCancelled?.('slow_report');
        throw error;
      }
      return { content: [{ type: 'text', text: `Report ready after ${seconds}s` }] };
    },
  );

  // A long call with an outputSchema: a client that listed it validates its structuredContent,
  // so a gateway must not answer it with anything but the tool's own result.
  server.registerTool(
    'slow_structured',
    {
      description: 'Works for `seconds`, then returns a structured report.',
      inputSchema: { seconds: z.number().min(0).max(3600) },
      outputSchema: { report: z.string(), seconds: z.number() },
    },
    async ({ seconds }, extra) => {
      await sleep(seconds * 1000, undefined, { signal: extra.signal });
      const structuredContent = { report: 'ready', seconds };
      return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
    },
  );

  server.registerTool(
    'report_error',
    { description: 'Works briefly, then reports a tool error (isError: true).', inputSchema: { ms: z.number().int().min(0).max(60_000).default(50) } },
    async ({ ms }) => {
      await sleep(ms);
      return { content: [{ type: 'text', text: 'The report could not be made: source unavailable' }], isError: true };
    },
  );

  server.registerTool(
    'echo',
    { description: 'Returns its text argument unchanged.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );

  // A server→client request in the middle of the tools/call SSE stream: the answer comes back
  // on a separate POST and the result follows on the first stream.
  server.registerTool(
    'elicit_color',
    {
      description: 'Asks the client for a colour via elicitation/create (after `delayMs`) and returns the answer.',
      inputSchema: { delayMs: z.number().int().min(0).max(60_000).default(0) },
    },
    async ({ delayMs }, extra) => {
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: extra.signal });
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: 'Which colour?',
            requestedSchema: {
              type: 'object',
              properties: { color: { type: 'string', title: 'Colour' } },
              required: ['color'],
            },
          },
        },
        ElicitResultSchema,
      );
      const color = answer.action === 'accept' ? answer.content?.color : undefined;
      if (typeof color !== 'string') {
        return { content: [{ type: 'text', text: `No colour (${answer.action})` }], isError: true };
      }
      return { content: [{ type: 'text', text: `Colour: ${color}` }] };
    },
  );

  server.registerTool(
    'notify_progress',
    {
      description: 'Sends `count` progress and log notifications on the POST stream, then returns.',
      inputSchema: {
        count: z.number().int().min(1).max(100).default(3),
        delayMs: z.number().int().min(0).max(10_000).default(20),
      },
    },
    async ({ count, delayMs }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let i = 1; i <= count; i++) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: count, message: `step ${i} of ${count}` },
          });
        }
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'notify_progress', data: `step ${i} of ${count}` },
        });
        if (delayMs > 0) await sleep(delayMs);
      }
      return { content: [{ type: 'text', text: `sent ${count} notifications` }] };
    },
  );

  // Notifications sent without a related request go to the session's standalone GET stream,
  // which is what a test needs to see that stream pass through a proxy.
  server.registerTool(
    'ping_listeners',
    {
      description: 'Sends notifications/message and notifications/tools/list_changed on the GET stream.',
      inputSchema: { text: z.string().default('ping') },
    },
    async ({ text }) => {
      await server.server.notification({
        method: 'notifications/message',
        params: { level: 'info', logger: 'ping_listeners', data: text },
      });
      await server.server.sendToolListChanged();
      return { content: [{ type: 'text', text: `sent "${text}" to listeners` }] };
    },
  );
}
