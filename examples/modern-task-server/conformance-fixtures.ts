// The fixtures the 0.2.0-alpha.12 conformance `tasks-*` server scenarios call by name, with the
// behaviour their descriptions require (see node_modules/conformance-0-2/dist, "Required server
// fixtures").
import { ProtocolError, ProtocolErrorCode, acceptedContent } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { defineTool, elicitation, text, type ModernTool } from './tool-dispatch.js';
import type { ToolTimings } from './tools.js';

export function conformanceFixtures({ workMs }: ToolTimings): ModernTool[] {
  return [
    defineTool({
      name: 'greet',
      description: 'Sync-only greeting.',
      input: z.object({ name: z.string() }),
      taskSupport: 'forbidden',
      run: async (args) => text(`Hello, ${args.name}!`),
    }),
    defineTool({
      name: 'slow_compute',
      description: 'Sleeps `seconds`, then returns; settles as cancelled when cancelled.',
      input: z.object({ seconds: z.number().min(0), label: z.string().optional() }),
      taskSupport: 'optional',
      run: async (args, job) => {
        await job.sleep(args.seconds * 1000);
        return text(`Computed ${args.label ?? 'result'} after ${args.seconds}s`);
      },
    }),
    // Declared required: tasks-required-task-error expects -32021 for it without the extension.
    defineTool({
      name: 'failing_job',
      description: 'Always ends in a tool execution error.',
      input: z.object({}),
      taskSupport: 'required',
      run: async (_args, job) => {
        await job.sleep(workMs);
        return text('failing_job: the job reported an error', true);
      },
    }),
    defineTool({
      name: 'protocol_error_job',
      description: 'Ends in a protocol-level error (a failed task).',
      input: z.object({}),
      taskSupport: 'optional',
      run: async (_args, job) => {
        await job.sleep(workMs);
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'protocol_error_job: simulated crash');
      },
    }),
    defineTool({
      name: 'confirm_delete',
      description: 'Parks for one confirmation, then completes.',
      input: z.object({ filename: z.string() }),
      taskSupport: 'required',
      run: async (args, job) => {
        const answers = await job.requestInput({
          confirm: elicitation(`Delete ${args.filename}?`, { confirm: { type: 'boolean' } }),
        });
        const confirmed = acceptedContent(answers, 'confirm')?.confirm === true;
        return text(confirmed ? `Deleted ${args.filename}` : `Kept ${args.filename}`);
      },
    }),
    defineTool({
      name: 'multi_input',
      description: 'Parks for two inputs at once, then completes.',
      input: z.object({}),
      taskSupport: 'required',
      run: async (_args, job) => {
        const answers = await job.requestInput({
          name: elicitation('Who is asking?', { name: { type: 'string' } }),
          confirm: elicitation('Proceed?', { confirm: { type: 'boolean' } }),
        });
        return text(`Collected ${Object.keys(answers).length} answers`);
      },
    }),
    defineTool({
      name: 'test_tool_with_task',
      description: 'Gathers user_name through MRTR, then escalates to a task that greets.',
      input: z.object({}),
      taskSupport: 'required',
      gather: { user_name: elicitation('What is your name?', { name: { type: 'string' } }) },
      run: async (_args, job, gathered) => {
        await job.sleep(workMs);
        const name = acceptedContent(gathered, 'user_name')?.name;
        return text(`Hello, ${typeof name === 'string' ? name : 'stranger'}!`);
      },
    }),
    // server-stateless probes these three with a bare envelope ({} client capabilities).
    defineTool({
      name: 'test_missing_capability',
      description: 'Needs sampling: -32021 unless the request declares it.',
      input: z.object({}),
      taskSupport: 'forbidden',
      run: async (_args, job) => {
        await job.requestInput({
          sample: {
            method: 'sampling/createMessage',
            params: { messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 16 },
          },
        });
        return text('Sampled');
      },
    }),
    defineTool({
      name: 'test_streaming_elicitation',
      description: 'Answers input_required (MRTR), never a server-to-client request.',
      input: z.object({}),
      taskSupport: 'forbidden',
      run: async (_args, job) => {
        const answers = await job.requestInput({ answer: elicitation('Anything to add?', { answer: { type: 'string' } }) });
        return text(`Elicited: ${JSON.stringify(acceptedContent(answers, 'answer') ?? null)}`);
      },
    }),
    defineTool({
      name: 'test_logging_tool',
      description: 'Sends no notifications/message: no request here ever sets a log level.',
      input: z.object({}),
      taskSupport: 'forbidden',
      run: async () => text('Done without logging'),
    }),
  ];
}
