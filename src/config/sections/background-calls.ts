/**
 * `upstreams.<name>.backgroundCalls`: long tools for clients that speak no task generation
 * (DESIGN.md §11, docs/background-calls.md). A listed tool's call that outlasts `detachAfter`
 * is answered with a tool result telling the model the work goes on in the background, and
 * the gateway keeps running the call as a task it holds; the model checks on it with the
 * status tool the gateway adds to tools/list.
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';

/**
 * A tool name as the 2025-11-25 spec recommends them (SEP-986: 1-128 of letters, digits, `_`,
 * `-`, `.`): the gateway's own task tools must be names every host accepts.
 */
const TASK_TOOL_NAME = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,128}$/, { error: 'expected 1-128 letters, digits, "_", "-" or "."' });

const toolNamesSchema = z
  .strictObject({
    status: TASK_TOOL_NAME.default('taskgate_task_status').describe(
      'Name of the status tool (taskId, optional wait in seconds): the call\'s result once it ended, else its status and when to ask again.',
    ),
    cancel: TASK_TOOL_NAME.default('taskgate_task_cancel').describe('Name of the cancel tool (taskId): stops a background call.'),
  })
  .superRefine((names, ctx) => {
    if (names.status === names.cancel) ctx.addIssue({ code: 'custom', path: ['cancel'], message: 'must differ from status' });
  })
  .describe(
    'Names of the tools the gateway adds to tools/list and answers itself. A backend tool of the same name wins: the gateway ' +
      'then neither lists nor answers its own, logs a warning, and detaches no calls on this upstream (choose other names).',
  );

export const backgroundCallsSchema = z
  .strictObject({
    tools: z
      .union([z.literal('all'), z.array(z.string().min(1).max(128)).min(1)])
      .describe('The tools whose calls may become background calls: "all", or a list of tool names.'),
    detachAfter: durationSchema()
      .prefault('20s')
      .refine((ms) => ms > 0, { error: 'must be more than 0s' })
      .describe(
        'A call still running after this long is answered with a background-call result and goes on as a task. Keep it well ' +
          'under the clients\' request timeout (60s in the MCP SDKs) and any intermediary\'s idle timeout.',
      ),
    timeout: durationSchema()
      .prefault('10m')
      .refine((ms) => ms > 0, { error: 'must be more than 0s' })
      .describe(
        'Longest backend call of a background call; past it the call ends failed. Its result stays readable for tasks.ttl.default ' +
          'after this (the task\'s lifetime is timeout + tasks.ttl.default, capped by tasks.ttl.max and the tool\'s maxTtl).',
      ),
    statusWait: durationSchema()
      .prefault('20s')
      .describe(
        'Longest a status tool call waits for the call to end before it answers "still running" (its `wait` argument is capped ' +
          'to this, and is this when left out). Keep it under the clients\' request timeout, like detachAfter.',
      ),
    outputSchema: z
      .enum(['plain', 'detach'])
      .default('plain')
      .describe(
        'Tools with an outputSchema: plain = never detached (a client validating structuredContent would reject the ' +
          'background-call result), and a tool this replica has not yet seen in a tools/list answer counts as having one; ' +
          'detach = detached like the rest (only for hosts known not to validate).',
      ),
    toolNames: toolNamesSchema.prefault({}),
  })
  .superRefine((policy, ctx) => {
    if (policy.tools === 'all') return;
    for (const [key, name] of Object.entries(policy.toolNames)) {
      const at = policy.tools.indexOf(name);
      if (at >= 0) ctx.addIssue({ code: 'custom', path: ['tools', at], message: `is the gateway's own ${key} tool (toolNames.${key})` });
    }
  })
  .describe(
    'Background calls (docs/background-calls.md): for clients that cannot use tasks (2025-11-25 without params.task, ' +
      '2026-07-28 without the tasks extension), a listed tool\'s call that outlasts detachAfter is answered with a tool result ' +
      'naming a handle, and runs on as a task the gateway holds; status and cancel tools are added to tools/list for them.',
  );

export type BackgroundCallsPolicy = z.output<typeof backgroundCallsSchema>;
