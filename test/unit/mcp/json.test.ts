/** The one definition of "a JSON object" every room reads messages with (src/mcp/json.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isObject } from '../../../src/mcp/json.js';

describe('isObject', () => {
  it('takes a plain object, parsed or built, and never an array, null or a primitive', () => {
    assert.equal(isObject(JSON.parse('{"a":1}')), true);
    assert.equal(isObject(Object.create(null)), true);
    for (const value of [[], null, undefined, 'text', 1, true]) assert.equal(isObject(value), false, JSON.stringify(value));
  });
});
