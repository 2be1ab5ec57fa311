// The tools taskgate's own tests drive: one of each task outcome the gateway has to relay.
import { ProtocolError, ProtocolErrorCode, acceptedContent } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { defineTool, elicitation, text, type ModernTool } from './tool-dispatch.js';

export interface ToolTimings {
  /** How long the fixed-length tools work before they settle. */
  workMs: number;
}

export function exampleTools({ workMs }: ToolTimings): ModernTool[] {
  return [
    defineTool({
      name: 'quick_echo',
      description: 'Echoes its text at once; never a task.',
      input: z.object({ text: z.string() }),
      taskSupport: 'forbidden',
      run: async (args) => text(args.text),
    }),
    defineTool({
      name: 'slow_scan',
      description: 'Works for `seconds`, then reports; a task when the request declares the extension.',
      input: z.object({ seconds: z.number().min(0) }),
      taskSupport: 'optional',
      run: async (args, job) => {
        await job.sleep(args.seconds * 1000);
        return text(`Scan finished after ${args.seconds}s`);
      },
    }),
    defineTool({
      name: 'large_result',
      description: 'Works for `seconds`, then returns a text of `kib` KiB: a result larger than a listener\'s buffer.',
      input: z.object({ kib: z.int().min(1).max(4096), seconds: z.number().min(0).default(0) }),
      taskSupport: 'optional',
      run: async (args, job) => {
        await job.sleep(args.seconds * 1000);
        return text('x'.repeat(args.kib * 1024));
      },
    }),
    defineTool({
      name: 'report_status',
      description: 'Works for `seconds` with `message` as its statusMessage: a backend whose status text the caller chooses.',
      input: z.object({ message: z.string().max(4096), seconds: z.number().min(0).default(30) }),
      taskSupport: 'optional',
      statusMessage: (args) => args.message,
      run: async (args, job) => {
        await job.sleep(args.seconds * 1000);
        return text('reported');
      },
    }),
    defineTool({
      name: 'ask_name',
      description: 'Asks for a name (task input_required, or MRTR when synchronous), then greets.',
      input: z.object({}),
      taskSupport: 'optional',
      run: async (_args, job) => {
        const answers = await job.requestInput({
          name: elicitation('Please enter your name.', { name: { type: 'string' } }),
        });
        const name = acceptedContent(answers, 'name')?.name;
        return typeof name === 'string' ? text(`Hello, ${name}`) : text('No name was given', true);
      },
    }),
    defineTool({
      name: 'slow_then_ask',
      description: 'Works for a while, then asks for a name (MRTR when synchronous), then greets.',
      input: z.object({}),
      taskSupport: 'optional',
      run: async (_args, job) => {
        await job.sleep(workMs);
        const answers = await job.requestInput({
          name: elicitation('Please enter your name.', { name: { type: 'string' } }),
        });
        const name = acceptedContent(answers, 'name')?.name;
        return typeof name === 'string' ? text(`Hello at last, ${name}`) : text('No name was given', true);
      },
    }),
    defineTool({
      name: 'fail_task',
      description: 'Fails with a JSON-RPC error (a failed task, or an error response when synchronous).',
      input: z.object({}),
      taskSupport: 'optional',
      run: async (_args, job) => {
        await job.sleep(workMs);
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'Simulated failure: upstream API rate limit exceeded');
      },
    }),
    defineTool({
      name: 'tool_error',
      description: 'Reports a tool execution error (a completed task whose result has isError: true).',
      input: z.object({}),
      taskSupport: 'optional',
      run: async (_args, job) => {
        await job.sleep(workMs);
        return text('Simulated tool error: the scanned file is unreadable', true);
      },
    }),
    defineTool({
      name: 'requires_task',
      description: 'Only runs as a task; a request without the extension gets -32021.',
      input: z.object({}),
      taskSupport: 'required',
      run: async (_args, job) => {
        await job.sleep(workMs);
        return text('Required task finished');
      },
    }),
  ];
}
