/**
 * A scripted agent loop over any MCP client library, acting as a model would on background
 * calls: it reads only the text of each tool result (never _meta), follows the tool and
 * arguments the gateway's text names, and stops once an answer is no longer "still running".
 * What background-calls tests share.
 */
import assert from 'node:assert/strict';

/** A tool result as the agent sees it: its text blocks joined, and whether it is an error. */
export interface AgentView {
  readonly text: string;
  readonly isError: boolean;
}

export type CallTool = (name: string, args: Record<string, unknown>) => Promise<AgentView>;

export interface AgentRun {
  /** What the first call answered. */
  readonly first: AgentView;
  /** Every status call's answer, in order. */
  readonly checks: AgentView[];
  /** The last answer: the tool's own result, or why there is none. */
  readonly final: AgentView;
}

const DETACHED = /call the tool `([^`]+)` with (\{[^}\n]*\})/;
const RUNNING = /is still running[\s\S]*Call `([^`]+)` again with (\{[^}\n]*\})/;

/** Calls `tool`; when the gateway moved it to the background, asks the status tool it names until the call ends. */
export async function runAgent(callTool: CallTool, tool: string, args: Record<string, unknown>, maxTurns = 40): Promise<AgentRun> {
  const first = await callTool(tool, args);
  const checks: AgentView[] = [];
  let next = DETACHED.exec(first.text);
  if (!next) return { first, checks, final: first };
  for (let turn = 0; turn < maxTurns; turn++) {
    const [, statusTool, statusArgs] = next;
    const answer = await callTool(statusTool!, JSON.parse(statusArgs!) as Record<string, unknown>);
    checks.push(answer);
    next = RUNNING.exec(answer.text);
    if (!next) return { first, checks, final: answer };
  }
  assert.fail(`the background call of ${tool} did not end within ${maxTurns} status calls`);
}

/** The handle a detached answer names in its text. */
export function handleIn(text: string): string | undefined {
  return /Background call handle: (\S+)/.exec(text)?.[1];
}

/** The text blocks of an MCP CallToolResult, joined. */
export function viewOf(result: unknown): AgentView {
  const { content, isError } = (result ?? {}) as { content?: unknown; isError?: unknown };
  const blocks = Array.isArray(content) ? (content as { type?: string; text?: string }[]) : [];
  return { text: blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('\n'), isError: isError === true };
}
