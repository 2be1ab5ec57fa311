/**
 * Validates task objects as the client received them, twice: against the official JSON Schema
 * of their era (test/fixtures/schemas, copied verbatim) and against the result schemas the
 * real clients parse with (the SDK 1.x zod schemas for 2025-11-25; ext-tasks' zod schemas for
 * 2026-07-28). A gateway-written object that one of them refuses is a client failure.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import {
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  TaskStatusNotificationV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';

/** Every kind of task object the gateway writes. `notification` is the whole JSON-RPC message. */
export type TaskObjectKind = 'creation' | 'get' | 'cancel' | 'list' | 'notification';
export type SchemaEra = 'legacy' | 'modern';

interface SafeParser {
  safeParse(value: unknown): { success: boolean; error?: unknown };
}

const DEFINITIONS: Record<SchemaEra, Partial<Record<TaskObjectKind, { def: string; zod: SafeParser }>>> = {
  legacy: {
    creation: { def: 'CreateTaskResult', zod: CreateTaskResultSchema },
    get: { def: 'GetTaskResult', zod: GetTaskResultSchema },
    cancel: { def: 'CancelTaskResult', zod: CancelTaskResultSchema },
    list: { def: 'ListTasksResult', zod: ListTasksResultSchema },
    notification: { def: 'TaskStatusNotification', zod: TaskStatusNotificationSchema },
  },
  modern: {
    creation: { def: 'CreateTaskResult', zod: CreateTaskResultV2Schema },
    get: { def: 'GetTaskResult', zod: GetTaskResultV2Schema },
    cancel: { def: 'CancelTaskResult', zod: CancelTaskResultV2Schema },
    notification: { def: 'TaskStatusNotification', zod: TaskStatusNotificationV2Schema },
  },
};

const SCHEMA_FILES: Record<SchemaEra, string> = {
  legacy: '../../fixtures/schemas/mcp-2025-11-25/schema.json',
  modern: '../../fixtures/schemas/ext-tasks-2026-07-28/schema.json',
};

// Formats (uri, byte) appear only in fields no task object has; they are not checked.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
for (const [era, file] of Object.entries(SCHEMA_FILES)) {
  ajv.addSchema(JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as object, era);
}

function jsonSchemaFor(era: SchemaEra, def: string): ValidateFunction {
  const validate = ajv.getSchema(`${era}#/$defs/${def}`);
  if (!validate) throw new Error(`no ${def} in the ${era} schema`);
  return validate;
}

/** Fails the test, naming the path, when `value` is not a valid `kind` of its era for either validator. */
export function assertTaskObject(era: SchemaEra, kind: TaskObjectKind, value: unknown, where: string = kind): void {
  const entry = DEFINITIONS[era][kind];
  if (!entry) throw new Error(`${era} has no ${kind}`);
  const validate = jsonSchemaFor(era, entry.def);
  assert.ok(validate(value), `${where} (${era}) fails the official ${entry.def} schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  const parsed = entry.zod.safeParse(value);
  assert.ok(parsed.success, `${where} (${era}) fails the client library's ${entry.def}: ${String(parsed.error)}\n${JSON.stringify(value)}`);
}
